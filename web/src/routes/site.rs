//! A site: its connection, its id, the room's other participants and its local data.

use capelab_core::wire::Role;
use leptos::prelude::*;

use crate::components::connection_badge::ConnectionBadge;
use crate::components::presence_list::PresenceList;
use crate::components::refusals::RelayNotices;
use crate::roster::display_name;
use crate::session::RoomState;
use crate::transport::Hello;

/// Joins room `room` as a site named `name` (blank: "Site <id>").
#[component]
pub fn Site(room: String, name: String, leave: Callback<()>) -> impl IntoView {
    let state = RoomState::start(Hello::Join { room: room.clone(), role: Role::Site, name });
    let me = move || {
        state.me.get().map(|me| {
            view! {
                <p class="me">
                    <span class="me-name">{display_name(&me)}</span>
                    <span class="muted">" · site #"</span>
                    <span class="me-id" data-testid="my-id">{me.id}</span>
                </p>
            }
        })
    };
    view! {
        <header class="topbar">
            <span class="brand">"capelab"</span>
            <span class="role-tag">"Site"</span>
            <ConnectionBadge status=state.status />
            <button type="button" class="button button-quiet" on:click=move |_| {
                state.leave();
                leave.run(());
            }>
                "Leave"
            </button>
        </header>
        <RelayNotices state />
        <main class="site">
            <section class="card">
                <p class="label">"Room " <span class="code-inline" data-testid="site-room">{room}</span></p>
                {me}
                <Show when=move || state.me.get().is_none()>
                    <p class="muted">"Joining…"</p>
                </Show>
            </section>
            <section class="card">
                <h2>"In this room"</h2>
                <PresenceList
                    roster=state.roster
                    item_testid="peer"
                    empty_text="Nobody else yet."
                />
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
