/*!
capeFM and its baselines across S sites (spec cape-fm §4, §1.2, §7.5, §7.6, §7.8).

**capeFM** (S2 Alg. 4 = S1 Alg. 3). Each site computes its own Λ_j^s with the 1/N_s average. For
every noisy block, the sites run one CAPE round (Algorithms 1–2 of the `cape` module, through the
[`SecureSum`] seam) on the block's packed entries (Λ₂: upper triangle only, so the zero-sum noise
stays symmetric), with local noise τ_j^s = Δ_j(N_s)·z. The aggregator's mean is the pooled
average plus noise of standard deviation τ_j^s/S = Δ_j(N)·z: the pooled variance (Lemma 1).
Rounds are numbered by block (0 = Λ₀, 1 = Λ₁, 2 = Λ₂) under the run seed.

The secure sum is a parameter: simulations pass [`crate::cape::IdealSecureSum`], and a real
SecureAgg round implementing [`SecureSum`] can be swapped in without touching this file.

**Conventional** (§1.2): each site releases its own Gaussian FM arrays (same τ_j^s, independent
noise) and the aggregator averages them: aggregate standard deviation τ_j^s/√S = √S·τ_pool (not
S·τ_pool as in the authors' NN code, spec §7.8).

**Local**: site 1 alone, Gaussian FM at N_s.

Sensitivities use N_s at the sites (spec §7.6). The sites hold ⌊N/S⌋ records each
([`crate::data::Dataset::partition`]).
*/

use crate::cape::simulation::{Dropouts, SimSite, run_cape_round, run_conventional_round};
use crate::cape::{CapeEstimator, SecureSum, SiteNoise, noise_format};
use crate::data::Dataset;
use crate::wire::ParticipantId;

use super::coefficients::{Block, Coefficients};
use super::error::FmError;
use super::mechanism::{BlockNoise, NoiseDistribution, hide_unreleased};
use super::model::Model;
use super::sensitivity::{gaussian_fm, noisy_blocks};

fn round_of(block: Block) -> u64 {
    match block {
        Block::Constant => 0,
        Block::Linear => 1,
        Block::Quadratic => 2,
    }
}

fn site_id(index: usize) -> ParticipantId {
    index as ParticipantId + 1
}

/// capeFM: the aggregator's noisy arrays from the sites' data `sites` (equal sizes), with
/// multiplier `z_block` per block.
pub fn cape_release<S: SecureSum>(
    model: Model,
    sites: &[Dataset],
    z_block: f64,
    release_constant: bool,
    secure_sum: &mut S,
    seed: u64,
) -> Result<(Coefficients, Vec<BlockNoise>), FmError> {
    let (local, n_s) = local_arrays(model, sites)?;
    let s = gaussian_fm(model, n_s, release_constant);
    let mut out = local[0].clone();
    let mut report = Vec::new();
    for block in noisy_blocks(model, release_constant) {
        let delta = s.of(block).expect("noisy blocks carry data");
        let tau = delta * z_block;
        let sim: Vec<SimSite> = local
            .iter()
            .enumerate()
            .map(|(i, c)| SimSite {
                id: site_id(i),
                value: c.block(block),
                noise: SiteNoise::Symmetric { local_sd: tau },
            })
            .collect();
        let fail = |message: String| FmError::Cape { block: block.name(), message };
        let format = noise_format(tau, sites.len()).map_err(|e| fail(e.to_string()))?;
        let round = run_cape_round(
            &sim,
            &format,
            secure_sum,
            &CapeEstimator::Mean,
            &Dropouts::default(),
            seed,
            round_of(block),
        )
        .map_err(|e| fail(e.to_string()))?;
        let estimate = round.estimate.map_err(|e| fail(e.to_string()))?;
        out.set_block(block, &estimate);
        report.push(BlockNoise {
            block,
            distribution: NoiseDistribution::Gaussian,
            sensitivity: delta,
            site_sd: Some(tau),
            aggregate_sd: tau / sites.len() as f64,
        });
    }
    hide_unreleased(model, release_constant, &mut out);
    Ok((out, report))
}

/// The conventional scheme: each site adds its own N(0, τ_j^s²), the aggregator averages.
pub fn conventional_release(
    model: Model,
    sites: &[Dataset],
    z_block: f64,
    release_constant: bool,
    seed: u64,
) -> Result<(Coefficients, Vec<BlockNoise>), FmError> {
    let (local, n_s) = local_arrays(model, sites)?;
    let s = gaussian_fm(model, n_s, release_constant);
    let mut out = local[0].clone();
    let mut report = Vec::new();
    for block in noisy_blocks(model, release_constant) {
        let delta = s.of(block).expect("noisy blocks carry data");
        let tau = delta * z_block;
        let inputs: Vec<(ParticipantId, Vec<f64>, f64)> =
            local.iter().enumerate().map(|(i, c)| (site_id(i), c.block(block), tau)).collect();
        let round = run_conventional_round(&inputs, seed, round_of(block))
            .map_err(|e| FmError::Cape { block: block.name(), message: e.to_string() })?;
        out.set_block(block, &round.estimate);
        report.push(BlockNoise {
            block,
            distribution: NoiseDistribution::Gaussian,
            sensitivity: delta,
            site_sd: Some(tau),
            aggregate_sd: tau / (sites.len() as f64).sqrt(),
        });
    }
    hide_unreleased(model, release_constant, &mut out);
    Ok((out, report))
}

/// Each site's exact arrays and the common site size N_s. The noise-free blocks (logistic Λ₀)
/// are the same at every site, so the first site's copy stands for their average.
fn local_arrays(model: Model, sites: &[Dataset]) -> Result<(Vec<Coefficients>, usize), FmError> {
    let first = sites.first().ok_or(FmError::Sites { mechanism: "capeFM", sites: 0, min: 1 })?;
    let n_s = first.len();
    if let Some(other) = sites.iter().find(|s| s.len() != n_s) {
        return Err(FmError::TooFewRecords { records: other.len(), sites: sites.len() });
    }
    let local: Vec<Coefficients> = crate::par::map_sites(sites, |_, d| Coefficients::of(model, d));
    Ok((local, n_s))
}
