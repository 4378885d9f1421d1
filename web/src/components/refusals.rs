//! What went wrong, in the relay's own words (why the link gave up, refused frames), and what
//! other participants told the room (a tab that hit an internal error).

use leptos::prelude::*;

use crate::session::RoomState;
use crate::transport::LinkStatus;

/// Shows the reason the connection gave up (`data-testid="connection-error"`) and the messages of
/// recently refused frames (`data-testid="relay-error"`). Renders nothing when all is well.
#[component]
pub fn RelayNotices(state: RoomState) -> impl IntoView {
    let failure = move || match state.status.get() {
        LinkStatus::Failed { reason } => Some(view! {
            <p class="callout callout-error" data-testid="connection-error" role="alert">
                {reason}
            </p>
        }),
        _ => None,
    };
    let refusals = move || {
        state
            .refusals
            .get()
            .into_iter()
            .map(|message| {
                view! {
                    <li class="callout callout-warn" data-testid="relay-error">
                        "The relay refused a message: "
                        {message}
                    </li>
                }
            })
            .collect_view()
    };
    let notices = move || {
        state
            .notices
            .get()
            .into_iter()
            .map(|text| view! { <li class="callout callout-warn" data-testid="room-notice">{text}</li> })
            .collect_view()
    };
    view! {
        <div class="notices">
            {failure}
            <ul class="notice-list" aria-live="polite">{notices}{refusals}</ul>
        </div>
    }
}
