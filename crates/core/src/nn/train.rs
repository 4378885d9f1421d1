/*!
Distributed gradient descent for the two-layer network (seed 002 §5.1, spec cape-fm §5).

Each iteration t:
1. every site s computes g_s, the mean over its N_s records of the per-example gradients clipped
   to norm C (full batch: no subsampling, so no amplification is claimed);
2. the sites release g_s through CAPE (`cape` simulation over the [`SecureSum`] seam, round t),
   or with independent noise (conventional), with τ_s = (2C/N_s)·z and z calibrated to ε per
   iteration; the non-private run sends the exact, unclipped gradients;
3. the aggregator averages the releases and takes one Adam step (lr 0.01 in the authors' code).

The aggregate noise per coordinate is τ_s/S under CAPE (the pooled level) and τ_s/√S under the
conventional scheme (spec §7.8: the authors' code uses S·, which over-noises the baseline).
The privacy of all T iterations is accounted in [`super::privacy`].
*/

use serde::{Deserialize, Serialize};

use crate::cape::simulation::{Dropouts, SimSite, run_cape_round, run_conventional_round};
use crate::cape::{CapeEstimator, Collusion, IdealSecureSum, SecureSum, SiteNoise, noise_format};
use crate::data::{Dataset, DatasetError};
use crate::fm::Calibration;
use crate::gaussian::CalibrationError;
use crate::rng::derive;
use crate::wire::ParticipantId;

use super::adam::Adam;
use super::network::Network;
use super::privacy::{NnPrivacy, NnPrivacyError, run_privacy};

/// How the sites' gradients reach the aggregator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NnMechanism {
    Cape,
    Conventional,
    NonPrivate,
}

impl NnMechanism {
    pub const ALL: [NnMechanism; 3] =
        [NnMechanism::NonPrivate, NnMechanism::Cape, NnMechanism::Conventional];

    pub fn name(&self) -> &'static str {
        match self {
            NnMechanism::Cape => "cape",
            NnMechanism::Conventional => "conventional",
            NnMechanism::NonPrivate => "nonprivate",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// A training run's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NnConfig {
    pub mechanism: NnMechanism,
    /// ε of each iteration's release (the papers' x-axis).
    pub epsilon_per_iteration: f64,
    pub delta: f64,
    pub sites: usize,
    /// S_C for CAPE's views; `None` for ⌈S/3⌉ − 1.
    pub colluders: Option<usize>,
    pub calibration: Calibration,
    pub hidden: usize,
    pub iterations: usize,
    pub learning_rate: f64,
    /// C, the per-example clipping norm.
    pub clip: f64,
    pub seed: u64,
}

impl NnConfig {
    /// The paper's setting (spec §5): δ = 0.01, S = 4, 5 hidden units, Adam lr 0.01; C = 1 and
    /// T = 200 full-batch iterations are this implementation's choices.
    pub fn new(mechanism: NnMechanism, epsilon_per_iteration: f64) -> Self {
        Self {
            mechanism,
            epsilon_per_iteration,
            delta: 1e-2,
            sites: 4,
            colluders: None,
            calibration: Calibration::default(),
            hidden: 5,
            iterations: 200,
            learning_rate: 0.01,
            clip: 1.0,
            seed: 0,
        }
    }
}

/// Why training was refused.
#[derive(Debug, thiserror::Error)]
pub enum NnError {
    #[error("ε per iteration = {0} must be positive and finite")]
    Epsilon(f64),
    #[error("clipping norm C = {0} must be positive and finite")]
    Clip(f64),
    #[error("{what} must be at least 1, got 0")]
    Zero { what: &'static str },
    #[error("CAPE needs at least 2 sites, got S = {0}")]
    Sites(usize),
    #[error("labels must be 0 or 1: record {row} has {value}")]
    Label { row: usize, value: f64 },
    #[error("noise calibration: {0}")]
    Calibration(#[from] CalibrationError),
    #[error("privacy accounting: {0}")]
    Privacy(#[from] NnPrivacyError),
    #[error("iteration {iteration}: {message}")]
    Round { iteration: usize, message: String },
    #[error(transparent)]
    Dataset(#[from] DatasetError),
}

/// The outcome of a training run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NnReport {
    pub mechanism: NnMechanism,
    pub train_accuracy: f64,
    pub test_accuracy: f64,
    pub train_loss: f64,
    /// Training loss every `iterations/20` iterations (and at the end).
    pub loss_history: Vec<(usize, f64)>,
    /// τ_s of each site's release and the aggregate noise per coordinate.
    pub site_noise_sd: Option<f64>,
    pub aggregate_noise_sd: Option<f64>,
    /// The mean share of per-example gradients that hit the clipping norm.
    pub clipped_share: f64,
    pub records_used: usize,
    pub privacy: Option<NnPrivacy>,
    /// The trained network's flat parameters ([`Network::params`]), to compare runs exactly.
    #[serde(default)]
    pub final_params: Vec<f64>,
}

/// Trains with the in-process ideal secure sum.
pub fn train(config: &NnConfig, train: &Dataset, test: &Dataset) -> Result<NnReport, NnError> {
    train_with(config, train, test, &mut IdealSecureSum::new())
}

/// Trains; CAPE's noise sums go through `secure_sum`.
pub fn train_with<S: SecureSum>(
    config: &NnConfig,
    train: &Dataset,
    test: &Dataset,
    secure_sum: &mut S,
) -> Result<NnReport, NnError> {
    let eps = config.epsilon_per_iteration;
    if !(eps.is_finite() && eps > 0.0) {
        return Err(NnError::Epsilon(eps));
    }
    if !(config.clip.is_finite() && config.clip > 0.0) {
        return Err(NnError::Clip(config.clip));
    }
    for (what, v) in [("hidden units", config.hidden), ("iterations", config.iterations)] {
        if v == 0 {
            return Err(NnError::Zero { what });
        }
    }
    if config.mechanism == NnMechanism::Cape && config.sites < 2 {
        return Err(NnError::Sites(config.sites));
    }
    if let Some(row) = (0..train.len()).find(|&i| train.y[i] != 0.0 && train.y[i] != 1.0) {
        return Err(NnError::Label { row, value: train.y[row] });
    }
    let sites = train.partition(config.sites.max(1))?;
    let n_s = sites[0].len();
    let s = sites.len();
    let mut net =
        Network::init(train.features(), config.hidden, &mut derive(config.seed, "nn/init"));
    let mut params = net.params();
    let mut adam = Adam::new(params.len(), config.learning_rate);

    let private = config.mechanism != NnMechanism::NonPrivate;
    let calibration = config.calibration.multiplier(eps, config.delta)?;
    let sensitivity = 2.0 * config.clip / n_s as f64;
    let tau = sensitivity * calibration.multiplier;
    let format = noise_format(tau, s)
        .map_err(|e| NnError::Round { iteration: 0, message: e.to_string() })?;

    let every = (config.iterations / 20).max(1);
    let mut history = Vec::new();
    let mut clipped_total = 0.0;
    for t in 0..config.iterations {
        net.set_params(&params);
        // The sites' gradients in parallel (`crate::par`; no randomness here), in site order.
        let mut local = Vec::with_capacity(s);
        let gradients = crate::par::map_sites(&sites, |_, site| {
            net.mean_gradient(site, private.then_some(config.clip))
        });
        for (g, clipped) in gradients {
            clipped_total += clipped / s as f64;
            local.push(g);
        }
        let fail = |message: String| NnError::Round { iteration: t, message };
        let gradient = match config.mechanism {
            NnMechanism::NonPrivate => {
                let mut mean = vec![0.0; params.len()];
                for g in &local {
                    mean.iter_mut().zip(g).for_each(|(m, v)| *m += v / s as f64);
                }
                mean
            }
            NnMechanism::Cape => {
                let sim: Vec<SimSite> = local
                    .into_iter()
                    .enumerate()
                    .map(|(i, value)| SimSite {
                        id: i as ParticipantId + 1,
                        value,
                        noise: SiteNoise::Symmetric { local_sd: tau },
                    })
                    .collect();
                let round = run_cape_round(
                    &sim,
                    &format,
                    secure_sum,
                    &CapeEstimator::Mean,
                    &Dropouts::default(),
                    config.seed,
                    t as u64,
                )
                .map_err(|e| fail(e.to_string()))?;
                round.estimate.map_err(|e| fail(e.to_string()))?
            }
            NnMechanism::Conventional => {
                let inputs: Vec<(ParticipantId, Vec<f64>, f64)> = local
                    .into_iter()
                    .enumerate()
                    .map(|(i, g)| (i as ParticipantId + 1, g, tau))
                    .collect();
                run_conventional_round(&inputs, config.seed, t as u64)
                    .map_err(|e| fail(e.to_string()))?
                    .estimate
            }
        };
        adam.step(&mut params, &gradient);
        if t % every == 0 {
            net.set_params(&params);
            history.push((t + 1, net.loss(train)));
        }
    }
    net.set_params(&params);
    let train_loss = net.loss(train);
    if history.last().map(|h| h.0) != Some(config.iterations) {
        history.push((config.iterations, train_loss));
    }
    let (privacy, site_sd, aggregate_sd) = match config.mechanism {
        NnMechanism::NonPrivate => (None, None, None),
        NnMechanism::Conventional => (
            Some(run_privacy(calibration, eps, config.delta, config.iterations, None)?),
            Some(tau),
            Some(tau / (s as f64).sqrt()),
        ),
        NnMechanism::Cape => {
            let collusion = match config.colluders {
                Some(c) => Collusion::new(s, c),
                None => Collusion::default_for(s),
            }
            .map_err(|e| NnError::Privacy(e.into()))?;
            (
                Some(run_privacy(
                    calibration,
                    eps,
                    config.delta,
                    config.iterations,
                    Some(&collusion),
                )?),
                Some(tau),
                Some(tau / s as f64),
            )
        }
    };
    Ok(NnReport {
        mechanism: config.mechanism,
        train_accuracy: net.accuracy(train),
        test_accuracy: net.accuracy(test),
        train_loss,
        loss_history: history,
        site_noise_sd: site_sd,
        aggregate_noise_sd: aggregate_sd,
        clipped_share: clipped_total / config.iterations as f64,
        records_used: n_s * s,
        privacy,
        final_params: params,
    })
}
