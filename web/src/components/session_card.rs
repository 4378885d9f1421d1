//! The dashboard's session: the studies kept from before a reload of this page, and every study
//! of the session as one JSON file (`dashboard_archive`).

use leptos::prelude::*;

use crate::dashboard_archive::{self, ArchivedStudy, StudyState};
use crate::download;
use crate::frame::dashboard::DashboardView;

/// Lists `earlier` (`data-testid="earlier-study"`, with `data-kind` and `data-state`) when there is
/// any, and offers the session's download (`data-testid="session-download"`).
#[component]
pub fn SessionCard(
    view: DashboardView,
    room: Memo<Option<String>>,
    earlier: Vec<ArchivedStudy>,
) -> impl IntoView {
    let error = RwSignal::new(None::<String>);
    let kept = earlier.clone();
    let download = move |_| {
        let Some(room) = room.get_untracked() else { return };
        let file = format!("capelab-session-{room}.json");
        let json = dashboard_archive::now(room, &kept, &view).to_json();
        error.set(download::text(&file, "application/json", &json).err());
    };
    let interrupted = earlier.iter().any(|s| s.state == StudyState::Interrupted);
    let has_earlier = !earlier.is_empty();
    let items = earlier
        .into_iter()
        .map(|s| {
            let state = match s.state {
                StudyState::Finished => "finished",
                StudyState::Running | StudyState::Interrupted => "interrupted",
            };
            view! {
                <li data-testid="earlier-study" data-kind=s.kind.clone() data-state=state>
                    <strong>{format!("{} {}", s.kind, s.number)}</strong>
                    {format!(" · {state}: {}", s.summary)}
                </li>
            }
        })
        .collect_view();
    view! {
        <section class="card span-all session" data-testid="session-card">
            <h2>"This session"</h2>
            <Show when=move || interrupted>
                <p class="callout callout-warn" data-testid="interrupted-note">
                    "A study was running when this page reloaded, and it stopped there: its state "
                    "lived only in the page. The sites saw the dashboard leave and ended their part; "
                    "each site's ledger keeps every release it made. Start it again when ready."
                </p>
            </Show>
            <Show when=move || has_earlier fallback=|| view! {
                <p class="muted">"Every study of this room, as one file (kept across a reload of this page)."</p>
            }>
                <p class="label">"Kept from before this page reloaded"</p>
            </Show>
            <ul class="earlier-studies" data-testid="earlier-studies">{items}</ul>
            <button
                type="button"
                class="button button-small"
                data-testid="session-download"
                on:click=download
            >
                "Download this session (JSON)"
            </button>
            {move || error.get().map(|e| view! { <span class="form-error">{e}</span> })}
        </section>
    }
}
