//! A site: its connection, its id, the room's other participants and its local data.

use leptos::prelude::*;

use crate::components::connection_badge::ConnectionBadge;
use crate::components::presence_list::PresenceList;
use crate::components::refusals::RelayNotices;
use crate::roster::display_name;
use crate::session::RoomState;
use crate::transport::{Hello, LinkStatus};

/// A site in room `room`, entered as `hello` says (a fresh join, or a reloaded tab resuming).
#[component]
pub fn Site(room: String, hello: Hello, leave: Callback<()>) -> impl IntoView {
    let state = RoomState::start(hello);
    let connected = move || state.status.get() == LinkStatus::Connected;
    let failed = move || matches!(state.status.get(), LinkStatus::Failed { .. });
    let me = move || {
        state.me.get().map(|me| {
            view! {
                <p class="me-name">{display_name(&me)}</p>
                <p class="label">"Your site id"</p>
                <p class="me-id" data-testid="my-id">{me.id}</p>
            }
        })
    };
    view! {
        <header class="topbar">
            <span class="brand">"capelab"</span>
            <span class="role-tag">"Site"</span>
            <ConnectionBadge status=state.status />
            <button
                type="button"
                class="button button-quiet"
                on:click=move |_| {
                    state.leave();
                    leave.run(());
                }
            >
                "Leave"
            </button>
        </header>
        <RelayNotices state />
        <main class="site">
            <section class="card">
                <p class="label">"Room"</p>
                <p class="code-inline room-small" data-testid="site-room">{room}</p>
                {me}
                <Show when=move || state.me.get().is_none()>
                    <p class="muted">{move || if failed() { "Not in the room." } else { "Joining…" }}</p>
                </Show>
            </section>
            <section class="card" class:stale=move || !connected()>
                <h2>"In this room"</h2>
                <Show when=move || !connected() && state.me.get().is_some()>
                    <p class="muted stale-note">"Last known while connected:"</p>
                </Show>
                <PresenceList roster=state.roster item_testid="peer" empty_text="Nobody else yet." />
            </section>
            <section class="card local-data" data-testid="local-data">
                <h2>"Local data"</h2>
                <p>
                    "Nothing here yet. This panel will hold this site's private data once the "
                    "protocols arrive; the app shell loads no data and sends none."
                </p>
            </section>
        </main>
    }
}
