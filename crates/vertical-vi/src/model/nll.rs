//! Test-set negative log-likelihood (the paper's metric, spec B7), mean per record.
//!
//! −(1/N) Σ_n log Σ_k π_k Π_p F_p(x_n^p | ρ_k^p), by log-sum-exp over components. **Scale:** Beta
//! densities are of the rescaled value u ∈ (0, 1) (the unit scale, ln Γ in the normaliser),
//! Categoricals are probabilities; so the NLL is in nats per record of the *encoded* table. The
//! density of a Beta column in its original units differs by the constant log|du/dx| per record,
//! the same for every model, so comparisons between models are unaffected.

use super::local::PartyDensity;
use super::params::Model;
use super::train::Posterior;
use crate::schema::PartyBlock;

/// log p(x_n | θ) for every row n of the aligned `blocks`.
pub fn log_likelihoods(model: &Model, theta: &[f64], blocks: &[PartyBlock]) -> Vec<f64> {
    let k = model.components;
    let rows = blocks.first().map_or(0, |b| b.rows);
    let densities: Vec<PartyDensity> =
        (0..blocks.len()).map(|p| PartyDensity::new(model, p, theta)).collect();
    let ln_pi: Vec<f64> = theta[..k].iter().map(|v| v.ln()).collect();
    let mut ell = vec![0.0; k];
    let mut total = vec![0.0; k];
    (0..rows)
        .map(|n| {
            total.copy_from_slice(&ln_pi);
            for (d, b) in densities.iter().zip(blocks) {
                d.log_density(b.row(n), &mut ell);
                for (t, l) in total.iter_mut().zip(&ell) {
                    *t += l;
                }
            }
            let m = total.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v));
            if m == f64::NEG_INFINITY {
                return m;
            }
            m + total.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
        })
        .collect()
}

/// The mean NLL per record of `blocks` at θ.
pub fn mean_nll(model: &Model, theta: &[f64], blocks: &[PartyBlock]) -> f64 {
    let ll = log_likelihoods(model, theta, blocks);
    -ll.iter().sum::<f64>() / ll.len().max(1) as f64
}

impl Posterior {
    /// The mean test NLL per record at the posterior median θ = T(μ).
    pub fn test_nll(&self, blocks: &[PartyBlock]) -> f64 {
        mean_nll(&self.model, &self.median_theta(), blocks)
    }
}
