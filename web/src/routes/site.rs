//! A site: its connection, its id, the room's other participants, its local data, its part in
//! the current study and its privacy ledger.

use leptos::prelude::*;

use crate::components::connection_badge::ConnectionBadge;
use crate::components::presence_list::PresenceList;
use crate::components::refusals::RelayNotices;
use crate::components::study::ica_site_panel::IcaSitePanel;
use crate::components::study::ledger_panel::LedgerPanel;
use crate::components::study::local_data_panel::LocalDataPanel;
use crate::components::study::nn_site_panel::NnSitePanel;
use crate::components::study::site_study_panel::SiteStudyPanel;
use crate::roster::display_name;
use crate::session::RoomState;
use crate::study_driver::site::SiteStudy;
use crate::transport::{Hello, LinkStatus};

/// A site in room `room`, entered as `hello` says (a fresh join, or a reloaded tab resuming).
#[component]
pub fn Site(room: String, hello: Hello, leave: Callback<()>) -> impl IntoView {
    let state = RoomState::start(hello);
    let study = SiteStudy::start(state);
    let name = Signal::derive(move || state.me.get().map(|me| display_name(&me)));
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
            <SiteStudyPanel study />
            <NnSitePanel study />
            <IcaSitePanel study />
            <LocalDataPanel study name />
            <LedgerPanel study />
        </main>
    }
}
