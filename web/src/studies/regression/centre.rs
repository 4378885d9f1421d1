//! The regression on the presenter view: the private model ŵ against the population's w*.

use leptos::prelude::*;

use crate::components::charts::forest;
use crate::frame::centre::Centre;
use crate::frame::dashboard::DashboardStudy;
use crate::studies::mean::centre::{latest_round, running_phase};
use crate::studies::regression::view::{presenter_weights_chart, summary};

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
            .map(|s| forest::render(&presenter_weights_chart(&s), "present-weights"))
            .unwrap_or_default()
    };
    view! { <Centre headline=Signal::derive(headline) markup=Signal::derive(markup) id="present-weights" file_stem="capelab-weights" /> }
}
