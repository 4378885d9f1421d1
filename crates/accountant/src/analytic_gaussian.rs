/*!
The analytic Gaussian mechanism (Balle & Wang 2018, "Improving the Gaussian mechanism for
differential privacy", ICML; Theorem 8 and Algorithm 1). Spec cape-fm §7.3: valid for every ε,
unlike the classical calibration in [`crate::gaussian`], which needs ε < 1.

Adding N(0, σ²) to a query of L2 sensitivity Δ is (ε, δ)-DP exactly when

  δ ≥ δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε·Φ(−Δ/(2σ) − εσ/Δ),

so with z = σ/Δ: δ(ε) = Φ(1/(2z) − εz) − e^ε·Φ(−1/(2z) − εz). This is the Gaussian's privacy
profile, the tightest (ε, δ) statement there is. Because J Gaussian releases with multiplier z
compose exactly into one Gaussian release with multiplier z/√J, the same curve gives the exact
(ε, δ) of a whole run of unsampled Gaussian releases ([`composed_epsilon`]).

Algorithm 1 of the paper reparametrises the equation δ(ε; σ) = δ to search over a scalar v; here
the same equation is solved directly for z by bisection (δ is strictly decreasing in z and in ε),
in log space so that δ = 1e-300 is as easy as δ = 1e-5.
*/

use super::log_tails::ln_normal_cdf;
use super::solve::bisect;
use super::{AccountantError, check_delta, check_epsilon, check_noise_multiplier};
use crate::gaussian::CalibrationError;

/// ln δ(ε) for the Gaussian mechanism with multiplier z (−∞ when δ(ε) underflows).
pub fn ln_delta_for_epsilon(noise_multiplier: f64, epsilon: f64) -> f64 {
    let z = noise_multiplier;
    let x = ln_normal_cdf(1.0 / (2.0 * z) - epsilon * z);
    let y = epsilon + ln_normal_cdf(-1.0 / (2.0 * z) - epsilon * z);
    if y < x { x + (-(y - x).exp()).ln_1p() } else { f64::NEG_INFINITY }
}

/// The exact δ(ε) of one Gaussian release with multiplier z = σ/Δ.
pub fn delta_for_epsilon(noise_multiplier: f64, epsilon: f64) -> Result<f64, AccountantError> {
    check_noise_multiplier(noise_multiplier)?;
    check_epsilon(epsilon)?;
    Ok(ln_delta_for_epsilon(noise_multiplier, epsilon).exp())
}

/// The smallest ε with δ(ε) ≤ δ for one Gaussian release with multiplier z (0 when even ε = 0
/// meets δ).
pub fn epsilon_for_delta(noise_multiplier: f64, delta: f64) -> Result<f64, AccountantError> {
    check_noise_multiplier(noise_multiplier)?;
    check_delta(delta)?;
    Ok(epsilon_for_delta_unchecked(noise_multiplier, delta))
}

pub(crate) fn epsilon_for_delta_unchecked(z: f64, delta: f64) -> f64 {
    let target = delta.ln();
    let gap = |eps: f64| ln_delta_for_epsilon(z, eps) - target;
    if gap(0.0) <= 0.0 {
        return 0.0;
    }
    let mut hi = 1.0;
    while gap(hi) > 0.0 {
        hi *= 2.0;
    }
    bisect(gap, 0.0, hi, 1e-14)
}

/// The exact ε(δ) of `count` unsampled Gaussian releases with multiplier z: one release with
/// multiplier z/√count.
pub fn composed_epsilon(
    noise_multiplier: f64,
    count: u64,
    delta: f64,
) -> Result<f64, AccountantError> {
    if count == 0 {
        return Err(AccountantError::ZeroCount);
    }
    epsilon_for_delta(noise_multiplier / (count as f64).sqrt(), delta)
}

/// The smallest noise multiplier z = σ/Δ for which the Gaussian mechanism is (ε, δ)-DP, for any
/// ε > 0 (Balle & Wang 2018, Algorithm 1's equation).
pub fn analytic_multiplier(epsilon: f64, delta: f64) -> Result<f64, CalibrationError> {
    if !(epsilon > 0.0 && epsilon.is_finite()) {
        return Err(CalibrationError::Epsilon(epsilon));
    }
    if !(delta > 0.0 && delta < 1.0) {
        return Err(CalibrationError::Delta(delta));
    }
    let target = delta.ln();
    let gap = |z: f64| ln_delta_for_epsilon(z, epsilon) - target;
    // δ(ε; z) falls from 1 (z → 0) to 0 (z → ∞): bracket the crossing, then bisect.
    let (mut lo, mut hi) = (0.5, 1.0);
    while gap(lo) <= 0.0 {
        lo *= 0.5;
    }
    while gap(hi) > 0.0 {
        hi *= 2.0;
    }
    Ok(bisect(gap, lo, hi, 1e-15))
}

/// σ = Δ·z for the analytic Gaussian mechanism, for any ε > 0.
pub fn analytic_sigma(sensitivity: f64, epsilon: f64, delta: f64) -> Result<f64, CalibrationError> {
    if !(sensitivity > 0.0 && sensitivity.is_finite()) {
        return Err(CalibrationError::Sensitivity(sensitivity));
    }
    Ok(sensitivity * analytic_multiplier(epsilon, delta)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_and_epsilon_invert_each_other() {
        for &z in &[0.3, 1.0, 4.0, 30.0] {
            for &d in &[1e-2, 1e-5, 1e-12] {
                let eps = epsilon_for_delta(z, d).unwrap();
                if eps > 0.0 {
                    let back = delta_for_epsilon(z, eps).unwrap();
                    assert!(((back - d) / d).abs() < 1e-9, "z = {z}, δ = {d}: {back}");
                }
            }
        }
    }

    #[test]
    fn refuses_bad_inputs_with_the_value() {
        assert_eq!(analytic_multiplier(0.0, 1e-5), Err(CalibrationError::Epsilon(0.0)));
        assert_eq!(analytic_multiplier(1.0, 1.0), Err(CalibrationError::Delta(1.0)));
        assert_eq!(analytic_sigma(-1.0, 1.0, 1e-5), Err(CalibrationError::Sensitivity(-1.0)));
        assert_eq!(epsilon_for_delta(0.0, 1e-5), Err(AccountantError::NoiseMultiplier(0.0)));
        assert_eq!(delta_for_epsilon(1.0, -1.0), Err(AccountantError::Epsilon(-1.0)));
    }
}
