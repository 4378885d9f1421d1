//! The dashboard: the room's code, link and QR code for sites to join, who is here, the study
//! frame (the picker and the picked study's section), the privacy budgets, the session's studies
//! (kept across a reload) and what the relay sees; or, toggled in the top bar and kept in the
//! address (`?present`), the presenter view.

use capelab_core::wire::Role;
use leptos::prelude::*;

use crate::components::connection_badge::ConnectionBadge;
use crate::components::copy_link::CopyLink;
use crate::components::presence_list::PresenceList;
use crate::components::present::Presenter;
use crate::components::qr::QrCode;
use crate::components::refusals::RelayNotices;
use crate::components::session_card::SessionCard;
use crate::dashboard_archive;
use crate::frame::dashboard::DashboardStudy;
use crate::frame::picker::StudyFrame;
use crate::frame::privacy_panel::PrivacyPanel;
use crate::frame::wire_panel::WirePanel;
use crate::page_url::{self, join_link, page_is_on_loopback};
use crate::session::RoomState;
use crate::studies::registry::STUDIES;
use crate::transport::{Hello, LinkStatus};

/// A room's dashboard: creates the room (`Hello::Create`), or re-enters it after a reload.
#[component]
pub fn Dashboard(hello: Hello, leave: Callback<()>) -> impl IntoView {
    // Read before the session starts: a reload finds what its earlier life archived.
    let earlier = dashboard_archive::earlier(&hello);
    let state = RoomState::start(hello);
    let study = DashboardStudy::start(state);
    // Which study's section shows (a key of the study registry).
    let picked = RwSignal::new(STUDIES[0].key);
    // The presenter view, kept in the address (`?present`) so a reload stays in it.
    let presenting = RwSignal::new(page_url::presenting());
    let toggle_present = move |_| {
        let on = !presenting.get_untracked();
        page_url::show_presenting(on);
        presenting.set(on);
    };
    let me = Signal::derive(move || state.me.get().map(|p| p.id));
    // Memos: a reconnect re-announces the same room, which must not rebuild the QR code.
    let room = Memo::new(move |_| state.room.get());
    dashboard_archive::keep(study.view, room, earlier.clone());
    let present = Memo::new(move |_| state.roster.with(|r| r.present_count(Role::Site)));
    let left =
        Memo::new(move |_| state.roster.with(|r| r.with_role(Role::Site).count()) - present.get());
    let connected = move || state.status.get() == LinkStatus::Connected;
    let invite = move || {
        room.get().map(|code| {
            let link = join_link(&code);
            view! {
                <p class="label">"Room code"</p>
                <p class="room-code" data-testid="room-code">{code}</p>
                <p class="label">"Join link"</p>
                <CopyLink link=link.clone() />
                {page_is_on_loopback().then(|| view! {
                    <p class="hint" data-testid="loopback-hint">
                        "This link only works on this computer. For other devices, open the "
                        "dashboard at the classroom address the relay prints (start it with "
                        <code>"--bind-all"</code> ")."
                    </p>
                })}
                <QrCode text=link />
            }
        })
    };
    view! {
        <header class="topbar">
            <h1 class="brand">"capelab"</h1>
            <span class="role-tag">"Dashboard"</span>
            <ConnectionBadge status=state.status />
            <button
                type="button"
                class="button button-quiet present-toggle"
                data-testid="present-toggle"
                aria-pressed=move || presenting.get().to_string()
                on:click=toggle_present
            >
                {move || if presenting.get() { "Full dashboard" } else { "Presenter view" }}
            </button>
            <button
                type="button"
                class="button button-quiet"
                on:click=move |_| {
                    dashboard_archive::clear();
                    state.leave();
                    leave.run(());
                }
            >
                "Leave"
            </button>
        </header>
        <RelayNotices state />
        <Show when=move || presenting.get()>
            <Presenter study state picked room />
        </Show>
        <main class="dashboard" class:hidden=move || presenting.get()>
            <section class="card invite">
                {invite}
                <Show when=move || room.get().is_none()>
                    <p class="muted">"Creating the room…"</p>
                </Show>
            </section>
            <section class="card sites" class:stale=move || !connected()>
                <h2 class="sites-heading">
                    "Sites"
                    <span class="summary">
                        <span class="count" data-testid="site-count">{present}</span>
                        " present"
                        <Show when=move || { left.get() > 0 }>
                            <span class="muted" data-testid="left-count">
                                {move || format!(" · {} left", left.get())}
                            </span>
                        </Show>
                    </span>
                </h2>
                <Show when=move || !connected() && room.get().is_some()>
                    <p class="muted stale-note">"Last known while connected:"</p>
                </Show>
                <PresenceList
                    roster=state.roster
                    role=Role::Site
                    item_testid="site"
                    empty_text="No sites yet. Open the join link on another device or tab."
                />
            </section>
            <StudyFrame study state picked />
            <PrivacyPanel study state />
            <SessionCard view=study.view room earlier />
            <WirePanel lines=study.view.wire total=study.view.wire_total me />
        </main>
    }
}
