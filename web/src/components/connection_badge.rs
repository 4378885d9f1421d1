//! The connection state as a badge: "Connected", "Reconnecting… attempt 2", ….

use leptos::prelude::*;

use crate::transport::LinkStatus;

/// Renders `status`. Tests read `data-testid="connection-state"` and its `data-state`
/// (`connecting`, `connected`, `reconnecting`, `failed`).
#[component]
pub fn ConnectionBadge(status: RwSignal<LinkStatus>) -> impl IntoView {
    let state = move || match status.get() {
        LinkStatus::Connecting => "connecting",
        LinkStatus::Connected => "connected",
        LinkStatus::Reconnecting { .. } => "reconnecting",
        LinkStatus::Failed { .. } => "failed",
    };
    let text = move || match status.get() {
        LinkStatus::Connecting => "Connecting…".to_owned(),
        LinkStatus::Connected => "Connected".to_owned(),
        LinkStatus::Reconnecting { attempt, .. } => format!("Reconnecting… attempt {attempt}"),
        LinkStatus::Failed { .. } => "Disconnected".to_owned(),
    };
    view! {
        <span
            class=move || format!("badge badge-{}", state())
            data-testid="connection-state"
            data-state=state
            role="status"
        >
            {text}
        </span>
    }
}
