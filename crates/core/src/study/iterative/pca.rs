/*!
capePCA (spec cape-secagg-pca-djica §4, Algorithm 3) as an iterative study of one iteration:
each site releases the upper triangle of its covariance C_s = (1/N_s)·X_s·X_sᵀ once, with
symmetric noise (one draw per upper-triangle entry, mirrored: [`crate::pca::add_symmetric`]'s
layout); the aggregator averages the releases, takes the eigenvectors of the R largest algebraic
eigenvalues and forms capeDJICA's input map K (R×D, whitened or not, [`Whitening`]).

The release is the same as [`crate::pca::cape_pca`]'s: Δ_C is [`CovarianceSensitivity::delta`]
(the sensitivity of the upper-triangle vector), τ = z·Δ_C with z = c(δ_p)/ε_p, and in upfront
mode the zero-sum part comes from the study's one SecureAgg run (J_max = 1).

The task may carry the public description of a synthetic study ([`PublicSynthetic`]): the maps
are public (every site mixes its own subjects with them), the sources are each site's own.
*/

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use crate::fmri::synthetic::{SyntheticConfig, generate_subjects, maps};
use crate::fmri::{FmriError, SiteData};
use crate::ica_quality::principal_cosines;
use crate::pca::{
    CovarianceSensitivity, PrincipalSubspace, Whitening, add_symmetric, site_covariance, upper_len,
};

use super::step::{AggregatorStep, SiteStep, StepShape, Update};

/// The most voxels a browser study handles: the covariance release is D(D+1)/2 values (D = 1024:
/// 525 k values, 4 MB per message).
pub const MAX_VOXELS: usize = 1024;

/// Which generator preset a public synthetic study uses ([`SyntheticConfig`]'s two).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SyntheticPreset {
    /// Jittered lattice, narrow blobs, Laplace innovations (the demo default, spec §9.7).
    WellConditioned,
    /// Random overlapping blobs, Gaussian innovations (spec §6; nearly the hardest case).
    PaperLike,
}

/// A synthetic study's public part: the generator's settings and the seed of the shared maps.
/// Every site generates `subjects_per_site` subjects of its own (their sources from the site's
/// private seed) and mixes them with the public maps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PublicSynthetic {
    pub preset: SyntheticPreset,
    /// G: the maps are G×G.
    pub grid: usize,
    /// R.
    pub components: usize,
    /// N_m.
    pub timepoints: usize,
    pub subjects_per_site: usize,
    pub maps_seed: u64,
}

impl PublicSynthetic {
    /// The generator's configuration for one site.
    pub fn config(&self) -> SyntheticConfig {
        let base = match self.preset {
            SyntheticPreset::WellConditioned => SyntheticConfig::well_conditioned(1, 1),
            SyntheticPreset::PaperLike => SyntheticConfig::paper_like(1, 1),
        };
        SyntheticConfig {
            grid: self.grid,
            components: self.components,
            timepoints: self.timepoints,
            subjects_per_site: vec![self.subjects_per_site],
            ..base
        }
    }

    /// D = G².
    pub fn voxels(&self) -> usize {
        self.grid * self.grid
    }

    /// The true maps A (D×R): public, so the dashboard can score what the study recovers.
    pub fn maps(&self) -> DMatrix<f64> {
        maps(&self.config(), self.maps_seed)
    }

    /// This site's data: its subjects' sources from `own_seed`, mixed with the public maps.
    pub fn site_data(&self, own_seed: u64) -> Result<SiteData, FmriError> {
        self.validate()?;
        let config = self.config();
        Ok(generate_subjects(&config, &self.maps(), own_seed, 0, self.subjects_per_site)?.0)
    }

    /// Checks the settings and that one site's data stays within what a tab can hold.
    pub fn validate(&self) -> Result<(), FmriError> {
        let d = self.grid.saturating_mul(self.grid);
        if d > MAX_VOXELS {
            return Err(FmriError::Config(format!(
                "grid {} gives D = {d} voxels, more than the {MAX_VOXELS} a browser study takes",
                self.grid
            )));
        }
        let values = d.saturating_mul(self.subjects_per_site).saturating_mul(self.timepoints);
        if values > MAX_SITE_VALUES {
            return Err(FmriError::Config(format!(
                "one site's data would be {values} values (D × subjects × time points), more than \
                 {MAX_SITE_VALUES}"
            )));
        }
        self.config().validate()
    }
}

/// The largest site data set (D × N_s values) a tab generates: 16 M values, 128 MB in f64.
pub const MAX_SITE_VALUES: usize = 1 << 24;

/// capePCA's public description.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PcaTask {
    /// D.
    pub voxels: usize,
    /// R, the dimension kept.
    pub components: usize,
    pub sensitivity: CovarianceSensitivity,
    pub whitening: Whitening,
    /// The synthetic study sites generate, if they use generated data.
    pub synthetic: Option<PublicSynthetic>,
}

impl PcaTask {
    /// D(D+1)/2: the length of every release.
    pub fn statistic_len(&self) -> usize {
        upper_len(self.voxels)
    }

    fn check(&self) -> Result<(), String> {
        if self.voxels == 0 || self.voxels > MAX_VOXELS {
            return Err(format!("D = {} voxels must be between 1 and {MAX_VOXELS}", self.voxels));
        }
        if self.components < 2 || self.components > self.voxels {
            return Err(format!(
                "R = {} components must be between 2 and D = {}",
                self.components, self.voxels
            ));
        }
        Ok(())
    }
}

/// capePCA's result, broadcast with the study's end: the released eigenvalues and K.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PcaState {
    /// λ_1 ≥ … ≥ λ_R of the averaged noisy covariance (empty before the release).
    pub eigenvalues: Vec<f64>,
    /// K (R×D, column-major): capeDJICA's input is K·x.
    pub projection: Vec<f64>,
}

impl PcaState {
    /// K as a matrix, if the release happened.
    pub fn projection_matrix(&self) -> Option<DMatrix<f64>> {
        let r = self.eigenvalues.len();
        (r > 0 && self.projection.len().is_multiple_of(r))
            .then(|| DMatrix::from_column_slice(r, self.projection.len() / r, &self.projection))
    }
}

/// A site's side: its normalised data (D×N_s), never sent.
pub struct PcaSite {
    data: SiteData,
    sensitivity: Option<CovarianceSensitivity>,
}

impl PcaSite {
    pub fn new(data: SiteData) -> Self {
        Self { data, sensitivity: None }
    }

    pub fn data(&self) -> &SiteData {
        &self.data
    }

    /// Gives the data back (capeDJICA runs on the same data next).
    pub fn into_data(self) -> SiteData {
        self.data
    }
}

impl SiteStep for PcaSite {
    const NAME: &'static str = "capepca";
    type Task = PcaTask;
    type State = PcaState;

    fn prepare(&mut self, task: &PcaTask, _private: bool) -> Result<StepShape, String> {
        task.check()?;
        check_data(&self.data, task.voxels)?;
        self.sensitivity = Some(task.sensitivity);
        let sensitivity = task.sensitivity.delta(self.data.samples(), self.data.max_subject_len());
        Ok(StepShape { len: task.statistic_len(), sensitivity })
    }

    fn statistic(&mut self, _state: &PcaState, _iteration: u32) -> Result<Vec<f64>, String> {
        if self.sensitivity.is_none() {
            return Err("the site was not prepared".into());
        }
        Ok(upper_triangle(&site_covariance(&self.data)))
    }
}

/// The checks a site's data passes before any study uses it: D voxels, finite values.
pub(super) fn check_data(data: &SiteData, voxels: usize) -> Result<(), String> {
    if data.voxels() != voxels {
        return Err(format!("the data has {} voxels, the study D = {voxels}", data.voxels()));
    }
    if data.samples() == 0 {
        return Err("the site holds no time points".into());
    }
    if let Some(i) = data.xt.iter().position(|v| !v.is_finite()) {
        let (time, voxel) = (i % data.samples(), i / data.samples());
        return Err(format!("voxel {voxel} at time point {time} is not finite"));
    }
    Ok(())
}

/// The upper triangle, row-major ((0,0), (0,1), …, (1,1), …): [`add_symmetric`]'s layout.
pub fn upper_triangle(c: &DMatrix<f64>) -> Vec<f64> {
    let d = c.nrows();
    let mut out = Vec::with_capacity(upper_len(d));
    for i in 0..d {
        for j in i..d {
            out.push(c[(i, j)]);
        }
    }
    out
}

/// What the dashboard shows after the release.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PcaReport {
    pub eigenvalues: Vec<f64>,
    /// Cosines of the principal angles between span(V_R) and span(A), when A is known.
    pub principal_cosines: Option<Vec<f64>>,
    /// Why no subspace came out (e.g. the noise made every eigenvalue negative).
    pub error: Option<String>,
}

/// The aggregator's side: averages the releases and takes the subspace.
pub struct PcaAggregator {
    task: PcaTask,
    truth: Option<DMatrix<f64>>,
    error: Option<String>,
}

impl PcaAggregator {
    /// `truth`: the true maps A (D×R) when known, for the principal cosines.
    pub fn new(task: PcaTask, truth: Option<DMatrix<f64>>) -> Self {
        Self { task, truth, error: None }
    }
}

impl AggregatorStep for PcaAggregator {
    const NAME: &'static str = "capepca";
    type Task = PcaTask;
    type State = PcaState;
    type Report = PcaReport;

    fn task(&self) -> PcaTask {
        self.task.clone()
    }

    fn initial_state(&mut self) -> PcaState {
        PcaState::default()
    }

    fn statistic_len(&self) -> usize {
        self.task.statistic_len()
    }

    fn update(&mut self, _iteration: u32, _state: &PcaState, mean: &[f64]) -> Update<PcaState> {
        let d = self.task.voxels;
        let mut c = DMatrix::zeros(d, d);
        add_symmetric(&mut c, mean);
        let subspace = PrincipalSubspace::from_covariance(&c, self.task.components);
        let result = subspace.and_then(|s| {
            let k = s.projection(self.task.whitening)?;
            Ok(PcaState { eigenvalues: s.eigenvalues, projection: k.as_slice().to_vec() })
        });
        match result {
            Ok(state) => Update::Stop { state, reason: "capePCA released the subspace".into() },
            Err(e) => {
                self.error = Some(e.to_string());
                Update::Stop { state: PcaState::default(), reason: format!("capePCA failed: {e}") }
            }
        }
    }

    fn report(&self, _iteration: u32, state: &PcaState) -> PcaReport {
        let cosines = match (&self.truth, state.projection_matrix()) {
            (Some(a), Some(k)) if a.nrows() == k.ncols() => {
                Some(principal_cosines(&k.transpose(), a))
            }
            _ => None,
        };
        PcaReport {
            eigenvalues: state.eigenvalues.clone(),
            principal_cosines: cosines,
            error: self.error.clone(),
        }
    }
}
