/*!
One FM run: configuration in, ŵ with its guarantee, its noise and what the minimiser did out
(spec cape-fm §3, §4, §6), and the metrics of [`evaluate`].

Randomness: the pooled mechanisms draw from `derive(seed, "fm/noise/<mechanism>")`; the CAPE and
conventional rounds from the `cape` simulation's per-site streams under `seed`.
*/

use nalgebra::DVector;
use serde::{Deserialize, Serialize};

use crate::cape::{Collusion, IdealSecureSum, SecureSum};
use crate::data::Dataset;
use crate::rng::derive;

use super::calibration::Calibration;
use super::distributed::{cape_release, conventional_release};
use super::error::FmError;
use super::guarantee::Guarantee;
use super::mechanism::{
    BlockNoise, Mechanism, gaussian_release, laplace_release, quadratic_sd, relaxed_release,
};
use super::minimise::{MinimiserConfig, MinimiserReport, minimise};
use super::model::Model;
use super::output_perturbation::output_perturbation;
use super::sensitivity::joint_multiplier;
use super::{coefficients::Coefficients, nonprivate};

/// Everything that defines a run except the data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FmConfig {
    pub model: Model,
    pub mechanism: Mechanism,
    pub epsilon: f64,
    pub delta: f64,
    /// S, for the distributed mechanisms.
    pub sites: usize,
    /// S_C for CAPE's views; `None` for the trust model's maximum ⌈S/3⌉ − 1.
    pub colluders: Option<usize>,
    pub calibration: Calibration,
    /// Calibrate the joint release of the blocks (z = m·z_target, spec §7.1) instead of each block
    /// on its own as the papers do.
    pub strict: bool,
    /// Release (and noise) linear regression's Λ₀ as the papers do; ŵ does not need it.
    pub release_constant: bool,
    pub minimiser: MinimiserConfig,
    /// R of output perturbation's public ball.
    pub output_radius: f64,
    pub seed: u64,
}

impl FmConfig {
    /// The papers' setting: paper-faithful calibration of each block, Λ₀ released, S = 5, the
    /// default minimiser, R = 1.
    pub fn new(model: Model, mechanism: Mechanism, epsilon: f64, delta: f64) -> Self {
        Self {
            model,
            mechanism,
            epsilon,
            delta,
            sites: 5,
            colluders: None,
            calibration: Calibration::default(),
            strict: false,
            release_constant: true,
            minimiser: MinimiserConfig::default(),
            output_radius: 1.0,
            seed: 0,
        }
    }
}

/// The result of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FmFit {
    pub weights: Vec<f64>,
    pub guarantee: Guarantee,
    /// The noise on each block (empty for output perturbation and the non-private fit).
    pub noise: Vec<BlockNoise>,
    /// What the minimiser did (the FM mechanisms only).
    pub minimiser: Option<MinimiserReport>,
    /// Training records that entered the fit (the distributed mechanisms drop N mod S; local
    /// uses one site's share).
    pub records_used: usize,
    /// The scale 2R/ε of output perturbation's noise.
    pub output_noise_scale: Option<f64>,
}

impl FmFit {
    pub fn w(&self) -> DVector<f64> {
        DVector::from_column_slice(&self.weights)
    }
}

/// Runs `config` on `train` with the in-process ideal secure sum.
pub fn fit(config: &FmConfig, train: &Dataset) -> Result<FmFit, FmError> {
    fit_with(config, train, &mut IdealSecureSum::new())
}

/// Runs `config` on `train`; capeFM's noise sums go through `secure_sum`.
pub fn fit_with<S: SecureSum>(
    config: &FmConfig,
    train: &Dataset,
    secure_sum: &mut S,
) -> Result<FmFit, FmError> {
    let (model, eps, delta) = (config.model, config.epsilon, config.delta);
    if !(eps.is_finite() && eps > 0.0) {
        return Err(FmError::Epsilon(eps));
    }
    if !(delta > 0.0 && delta < 1.0) {
        return Err(FmError::Delta(delta));
    }
    check_domain(model, train)?;
    let mut rng = derive(config.seed, &format!("fm/noise/{}", config.mechanism.name()));
    let m = joint_multiplier(model, config.release_constant);
    let z_block =
        |c: &super::calibration::Calibrated| c.multiplier * if config.strict { m } else { 1.0 };
    let mut records_used = train.len();
    let (arrays, noise, guarantee): (Coefficients, Vec<BlockNoise>, Guarantee) = match config
        .mechanism
    {
        Mechanism::NonPrivate => {
            let w = nonprivate::fit(model, train);
            return Ok(FmFit {
                weights: w.as_slice().to_vec(),
                guarantee: Guarantee::none(eps, delta),
                noise: vec![],
                minimiser: None,
                records_used,
                output_noise_scale: None,
            });
        }
        Mechanism::OutputPerturbation => {
            if !(config.output_radius.is_finite() && config.output_radius > 0.0) {
                return Err(FmError::Radius(config.output_radius));
            }
            let (w, scale) = output_perturbation(model, train, eps, config.output_radius, &mut rng);
            let how = format!(
                "output perturbation (the authors' \"objPert\"): exact ŵ projected onto ‖w‖ ≤ {}, \
                 plus noise with density ∝ exp(−ε‖b‖/(2R)): ε-DP with L2 sensitivity 2R",
                config.output_radius
            );
            return Ok(FmFit {
                weights: w.as_slice().to_vec(),
                guarantee: Guarantee::pure(eps, delta, how),
                noise: vec![],
                minimiser: None,
                records_used,
                output_noise_scale: Some(scale),
            });
        }
        Mechanism::Laplace => {
            let (c, noise) = laplace_release(model, train, eps, config.release_constant, &mut rng);
            let how = "Laplace FM (Zhang et al. 2012): Lap(Δ_fm/ε) on every coefficient, with \
                       the L1 sensitivity over all of them: ε-DP";
            (c, noise, Guarantee::pure(eps, delta, how))
        }
        Mechanism::Relaxed => {
            let cal = config.calibration.multiplier(eps, delta)?;
            // One L2 sensitivity over all coefficients: the release is a single block, m = 1.
            let (c, noise) =
                relaxed_release(model, train, cal.multiplier, config.release_constant, &mut rng);
            let mut g = Guarantee::gaussian(
                "relaxed FM (one L2 sensitivity over all coefficients; Ding et al.'s Extended \
                 Gaussian calibration is not in the seeds, so the Gaussian one is used)",
                eps,
                delta,
                cal,
                1.0,
                config.strict,
            )?;
            g.joint_multiplier = Some(1.0);
            (c, noise, g)
        }
        Mechanism::Gaussian => {
            let cal = config.calibration.multiplier(eps, delta)?;
            let (c, noise) =
                gaussian_release(model, train, z_block(&cal), config.release_constant, &mut rng);
            let g = Guarantee::gaussian("Gaussian FM", eps, delta, cal, m, config.strict)?;
            (c, noise, g)
        }
        Mechanism::Cape | Mechanism::Conventional | Mechanism::Local => {
            let min = if config.mechanism == Mechanism::Cape { 2 } else { 1 };
            if config.sites < min {
                return Err(FmError::Sites {
                    mechanism: config.mechanism.name(),
                    sites: config.sites,
                    min,
                });
            }
            if train.len() < config.sites {
                return Err(FmError::TooFewRecords { records: train.len(), sites: config.sites });
            }
            let sites = train.partition(config.sites)?;
            let n_s = sites[0].len();
            records_used = n_s * config.sites;
            let cal = config.calibration.multiplier(eps, delta)?;
            let z = z_block(&cal);
            match config.mechanism {
                Mechanism::Cape => {
                    let collusion = match config.colluders {
                        Some(c) => Collusion::new(config.sites, c)?,
                        None => Collusion::default_for(config.sites)?,
                    };
                    let (c, noise) = cape_release(
                        model,
                        &sites,
                        z,
                        config.release_constant,
                        secure_sum,
                        config.seed,
                    )?;
                    let g = Guarantee::cape(eps, delta, cal, m, config.strict, &collusion)?;
                    (c, noise, g)
                }
                Mechanism::Conventional => {
                    let (c, noise) = conventional_release(
                        model,
                        &sites,
                        z,
                        config.release_constant,
                        config.seed,
                    )?;
                    let g = Guarantee::gaussian(
                        "conventional distributed Gaussian FM, each site's release",
                        eps,
                        delta,
                        cal,
                        m,
                        config.strict,
                    )?;
                    (c, noise, g)
                }
                _ => {
                    records_used = n_s;
                    let (c, noise) =
                        gaussian_release(model, &sites[0], z, config.release_constant, &mut rng);
                    let g = Guarantee::gaussian(
                        "local Gaussian FM on one site's data",
                        eps,
                        delta,
                        cal,
                        m,
                        config.strict,
                    )?;
                    (c, noise, g)
                }
            }
        }
    };
    let (w, report) = minimise(&arrays, quadratic_sd(&noise), &config.minimiser);
    Ok(FmFit {
        weights: w.as_slice().to_vec(),
        guarantee,
        noise,
        minimiser: Some(report),
        records_used,
        output_noise_scale: None,
    })
}

/// Refuses records outside FM's domain: ‖x‖ ≤ 1 and y ∈ [−1, 1] (linear) or y ∈ {0, 1}.
pub fn check_domain(model: Model, data: &Dataset) -> Result<(), FmError> {
    for (row, x) in data.x.row_iter().enumerate() {
        let norm = x.norm();
        let y = data.y[row];
        let y_ok = match model {
            Model::Linear => y.abs() <= 1.0,
            Model::Logistic => y == 0.0 || y == 1.0,
        };
        if norm > 1.0 + 1e-9 || !y_ok {
            return Err(FmError::OutsideDomain { row, norm, target: y });
        }
    }
    Ok(())
}

/// The metrics of a fitted ŵ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// Linear: test MSE. Logistic: None.
    pub mse: Option<f64>,
    /// Logistic: test accuracy in [0, 1]. Linear: None.
    pub accuracy: Option<f64>,
    /// Logistic: training accuracy.
    pub train_accuracy: Option<f64>,
    /// The exact training loss f_D(ŵ) (S2's metric for linear regression).
    pub train_loss: f64,
    /// (1/D)‖w* − ŵ‖₂ when the true weights are known (S2 Fig. 7).
    pub err_w: Option<f64>,
}

/// Evaluates `w` on the training and test sets.
pub fn evaluate(
    model: Model,
    w: &DVector<f64>,
    train: &Dataset,
    test: &Dataset,
    w_star: Option<&DVector<f64>>,
) -> Evaluation {
    let logistic = model == Model::Logistic;
    Evaluation {
        mse: (!logistic).then(|| model.loss(w, test)),
        accuracy: logistic.then(|| super::model::accuracy(w, test)),
        train_accuracy: logistic.then(|| super::model::accuracy(w, train)),
        train_loss: model.loss(w, train),
        err_w: w_star.map(|ws| (ws - w).norm() / w.len() as f64),
    }
}
