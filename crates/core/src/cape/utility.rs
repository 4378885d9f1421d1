/*!
CAPE's utility results (spec §2 Lemma 1, Proposition 1, Remark 3; cape-fm §1.6).

- Proposition 1: with local variances τ_s², τ_conv² = (1/S²)Στ_s² and τ_cape² = (1/S³)Στ_s², so
  the variance gain is G = S whatever the τ_s.
- Remark 3: with unequal N_s and per-site classical noise (Δ_s = 1/N_s), symmetric CAPE's variance
  relative to pooled data is H(n) = (N²/S³)Σ1/N_s², with 1 ≤ H ≤ (N²/S³)(1/(N−S+1)² + S − 1); the
  minimum is the symmetric case. (The weighted scheme of [`super::asymmetric`] reaches τ_pool².)
*/

use serde::{Deserialize, Serialize};

/// Why a utility computation was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum UtilityError {
    #[error("no sites given")]
    NoSites,
    #[error("site at index {index} has N_s = 0 samples; leave it out")]
    EmptySite { index: usize },
    #[error("local variance τ_s² = {value} at index {index} must be positive and finite")]
    Variance { index: usize, value: f64 },
}

/// H(n) of Remark 3 and its bounds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HRatio {
    /// H(n) = τ_cape²/τ_pool² = (N²/S³)Σ1/N_s².
    pub value: f64,
    /// 1, reached at equal sizes.
    pub lower: f64,
    /// (N²/S³)(1/(N−S+1)² + S − 1), reached with S − 1 sites of one sample.
    pub upper: f64,
}

/// Remark 3 for sample sizes `sizes` (N_s ≥ 1).
pub fn h_ratio(sizes: &[u64]) -> Result<HRatio, UtilityError> {
    if sizes.is_empty() {
        return Err(UtilityError::NoSites);
    }
    if let Some(index) = sizes.iter().position(|&n| n == 0) {
        return Err(UtilityError::EmptySite { index });
    }
    let s = sizes.len() as f64;
    let n: f64 = sizes.iter().map(|&x| x as f64).sum();
    let scale = n * n / (s * s * s);
    let value = scale * sizes.iter().map(|&x| 1.0 / (x as f64 * x as f64)).sum::<f64>();
    let largest = n - s + 1.0;
    Ok(HRatio { value, lower: 1.0, upper: scale * (1.0 / (largest * largest) + s - 1.0) })
}

/// Proposition 1's variances for local variances τ_s².
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Proposition1 {
    /// τ_conv² = (1/S²)Στ_s².
    pub conventional_var: f64,
    /// τ_cape² = (1/S³)Στ_s².
    pub cape_var: f64,
    /// G = τ_conv²/τ_cape² = S.
    pub gain: f64,
}

/// Proposition 1 for the local variances `local_var`.
pub fn proposition1(local_var: &[f64]) -> Result<Proposition1, UtilityError> {
    if local_var.is_empty() {
        return Err(UtilityError::NoSites);
    }
    if let Some((index, &value)) =
        local_var.iter().enumerate().find(|(_, v)| !(v.is_finite() && **v > 0.0))
    {
        return Err(UtilityError::Variance { index, value });
    }
    let s = local_var.len() as f64;
    let total: f64 = local_var.iter().sum();
    let conventional_var = total / (s * s);
    let cape_var = total / (s * s * s);
    Ok(Proposition1 { conventional_var, cape_var, gain: conventional_var / cape_var })
}
