/*!
The data behind seed 000 Fig. 5 (spec §2 "Appendix F definitions"): δ_cape, δ_conv and δ_pool
against the local noise level z = τ/Δ_s (Fig. 5(a, b)) and against the share of colluding sites
S_C/S (Fig. 5(c, d)), as rows the CLI and the dashboard can plot.

The paper does not give N, and all three δ depend only on z, so the x-axis is z. δ_cape uses the
exact c_S; the paper's eq. (1) value is in its own column, labelled, for showing the erratum, and
so is the value against the adversary's full view ([`super::privacy::c_s_full_view`]).
Caveat from the spec: δ_pool uses the loose classical bound while δ_cape uses a tail bound, so
"better than pooled" is partly an artefact of the bounds.
*/

use serde::{Deserialize, Serialize};

use super::privacy::{Collusion, PrivacyError, PrivacyLoss, c_s_paper_eq1, delta_conv, delta_pool};

/// One point of Fig. 5. A δ of `None` does not exist there (ε ≤ μ_z); values ≥ 1 are vacuous.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fig5Row {
    pub sites: usize,
    pub colluders: usize,
    /// Whether S_C ≤ ⌈S/3⌉ − 1, the paper's trust model.
    pub within_trust_model: bool,
    /// z = τ/Δ_s.
    pub noise_multiplier: f64,
    pub epsilon: f64,
    /// μ_z with the exact c_S.
    pub mu_z: f64,
    /// Theorem 1's φ-bound δ with the exact c_S (the paper's formula).
    pub delta_cape: Option<f64>,
    /// 2Q((ε − μ_z)/σ_z) with the exact c_S.
    pub delta_cape_tail: Option<f64>,
    /// The φ-bound δ with the paper's eq. (1) μ_z (for showing the erratum).
    pub delta_cape_paper_eq1: Option<f64>,
    /// The φ-bound δ against the adversary's full view ([`super::privacy::c_s_full_view`]).
    pub delta_cape_full_view: Option<f64>,
    pub delta_conv: f64,
    pub delta_pool: f64,
}

fn row(collusion: &Collusion, z: f64, epsilon: f64) -> Result<Fig5Row, PrivacyError> {
    let loss = PrivacyLoss::symmetric(collusion, z)?;
    let paper = c_s_paper_eq1(collusion)
        .and_then(|c| PrivacyLoss::from_mean(c / (2.0 * z * z)).ok())
        .and_then(|l| l.delta_phi_bound(epsilon).ok());
    Ok(Fig5Row {
        sites: collusion.sites(),
        colluders: collusion.colluders(),
        within_trust_model: collusion.within_trust_model(),
        noise_multiplier: z,
        epsilon,
        mu_z: loss.mu_z,
        delta_cape: loss.delta_phi_bound(epsilon).ok(),
        delta_cape_tail: loss.delta_tail(epsilon).ok(),
        delta_cape_paper_eq1: paper,
        delta_cape_full_view: PrivacyLoss::symmetric_full_view(collusion, z)?
            .delta_phi_bound(epsilon)
            .ok(),
        delta_conv: delta_conv(epsilon, z, collusion.sites())?,
        delta_pool: delta_pool(epsilon, z)?,
    })
}

/// Fig. 5(a, b): one row per noise multiplier in `noise_multipliers`, at fixed S, S_C and ε.
pub fn fig5_noise_sweep(
    collusion: &Collusion,
    epsilon: f64,
    noise_multipliers: &[f64],
) -> Result<Vec<Fig5Row>, PrivacyError> {
    noise_multipliers.iter().map(|&z| row(collusion, z, epsilon)).collect()
}

/// Fig. 5(c, d): one row per S_C = 0, …, S − 1 at fixed S, z and ε. Rows beyond ⌈S/3⌉ − 1 are
/// outside the paper's trust model and say so in `within_trust_model`.
pub fn fig5_collusion_sweep(
    sites: usize,
    noise_multiplier: f64,
    epsilon: f64,
) -> Result<Vec<Fig5Row>, PrivacyError> {
    (0..sites)
        .map(|c| row(&Collusion::beyond_trust_model(sites, c)?, noise_multiplier, epsilon))
        .collect()
}

/// `points` values from `low` to `high` evenly spaced in log scale (for the z axis).
pub fn log_grid(low: f64, high: f64, points: usize) -> Vec<f64> {
    if points < 2 {
        return vec![low; points];
    }
    let (a, b) = (low.ln(), high.ln());
    (0..points).map(|i| (a + (b - a) * i as f64 / (points - 1) as f64).exp()).collect()
}
