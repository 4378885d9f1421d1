/*!
Noise calibration for capeDJICA's releases: sensitivities per privacy unit and the Gaussian
mechanism's τ (spec §5 "Noise and sensitivity", §9.4–9.5).

The privacy unit is a parameter because the two readings differ by a factor N_m = 250 in noise:
- **Subject** (the paper's stated notion, the default): neighbouring data sets replace one subject
  (N_m time points), so the per-sample clip B is spent N_m times: Δ = 2B·max N_m/N_s = 2B/M_s with
  equal subjects.
- **Time point** (a weaker guarantee, since one subject's time points are correlated): Δ = 2B/N_s.

The mechanism is the classical Gaussian one, τ = Δ·c(δ)/ε with c(δ) = sqrt(2 ln(1.25/δ)), from
[`crate::gaussian`]. capeDJICA's ε_i follows the paper, which applies the classical formula beyond
ε < 1 (its sweeps reach ε_i = 32 here): [`GaussianLevel::multiplier`] uses
[`gaussian::classical_sigma_as_in_papers`], so at ε_i ≥ 1 the per-release (ε_i, δ_i) is a label of
the noise level, not a guarantee. The guarantee is the overall ε that the accountant computes from
the noise multiplier z = τ/Δ = c(δ)/ε ([`super::accounting`]; spec §5 "Accounting").
*/

use crate::gaussian::{self, CalibrationError};
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

/// A per-release privacy level (ε, δ) for the classical Gaussian mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GaussianLevel {
    /// ε of one release; the classical calibration covers ε ∈ (0, 1) only.
    pub epsilon: f64,
    /// δ of one release, in (0, 1).
    pub delta: f64,
}

impl GaussianLevel {
    /// The noise multiplier z = τ/Δ = c(δ)/ε, at any ε > 0 as in the papers
    /// ([`gaussian::classical_sigma_as_in_papers`] with Δ = 1).
    pub fn multiplier(self) -> Result<f64, CalibrationError> {
        gaussian::classical_sigma_as_in_papers(1.0, self.epsilon, self.delta)
    }

    /// True when (ε, δ) are in range for the mechanism: ε > 0 and δ ∈ (0, 1).
    pub fn is_valid(self) -> bool {
        self.multiplier().is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiplier_matches_the_spec_values() {
        let z = |epsilon, delta| GaussianLevel { epsilon, delta }.multiplier().unwrap();
        assert!((z(1.0, 1e-2) - 3.10751).abs() < 1e-5);
        assert!((z(1.0, 1e-5) - 4.84481).abs() < 1e-5);
        // spec §5 RDP table: ε_i = 0.5 → z = 6.2150; the papers' formula also at ε_i ≥ 1.
        assert!((z(0.5, 1e-2) - 6.2150).abs() < 5e-5);
        assert!((z(8.0, 1e-2) - 3.10751 / 8.0).abs() < 1e-6);
        assert!(!GaussianLevel { epsilon: 0.0, delta: 1e-2 }.is_valid());
        assert!(!GaussianLevel { epsilon: 0.5, delta: 1.0 }.is_valid());
    }

    #[test]
    fn sensitivities_per_privacy_unit() {
        // 64 subjects of 250 time points: Δ_G = 2·30/64 at subject level, 2·30/16 000 per time point.
        assert!(
            (mean_sensitivity(PrivacyUnit::Subject, 30.0, 16_000, 250) - 60.0 / 64.0).abs() < 1e-12
        );
        assert!(
            (mean_sensitivity(PrivacyUnit::TimePoint, 30.0, 16_000, 250) - 60.0 / 16_000.0).abs()
                < 1e-15
        );
    }
}
