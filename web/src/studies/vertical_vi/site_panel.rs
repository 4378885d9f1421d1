//! A site's view of its role in the vertical synthetic-data study: which columns it holds (or that
//! it is the dealer), the MPC steps as they run in its worker, the ε its ledger recorded, and after
//! the release its columns' marginals, real beside synthetic, and the synthetic CSV; or why it
//! declined a run on its own columns (row, column and value, shown on this tab only). The names of
//! the columns its worker holds are on the panel (`data-columns`) for the end-to-end test.

use leptos::prelude::*;

use crate::components::charts::scale::format_value;
use crate::components::charts::{Chart, bars};
use crate::frame::download_button::DownloadButton;
use crate::frame::site::SiteStudy;
use crate::studies::vertical_vi::view::marginal_chart;

#[component]
pub fn VviSitePanel(study: SiteStudy) -> impl IntoView {
    move || {
        study.view.vvi.get().filter(|v| !v.role.is_empty() || !v.refusals.is_empty()).map(|v| {
            let held = if v.rows > 0 {
                format!("This tab is {}; its {} rows stay in this tab.", v.role, v.rows)
            } else {
                format!("This tab is {}.", v.role)
            };
            // A tab that declined released nothing: no guarantee to state.
            let epsilon = v.epsilon.filter(|_| v.declined.is_none()).map(|(e, d)| {
                format!(
                    "The released posterior's guarantee for the outside analyst: ε = {} at δ = {}{}.",
                    format_value(e),
                    format_value(d),
                    if v.rows > 0 { ", recorded in this site's ledger before its first share left" } else { "" }
                )
            });
            let charts = v
                .marginals
                .iter()
                .enumerate()
                .map(|(j, m)| {
                    let id = format!("vvi-marginal-{j}");
                    let svg = bars::render(&marginal_chart(m), &id);
                    view! { <Chart markup=Signal::stored(svg) id=id file_stem=format!("capelab-vertical-{}", m.column) testid="vvi-marginal-chart" /> }
                })
                .collect_view();
            let download = v.twin_csv.clone().map(|csv| {
                view! {
                    <p class="export-row">
                        <DownloadButton label="Download synthetic CSV" file=format!("capelab-synthetic-seed-{}.csv", v.twin_seed) mime="text/csv" text=csv testid="vvi-download-csv" />
                        <span class="muted small">{format!(" every column, drawn with seed {}", v.twin_seed)}</span>
                    </p>
                }
            });
            view! {
                <section class="card site-study" data-testid="vvi-site-panel"
                    data-released=v.released.to_string() data-stopped=v.stopped.is_some().to_string()
                    data-columns=v.columns.join(",") data-rows=v.rows>
                    <h2>"This site in the vertical synthetic-data study"</h2>
                    <p class="muted">{held}</p>
                    <p class="live-phase" data-testid="vvi-site-status">
                        <progress max="1" value=v.progress aria-label="steps done"></progress>
                        " " {v.status.clone()}
                    </p>
                    {v.declined.clone().map(|why| view! {
                        <p class="callout callout-error" data-testid="vvi-site-declined" role="alert">
                            "This tab declined the run; nothing of its columns was sent. " {why}
                        </p>
                    })}
                    {epsilon.map(|e| view! { <p data-testid="vvi-site-epsilon">{e}</p> })}
                    {(!v.marginals.is_empty()).then(|| view! {
                        <h3>"Your columns: real against the synthetic twin"</h3>
                    })}
                    {charts}
                    {download}
                    {(!v.refusals.is_empty()).then(|| view! {
                        <p class="muted small">"Refused: " {v.refusals.join("; ")}</p>
                    })}
                </section>
            }
        })
    }
}
