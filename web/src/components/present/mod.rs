//! The dashboard's presenter view (`?present`), for a projector or a laptop screen: while people
//! join, the room code, the QR code and the count of sites, large; once the picked study has
//! run, its centrepiece and progress with every site's budget bar beside it, on one screen
//! without scrolling. The full dashboard (forms, tables, expert charts) is one click away.

pub mod budget_bars;

use capelab_core::wire::Role;
use leptos::prelude::*;

use crate::components::qr::QrCode;
use crate::frame::dashboard::DashboardStudy;
use crate::page_url::join_link;
use crate::session::RoomState;
use crate::studies::registry::entry;
use budget_bars::BudgetBars;

#[component]
pub fn Presenter(
    study: DashboardStudy,
    state: RoomState,
    picked: RwSignal<&'static str>,
    #[prop(into)] room: Signal<Option<String>>,
) -> impl IntoView {
    let present = Memo::new(move |_| state.roster.with(|r| r.present_count(Role::Site)));
    let has_run = Memo::new(move |_| (entry(picked.get()).stage)(study).has_run());
    let count = move || {
        let n = present.get();
        view! {
            <p class="present-count">
                <span class="count" data-testid="site-count">{n}</span>
                {if n == 1 { " site here" } else { " sites here" }}
            </p>
        }
    };
    move || {
        let code = room.get();
        if has_run.get() {
            view! {
                <main class="presenter presenter-study" data-testid="presenter" data-screen="study">
                    <div class="present-main">{(entry(picked.get()).centrepiece)(study)}</div>
                    <aside class="present-side">
                        <p class="label">"Room"</p>
                        <p class="present-code-small" data-testid="room-code">{code.clone()}</p>
                        {count}
                        <BudgetBars study state />
                    </aside>
                </main>
            }
            .into_any()
        } else {
            let link = code.as_deref().map(join_link);
            let shown_link = link
                .clone()
                .map(|l| l.trim_start_matches("http://").trim_start_matches("https://").to_owned());
            view! {
                <main class="presenter presenter-join" data-testid="presenter" data-screen="join">
                    <div class="present-qr">{link.map(|text| view! { <QrCode text /> })}</div>
                    <div class="present-join-text">
                        <p class="label">"Join with the code"</p>
                        <p class="room-code present-code" data-testid="room-code">{code.clone()}</p>
                        <p class="present-link">{shown_link}</p>
                        {count}
                    </div>
                </main>
            }
            .into_any()
        }
    }
}
