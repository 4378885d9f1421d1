//! The dashboard: the room's code, link and QR code for sites to join, who is here, and the
//! private-mean study (form, live rounds, results, privacy budgets, what the relay sees).

use capelab_core::wire::Role;
use leptos::prelude::*;

use crate::components::connection_badge::ConnectionBadge;
use crate::components::copy_link::CopyLink;
use crate::components::presence_list::PresenceList;
use crate::components::qr::QrCode;
use crate::components::refusals::RelayNotices;
use crate::components::study::ica_panel::IcaPanel;
use crate::components::study::mean_panel::MeanPanel;
use crate::components::study::nn_panel::NnPanel;
use crate::components::study::privacy_panel::PrivacyPanel;
use crate::components::study::regression_panel::RegressionPanel;
use crate::components::study::results_panel::ResultsPanel;
use crate::components::study::wire_panel::WirePanel;
use crate::page_url::{join_link, page_is_on_loopback};
use crate::session::RoomState;
use crate::study_driver::dashboard::DashboardStudy;
use crate::transport::{Hello, LinkStatus};

/// A room's dashboard: creates the room (`Hello::Create`), or re-enters it after a reload.
#[component]
pub fn Dashboard(hello: Hello, leave: Callback<()>) -> impl IntoView {
    let state = RoomState::start(hello);
    let study = DashboardStudy::start(state);
    // Which study's panel shows: "mean", "regression", "nn" or "ica".
    let picked = RwSignal::new("mean");
    let me = Signal::derive(move || state.me.get().map(|p| p.id));
    // Memos: a reconnect re-announces the same room, which must not rebuild the QR code.
    let room = Memo::new(move |_| state.room.get());
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
            <span class="brand">"capelab"</span>
            <span class="role-tag">"Dashboard"</span>
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
        <main class="dashboard">
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
            <section class="card span-all study-picker" data-testid="study-picker">
                <span class="label">"Study: "</span>
                {[("mean", "Private mean"), ("regression", "Private regression"), ("nn", "Neural network (CAPE gradient descent)"), ("ica", "Joint ICA (fMRI)")]
                    .into_iter()
                    .map(|(key, label)| view! {
                        <button type="button" data-testid=format!("pick-{key}")
                            class=move || if picked.get() == key { "button button-small button-on" } else { "button button-small" }
                            disabled=move || study.view.busy()
                            on:click=move |_| picked.set(key)>{label}</button>
                    })
                    .collect_view()}
            </section>
            {move || match picked.get() {
                "regression" => view! { <RegressionPanel study state /> }.into_any(),
                "nn" => view! { <NnPanel study state /> }.into_any(),
                "ica" => view! { <IcaPanel study state /> }.into_any(),
                _ => view! { <MeanPanel study state /> }.into_any(),
            }}
            <ResultsPanel study />
            <PrivacyPanel study state />
            <WirePanel lines=study.view.wire total=study.view.wire_total me />
        </main>
    }
}
