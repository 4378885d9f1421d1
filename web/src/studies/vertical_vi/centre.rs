//! The vertical study on the presenter view: one line of where the run is (step, test NLL, ε),
//! and the figure ([`crate::studies::vertical_vi::figure`]): the test NLL over the steps above
//! the twin's marginals, real against synthetic, one small multiple per column.

use capelab_vertical_vi::study::Status;
use leptos::prelude::*;

use crate::frame::centre::Centre;
use crate::frame::dashboard::DashboardStudy;
use crate::numbers::show;
use crate::studies::vertical_vi::figure::{self, Figure};
use crate::studies::vertical_vi::run::{VviData, VviLive};

/// Why the panel has no test NLL of its own, on the parties' own columns.
const NO_NLL: &str = "No test NLL for this run: the parties' columns never leave their tabs and \
                      no tab holds a whole row. Each party tab shows its own columns, real \
                      against this twin.";

/// The headline: the run, where it is, its test NLL and its ε, rounded to what they mean.
pub fn headline(live: &VviLive) -> String {
    let run = format!("Vertical study {}", live.number);
    if live.budget.is_some() || matches!(live.status, Status::Stopped(_)) {
        return format!("{run}: {}", live.status_line());
    }
    let nll = match (live.nll.first(), live.nll.last()) {
        (Some(a), Some(b)) if live.nll.len() > 1 => {
            format!(" · test NLL {} → {} nats", show(round(a.1)), show(round(b.1)))
        }
        _ => String::new(),
    };
    let epsilon =
        live.players.first().map_or(String::new(), |p| format!(" · ε = {}", show(p.epsilon)));
    match &live.status {
        Status::Released(_) => {
            format!("{run}: twin released after {} steps{nll}{epsilon}", live.task.steps)
        }
        _ => format!("{run}: step {} of {}{nll}{epsilon}", live.steps_done, live.task.steps),
    }
}

/// An NLL to a hundredth of a nat: what differs between runs.
fn round(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// What the synthetic bars are drawn from.
fn synthetic_label(live: &VviLive) -> String {
    match live.status {
        Status::Released(_) => "released twin".into(),
        _ if live.marginals_step == 0 => "synthetic twin (from step 1)".into(),
        _ => format!("twin at step {}", live.marginals_step),
    }
}

#[component]
pub fn VviCentre(study: DashboardStudy) -> impl IntoView {
    let headline = move || study.view.vvi.with(|l| l.as_ref().map(headline).unwrap_or_default());
    let markup = move || {
        study.view.vvi.with(|live| {
            let Some(live) = live else { return String::new() };
            study.view.vvi_baseline.with(|cli| {
                let points = cli.as_ref().map(|c| c.points()).unwrap_or_default();
                let name = "CLI baseline";
                let label = synthetic_label(live);
                let f = Figure {
                    nll: &live.nll,
                    cli: cli.as_ref().map(|_| (points.as_slice(), name)),
                    steps: live.task.steps,
                    marginals: &live.marginals,
                    synthetic_label: &label,
                    no_nll: match live.data {
                        VviData::Own { .. } => NO_NLL,
                        _ => "The test NLL appears after the first step.",
                    },
                };
                figure::render(&f, "present-vvi")
            })
        })
    };
    view! { <Centre headline=Signal::derive(headline) markup=Signal::derive(markup) id="present-vvi" file_stem="capelab-vertical" /> }
}
