//! What a site tab shows of its part in a Joint ICA study, as the worker computes it: its data at
//! a glance (never sent), where its role is, and the noise it added to each release.

use capelab_core::fmri::SiteData;
use capelab_core::study::iterative::{IterSitePhase, SiteIteration};
use serde::{Deserialize, Serialize};

/// The site's data at a glance: kept in the tab, never sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DataSummary {
    /// "generated from this tab's seed …" or the file's name.
    pub origin: String,
    pub subjects: usize,
    pub samples: usize,
    pub voxels: usize,
    /// G when the voxels form a G×G image.
    pub grid: Option<usize>,
    /// The first subject's first few time points as G×G images (empty without a grid).
    pub frames: Vec<Vec<f64>>,
    /// The first subject's time course at its most active voxel.
    pub course: Vec<f64>,
    pub course_voxel: usize,
}

impl DataSummary {
    pub const FRAMES: usize = 4;
    pub const COURSE: usize = 120;

    pub fn of(data: &SiteData, origin: String) -> Self {
        let d = data.voxels();
        let grid = (1..=d).find(|g| g * g == d);
        let first = data.subject_lengths.first().copied().unwrap_or(0);
        let frames = match grid {
            Some(_) => (0..first.min(Self::FRAMES))
                .map(|t| data.xt.row(t).iter().copied().collect())
                .collect(),
            None => Vec::new(),
        };
        // The voxel with the largest variance over the first subject.
        let course_voxel = (0..d)
            .map(|v| (v, (0..first).map(|t| data.xt[(t, v)].powi(2)).sum::<f64>()))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map_or(0, |(v, _)| v);
        let course = (0..first.min(Self::COURSE)).map(|t| data.xt[(t, course_voxel)]).collect();
        DataSummary {
            origin,
            subjects: data.subjects(),
            samples: data.samples(),
            voxels: d,
            grid,
            frames,
            course,
            course_voxel,
        }
    }
}

/// One release: how large the exact statistic was and how large the noise added to it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoisePoint {
    pub iteration: u32,
    pub statistic_norm: f64,
    pub noise_norm: f64,
    /// ‖e_s‖ of the zero-sum part (CAPE), which cancels in the average.
    pub zero_sum_norm: Option<f64>,
}

impl NoisePoint {
    pub fn of(it: &SiteIteration) -> Self {
        let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
        NoisePoint {
            iteration: it.iteration,
            statistic_norm: norm(&mut it.statistic.iter().copied()),
            noise_norm: norm(&mut it.release.iter().zip(&it.statistic).map(|(r, s)| r - s)),
            zero_sum_norm: it.zero_sum_noise.as_ref().map(|e| norm(&mut e.iter().copied())),
        }
    }
}

/// The site's part in its current (or last) Joint ICA step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IcaSiteView {
    /// "capepca" or "capedjica" (empty before any study).
    pub computation: String,
    pub phase: String,
    pub data: Option<DataSummary>,
    pub released: u32,
    pub max_iterations: u32,
    /// One point per release of the current step.
    pub noise: Vec<NoisePoint>,
    /// capeDJICA: R and the last iteration's exact G_s and what was sent (R×R, column-major).
    pub components: usize,
    pub last_gradient: Option<Vec<f64>>,
    pub last_release: Option<Vec<f64>>,
    /// How the step ended.
    pub end: Option<String>,
    /// Inputs the role refused, newest last.
    pub refusals: Vec<String>,
}

/// The step's name for the tab.
pub fn step_title(computation: &str) -> &'static str {
    match computation {
        "capepca" => "capePCA: one noisy covariance release",
        "capedjica" => "capeDJICA: a noisy gradient per iteration",
        _ => "Joint ICA",
    }
}

/// Where the site is, in words for the tab.
pub fn phase_text(computation: &str, phase: IterSitePhase) -> String {
    let what = if computation == "capepca" { "covariance" } else { "gradient" };
    match phase {
        IterSitePhase::AwaitingStart => "Waiting for the dashboard".into(),
        IterSitePhase::Accepted => "Accepted: the ledger allows every release".into(),
        IterSitePhase::Summing(_) => {
            "Upfront SecureAgg: summing the zero-sum noise of every release at once".into()
        }
        IterSitePhase::Iterating { released: 0 } => "Waiting for the first state".into(),
        IterSitePhase::Iterating { released } => {
            format!("Released the noisy {what} of iteration {released}")
        }
        IterSitePhase::Repairing { from_iteration, .. } => format!(
            "Zero-sum repair: a site left; summing fresh noise for iterations {from_iteration} on"
        ),
        IterSitePhase::Excluded => "Not in the noise sum: waiting for the end".into(),
        IterSitePhase::Done => "Done".into(),
        IterSitePhase::Declined => "Declined: nothing but the refusal was sent".into(),
        IterSitePhase::NotInvited => "Not invited to this study".into(),
        IterSitePhase::Aborted => "The study ended early".into(),
    }
}
