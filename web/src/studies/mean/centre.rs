//! The private mean on the presenter view: each site's noisy message against the CAPE estimate.

use capelab_core::study::mean::Query;
use leptos::prelude::*;

use crate::components::charts::forest;
use crate::components::charts::scale::format_value;
use crate::frame::centre::Centre;
use crate::frame::dashboard::{DashboardStudy, FinishedRound};
use crate::studies::mean::panel::phase_sentence;
use crate::studies::mean::results::messages_chart;

/// The latest round of the mean (or the regression), and the running one's phase.
pub fn latest_round(study: DashboardStudy, regression: bool) -> Option<FinishedRound> {
    study.view.rounds.with(|rs| {
        rs.iter()
            .rev()
            .find(|r| matches!(r.outcome.params.query, Query::Regression(_)) == regression)
            .cloned()
    })
}

pub fn running_phase(study: DashboardStudy, regression: bool) -> Option<String> {
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
