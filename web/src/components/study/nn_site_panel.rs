//! A site's view of its part in an NN study: its records at a glance (private, never sent), the
//! iterations it released and how its part ended.

use leptos::prelude::*;

use crate::study_driver::site::SiteStudy;

#[component]
pub fn NnSitePanel(study: SiteStudy) -> impl IntoView {
    move || {
        study.view.nn.get().map(|nn| {
            let end = nn.end.clone().map(|e| view! { <p class="callout" data-testid="nn-site-end">{e}</p> });
            view! {
                <section class="card site-study" data-testid="nn-site" data-released=nn.released data-records=nn.records>
                    <h2>"This site in the NN training"</h2>
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
                </section>
            }
        })
    }
}
