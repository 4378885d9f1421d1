//! A site: its room and id, its part in the current study (first: on a phone that is what
//! matters), its privacy ledger, the room's other participants, and folded below, its data and
//! the settings only some studies need.

use leptos::prelude::*;

use crate::components::connection_badge::ConnectionBadge;
use crate::components::fold::Fold;
use crate::components::presence_list::PresenceList;
use crate::components::refusals::RelayNotices;
use crate::frame::consent::ComparisonConsent;
use crate::frame::ledger_panel::LedgerPanel;
use crate::frame::local_data_panel::LocalDataPanel;
use crate::frame::site::{SiteStudy, SiteStudyKind};
use crate::local_data::DataSource;
use crate::roster::display_name;
use crate::session::RoomState;
use crate::studies::efpsn::site_panel::EfpsnSitePanel;
use crate::studies::ica::site_panel::{IcaSitePanel, OwnDataCard};
use crate::studies::mean::site_panel::SiteStudyPanel;
use crate::studies::nn::site_panel::NnSitePanel;
use crate::studies::vertical_vi::own_card::VviOwnCard;
use crate::studies::vertical_vi::site_panel::VviSitePanel;
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
                <div class="me-who">
                    <p class="label">"You"</p>
                    <p class="me-name">{display_name(&me)}</p>
                </div>
                <div>
                    <p class="label">"Site id"</p>
                    <p class="me-id" data-testid="my-id">{me.id}</p>
                </div>
            }
        })
    };
    // Which studies this tab has seen: their panels come first, and the settings they need open.
    let mean_seen = move || study.view.study.with(Option::is_some);
    let data_hint = move || {
        study.view.data.with(|d| match d {
            DataSource::Seeded { seed } => format!("generated from seed {seed}"),
            DataSource::Table { table, .. } => format!("{} rows loaded", table.rows.len()),
        })
    };
    let ica_hint = move || {
        if study.view.ica_file.with(Option::is_some) {
            "your files".to_owned()
        } else {
            "generated subjects (default)".to_owned()
        }
    };
    let vvi_hint = move || {
        study.view.vvi_own.with(|o| match o {
            Some(o) => o.origin.clone(),
            None => "none loaded".to_owned(),
        })
    };
    // The ICA file card's words (NIfTI, voxels, a brain mask) mean nothing before the ICA study:
    // it is left out until an ICA study is announced, a file is loaded, or its fold is opened.
    let ica_fold_open = RwSignal::new(false);
    let ica_card_shown = move || {
        ica_fold_open.get()
            || study.view.ica.with(Option::is_some)
            || study.view.ica_file.with(Option::is_some)
    };
    view! {
        <header class="topbar">
            <h1 class="brand">"capelab"</h1>
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
            <section class="card me-card">
                <div>
                    <p class="label">"Room"</p>
                    <p class="code-inline room-small" data-testid="site-room">{room}</p>
                </div>
                {me}
                <Show when=move || state.me.get().is_none()>
                    <p class="muted">{move || if failed() { "Not in the room." } else { "Joining…" }}</p>
                </Show>
            </section>
            // One story: the study this tab takes part in (its latest), or that it waits for
            // one; earlier studies live on in the ledger below.
            {move || match study.view.current.get() {
                None => view! {
                    <section class="card site-study" data-testid="site-study">
                        <p class="live-phase" data-testid="site-phase" data-phase="idle">
                            "Waiting for the dashboard to start a study."
                        </p>
                    </section>
                }
                .into_any(),
                Some(SiteStudyKind::Round) => view! { <SiteStudyPanel study /> }.into_any(),
                Some(SiteStudyKind::Nn) => view! { <NnSitePanel study /> }.into_any(),
                Some(SiteStudyKind::Ica) => view! { <IcaSitePanel study /> }.into_any(),
                Some(SiteStudyKind::Efpsn) => view! { <EfpsnSitePanel study /> }.into_any(),
                Some(SiteStudyKind::VerticalVi) => view! { <VviSitePanel study /> }.into_any(),
            }}
            <LedgerPanel study />
            <ComparisonConsent study />
            <section class="card peers" class:stale=move || !connected()>
                <h2>"In this room"</h2>
                <Show when=move || !connected() && state.me.get().is_some()>
                    <p class="muted stale-note">"Last known while connected:"</p>
                </Show>
                <PresenceList roster=state.roster item_testid="peer" empty_text="Nobody else yet." />
            </section>
            <div class="settings">
                <h2 class="settings-heading">"Your data and settings"</h2>
                <Fold title="Values for the mean and the regression" testid="fold-local-data"
                    hint=Signal::derive(data_hint) open=Signal::derive(mean_seen)>
                    <LocalDataPanel study name />
                </Fold>
                <Fold title="Joint ICA: your own data files" testid="fold-ica-data"
                    hint=Signal::derive(ica_hint) open=Signal::derive(move || study.view.ica_file.with(Option::is_some))
                    shown=ica_fold_open>
                    <Show when=ica_card_shown>
                        <OwnDataCard study />
                    </Show>
                </Fold>
                <Fold title="Vertical study: your own columns" testid="fold-vvi-own"
                    hint=Signal::derive(vvi_hint) open=Signal::derive(move || study.view.vvi_own.with(Option::is_some))>
                    <VviOwnCard study />
                </Fold>
            </div>
        </main>
    }
}
