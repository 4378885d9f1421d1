/*!
The public parameters of one iterative study and the noise they imply (spec cape-fm §5 for the
NN instance, spec cape-secagg-pca-djica §5 for the upfront noise).

Every iteration each site releases one vector of `statistic_len` values whose L2 sensitivity is
at most Δ (`sensitivity`). The noise multiplier z is public and the same in every iteration, so
the local noise τ = z·Δ is known before anything is sent: the upfront SecureAgg run can sum the
noise of all J_max iterations at once, and each site's ledger can preview the whole study.
*/

use serde::{Deserialize, Serialize};

use crate::accountant::Mechanism;
use crate::accountant::{AccountantError, Event};
use crate::cape::noise_format;
use crate::fixed::FixedPoint;
use crate::fm::Calibration;
use crate::gaussian::CalibrationError;
use crate::secagg::{self, Encoding};
use crate::study::mean::collusion_factor;
use crate::wire::ParticipantId;

/// How the sites' statistics are protected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseMode {
    /// CAPE with all zero-sum noise from one SecureAgg run before the first iteration (spec
    /// cape-secagg-pca-djica §5: "all noise from one SecureAgg run when no site may drop").
    Upfront,
    /// Every release carries independent N(0, τ²) (the conventional baseline; no SecureAgg).
    Conventional,
    /// The exact statistic, for comparison: no privacy at all, nothing recorded in a ledger.
    NonPrivate,
}

impl NoiseMode {
    pub fn name(&self) -> &'static str {
        match self {
            NoiseMode::Upfront => "upfront",
            NoiseMode::Conventional => "conventional",
            NoiseMode::NonPrivate => "nonprivate",
        }
    }

    pub fn is_private(&self) -> bool {
        !matches!(self, NoiseMode::NonPrivate)
    }
}

/// The study's parameters cannot work; nothing was sent.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum IterativeConfigError {
    #[error("the study needs at least 1 iteration and at most {max}, got J_max = {got}")]
    Iterations { got: u32, max: u32 },
    #[error("the statistic must have at least 1 value, got 0")]
    EmptyStatistic,
    #[error(
        "the upfront noise covers J_max × len = {got} values, more than {max}: lower J_max or the \
         statistic's length"
    )]
    NoiseTooLong { got: usize, max: usize },
    #[error("sensitivity Δ = {0} must be positive and finite")]
    Sensitivity(f64),
    #[error("noise multiplier z = {0} must be positive and finite")]
    NoiseMultiplier(f64),
    #[error("δ = {0} must lie strictly between 0 and 1")]
    Delta(f64),
    #[error("calibrating the noise: {0}")]
    Calibration(#[from] CalibrationError),
    #[error("the noise τ cannot be summed exactly: {0}")]
    NoiseFormat(String),
    #[error("SecureAgg parameters: {0}")]
    SecAgg(secagg::ConfigError),
    #[error(
        "the parameters announce statistics of {announced} values, the aggregator's step computes \
         {computed}"
    )]
    StepMismatch { announced: usize, computed: usize },
    #[error("stage {stage} of the study: {error}")]
    FollowingStage { stage: usize, error: Box<IterativeConfigError> },
    #[error("stage {stage} of the study announces stages of its own: only the first stage may")]
    NestedStages { stage: usize },
}

/// What the aggregator announces in `iter/start` (beside the step's own task) and every site
/// checks before it answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterativeParams {
    /// The invited sites, strictly ascending.
    pub sites: Vec<ParticipantId>,
    /// The fewest sites the study runs with (SecureAgg's t in upfront mode).
    pub threshold: usize,
    pub mode: NoiseMode,
    /// J_max: the most iterations, each one release per site. The ledger preview covers all.
    pub max_iterations: u32,
    /// The length of each iteration's statistic.
    pub statistic_len: usize,
    /// Δ: the largest L2 sensitivity of a site's statistic the noise is calibrated for (NN:
    /// 2C/N_s). A site whose statistic is more sensitive declines.
    pub sensitivity: f64,
    /// z = τ/Δ of every release.
    pub noise_multiplier: f64,
    /// The δ at which ε is reported (the ledger uses its own budget's δ).
    pub delta: f64,
    /// The stages that follow this one in the same study (Joint ICA: capeDJICA's J_max
    /// iterations after capePCA's release), announced with the first so that each site admits or
    /// declines the whole study before its first release: a decline then costs nothing
    /// (issue 17 item 9). Each later stage is announced again, and checked again, when it starts.
    /// (Always serialised: the wire codec, postcard, is not self-describing.)
    #[serde(default)]
    pub followed_by: Vec<IterativeParams>,
}

impl IterativeParams {
    /// More iterations than this is not a study one dashboard session runs.
    pub const MAX_ITERATIONS: u32 = 100_000;
    /// J_max × len bound for the upfront SecureAgg vector (8 bytes each, per message).
    pub const MAX_NOISE_LEN: usize = 1 << 22;

    /// A study of `sites` (any order) with the default threshold ⌊2S/3⌋ + 1.
    pub fn new(
        mut sites: Vec<ParticipantId>,
        mode: NoiseMode,
        max_iterations: u32,
        statistic_len: usize,
        sensitivity: f64,
        noise_multiplier: f64,
        delta: f64,
    ) -> Result<Self, IterativeConfigError> {
        sites.sort_unstable();
        let threshold = secagg::Params::default_threshold(sites.len());
        let params = Self {
            sites,
            threshold,
            mode,
            max_iterations,
            statistic_len,
            sensitivity,
            noise_multiplier,
            delta,
            followed_by: Vec::new(),
        };
        params.validate()?;
        Ok(params)
    }

    /// The same study announcing the stages that follow it (see [`Self::followed_by`]).
    pub fn with_followed_by(
        self,
        stages: Vec<IterativeParams>,
    ) -> Result<Self, IterativeConfigError> {
        let params = Self { followed_by: stages, ..self };
        params.validate()?;
        Ok(params)
    }

    /// z from ε per iteration and δ (the papers' x-axis), as `nn::train` calibrates it.
    pub fn noise_multiplier_for(
        epsilon_per_iteration: f64,
        delta: f64,
        calibration: Calibration,
    ) -> Result<f64, IterativeConfigError> {
        Ok(calibration.multiplier(epsilon_per_iteration, delta)?.multiplier)
    }

    pub fn with_threshold(self, threshold: usize) -> Result<Self, IterativeConfigError> {
        let params = Self { threshold, ..self };
        params.validate()?;
        Ok(params)
    }

    pub fn is_invited(&self, site: ParticipantId) -> bool {
        self.sites.binary_search(&site).is_ok()
    }

    /// τ = z·Δ: the standard deviation of each site's message noise per coordinate.
    pub fn local_sd(&self) -> f64 {
        self.noise_multiplier * self.sensitivity
    }

    /// The length of the upfront noise vector: J_max × len.
    pub fn noise_len(&self) -> usize {
        self.noise_len_from(1)
    }

    /// The length of the noise vector of iterations `from..=J_max` (a zero-sum repair run):
    /// (J_max − from + 1) × len; 0 past J_max.
    pub fn noise_len_from(&self, from: u32) -> usize {
        let left = self.max_iterations.saturating_sub(from.saturating_sub(1));
        left as usize * self.statistic_len
    }

    /// Everything a participant checks; sites run it on parameters that came off the network.
    pub fn validate(&self) -> Result<(), IterativeConfigError> {
        if !(1..=Self::MAX_ITERATIONS).contains(&self.max_iterations) {
            return Err(IterativeConfigError::Iterations {
                got: self.max_iterations,
                max: Self::MAX_ITERATIONS,
            });
        }
        if self.statistic_len == 0 {
            return Err(IterativeConfigError::EmptyStatistic);
        }
        if !(self.sensitivity.is_finite() && self.sensitivity > 0.0) {
            return Err(IterativeConfigError::Sensitivity(self.sensitivity));
        }
        if !(self.noise_multiplier.is_finite() && self.noise_multiplier > 0.0) {
            return Err(IterativeConfigError::NoiseMultiplier(self.noise_multiplier));
        }
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(IterativeConfigError::Delta(self.delta));
        }
        let len = self.statistic_len.saturating_mul(self.max_iterations as usize);
        if self.mode == NoiseMode::Upfront && len > Self::MAX_NOISE_LEN {
            return Err(IterativeConfigError::NoiseTooLong { got: len, max: Self::MAX_NOISE_LEN });
        }
        // SecureAgg's checks (≥ 2 sites, sorted and distinct, n/2 < t ≤ n) hold for every mode,
        // so that the three modes of one comparison run with the same sites and threshold.
        let format = self.format()?;
        self.secagg_params(self.sites.clone(), format)?;
        for (i, stage) in self.followed_by.iter().enumerate() {
            let number = i + 2;
            if !stage.followed_by.is_empty() {
                return Err(IterativeConfigError::NestedStages { stage: number });
            }
            stage.validate().map_err(|e| IterativeConfigError::FollowingStage {
                stage: number,
                error: Box::new(e),
            })?;
        }
        Ok(())
    }

    /// The fixed-point format of the upfront noise in SecureAgg.
    pub fn format(&self) -> Result<FixedPoint, IterativeConfigError> {
        noise_format(self.local_sd(), self.sites.len().max(1))
            .map_err(|e| IterativeConfigError::NoiseFormat(e.to_string()))
    }

    /// The one SecureAgg run of upfront mode among `sites`.
    pub fn secagg_params(
        &self,
        sites: Vec<ParticipantId>,
        format: FixedPoint,
    ) -> Result<secagg::Params, IterativeConfigError> {
        self.secagg_params_from(sites, format, 1)
    }

    /// The SecureAgg run among `sites` of the noise of iterations `from..=J_max`: the upfront run
    /// (`from` = 1) or a zero-sum repair. The threshold stays the study's t, and so does the
    /// format (sized for S sites, so safe for fewer).
    pub fn secagg_params_from(
        &self,
        sites: Vec<ParticipantId>,
        format: FixedPoint,
        from: u32,
    ) -> Result<secagg::Params, IterativeConfigError> {
        let params = secagg::Params {
            sites,
            threshold: self.threshold,
            vector_len: self.noise_len_from(from).max(1),
            encoding: Encoding::Fixed(format),
            graph: secagg::Graph::Complete,
        };
        params.validate().map_err(IterativeConfigError::SecAgg)?;
        Ok(params)
    }

    /// The collusion factor a release is accounted with among `survivors` sites: c_S of the full
    /// adversary view in upfront mode, 1 for conventional releases.
    pub fn collusion_factor(&self, survivors: usize) -> f64 {
        match self.mode {
            NoiseMode::Upfront => collusion_factor(survivors),
            _ => 1.0,
        }
    }

    /// The collusion factor of the ledger preview, before |U| is known: the largest over every
    /// |U| from t to S.
    pub fn worst_case_collusion_factor(&self) -> f64 {
        self.worst_collusion_factor_up_to(self.sites.len())
    }

    /// The largest collusion factor over every |U| from t to `sites` (a repair's preview).
    pub fn worst_collusion_factor_up_to(&self, sites: usize) -> f64 {
        (self.threshold.max(2)..=sites.max(2)).map(|n| self.collusion_factor(n)).fold(1.0, f64::max)
    }

    /// What a site's ledger previews: this stage's releases of iterations `from..=J_max` under
    /// `c_s` (all of them when the study is announced, the rest at a zero-sum repair), then those
    /// of every announced later stage under its own worst-case collusion factor (non-private
    /// stages record nothing).
    pub fn planned_events(&self, from: u32, c_s: f64) -> Result<Vec<Event>, AccountantError> {
        let this = self.mode.is_private().then_some((self, 1, c_s));
        let later = self
            .followed_by
            .iter()
            .enumerate()
            .filter(|(_, s)| s.mode.is_private())
            .map(|(i, s)| (s, i + 2, s.worst_case_collusion_factor()));
        this.into_iter()
            .chain(later)
            .map(|(stage, number, c)| {
                let j = stage.max_iterations;
                let (label, count) = if number == 1 {
                    (format!("iter/{from}..{j}"), j.saturating_sub(from.saturating_sub(1)).max(1))
                } else {
                    (format!("stage {number}: iter/1..{j} (announced)"), j)
                };
                stage.event(label, u64::from(count), c)
            })
            .collect()
    }

    /// `count` releases of this study under collusion factor `c_s`, as the ledger records them.
    pub fn event(&self, label: String, count: u64, c_s: f64) -> Result<Event, AccountantError> {
        Event::with_collusion_factor(
            label,
            Mechanism::Gaussian { noise_multiplier: self.noise_multiplier },
            count,
            c_s,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_checked_and_named() {
        let p = IterativeParams::new(vec![4, 2, 3, 5], NoiseMode::Upfront, 10, 7, 0.01, 3.0, 1e-2)
            .unwrap();
        assert_eq!(p.sites, vec![2, 3, 4, 5]);
        assert_eq!(p.threshold, 3);
        assert!((p.local_sd() - 0.03).abs() < 1e-15);
        assert_eq!(p.noise_len(), 70);
        // S = 4: c_S(full view) = 28/15 at |U| = 4, and |U| = 3 is smaller
        assert!((p.worst_case_collusion_factor() - 28.0 / 15.0).abs() < 1e-12);
        let conv = IterativeParams { mode: NoiseMode::Conventional, ..p.clone() };
        assert_eq!(conv.worst_case_collusion_factor(), 1.0);
        let bad = |f: fn(&mut IterativeParams)| {
            let mut q = p.clone();
            f(&mut q);
            q.validate().unwrap_err()
        };
        assert_eq!(
            bad(|q| q.max_iterations = 0),
            IterativeConfigError::Iterations { got: 0, max: IterativeParams::MAX_ITERATIONS }
        );
        assert_eq!(bad(|q| q.sensitivity = -1.0), IterativeConfigError::Sensitivity(-1.0));
        assert_eq!(bad(|q| q.statistic_len = 0), IterativeConfigError::EmptyStatistic);
        assert!(matches!(
            bad(|q| q.statistic_len = 1 << 20),
            IterativeConfigError::NoiseTooLong { .. }
        ));
        assert!(matches!(bad(|q| q.sites = vec![1]), IterativeConfigError::SecAgg(_)));
    }
}
