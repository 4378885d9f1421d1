//! EFPSN on the presenter view.

use leptos::prelude::*;

use crate::frame::dashboard::DashboardStudy;

/// The EFPSN study large: the graph and the accuracy of the runs side by side.
#[component]
pub fn EfpsnCentre(study: DashboardStudy) -> impl IntoView {
    use crate::studies::efpsn::view::{accuracy_chart, activity, graph_svg};
    move || {
        study.view.efpsn.get().map(|live| {
            let iterations = live.task.runs[0].plan.phase2.iterations;
            let names: Vec<String> = (0..live.agents.len()).map(|i| live.name(i)).collect();
            let now: Vec<_> = (0..names.len()).map(|i| activity(&live.runs, i)).collect();
            let graph = graph_svg(&live.graph, &names, &now);
            let chart = crate::components::charts::line::render(
                &accuracy_chart(&live.runs, iterations, live.x_star_score),
                "present-efpsn-accuracy",
            );
            view! {
                <div class="centrepiece" data-testid="present-efpsn">
                    <div class="chart-svg" inner_html=graph></div>
                    <div class="chart-svg" inner_html=chart></div>
                </div>
            }
        })
    }
}
