//! The vertical study on the presenter view.

use leptos::prelude::*;

use crate::frame::dashboard::DashboardStudy;

/// The vertical study large: its progress and the test NLL curve, then the twin's first rows once
/// released.
#[component]
pub fn VviCentre(study: DashboardStudy) -> impl IntoView {
    use crate::studies::vertical_vi::view::{nll_chart, status_text};
    move || {
        study.view.vvi.get().map(|live| {
            let (text, progress) = status_text(&live.status, live.task.steps);
            let chart = crate::components::charts::line::render(
                &nll_chart(&live.nll, live.task.steps, study.view.vvi_baseline.get().as_ref()),
                "present-vvi-nll",
            );
            let twin = live.twin.map(|t| {
                let header = t.sample.header.join(" · ");
                let rows = t
                    .sample
                    .rows
                    .iter()
                    .take(6)
                    .map(|r| view! { <li>{r.join(" · ")}</li> })
                    .collect_view();
                view! { <p class="muted">{header}</p><ul>{rows}</ul> }
            });
            view! {
                <div class="present-centre" data-testid="present-vvi">
                    <p class="present-headline" data-testid="present-progress">
                        {format!("Vertical study {}: step {} of {} · {text}", live.number, live.steps_done, live.task.steps)}
                    </p>
                    <progress max="1" value=progress></progress>
                    <div class="chart-svg" inner_html=chart></div>
                    {twin}
                </div>
            }
        })
    }
}
