/*!
capeDJICA end to end in one process (spec §5, Algorithm 4), and its baselines (spec §6): the
sites and the aggregator of [`super::site`] driven in lock step, with an observer per iteration.

Methods ([`Method`]):
- `Cape`: every site releases with CAPE noise (zero-sum part from the [`ZeroSumNoise`] seam).
- `Conventional`: every site adds its full N(0, τ_s²); the average carries S× CAPE's variance.
- `Local`: site 0 alone, with its own calibration (S = 1: noise sd S× CAPE's).
- `NonPrivate`: all sites, no noise (decentralized djICA with the same clipping).
- `PooledNonPrivate`: all data at one site, no noise.

Defaults that differ from the paper, and why (spec §9):
- ρ₀ = 0.5, not 0.015/ln R: the paper's rate is runica's per-sample rate, about 100× too small for
  an averaged gradient (§9.1).
- The learning-rate schedule is runica's 60° annealing only for the noiseless methods; the noisy
  ones use a fixed decay ρ_j = ρ₀/(1 + j/100) (§9.3: annealing reads noise as divergence and
  collapses). Under noise the tolerance test does not fire (the noise keeps ‖ΔW‖² ≫ tol, spec
  §8 pitfall 10), so a private run makes exactly J_max iterations: J* = J_max.
- A private run reports the average of its last half of iterates (`average_tail` = 0.5), which
  removes much of the noise the last iterate carries (free post-processing).

Schedules compared on 2 seeds (M = 256, S = 4, q_NGI of capeDJICA; the first column is the
paper-like preset at time-point level, ε_i = 0.5; the others the well-conditioned preset at
subject level):

| schedule | tail average | paper-like, ε_i 0.5 | ε_i = 4 | ε_i = 8 |
|---|---|---|---|---|
| decay, half-life 100 | none | 0.074 | 0.033 | 0.016 |
| decay, half-life 100 (default) | last 50% | 0.088 | 0.023 | 0.008 |
| decay, half-life 300 | last 50% | 0.033 | 0.077 | 0.009 |
| constant | last 50% | 0.015 | 0.349 | 0.013 |
| constant | none | 0.017 | — | 0.072 |

No schedule wins everywhere: a hard, slowly converging problem wants a long phase at a high
rate, strong noise wants the rate to fall. The default suits the demo data; the schedule is a
parameter. (Pflug's test, cutting ρ when successive updates anti-correlate, did worse than the
fixed decay in both regimes.)
*/

use super::calibration::{GaussianLevel, PrivacyUnit};
use super::gradient::ClipBounds;
use super::noise::{NoiseError, NoiseScheme, ZeroSumNoise};
use super::schedule::{RateController, Schedule, Verdict};
use super::site::{DjicaAggregator, DjicaSite, Precision, SiteNoiseScales, aggregate};
use crate::ica_quality::q_ngi;
use crate::rng::Seed;
use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Which algorithm runs (spec §6 baselines).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// capeDJICA: CAPE noise at every site.
    Cape,
    /// Conventional decentralized DP: independent N(0, τ_s²) at every site.
    Conventional,
    /// Local DP-ICA: site 0's data only, with its own noise.
    Local,
    /// Decentralized djICA without noise.
    NonPrivate,
    /// All data pooled at one site, without noise.
    PooledNonPrivate,
}

impl Method {
    /// The noise each participating site adds.
    pub fn scheme(self) -> NoiseScheme {
        match self {
            Method::Cape => NoiseScheme::Cape,
            Method::Conventional | Method::Local => NoiseScheme::Conventional,
            Method::NonPrivate | Method::PooledNonPrivate => NoiseScheme::None,
        }
    }

    /// Whether the method adds noise.
    pub fn is_private(self) -> bool {
        self.scheme() != NoiseScheme::None
    }

    /// The learning-rate schedule used when the configuration does not choose one.
    pub fn default_schedule(self) -> Schedule {
        if self.is_private() { DEFAULT_NOISY_SCHEDULE } else { Schedule::RUNICA }
    }
}

/// The fixed decay used under noise when no schedule is configured.
pub const DEFAULT_NOISY_SCHEDULE: Schedule = Schedule::Decay { half_life: 100.0 };

/// Everything that parameterises one capeDJICA run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DjicaConfig {
    /// The algorithm.
    pub method: Method,
    /// Subject (paper, default) or time-point sensitivity.
    pub unit: PrivacyUnit,
    /// (ε_i, δ_i) of each release (paper experiments: δ_i = 1e-2).
    pub level: GaussianLevel,
    /// B_G and B_h.
    pub bounds: ClipBounds,
    /// ρ₀.
    pub initial_rate: f64,
    /// J_max.
    pub max_iterations: usize,
    /// The stopping tolerance on ‖ΔW‖²_F.
    pub tolerance: f64,
    /// The learning-rate schedule; `None` picks [`Method::default_schedule`].
    pub schedule: Option<Schedule>,
    /// The precision of the sites' per-sample arithmetic.
    pub precision: Precision,
    /// Report the average of the iterates (W, b) over this final fraction of the J_max
    /// iterations instead of the last iterate (Polyak–Ruppert averaging: it cancels much of the
    /// noise the last iterate still carries). Post-processing of released values, so free.
    /// Only used when the run reaches J_max (a converged run keeps its last iterate); iterates
    /// before a restart are not averaged in. 0 = off; default 0.5.
    pub average_tail: f64,
}

impl Default for DjicaConfig {
    /// capeDJICA at subject level, ε_i = 0.5, δ_i = 1e-2, B_G = 30, ρ₀ = 0.5, J_max = 1000,
    /// tol = 1e-6.
    fn default() -> Self {
        DjicaConfig {
            method: Method::Cape,
            unit: PrivacyUnit::Subject,
            level: GaussianLevel { epsilon: 0.5, delta: 1e-2 },
            bounds: ClipBounds::default(),
            initial_rate: 0.5,
            max_iterations: 1000,
            tolerance: 1e-6,
            schedule: None,
            precision: Precision::default(),
            average_tail: 0.5,
        }
    }
}

/// One site's projected data X_s^r (R×N_s) and its largest subject length N_m.
#[derive(Clone, Debug, PartialEq)]
pub struct ProjectedSite {
    /// X_s^r.
    pub x: DMatrix<f64>,
    /// max N_m, for the subject-level sensitivity.
    pub max_subject_len: usize,
}

/// Why a run could not start or continue.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum DjicaError {
    /// No site, or a site without samples.
    #[error("capeDJICA needs at least one site with at least one time point")]
    NoData,
    /// Sites disagree on R, or R < 2.
    #[error(
        "site {site} has {got} components but site 0 has {expected} (need R ≥ 2, equal at every site)"
    )]
    Components {
        /// The first disagreeing site.
        site: usize,
        /// Its R.
        got: usize,
        /// Site 0's R.
        expected: usize,
    },
    /// (ε_i, δ_i) out of range for a private method.
    #[error("per-iteration privacy ε = {}, δ = {} is out of range: need ε > 0 and 0 < δ < 1", .0.epsilon, .0.delta)]
    BadLevel(GaussianLevel),
    /// A numeric setting is out of range.
    #[error("{0}")]
    Setting(String),
    /// The zero-sum noise source failed.
    #[error(transparent)]
    Noise(#[from] NoiseError),
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// ‖ΔW‖² fell below the tolerance.
    Converged,
    /// J_max iterations were made.
    MaxIterations,
    /// Restarts drove ρ below the minimum.
    RateTooSmall,
}

/// What one iteration looked like, for progress bars and live charts.
#[derive(Clone, Debug)]
pub struct IterationReport<'a> {
    /// Iterations made so far, this one included (J counts restarts' iterations too).
    pub iteration: usize,
    /// ρ used for this update.
    pub rate: f64,
    /// ‖ΔW‖²_F of this update.
    pub change: f64,
    /// q_NGI of the new W, when the ground truth was given.
    pub q: Option<f64>,
    /// What the controller decided.
    pub verdict: Verdict,
    /// Restarts so far.
    pub restarts: usize,
    /// The new W (after a restart: W₀).
    pub w: &'a DMatrix<f64>,
    /// Fraction of all samples whose gradient was clipped (a diagnostic, not released).
    pub clipped_fraction: f64,
}

/// One row of a run's history.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterationRecord {
    /// Iteration number (1-based).
    pub iteration: usize,
    /// ρ used.
    pub rate: f64,
    /// ‖ΔW‖²_F.
    pub change: f64,
    /// q_NGI, if the truth was known.
    pub q: Option<f64>,
}

/// What privacy accounting needs about a capeDJICA run. Each iteration makes two Gaussian
/// releases per site (Ĝ_s and ĥ_s), each with noise multiplier z = τ/Δ = c(δ_i)/ε_i.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DjicaPrivacy {
    /// The method.
    pub method: Method,
    /// The privacy unit of the sensitivities.
    pub unit: PrivacyUnit,
    /// (ε_i, δ_i) per release, `None` when non-private.
    pub level: Option<GaussianLevel>,
    /// z_W = τ_G^s/Δ_G^s, `None` when non-private.
    pub z_w: Option<f64>,
    /// z_b = τ_h^s/Δ_h^s, `None` when non-private.
    pub z_b: Option<f64>,
    /// Releases per iteration and site (Ĝ and ĥ): 2.
    pub releases_per_iteration: usize,
    /// J*: iterations actually made, restarts included.
    pub iterations: usize,
    /// J_max, for the worst-case figure.
    pub max_iterations: usize,
    /// Sites that released (S; 1 for local and pooled).
    pub sites: usize,
    /// Each releasing site's Δ and τ.
    pub scales: Vec<SiteNoiseScales>,
}

impl DjicaPrivacy {
    /// The record of a private run at `level` that makes `iterations` of at most `max_iterations`
    /// among `sites` releasing sites, without running it (what accounting needs for a preview or
    /// a calibration check); `None` when the level is out of range.
    pub fn planned(
        method: Method,
        unit: PrivacyUnit,
        level: GaussianLevel,
        iterations: usize,
        max_iterations: usize,
        sites: usize,
    ) -> Option<Self> {
        let z = level.multiplier().ok()?;
        Some(DjicaPrivacy {
            method,
            unit,
            level: Some(level),
            z_w: Some(z),
            z_b: Some(z),
            releases_per_iteration: 2,
            iterations,
            max_iterations,
            sites,
            scales: vec![],
        })
    }
}

/// A finished run.
#[derive(Clone, Debug)]
pub struct DjicaResult {
    /// The unmixing matrix W (R×R) for the projected data: the last iterate, or the tail
    /// average when [`DjicaConfig::average_tail`] is on.
    pub w: DMatrix<f64>,
    /// The bias b.
    pub b: DVector<f64>,
    /// Why it stopped.
    pub stop: StopReason,
    /// Blow-up restarts.
    pub restarts: usize,
    /// ρ at the end.
    pub final_rate: f64,
    /// q_NGI of the final W, when the truth was given.
    pub q: Option<f64>,
    /// One record per iteration.
    pub history: Vec<IterationRecord>,
    /// For the accountant.
    pub privacy: DjicaPrivacy,
}

/// Runs capeDJICA (or a baseline) over `sites`. `noise` must serve the sites that release
/// (all of them for CAPE; it is not used otherwise). `truth`, if given, is A_eff = K·A (R×R: the
/// projection applied to the true maps) and enables q_NGI per iteration. The observer is called
/// after every iteration.
pub fn run_djica(
    sites: Vec<ProjectedSite>,
    config: &DjicaConfig,
    seed: Seed,
    noise: &mut dyn ZeroSumNoise,
    truth: Option<&DMatrix<f64>>,
    observer: &mut dyn FnMut(&IterationReport<'_>),
) -> Result<DjicaResult, DjicaError> {
    validate(&sites, config, truth)?;
    let sites = match config.method {
        Method::Local => sites.into_iter().take(1).collect(),
        Method::PooledNonPrivate => vec![pool(sites)],
        _ => sites,
    };
    let r = sites[0].x.nrows();
    let scheme = config.method.scheme();
    let level = config.method.is_private().then_some(config.level);
    let mut djica_sites: Vec<DjicaSite> = sites
        .into_iter()
        .enumerate()
        .map(|(s, site)| {
            let scales = SiteNoiseScales::new(
                config.unit,
                config.bounds,
                level,
                site.x.ncols(),
                site.max_subject_len,
            );
            DjicaSite::new(
                site.x,
                config.precision,
                scales,
                seed.rng(&format!("site/{s}/djica-noise")),
            )
        })
        .collect();
    let scales: Vec<SiteNoiseScales> = djica_sites.iter().map(DjicaSite::scales).collect();
    let taus_g: Vec<f64> = scales.iter().map(|s| s.tau_g).collect();
    let taus_h: Vec<f64> = scales.iter().map(|s| s.tau_h).collect();
    let total_samples: usize = djica_sites.iter().map(DjicaSite::samples).sum();
    let site_count = djica_sites.len();

    let schedule = config.schedule.unwrap_or_else(|| config.method.default_schedule());
    let mut aggregator = DjicaAggregator::new(
        DMatrix::identity(r, r),
        DVector::zeros(r),
        RateController::new(schedule, config.initial_rate, config.tolerance),
    );
    let mut history = Vec::with_capacity(config.max_iterations);
    // Iterates from this iteration on are averaged (if averaging is on).
    let average_from = config.max_iterations
        - ((config.average_tail.clamp(0.0, 1.0) * config.max_iterations as f64).round() as usize)
            .min(config.max_iterations);
    let averaging = config.average_tail > 0.0;
    let mut sum_w = DMatrix::<f64>::zeros(r, r);
    let mut sum_b = DVector::<f64>::zeros(r);
    let mut averaged = 0usize;
    let mut stop = StopReason::MaxIterations;
    while aggregator.iterations() < config.max_iterations {
        let zero_sum = if scheme == NoiseScheme::Cape {
            Some((noise.draw(&taus_g, r * r)?, noise.draw(&taus_h, r)?))
        } else {
            None
        };
        let (w, b) = (aggregator.w().clone(), aggregator.b().clone());
        // The sites' releases in parallel (`crate::par`): each site draws from its own RNG; the
        // releases come back in site order and `aggregate` sums them sequentially.
        let releases = crate::par::map_sites_mut(&mut djica_sites, |s, site| {
            let share = zero_sum.as_ref().map(|(eg, eh)| (eg[s].as_slice(), eh[s].as_slice()));
            site.release(&w, &b, config.bounds, scheme, share, site_count)
        });
        let (mean_g, mean_h) = aggregate(&releases);
        let rate = aggregator.rate();
        let verdict = aggregator.apply(&mean_g, &mean_h);
        if verdict == Verdict::Restart {
            sum_w.fill(0.0);
            sum_b.fill(0.0);
            averaged = 0;
        } else if averaging && aggregator.iterations() > average_from {
            sum_w += aggregator.w();
            sum_b += aggregator.b();
            averaged += 1;
        }
        let q = truth.map(|a| q_ngi(&(aggregator.w() * a)));
        let clipped: usize = djica_sites.iter().map(DjicaSite::last_clipped).sum();
        history.push(IterationRecord {
            iteration: aggregator.iterations(),
            rate,
            change: aggregator.last_change(),
            q,
        });
        observer(&IterationReport {
            iteration: aggregator.iterations(),
            rate,
            change: aggregator.last_change(),
            q,
            verdict,
            restarts: aggregator.restarts(),
            w: aggregator.w(),
            clipped_fraction: clipped as f64 / total_samples as f64,
        });
        match verdict {
            Verdict::Continue | Verdict::Restart => {}
            Verdict::Converged => {
                stop = StopReason::Converged;
                break;
            }
            Verdict::RateTooSmall => {
                stop = StopReason::RateTooSmall;
                break;
            }
        }
    }
    let z = level.and_then(|l| l.multiplier().ok());
    // The tail average only when the run went through the whole tail (a converged non-private
    // run keeps its last iterate).
    let (w, b) = if averaging && averaged > 0 && stop == StopReason::MaxIterations {
        (sum_w / averaged as f64, sum_b / averaged as f64)
    } else {
        (aggregator.w().clone(), aggregator.b().clone())
    };
    Ok(DjicaResult {
        q: truth.map(|a| q_ngi(&(&w * a))),
        w,
        b,
        stop,
        restarts: aggregator.restarts(),
        final_rate: aggregator.rate(),
        history,
        privacy: DjicaPrivacy {
            method: config.method,
            unit: config.unit,
            level,
            z_w: z,
            z_b: z,
            releases_per_iteration: 2,
            iterations: aggregator.iterations(),
            max_iterations: config.max_iterations,
            sites: site_count,
            scales,
        },
    })
}

fn validate(
    sites: &[ProjectedSite],
    config: &DjicaConfig,
    truth: Option<&DMatrix<f64>>,
) -> Result<(), DjicaError> {
    if sites.is_empty() || sites.iter().any(|s| s.x.ncols() == 0) {
        return Err(DjicaError::NoData);
    }
    let r = sites[0].x.nrows();
    for (site, s) in sites.iter().enumerate() {
        if s.x.nrows() != r || r < 2 {
            return Err(DjicaError::Components { site, got: s.x.nrows(), expected: r });
        }
        if s.max_subject_len == 0 || s.max_subject_len > s.x.ncols() {
            return Err(DjicaError::Setting(format!(
                "site {site}: largest subject length {} must be between 1 and N_s = {}",
                s.max_subject_len,
                s.x.ncols()
            )));
        }
    }
    if config.method.is_private() && !config.level.is_valid() {
        return Err(DjicaError::BadLevel(config.level));
    }
    let positive = |v: f64| v.is_finite() && v > 0.0;
    if !positive(config.initial_rate)
        || !positive(config.bounds.gradient)
        || !positive(config.bounds.bias)
        || config.tolerance.is_nan()
        || config.tolerance < 0.0
    {
        return Err(DjicaError::Setting(format!(
            "ρ₀ = {}, B_G = {}, B_h = {} must be positive and tol = {} non-negative",
            config.initial_rate, config.bounds.gradient, config.bounds.bias, config.tolerance
        )));
    }
    if !(0.0..=1.0).contains(&config.average_tail) {
        return Err(DjicaError::Setting(format!(
            "average_tail {} must be a fraction in [0, 1]",
            config.average_tail
        )));
    }
    if let Some(Schedule::Decay { half_life }) = config.schedule
        && !positive(half_life)
    {
        return Err(DjicaError::Setting(format!("decay half-life {half_life} must be positive")));
    }
    if let Some(a) = truth
        && a.shape() != (r, r)
    {
        return Err(DjicaError::Setting(format!(
            "the ground truth A_eff is {}×{}, need {r}×{r} (K·A)",
            a.nrows(),
            a.ncols()
        )));
    }
    Ok(())
}

/// All sites' samples as one site (for the pooled baseline).
fn pool(sites: Vec<ProjectedSite>) -> ProjectedSite {
    let r = sites[0].x.nrows();
    let total: usize = sites.iter().map(|s| s.x.ncols()).sum();
    let mut data = Vec::with_capacity(r * total);
    for s in &sites {
        data.extend_from_slice(s.x.as_slice());
    }
    ProjectedSite {
        x: DMatrix::from_vec(r, total, data),
        max_subject_len: sites.iter().map(|s| s.max_subject_len).max().unwrap_or(1),
    }
}
