//! Joint ICA on the presenter view: the spatial maps as they emerge, with q_NGI.

use leptos::prelude::*;

use crate::components::charts::heatmap;
use crate::components::charts::scale::format_value;
use crate::frame::centre::Centre;
use crate::frame::dashboard::DashboardStudy;
use crate::studies::ica::view::maps_spec;

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
