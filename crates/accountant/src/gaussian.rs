/*!
Calibration of the Gaussian mechanism (spec cape-secagg-pca-djica, Conventions; cape-fm §7.3).

The classical theorem (Dwork & Roth 2014, Thm A.1): adding N(0, τ²) with
τ = Δ·c(δ)/ε, c(δ) = sqrt(2 ln(1.25/δ)), is (ε, δ)-DP **for ε ∈ (0, 1) only**.
[`classical_sigma`] enforces that range. The papers also use the formula at ε ≥ 1 (their sweeps go
to ε = 10); [`classical_sigma_as_in_papers`] reproduces that and says in its name that it is not a
guarantee there. The analytic Gaussian mechanism (Balle & Wang 2018), valid for every ε, lives in
the accountant.

Every accounting formula in capelab is written in terms of the noise multiplier z = τ/Δ.
*/

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CalibrationError {
    #[error("ε = {0} must be positive and finite")]
    Epsilon(f64),
    #[error(
        "ε = {0} is not below 1: the classical Gaussian mechanism is only (ε, δ)-DP for ε < 1; \
         use the analytic Gaussian mechanism"
    )]
    EpsilonNotBelowOne(f64),
    #[error("δ = {0} must lie strictly between 0 and 1")]
    Delta(f64),
    #[error("sensitivity Δ = {0} must be positive and finite")]
    Sensitivity(f64),
}

/// c(δ) = sqrt(2 ln(1.25/δ)). For example c(1e-2) = 3.10751 and c(1e-5) = 4.84481.
pub fn c_delta(delta: f64) -> Result<f64, CalibrationError> {
    if !(delta > 0.0 && delta < 1.0) {
        return Err(CalibrationError::Delta(delta));
    }
    Ok((2.0 * (1.25 / delta).ln()).sqrt())
}

/// The classical noise multiplier z = c(δ)/ε, for ε ∈ (0, 1).
pub fn classical_multiplier(epsilon: f64, delta: f64) -> Result<f64, CalibrationError> {
    check_epsilon(epsilon)?;
    if epsilon >= 1.0 {
        return Err(CalibrationError::EpsilonNotBelowOne(epsilon));
    }
    Ok(c_delta(delta)? / epsilon)
}

/// τ = Δ·c(δ)/ε, for ε ∈ (0, 1).
pub fn classical_sigma(
    sensitivity: f64,
    epsilon: f64,
    delta: f64,
) -> Result<f64, CalibrationError> {
    check_sensitivity(sensitivity)?;
    Ok(sensitivity * classical_multiplier(epsilon, delta)?)
}

/// τ = Δ·c(δ)/ε at any ε > 0, as the papers' experiments use it. For ε ≥ 1 this is a
/// reproduction of the papers, not an (ε, δ) guarantee; report it as such.
pub fn classical_sigma_as_in_papers(
    sensitivity: f64,
    epsilon: f64,
    delta: f64,
) -> Result<f64, CalibrationError> {
    check_sensitivity(sensitivity)?;
    check_epsilon(epsilon)?;
    Ok(sensitivity * c_delta(delta)? / epsilon)
}

fn check_epsilon(epsilon: f64) -> Result<(), CalibrationError> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(CalibrationError::Epsilon(epsilon));
    }
    Ok(())
}

fn check_sensitivity(sensitivity: f64) -> Result<(), CalibrationError> {
    if !(sensitivity.is_finite() && sensitivity > 0.0) {
        return Err(CalibrationError::Sensitivity(sensitivity));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_constants() {
        assert!((c_delta(1e-2).unwrap() - 3.10751).abs() < 5e-6);
        assert!((c_delta(1e-5).unwrap() - 4.84481).abs() < 5e-6);
        assert!((c_delta(1e-3).unwrap() - 3.7765).abs() < 5e-5);
        // Appendix A toy example: N = 1000, ε = 0.5, δ = 1e-5 → τ_pool = 9.69e-3.
        let tau_pool = classical_sigma(1.0 / 1000.0, 0.5, 1e-5).unwrap();
        assert!((tau_pool - 9.69e-3).abs() < 5e-6);
        // seed 000 experiments: δ_i = 1e-2, ε_i = 0.5 → z = 6.2150.
        assert!((classical_multiplier(0.5, 1e-2).unwrap() - 6.2150).abs() < 5e-5);
    }

    #[test]
    fn out_of_range_inputs_are_refused_with_the_value() {
        assert_eq!(classical_multiplier(1.0, 1e-5), Err(CalibrationError::EpsilonNotBelowOne(1.0)));
        assert_eq!(classical_multiplier(-0.1, 1e-5), Err(CalibrationError::Epsilon(-0.1)));
        assert_eq!(c_delta(0.0), Err(CalibrationError::Delta(0.0)));
        assert_eq!(classical_sigma(0.0, 0.5, 1e-5), Err(CalibrationError::Sensitivity(0.0)));
        let paper = classical_sigma_as_in_papers(1.0, 10.0, 1e-5).unwrap();
        assert!((paper - 0.484481).abs() < 1e-6);
    }
}
