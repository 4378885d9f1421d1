//! A site's view of its part in an NN study: the opt-in to non-private comparison runs, its
//! records at a glance (private, never sent), the iterations it released and how its part ended.

use leptos::prelude::*;

use crate::frame::site::SiteStudy;

#[component]
pub fn NnSitePanel(study: SiteStudy) -> impl IntoView {
    let status = move || {
        study.view.nn.get().map(|nn| {
            let end = nn.end.clone().map(|e| view! { <p class="callout" data-testid="nn-site-end">{e}</p> });
            view! {
                <div data-testid="nn-site" data-released=nn.released data-records=nn.records>
                    <p class="live-phase" data-testid="nn-site-phase">{nn.phase.clone()}</p>
                    <p class="muted">
                        {format!(
                            "Released {} of {} iterations · {} records of D = {} features ({} with label 1), kept in this tab",
                            nn.released, nn.max_iterations, nn.records, nn.features, nn.positives
                        )}
                    </p>
                    <ul class="muted small">
                        {nn.preview.iter().map(|r| view! { <li>{r.clone()}</li> }).collect_view()}
                    </ul>
                    {end}
                </div>
            }
        })
    };
    move || {
        study.view.nn.with(Option::is_some).then(|| {
            view! {
                <section class="card site-study" data-testid="nn-site-panel">
                    <h2>"This site in the NN training"</h2>
                    {status}
                </section>
            }
        })
    }
}
