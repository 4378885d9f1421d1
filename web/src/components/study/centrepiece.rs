//! What the presenter view shows large for each study during and after a run: its progress in
//! one line and its one chart (the messages against the estimate, ŵ against w*, the accuracy
//! curve, the spatial maps). Each is sized by the presenter's frame (`.present-centre`), so it
//! fits the screen with the budget bars beside it.

use capelab_core::study::mean::Query;
use leptos::prelude::*;

use super::mean_panel::phase_sentence;
use crate::components::charts::scale::format_value;
use crate::components::charts::{Chart, forest, heatmap, line};
use crate::study_driver::dashboard::{DashboardStudy, FinishedRound};
use crate::study_view::ica::maps_spec;
use crate::study_view::nn::{Progress, final_accuracy, training_chart};
use crate::study_view::regression::{summary, weights_chart};
use crate::study_view::results::messages_chart;

/// The headline and the chart, as every centrepiece lays them out.
#[component]
fn Centre(
    #[prop(into)] headline: Signal<String>,
    #[prop(into)] markup: Signal<String>,
    id: &'static str,
    file_stem: &'static str,
) -> impl IntoView {
    view! {
        <div class="present-centre" data-testid="present-centrepiece">
            <p class="present-headline" data-testid="present-progress">{move || headline.get()}</p>
            <Chart markup id=id.to_owned() file_stem=file_stem.to_owned() testid="present-chart" />
        </div>
    }
}

/// The latest round of the mean (or the regression), and the running one's phase.
fn latest_round(study: DashboardStudy, regression: bool) -> Option<FinishedRound> {
    study.view.rounds.with(|rs| {
        rs.iter()
            .rev()
            .find(|r| matches!(r.outcome.params.query, Query::Regression(_)) == regression)
            .cloned()
    })
}

fn running_phase(study: DashboardStudy, regression: bool) -> Option<String> {
    study.view.live.with(|l| {
        l.as_ref()
            .filter(|l| matches!(l.params.query, Query::Regression(_)) == regression)
            .map(phase_sentence)
    })
}

#[component]
pub fn MeanCentre(study: DashboardStudy) -> impl IntoView {
    let headline = move || {
        if let Some(phase) = running_phase(study, false) {
            return phase;
        }
        match latest_round(study, false) {
            Some(r) => match r.outcome.estimates() {
                Some(e) => format!(
                    "Round {}: CAPE estimate {} from {} sites",
                    r.number,
                    e.cape.iter().map(|v| format_value(*v)).collect::<Vec<_>>().join(", "),
                    e.survivors.len()
                ),
                None => format!("Round {} ended without an estimate.", r.number),
            },
            None => String::new(),
        }
    };
    let markup = move || {
        latest_round(study, false)
            .and_then(|r| messages_chart(&r, 0))
            .map(|s| forest::render(&s, "present-messages"))
            .unwrap_or_default()
    };
    view! { <Centre headline=Signal::derive(headline) markup=Signal::derive(markup) id="present-messages" file_stem="capelab-messages" /> }
}

#[component]
pub fn RegressionCentre(study: DashboardStudy) -> impl IntoView {
    let headline = move || {
        if let Some(phase) = running_phase(study, true) {
            return phase;
        }
        match latest_round(study, true) {
            Some(r) if summary(&r).is_some() => {
                format!("Round {}: the private model ŵ against the population's w*", r.number)
            }
            Some(r) => format!("Round {} ended without a model.", r.number),
            None => String::new(),
        }
    };
    let markup = move || {
        latest_round(study, true)
            .and_then(|r| summary(&r))
            .map(|s| forest::render(&weights_chart(&s), "present-weights"))
            .unwrap_or_default()
    };
    view! { <Centre headline=Signal::derive(headline) markup=Signal::derive(markup) id="present-weights" file_stem="capelab-weights" /> }
}

#[component]
pub fn NnCentre(study: DashboardStudy) -> impl IntoView {
    // The running training, else the latest finished one: (records, J, chance, number).
    let shown = move || {
        study
            .view
            .nn_live
            .with(|l| {
                l.as_ref().map(|l| {
                    (
                        l.records.clone(),
                        l.params.max_iterations,
                        l.chance,
                        l.number,
                        l.phase.clone(),
                    )
                })
            })
            .or_else(|| {
                study.view.nn_rounds.with(|r| {
                    r.last().map(|r| {
                        let o = &r.outcome;
                        (
                            o.records.clone(),
                            o.params.max_iterations,
                            r.chance,
                            r.number,
                            String::new(),
                        )
                    })
                })
            })
    };
    let headline = move || {
        shown().map_or_else(String::new, |(records, total, _, number, phase)| {
            let p = Progress::of(&records, total);
            let acc = final_accuracy(&records).map_or("—".to_owned(), format_value);
            format!(
                "Training {number}: iteration {} of {} · accuracy {acc} {phase}",
                p.done, p.total
            )
        })
    };
    let markup = move || {
        shown()
            .map(|(records, total, chance, ..)| {
                line::render(&training_chart(&records, total, chance), "present-accuracy")
            })
            .unwrap_or_default()
    };
    view! { <Centre headline=Signal::derive(headline) markup=Signal::derive(markup) id="present-accuracy" file_stem="capelab-accuracy" /> }
}

#[component]
pub fn IcaCentre(study: DashboardStudy) -> impl IntoView {
    let headline = move || {
        study.view.ica.with(|l| {
            l.as_ref().map_or_else(String::new, |l| {
                let done = l.points.last().map_or(0, |p| p.iteration);
                let q = l.points.last().and_then(|p| p.q);
                format!(
                    "{} · iteration {done} of {}{}",
                    l.stage,
                    l.form.max_iterations,
                    q.map(|q| format!(" · q_NGI {}", format_value(q))).unwrap_or_default()
                )
            })
        })
    };
    let markup = move || {
        study.view.ica.with(|l| {
            l.as_ref()
                .and_then(|l| {
                    let q = l.points.last().and_then(|p| p.q);
                    let title =
                        if l.finished { "Spatial maps (final)" } else { "Spatial maps (live)" };
                    l.maps
                        .as_ref()
                        .map(|m| heatmap::render(&maps_spec(m, q, title), "present-maps"))
                })
                .unwrap_or_default()
        })
    };
    view! { <Centre headline=Signal::derive(headline) markup=Signal::derive(markup) id="present-maps" file_stem="capelab-maps" /> }
}

/// The EFPSN study large: the graph and the accuracy of the runs side by side.
#[component]
pub fn EfpsnCentre(study: DashboardStudy) -> impl IntoView {
    use crate::study_view::efpsn::{accuracy_chart, activity, graph_svg};
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

/// The vertical study large: its progress and the test NLL curve, then the twin's first rows once
/// released.
#[component]
pub fn VviCentre(study: DashboardStudy) -> impl IntoView {
    use crate::study_view::vvi::{nll_chart, status_text};
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
