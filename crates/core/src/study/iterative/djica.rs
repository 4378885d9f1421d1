/*!
capeDJICA (spec cape-secagg-pca-djica §5, Algorithm 4) as an iterative study: the dashboard
broadcasts (W, b), each site releases its clipped mean natural gradient on its projected data
K·X_s ([`crate::djica::DjicaSite::gradient`]), the dashboard averages and takes the infomax step
with the learning-rate rules of [`crate::djica::schedule`] ([`DjicaAggregator`]).

**One release per iteration.** Algorithm 4 releases Ĝ_s (sensitivity Δ_G) and ĥ_s (Δ_h) with
noise τ_G = z·Δ_G and τ_h = z·Δ_h, z = c(δ_i)/ε_i. The iterative roles add one τ to every
coordinate, so a site releases (G_s, (B_G/B_h)·h_s): both blocks then have sensitivity Δ_G, the
whole vector √2·Δ_G, and noise τ = z·Δ_G on every coordinate is exactly the paper's noise on both
(the aggregator divides the second block by B_G/B_h again). Announced as Δ = √2·Δ_G with
multiplier z/√2, the ledger's Gaussian event is the composition of the paper's two releases: their
zCDP/RDP costs add to the same 1/z² ([`noise_for`]).

The run's shape follows [`crate::djica::run_djica`]: W₀ = I, b₀ = 0, the method's default
schedule, and under noise the average of the last `average_tail` of the iterates as the result
(post-processing, free). With the same data and no noise both give the same W.
*/

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use crate::djica::calibration::{GaussianLevel, PrivacyUnit, mean_sensitivity};
use crate::djica::gradient::ClipBounds;
use crate::djica::schedule::{RateController, Schedule, Verdict};
use crate::djica::site::{DjicaAggregator, DjicaSite, Precision};
use crate::fmri::SiteData;
use crate::gaussian::CalibrationError;
use crate::ica_quality::q_ngi;

use super::pca::{MAX_VOXELS, check_data};
use super::step::{AggregatorStep, SiteStep, StepShape, Update};

/// capeDJICA's public description.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DjicaTask {
    /// D.
    pub voxels: usize,
    /// R.
    pub components: usize,
    /// K (R×D, column-major) from capePCA: the sites' input is K·x.
    pub projection: Vec<f64>,
    pub bounds: ClipBounds,
    pub unit: PrivacyUnit,
    pub precision: Precision,
}

impl DjicaTask {
    /// R² + R: vec(G) then the scaled h.
    pub fn statistic_len(&self) -> usize {
        self.components * self.components + self.components
    }

    /// Δ of a site's release: √2·Δ_G for N_s samples, subjects of at most N_m.
    pub fn sensitivity(&self, samples: usize, max_subject_len: usize) -> f64 {
        std::f64::consts::SQRT_2
            * mean_sensitivity(self.unit, self.bounds.gradient, samples, max_subject_len)
    }

    fn bias_scale(&self) -> f64 {
        self.bounds.gradient / self.bounds.bias
    }

    /// K, once the task's values are checked (they come off the network).
    fn check(&self) -> Result<DMatrix<f64>, String> {
        let (r, d) = (self.components, self.voxels);
        if d > MAX_VOXELS {
            return Err(format!("D = {d} voxels is more than the {MAX_VOXELS} a study takes"));
        }
        if r < 2 || r > d {
            return Err(format!("R = {r} components must be between 2 and D = {d}"));
        }
        if self.projection.len() != r * d {
            return Err(format!(
                "the projection has {} values, R×D = {r}×{d} needs {}",
                self.projection.len(),
                r * d
            ));
        }
        if self.projection.iter().any(|v| !v.is_finite()) {
            return Err("the projection has a non-finite value".into());
        }
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if !positive(self.bounds.gradient) || !positive(self.bounds.bias) {
            return Err(format!(
                "clipping bounds B_G = {}, B_h = {} must be positive",
                self.bounds.gradient, self.bounds.bias
            ));
        }
        Ok(DMatrix::from_column_slice(r, d, &self.projection))
    }
}

/// The announced Δ and multiplier of a study at per-release level `level` (ε_i, δ_i): Δ =
/// √2·Δ_G and z/√2 with z = c(δ_i)/ε_i, so every coordinate's noise is τ_G = z·Δ_G (module docs).
pub fn noise_for(
    task: &DjicaTask,
    level: GaussianLevel,
    samples: usize,
    max_subject_len: usize,
) -> Result<(f64, f64), CalibrationError> {
    let z = level.multiplier()?;
    Ok((task.sensitivity(samples, max_subject_len), z / std::f64::consts::SQRT_2))
}

/// capeDJICA's public state: W (R×R, column-major) and b.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DjicaState {
    pub w: Vec<f64>,
    pub b: Vec<f64>,
}

impl DjicaState {
    fn identity(r: usize) -> Self {
        Self { w: DMatrix::<f64>::identity(r, r).as_slice().to_vec(), b: vec![0.0; r] }
    }

    /// W as a matrix.
    pub fn w_matrix(&self) -> DMatrix<f64> {
        let r = self.b.len();
        DMatrix::from_column_slice(r, r, &self.w)
    }
}

/// A site's side: its normalised data (D×N_s) and, once prepared, its projected samples.
pub struct DjicaStudySite {
    data: SiteData,
    site: Option<DjicaSite>,
    task: Option<DjicaTask>,
    last_clipped: usize,
}

impl DjicaStudySite {
    pub fn new(data: SiteData) -> Self {
        Self { data, site: None, task: None, last_clipped: 0 }
    }

    pub fn data(&self) -> &SiteData {
        &self.data
    }

    /// R, once prepared (0 before).
    pub fn components(&self) -> usize {
        self.task.as_ref().map_or(0, |t| t.components)
    }

    /// How many samples the clip scaled down in the last iteration (kept at the site).
    pub fn last_clipped(&self) -> usize {
        self.last_clipped
    }
}

impl SiteStep for DjicaStudySite {
    const NAME: &'static str = "capedjica";
    type Task = DjicaTask;
    type State = DjicaState;

    fn prepare(&mut self, task: &DjicaTask, _private: bool) -> Result<StepShape, String> {
        let k = task.check()?;
        check_data(&self.data, task.voxels)?;
        self.site =
            Some(DjicaSite::gradient_only(crate::pca::project(&k, &self.data), task.precision));
        self.task = Some(task.clone());
        Ok(StepShape {
            len: task.statistic_len(),
            sensitivity: task.sensitivity(self.data.samples(), self.data.max_subject_len()),
        })
    }

    fn statistic(&mut self, state: &DjicaState, _iteration: u32) -> Result<Vec<f64>, String> {
        let (Some(site), Some(task)) = (self.site.as_mut(), self.task.as_ref()) else {
            return Err("the site was not prepared".into());
        };
        let r = task.components;
        if state.w.len() != r * r || state.b.len() != r {
            return Err(format!(
                "the state has W of {} and b of {} values, R = {r} needs {} and {r}",
                state.w.len(),
                state.b.len(),
                r * r
            ));
        }
        if state.w.iter().chain(&state.b).any(|v| !v.is_finite()) {
            return Err("the state has a non-finite value".into());
        }
        let grad =
            site.gradient(&state.w_matrix(), &DVector::from_column_slice(&state.b), task.bounds);
        self.last_clipped = grad.clipped;
        let scale = task.bias_scale();
        let mut out = Vec::with_capacity(task.statistic_len());
        out.extend_from_slice(grad.g.as_slice());
        out.extend(grad.h.iter().map(|v| v * scale));
        Ok(out)
    }
}

/// What the dashboard shows after each iteration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DjicaReport {
    /// ρ of this update.
    pub rate: f64,
    /// ‖ΔW‖²_F of this update.
    pub change: f64,
    /// q_NGI of the state, when the true maps are known.
    pub q: Option<f64>,
    pub restarts: usize,
}

/// How the dashboard runs the loop: the parts of [`crate::djica::DjicaConfig`] the aggregator
/// uses.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DjicaSchedule {
    /// ρ₀.
    pub initial_rate: f64,
    pub schedule: Schedule,
    /// The stopping tolerance on ‖ΔW‖²_F.
    pub tolerance: f64,
    /// The final fraction of J_max whose iterates are averaged into the result (0 = off).
    pub average_tail: f64,
}

impl DjicaSchedule {
    /// [`crate::djica::run_djica`]'s defaults: a noisy run decays ρ and averages the last half;
    /// a non-private one anneals as runica does and keeps its last iterate.
    pub fn for_private(private: bool) -> Self {
        let method =
            if private { crate::djica::Method::Cape } else { crate::djica::Method::NonPrivate };
        let defaults = crate::djica::DjicaConfig::default();
        Self {
            initial_rate: defaults.initial_rate,
            schedule: method.default_schedule(),
            tolerance: defaults.tolerance,
            average_tail: if private { defaults.average_tail } else { 0.0 },
        }
    }
}

/// The aggregator's side: (W, b), the learning-rate controller and the tail average.
pub struct DjicaStudyAggregator {
    task: DjicaTask,
    aggregator: DjicaAggregator,
    max_iterations: u32,
    average_from: u32,
    average: bool,
    sum_w: DMatrix<f64>,
    sum_b: DVector<f64>,
    averaged: usize,
    /// A_eff = K·A (R×R), when the true maps are known.
    truth: Option<DMatrix<f64>>,
    last: (f64, f64),
}

impl DjicaStudyAggregator {
    /// `truth`: the true maps A (D×R) when known (q_NGI is computed on W·K·A).
    pub fn new(
        task: DjicaTask,
        schedule: DjicaSchedule,
        max_iterations: u32,
        truth: Option<&DMatrix<f64>>,
    ) -> Result<Self, String> {
        let k = task.check()?;
        let r = task.components;
        let tail = schedule.average_tail.clamp(0.0, 1.0);
        let average_from = max_iterations
            - ((tail * f64::from(max_iterations)).round() as u32).min(max_iterations);
        let truth = match truth {
            Some(a) if a.shape() == (task.voxels, r) => Some(&k * a),
            Some(a) => {
                return Err(format!(
                    "the true maps are {}×{}, need D×R = {}×{r}",
                    a.nrows(),
                    a.ncols(),
                    task.voxels
                ));
            }
            None => None,
        };
        let controller =
            RateController::new(schedule.schedule, schedule.initial_rate, schedule.tolerance);
        Ok(Self {
            aggregator: DjicaAggregator::new(
                DMatrix::identity(r, r),
                DVector::zeros(r),
                controller,
            ),
            task,
            max_iterations,
            average_from,
            average: tail > 0.0,
            sum_w: DMatrix::zeros(r, r),
            sum_b: DVector::zeros(r),
            averaged: 0,
            truth,
            last: (f64::NAN, f64::NAN),
        })
    }

    /// The total unmixing W·K (R×D) of a state: the estimated sources are (W·K)·x.
    pub fn unmixing(&self, state: &DjicaState) -> DMatrix<f64> {
        let k = DMatrix::from_column_slice(
            self.task.components,
            self.task.voxels,
            &self.task.projection,
        );
        state.w_matrix() * k
    }

    fn state(w: &DMatrix<f64>, b: &DVector<f64>) -> DjicaState {
        DjicaState { w: w.as_slice().to_vec(), b: b.as_slice().to_vec() }
    }
}

impl AggregatorStep for DjicaStudyAggregator {
    const NAME: &'static str = "capedjica";
    type Task = DjicaTask;
    type State = DjicaState;
    type Report = DjicaReport;

    fn task(&self) -> DjicaTask {
        self.task.clone()
    }

    fn initial_state(&mut self) -> DjicaState {
        DjicaState::identity(self.task.components)
    }

    fn statistic_len(&self) -> usize {
        self.task.statistic_len()
    }

    fn update(&mut self, iteration: u32, _state: &DjicaState, mean: &[f64]) -> Update<DjicaState> {
        let r = self.task.components;
        let g = DMatrix::from_column_slice(r, r, &mean[..r * r]);
        let h = DVector::from_column_slice(&mean[r * r..]) / self.task.bias_scale();
        let rate = self.aggregator.rate();
        let verdict = self.aggregator.apply(&g, &h);
        self.last = (rate, self.aggregator.last_change());
        if verdict == Verdict::Restart {
            self.sum_w.fill(0.0);
            self.sum_b.fill(0.0);
            self.averaged = 0;
        } else if self.average && iteration > self.average_from {
            self.sum_w += self.aggregator.w();
            self.sum_b += self.aggregator.b();
            self.averaged += 1;
        }
        let current = Self::state(self.aggregator.w(), self.aggregator.b());
        match verdict {
            Verdict::Converged => Update::Stop {
                state: current,
                reason: "converged: ‖ΔW‖² fell below tol".into(),
            },
            Verdict::RateTooSmall => Update::Stop {
                state: current,
                reason: "restarts drove the learning rate below its minimum".into(),
            },
            _ if iteration >= self.max_iterations && self.averaged > 0 => {
                let n = self.averaged as f64;
                Update::Stop {
                    state: Self::state(&(&self.sum_w / n), &(&self.sum_b / n)),
                    reason: format!(
                        "J_max = {} iterations; the result averages the last {}",
                        self.max_iterations, self.averaged
                    ),
                }
            }
            _ if iteration >= self.max_iterations => Update::Stop {
                state: current,
                reason: format!("J_max = {} iterations", self.max_iterations),
            },
            _ => Update::Continue(current),
        }
    }

    fn report(&self, _iteration: u32, state: &DjicaState) -> DjicaReport {
        DjicaReport {
            rate: self.last.0,
            change: self.last.1,
            q: self.truth.as_ref().map(|a| q_ngi(&(state.w_matrix() * a))),
            restarts: self.aggregator.restarts(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> DjicaTask {
        DjicaTask {
            voxels: 4,
            components: 2,
            projection: vec![0.5; 8],
            bounds: ClipBounds::default(),
            unit: PrivacyUnit::TimePoint,
            precision: Precision::F64,
        }
    }

    #[test]
    fn a_task_off_the_network_is_checked_before_use() {
        assert!(task().check().is_ok());
        let bad = |f: fn(&mut DjicaTask)| {
            let mut t = task();
            f(&mut t);
            t.check().unwrap_err()
        };
        assert!(bad(|t| t.projection.truncate(7)).contains("7 values"));
        assert!(bad(|t| t.projection[3] = f64::NAN).contains("non-finite"));
        assert!(bad(|t| t.components = 1).contains("R = 1"));
        assert!(bad(|t| t.voxels = usize::MAX / 2).contains("more than"));
        assert!(bad(|t| t.bounds.bias = 0.0).contains("B_h = 0"));
        // A site whose data has another D declines with both numbers.
        let data = SiteData::new(DMatrix::from_element(3, 4, 0.1), vec![4]).unwrap();
        let err = DjicaStudySite::new(data).prepare(&task(), true).unwrap_err();
        assert!(err.contains("3 voxels") && err.contains("D = 4"), "{err}");
    }

    #[test]
    fn the_release_rescales_h_so_one_tau_is_the_papers_noise_on_both_blocks() {
        let t = task();
        let level = GaussianLevel { epsilon: 0.5, delta: 1e-2 };
        let (delta, z) = noise_for(&t, level, 100, 10).unwrap();
        let z_paper = level.multiplier().unwrap();
        let delta_g = 2.0 * t.bounds.gradient / 100.0;
        // Δ = √2·Δ_G and z/√2: τ = z_paper·Δ_G on every coordinate.
        assert!((delta * z - z_paper * delta_g).abs() < 1e-12);
        // On the h block, τ/(B_G/B_h) = z_paper·Δ_h.
        let delta_h = 2.0 * t.bounds.bias / 100.0;
        assert!((delta * z / t.bias_scale() - z_paper * delta_h).abs() < 1e-12);
    }
}
