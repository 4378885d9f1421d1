//! The dashboard's studies, one entry each. The frame (`frame/picker.rs`: the picker, one section
//! per study, the result scrolled into view and announced) and the presenter view work from this
//! list alone, so a new study is its folder plus one entry here.

use capelab_core::study::mean::Query;
use leptos::prelude::*;

use crate::frame::dashboard::DashboardStudy;
use crate::session::RoomState;
use crate::studies::efpsn::centre::EfpsnCentre;
use crate::studies::efpsn::panel::EfpsnPanel;
use crate::studies::ica::centre::IcaCentre;
use crate::studies::ica::panel::IcaPanel;
use crate::studies::mean::centre::MeanCentre;
use crate::studies::mean::panel::{MeanPanel, phase_sentence};
use crate::studies::mean::results_panel::ResultsPanel;
use crate::studies::nn::centre::NnCentre;
use crate::studies::nn::panel::NnPanel;
use crate::studies::regression::centre::RegressionCentre;
use crate::studies::regression::panel::RegressionPanel;
use crate::studies::vertical_vi::centre::VviCentre;
use crate::studies::vertical_vi::panel::VviPanel;

/// Where a study is in this tab: never run, running, or finished (with a sentence to announce).
#[derive(Clone, Debug, PartialEq)]
pub enum Stage {
    Idle,
    Running(String),
    Done(String),
}

impl Stage {
    pub fn has_run(&self) -> bool {
        !matches!(self, Stage::Idle)
    }
}

/// One study the dashboard offers.
pub struct StudyEntry {
    /// Its key in the picker (`data-testid="pick-{key}"`).
    pub key: &'static str,
    pub label: &'static str,
    /// Its section on the dashboard: the form, the live view and the results. Elements with the
    /// class `study-focus` are what the frame scrolls to when a run starts or ends.
    pub panel: fn(DashboardStudy, RoomState) -> AnyView,
    /// What the presenter view shows large during and after a run, with its progress.
    pub centrepiece: fn(DashboardStudy) -> AnyView,
    /// Where it is (read reactively).
    pub stage: fn(DashboardStudy) -> Stage,
}

pub static STUDIES: [StudyEntry; 6] = [
    StudyEntry {
        key: "mean",
        label: "Private mean",
        panel: |study, state| {
            view! { <MeanPanel study state /> <ResultsPanel study regression=false /> }.into_any()
        },
        centrepiece: |study| view! { <MeanCentre study /> }.into_any(),
        stage: |study| round_stage(study, false),
    },
    StudyEntry {
        key: "regression",
        label: "Private regression",
        panel: |study, state| {
            view! { <RegressionPanel study state /> <ResultsPanel study regression=true /> }
                .into_any()
        },
        centrepiece: |study| view! { <RegressionCentre study /> }.into_any(),
        stage: |study| round_stage(study, true),
    },
    StudyEntry {
        key: "nn",
        label: "Neural network (CAPE gradient descent)",
        panel: |study, state| view! { <NnPanel study state /> }.into_any(),
        centrepiece: |study| view! { <NnCentre study /> }.into_any(),
        stage: |study| {
            if let Some(live) = study.view.nn_live.get() {
                return Stage::Running(format!("Training {} is running.", live.number));
            }
            study.view.nn_rounds.with(|r| {
                r.last().map_or(Stage::Idle, |r| {
                    Stage::Done(format!("Training {} has finished.", r.number))
                })
            })
        },
    },
    StudyEntry {
        key: "ica",
        label: "Joint ICA (fMRI)",
        panel: |study, state| view! { <IcaPanel study state /> }.into_any(),
        centrepiece: |study| view! { <IcaCentre study /> }.into_any(),
        stage: |study| {
            study.view.ica.with(|i| match i {
                None => Stage::Idle,
                Some(i) if i.finished && i.djica.is_none() => {
                    Stage::Done(format!("Joint ICA study {} did not run.", i.number))
                }
                Some(i) if i.finished => {
                    Stage::Done(format!("Joint ICA study {} has finished.", i.number))
                }
                Some(i) => Stage::Running(format!("Joint ICA study {} is running.", i.number)),
            })
        },
    },
    StudyEntry {
        key: "efpsn",
        label: "Decentralised optimisation (EFPSN)",
        panel: |study, state| view! { <EfpsnPanel study state /> }.into_any(),
        centrepiece: |study| view! { <EfpsnCentre study /> }.into_any(),
        stage: |study| {
            study.view.efpsn.with(|e| match e {
                None if study.view.efpsn_preparing.get() => {
                    Stage::Running("The EFPSN study is loading its data.".into())
                }
                None => Stage::Idle,
                Some(e) if e.finished => {
                    Stage::Done(format!("EFPSN study {} has finished.", e.number))
                }
                Some(e) => Stage::Running(format!("EFPSN study {} is running.", e.number)),
            })
        },
    },
    StudyEntry {
        key: "vvi",
        label: "Vertical synthetic data (DP-VI + MPC)",
        panel: |study, state| view! { <VviPanel study state /> }.into_any(),
        centrepiece: |study| view! { <VviCentre study /> }.into_any(),
        stage: |study| {
            study.view.vvi.with(|v| match v {
                None if study.view.vvi_preparing.get() => {
                    Stage::Running("The vertical study is loading CPS1988.".into())
                }
                None => Stage::Idle,
                Some(v) if v.finished => {
                    Stage::Done(format!("Vertical study {} has finished.", v.number))
                }
                Some(v) => Stage::Running(format!("Vertical study {} is running.", v.number)),
            })
        },
    },
];

/// The entry with `key` (the first one for an unknown key).
pub fn entry(key: &str) -> &'static StudyEntry {
    STUDIES.iter().find(|e| e.key == key).unwrap_or(&STUDIES[0])
}

/// The private mean and the regression share the round machinery: a running round of the
/// matching query, else the latest finished one.
fn round_stage(study: DashboardStudy, regression: bool) -> Stage {
    let matches = |q: &Query| matches!(q, Query::Regression(_)) == regression;
    if let Some(live) = study.view.live.get().filter(|l| matches(&l.params.query)) {
        return Stage::Running(phase_sentence(&live));
    }
    study.view.rounds.with(|rounds| {
        rounds.iter().rev().find(|r| matches(&r.outcome.params.query)).map_or(Stage::Idle, |r| {
            let how = if r.outcome.estimates().is_some() { "has a result" } else { "ended" };
            Stage::Done(format!("Round {} {how}.", r.number))
        })
    })
}
