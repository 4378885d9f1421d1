//! A site's view of its role in the vertical synthetic-data study: which columns it holds (or that
//! it is the dealer), one true status line (fetching, waiting for the keys, step k of T, done,
//! declined before anything was charged, stopped because someone left), the ε its ledger recorded
//! (only once it did), and after the release its columns' marginals, real beside synthetic, and
//! the synthetic CSV (the same twin on every tab); or why it declined (row, column and value of
//! its own file, or the budget to raise, shown on this tab only). The names of the columns its
//! worker holds are on the panel (`data-columns`) for the end-to-end test.

use leptos::prelude::*;

use crate::components::charts::{Chart, bars};
use crate::frame::download_button::DownloadButton;
use crate::frame::site::SiteStudy;
use crate::numbers::show;
use crate::studies::vertical_vi::view::marginal_chart;

#[component]
pub fn VviSitePanel(study: SiteStudy) -> impl IntoView {
    move || {
        study.view.vvi.get().filter(|v| !v.role.is_empty() || !v.refusals.is_empty()).map(|v| {
            let held = if v.rows > 0 {
                format!("This tab is {}; its {} rows stay in this tab.", v.role, show(v.rows as f64))
            } else if v.role == "the dealer" {
                "This tab is the dealer: it deals the Beaver triples of every step and holds no \
                 data."
                    .to_owned()
            } else {
                format!("This tab is {}.", v.role)
            };
            let charged = v.charged.map(|(e, d)| {
                format!(
                    "ε = {} at δ = {} recorded in this site's ledger before its first share left.",
                    show(e),
                    show(d)
                )
            });
            let released = v.released_epsilon.map(|(e, d)| {
                format!(
                    "The released posterior's guarantee for the outside analyst: ε = {} at δ = {}.",
                    show(e),
                    show(d)
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
                        <span class="muted small">{format!(" every column, drawn with seed {}: the dashboard's twin", v.twin_seed)}</span>
                    </p>
                }
            });
            let marginals_note = (!v.marginals.is_empty()).then(|| {
                view! {
                    <h3>"Your columns: real against the synthetic twin"</h3>
                    <p class="muted small">"The real bars are this tab's own rows; they never left it."</p>
                }
            });
            view! {
                <section class="card site-study vvi-site" data-testid="vvi-site-panel"
                    data-phase=v.phase.clone()
                    data-released=v.released.to_string() data-stopped=v.stopped.is_some().to_string()
                    data-declined=v.declined.is_some().to_string()
                    data-columns=v.columns.join(",") data-rows=v.rows>
                    <h2>"This site in the vertical synthetic-data study"</h2>
                    <p class="muted">{held}</p>
                    <p class="live-phase" data-testid="vvi-site-status" role="status">
                        <progress max="1" value=v.progress aria-label="steps done"></progress>
                        " " {v.status.clone()}
                    </p>
                    {v.declined.clone().map(|why| view! {
                        <p class="callout callout-error" data-testid="vvi-site-declined" role="alert">{why}</p>
                    })}
                    {charged.map(|e| view! { <p data-testid="vvi-site-epsilon">{e}</p> })}
                    {released.map(|e| view! { <p data-testid="vvi-site-released">{e}</p> })}
                    {marginals_note}
                    {charts}
                    {download}
                    {(!v.refusals.is_empty()).then(|| view! {
                        <p class="muted small">"Messages this tab refused: " {v.refusals.join("; ")}</p>
                    })}
                </section>
            }
        })
    }
}
