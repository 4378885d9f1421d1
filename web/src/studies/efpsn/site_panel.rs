//! A site's view of its agent in an EFPSN study: its place on the graph, each run's progress
//! (Paillier key generation, encryption for each neighbour and decryption, then the iterations),
//! the (ε, δ) its ledger recorded, and why a run was declined or stopped.

use leptos::prelude::*;

use crate::components::charts::scale::format_value;
use crate::frame::site::SiteStudy;
use crate::studies::efpsn::view::status_text;

#[component]
pub fn EfpsnSitePanel(study: SiteStudy) -> impl IntoView {
    move || {
        study.view.efpsn.get().map(|v| {
            let place = match v.agent {
                Some(i) => format!(
                    "Agent {i} on the graph, neighbours {}: {} rows of {}, kept in this tab.{}",
                    v.neighbours.iter().map(|j| j.to_string()).collect::<Vec<_>>().join(", "),
                    v.rows,
                    if v.own_data { "its own table" } else { "digits" },
                    if v.own_data {
                        " The dashboard's ‖x̄ − x*‖ and accuracy are measured on the shared digits split, whose x* does not know these rows."
                    } else {
                        ""
                    }
                ),
                None => "Waiting for the data set and the Paillier key…".into(),
            };
            let guarantee = v.epsilon.map(|(e, d)| {
                format!(
                    "EFPSN run: ε = {} at δ = {} (Theorem IV.1), recorded in this site's ledger before anything was sent; {}-bit Paillier key.",
                    format_value(e),
                    format_value(d),
                    v.key_bits
                )
            });
            let runs = v
                .runs
                .iter()
                .map(|r| {
                    let (text, progress) = status_text(&r.status, r.iterations);
                    view! {
                        <li data-testid=format!("efpsn-site-run-{}", r.method)>
                            <span class="label">{r.method.clone()}</span>
                            <progress max="1" value=progress aria-label=format!("{} progress", r.method)></progress>
                            <span class="small">{text}</span>
                        </li>
                    }
                })
                .collect_view();
            view! {
                <section class="card site-study" data-testid="efpsn-site-panel">
                    <h2>"This site in the EFPSN study"</h2>
                    <p class="muted">{place}</p>
                    {guarantee.map(|g| view! { <p data-testid="efpsn-site-epsilon">{g}</p> })}
                    <ul class="efpsn-runs">{runs}</ul>
                    {v.declined.clone().map(|d| view! { <p class="callout">{d}</p> })}
                    {(!v.refusals.is_empty()).then(|| view! {
                        <p class="muted small">"Refused: " {v.refusals.join("; ")}</p>
                    })}
                </section>
            }
        })
    }
}
