//! The dashboard's privacy panel: every site's budget (from its ledger reports), ε spent study by
//! study, one run under every accountant (RDP, PLD, basic, strong; both views), and seed 000
//! Fig. 5 for the room's S.

use capelab_core::accountant::ledger::Bound;
use capelab_core::study::iterative::ledger_study_name as iter_ledger_study_name;
use capelab_core::study::mean::collusion_factor;
use capelab_core::wire::Role;
use leptos::prelude::*;

use crate::components::charts::scale::format_value;
use crate::components::charts::{Chart, line};
use crate::frame::dashboard::DashboardStudy;
use crate::frame::privacy::{comparison_chart, fig5_chart, spend_chart};
use crate::session::RoomState;

/// How many releases the comparison chart shows at least.
const MIN_RELEASES: u64 = 10;

/// Which accountant a site's spend is (the tighter), with the other's total: " · PLD (RDP 1.3)".
fn bound_note(r: &crate::ledger_report::LedgerReport) -> String {
    let other = match r.bound {
        Bound::Pld => format!("RDP {}", format_value(r.spent_rdp)),
        Bound::Rdp => format!("PLD {}", format_value(r.spent_pld)),
    };
    format!(" · {} ({other})", r.bound)
}

#[component]
pub fn PrivacyPanel(study: DashboardStudy, state: RoomState) -> impl IntoView {
    let view = study.view;
    let budgets = move || {
        let present = state.roster.with(|r| {
            r.with_role(Role::Site)
                .filter(|m| m.presence == crate::roster::Presence::Present)
                .map(|m| m.peer.id)
                .collect::<Vec<_>>()
        });
        view.reports.with(|reports| {
            reports
                .iter()
                .map(|(id, r)| {
                    let share = (r.spent / r.budget_epsilon).clamp(0.0, 1.0);
                    let here = present.contains(id);
                    view! {
                        <tr data-testid="budget-row" data-site-id=*id data-releases=r.release_count data-spent=r.spent
                            data-bound=r.bound.to_string() data-pld=r.spent_pld data-rdp=r.spent_rdp class:gone=!here>
                            <td>{format!("{} (#{id})", r.site)}{(!here).then_some(" · left")}</td>
                            <td>
                                <div class="bar"><div class="bar-fill" style=format!("width: {:.1}%", 100.0 * share)></div></div>
                            </td>
                            <td>
                                {format_value(r.spent)} " of " {format_value(r.budget_epsilon)}
                                {(r.release_count > 0).then(|| bound_note(r))}
                            </td>
                            <td>{format!("{:e}", r.budget_delta)}</td>
                            <td>{r.release_count}</td>
                        </tr>
                    }
                })
                .collect_view()
        })
    };
    // Every study this dashboard ran, of any kind, by its ledger study name.
    let studies = move || {
        let mut names: Vec<String> = view.rounds.with(|rs| {
            rs.iter().map(|r| r.outcome.params.query.ledger_study_name(r.outcome.study)).collect()
        });
        view.nn_rounds.with(|rs| {
            names.extend(rs.iter().map(|r| iter_ledger_study_name(r.outcome.study)));
        });
        view.ica.with(|ica| {
            if let Some(ica) = ica {
                names.extend(ica.pca.iter().map(|o| iter_ledger_study_name(o.study)));
                names.extend(ica.djica.iter().map(|o| iter_ledger_study_name(o.study)));
            }
        });
        names
    };
    let spend = Memo::new(move |_| {
        let studies = studies();
        view.reports.with(|reports| line::render(&spend_chart(&studies, reports), "chart-spend"))
    });
    // The run the latest study implies: its z and δ, c_S of its |U| (or of the room's S before any).
    let latest = Memo::new(move |_| {
        view.live
            .with(|l| {
                l.as_ref().map(|l| {
                    (
                        l.noise.noise_multiplier,
                        l.params.epsilon,
                        l.params.delta,
                        l.params.site_count(),
                    )
                })
            })
            .or_else(|| {
                view.rounds.with(|rs| {
                    rs.last().map(|r| {
                        let sites = r
                            .outcome
                            .theory
                            .as_ref()
                            .map_or(r.outcome.params.site_count(), |t| t.sites);
                        (
                            r.outcome.noise.noise_multiplier,
                            r.outcome.params.epsilon,
                            r.outcome.params.delta,
                            sites,
                        )
                    })
                })
            })
    });
    let room_sites = Memo::new(move |_| state.roster.with(|r| r.present_count(Role::Site)));
    let comparison = Memo::new(move |_| {
        let Some((z, _, delta, sites)) = latest.get() else { return String::new() };
        let done = view.rounds.with(|r| r.len()) as u64;
        let releases = MIN_RELEASES.max(2 * done);
        match comparison_chart(z, collusion_factor(sites.max(2)), delta, releases, Some(done)) {
            Ok(spec) => line::render(&spec, "chart-comparison"),
            Err(e) => format!("<p>{e}</p>"),
        }
    });
    let fig5 = Memo::new(move |_| {
        let (sites, epsilon, z) = match latest.get() {
            Some((z, eps, _, sites)) => (sites, eps, Some(z)),
            None => (room_sites.get(), 0.5, None),
        };
        if sites < 2 {
            return String::new();
        }
        match fig5_chart(sites, epsilon, z) {
            Ok(spec) => line::render(&spec, "chart-fig5"),
            Err(e) => format!("<p>{e}</p>"),
        }
    });
    view! {
        <section class="card span-all privacy" data-testid="privacy-panel">
            <h2>"Privacy budgets"</h2>
            <p class="muted">
                "Each site keeps its own ledger and declines a study that would take it over its budget. "
                "The numbers below are what the sites report."
            </p>
            <Show
                when=move || view.reports.with(|r| !r.is_empty())
                fallback=|| view! { <p class="muted">"No site has reported its ledger yet."</p> }
            >
                <table class="numbers budgets">
                    <tr><th>"site"</th><th>"used"</th><th>"ε spent"</th><th>"at δ"</th><th>"releases"</th></tr>
                    {budgets}
                </table>
            </Show>
            <div class="chart-grid">
                <Chart markup=spend id="chart-spend".into() file_stem="capelab-epsilon-per-study".into() testid="chart-spend" />
                <Show when=move || latest.with(Option::is_some)>
                    <Chart markup=comparison id="chart-comparison".into() file_stem="capelab-accountings".into() testid="chart-comparison" />
                </Show>
                <Show when=move || { latest.with(Option::is_some) || room_sites.get() >= 2 }>
                    <Chart markup=fig5 id="chart-fig5".into() file_stem="capelab-fig5".into() testid="chart-fig5" />
                </Show>
            </div>
        </section>
    }
}
