/*!
Noise calibration for capeDJICA's releases: sensitivities per privacy unit and the Gaussian
mechanism's τ (spec §5 "Noise and sensitivity", §9.4–9.5).

The privacy unit is a parameter because the two readings differ by a factor N_m = 250 in noise:
- **Subject** (the paper's stated notion, the default): neighbouring data sets replace one subject
  (N_m time points), so the per-sample clip B is spent N_m times: Δ = 2B·max N_m/N_s = 2B/M_s with
  equal subjects.
- **Time point** (a weaker guarantee, since one subject's time points are correlated): Δ = 2B/N_s.

The mechanism is the classical Gaussian one, τ = Δ·c(δ)/ε with c(δ) = sqrt(2 ln(1.25/δ)). Its
noise multiplier z = τ/Δ = c(δ)/ε is what the accountant composes (spec §5 "Accounting").
*/

use serde::{Deserialize, Serialize};

/// Whose privacy a release protects: what two neighbouring data sets differ in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrivacyUnit {
    /// One subject (all N_m of its time points): the paper's notion and the default.
    Subject,
    /// One time point: a weaker guarantee (a subject's time points are correlated).
    TimePoint,
}

impl PrivacyUnit {
    /// How many samples one unit can change at a site whose subjects have at most
    /// `max_subject_len` time points: N_m for a subject, 1 for a time point.
    pub fn samples_per_unit(self, max_subject_len: usize) -> usize {
        match self {
            PrivacyUnit::Subject => max_subject_len,
            PrivacyUnit::TimePoint => 1,
        }
    }
}

/// The L2 sensitivity of a site's mean of `samples` per-sample vectors, each clipped to norm
/// `clip`, under replace-one-unit neighbours: 2·clip·(samples changed)/N_s (spec §5: Δ_G^s =
/// 2B_G/M_s at subject level with equal subjects, 2B_G/N_s at time-point level).
pub fn mean_sensitivity(
    unit: PrivacyUnit,
    clip: f64,
    samples: usize,
    max_subject_len: usize,
) -> f64 {
    2.0 * clip * unit.samples_per_unit(max_subject_len) as f64 / samples as f64
}

/// The classical Gaussian mechanism's multiplier c(δ) = sqrt(2 ln(1.25/δ)), so that
/// τ = Δ·c(δ)/ε (spec conventions; c(1e-2) = 3.10751, c(1e-5) = 4.84481).
///
/// Merge note: replace with `crate::gaussian` (written in parallel) at merge.
pub(crate) fn classical_multiplier(delta: f64) -> f64 {
    (2.0 * (1.25 / delta).ln()).sqrt()
}

/// A per-release privacy level (ε, δ) for the classical Gaussian mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GaussianLevel {
    /// ε of one release; the classical calibration covers ε ∈ (0, 1) only.
    pub epsilon: f64,
    /// δ of one release, in (0, 1).
    pub delta: f64,
}

impl GaussianLevel {
    /// The noise multiplier z = τ/Δ = c(δ)/ε.
    pub fn multiplier(self) -> f64 {
        classical_multiplier(self.delta) / self.epsilon
    }

    /// True when (ε, δ) are in range for the mechanism: ε > 0 and δ ∈ (0, 1).
    pub fn is_valid(self) -> bool {
        self.epsilon.is_finite() && self.epsilon > 0.0 && self.delta > 0.0 && self.delta < 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiplier_matches_the_spec_values() {
        assert!((classical_multiplier(1e-2) - 3.10751).abs() < 1e-5);
        assert!((classical_multiplier(1e-5) - 4.84481).abs() < 1e-5);
    }
}
