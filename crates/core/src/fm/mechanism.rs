/*!
The mechanisms compared in the experiments, and the pooled-data releases of noisy coefficient
arrays (spec cape-fm §2, §3, §6).

| [`Mechanism`] | data | noise | promise |
|---|---|---|---|
| `NonPrivate` | pooled | none | none |
| `Gaussian` | pooled | N(0, (Δ_j z)²) per block j (S1 Alg. 1, S2 Alg. 3) | (ε, δ) |
| `Laplace` | pooled | Lap(Δ_fm/ε) on every coefficient (Zhang et al. 2012) | ε |
| `Relaxed` | pooled | N(0, (Δ_rlx z)²) on every coefficient (Ding et al. 2020) | (ε, δ) |
| `OutputPerturbation` | pooled | ŵ + b, density ∝ exp(−ε‖b‖/2) | ε |
| `Cape` | S sites | capeFM (S2 Alg. 4): CAPE on every block | (ε, δ) per site |
| `Conventional` | S sites | each site Gaussian FM on its own data, averaged | (ε, δ) per site |
| `Local` | one site | Gaussian FM on that site's N/S records | (ε, δ) |

Relaxed FM is calibrated here with the classical Gaussian scale (or the analytic one, by the run's
[`super::Calibration`]): Ding et al.'s own "Extended Gaussian" formula is not in the seeds (spec
§3, §7.10). The authors' "objPert" is output perturbation, and is named so (spec §6.1, §7.8).
*/

use serde::{Deserialize, Serialize};

use crate::data::Dataset;
use crate::rng::CapeRng;

use super::coefficients::{Block, Coefficients};
use super::model::Model;
use super::noise::{add_gaussian, add_laplace};
use super::sensitivity::{gaussian_fm, laplace_fm_l1, noisy_blocks, relaxed_fm_l2};

/// Which algorithm produces ŵ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    NonPrivate,
    Gaussian,
    Laplace,
    Relaxed,
    OutputPerturbation,
    Cape,
    Conventional,
    Local,
}

impl Mechanism {
    pub const ALL: [Mechanism; 8] = [
        Mechanism::NonPrivate,
        Mechanism::Gaussian,
        Mechanism::Laplace,
        Mechanism::Relaxed,
        Mechanism::OutputPerturbation,
        Mechanism::Cape,
        Mechanism::Conventional,
        Mechanism::Local,
    ];

    /// The name used on the command line and in figures.
    pub fn name(&self) -> &'static str {
        match self {
            Mechanism::NonPrivate => "nonprivate",
            Mechanism::Gaussian => "gaussian",
            Mechanism::Laplace => "laplace",
            Mechanism::Relaxed => "relaxed",
            Mechanism::OutputPerturbation => "output",
            Mechanism::Cape => "cape",
            Mechanism::Conventional => "conventional",
            Mechanism::Local => "local",
        }
    }

    /// The label the papers use for it.
    pub fn paper_label(&self) -> &'static str {
        match self {
            Mechanism::NonPrivate => "non-priv",
            Mechanism::Gaussian => "gauss-fm",
            Mechanism::Laplace => "fm (Laplace)",
            Mechanism::Relaxed => "rlx-fm",
            Mechanism::OutputPerturbation => "output pert. (objPert)",
            Mechanism::Cape => "cape-fm",
            Mechanism::Conventional => "conv",
            Mechanism::Local => "local",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Whether the data are split across sites.
    pub fn is_distributed(&self) -> bool {
        matches!(self, Mechanism::Cape | Mechanism::Conventional | Mechanism::Local)
    }
}

/// The distribution of the noise on a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseDistribution {
    Gaussian,
    Laplace,
}

/// The noise on one block, per entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockNoise {
    pub block: Block,
    pub distribution: NoiseDistribution,
    /// The sensitivity the noise is scaled to (L2, or L1 for Laplace), at the data size used.
    pub sensitivity: f64,
    /// The standard deviation of each site's message noise, for the distributed mechanisms.
    pub site_sd: Option<f64>,
    /// The standard deviation of the noise left in the aggregator's Λ̂.
    pub aggregate_sd: f64,
}

/// The noise on Λ₂ in `noise` (0 if none): what the minimiser's noise-scaled floor uses.
pub fn quadratic_sd(noise: &[BlockNoise]) -> f64 {
    noise.iter().find(|b| b.block == Block::Quadratic).map_or(0.0, |b| b.aggregate_sd)
}

/// Gaussian FM on pooled data: block j gets N(0, (Δ_j·`z_block`)²) on each released entry.
pub fn gaussian_release(
    model: Model,
    data: &Dataset,
    z_block: f64,
    release_constant: bool,
    rng: &mut CapeRng,
) -> (Coefficients, Vec<BlockNoise>) {
    let s = gaussian_fm(model, data.len(), release_constant);
    let mut c = Coefficients::of(model, data);
    let mut report = Vec::new();
    for block in noisy_blocks(model, release_constant) {
        let delta = s.of(block).expect("noisy blocks carry data");
        let sd = delta * z_block;
        let mut values = c.block(block);
        add_gaussian(&mut values, sd, rng);
        c.set_block(block, &values);
        report.push(BlockNoise {
            block,
            distribution: NoiseDistribution::Gaussian,
            sensitivity: delta,
            site_sd: None,
            aggregate_sd: sd,
        });
    }
    hide_unreleased(model, release_constant, &mut c);
    (c, report)
}

/// Relaxed FM: one L2 sensitivity for all coefficients, N(0, (Δ_rlx·`z`)²) on each entry.
pub fn relaxed_release(
    model: Model,
    data: &Dataset,
    z: f64,
    release_constant: bool,
    rng: &mut CapeRng,
) -> (Coefficients, Vec<BlockNoise>) {
    let delta = relaxed_fm_l2(model, data.len(), data.features());
    same_noise_everywhere(
        model,
        data,
        release_constant,
        NoiseDistribution::Gaussian,
        delta,
        delta * z,
        rng,
    )
}

/// Laplace FM: Lap(Δ_fm/ε) on each entry (variance 2(Δ_fm/ε)², spec §7.8).
pub fn laplace_release(
    model: Model,
    data: &Dataset,
    epsilon: f64,
    release_constant: bool,
    rng: &mut CapeRng,
) -> (Coefficients, Vec<BlockNoise>) {
    let delta = laplace_fm_l1(model, data.len(), data.features());
    same_noise_everywhere(
        model,
        data,
        release_constant,
        NoiseDistribution::Laplace,
        delta,
        delta / epsilon,
        rng,
    )
}

fn same_noise_everywhere(
    model: Model,
    data: &Dataset,
    release_constant: bool,
    distribution: NoiseDistribution,
    sensitivity: f64,
    scale: f64,
    rng: &mut CapeRng,
) -> (Coefficients, Vec<BlockNoise>) {
    let mut c = Coefficients::of(model, data);
    let mut report = Vec::new();
    for block in noisy_blocks(model, release_constant) {
        let mut values = c.block(block);
        let sd = if distribution == NoiseDistribution::Laplace {
            add_laplace(&mut values, scale, rng);
            std::f64::consts::SQRT_2 * scale
        } else {
            add_gaussian(&mut values, scale, rng);
            scale
        };
        c.set_block(block, &values);
        report.push(BlockNoise {
            block,
            distribution,
            sensitivity,
            site_sd: None,
            aggregate_sd: sd,
        });
    }
    hide_unreleased(model, release_constant, &mut c);
    (c, report)
}

/// Linear regression's Λ₀ = (1/N)Σy² is data: when it is not released (spec §7.5), the arrays
/// handed on carry 0 in its place so that no report can leak it. ŵ does not depend on Λ₀.
pub fn hide_unreleased(model: Model, release_constant: bool, c: &mut Coefficients) {
    if model == Model::Linear && !release_constant {
        c.lambda0 = 0.0;
    }
}
