//! The NN study on the presenter view: held-out accuracy per iteration.

use leptos::prelude::*;

use crate::components::charts::line;
use crate::components::charts::scale::format_value;
use crate::frame::centre::Centre;
use crate::frame::dashboard::DashboardStudy;
use crate::studies::nn::view::{Progress, final_accuracy, training_chart};

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
