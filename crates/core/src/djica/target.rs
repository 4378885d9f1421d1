/*!
capeDJICA calibrated to a whole-study target (issue 15; spec §5 "Accounting"): the per-release
level (ε_i, δ_i) whose J_max iterations are (ε, δ_r)-DP in the run's guarantee view, with the
least noise PLD accounting allows.

One iteration is two Gaussian releases with z_W = z_b = z, so it is one Gaussian release with
σ = z/√2; a view with collusion factor c sees multiplier σ/√c; J_max of them compose exactly (PLD of
unsampled Gaussians is exact). So z = √2·√c·z*, where z* is [`calibrate_noise_multiplier`]'s answer
for J_max releases, and ε_i = c(δ_i)/z labels that noise the way the paper's per-release level
does ([`GaussianLevel::multiplier`]). capePCA keeps its own budget (ε_p, δ_p).
*/

use serde::{Deserialize, Serialize};

use super::accounting::{AccountingError, views};
use super::calibration::GaussianLevel;
use super::run::Method;
use crate::accountant::pld::{
    DEFAULT_INTERVAL, PldError, calibrate_noise_multiplier, calibrate_noise_multiplier_rdp,
};
use crate::gaussian::{CalibrationError, c_delta};

/// What a target gives: the level to run at and the noise each accountant would need.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetLevel {
    /// The per-release level to run capeDJICA at.
    pub level: GaussianLevel,
    /// z = z_W = z_b per release under PLD calibration.
    pub noise_multiplier: f64,
    /// The z RDP (Balle et al.'s conversion) would need for the same target.
    pub noise_multiplier_rdp: f64,
    /// The guarantee view's collusion factor c the calibration used.
    pub collusion_factor: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("a target ε needs a private method: {0:?} adds no noise")]
    NotPrivate(Method),
    #[error("the target needs J_max ≥ 1 iterations")]
    NoIterations,
    #[error(transparent)]
    Accounting(#[from] AccountingError),
    #[error(transparent)]
    Pld(#[from] PldError),
    #[error(transparent)]
    Calibration(#[from] CalibrationError),
}

/// The level for a target (ε, δ_r) over `max_iterations` iterations of `method` among `sites`.
pub fn level_for_target(
    target_epsilon: f64,
    delta_report: f64,
    delta_iteration: f64,
    max_iterations: usize,
    method: Method,
    sites: usize,
) -> Result<TargetLevel, TargetError> {
    if !method.is_private() {
        return Err(TargetError::NotPrivate(method));
    }
    if max_iterations == 0 {
        return Err(TargetError::NoIterations);
    }
    let views = views(method, sites)?;
    let guarantee = ["full", "aggregator"]
        .iter()
        .find_map(|name| views.iter().find(|v| v.name == *name))
        .expect("every method reports the aggregator's view");
    let c = guarantee.collusion_factor;
    let j = max_iterations as u64;
    let per_release = |z_star: f64| z_star * (2.0 * c).sqrt();
    // Raised by 1e−9 so that ε_i → z round trips cannot land a hair below the calibrated noise.
    let z = per_release(
        calibrate_noise_multiplier(target_epsilon, delta_report, j, 1.0, DEFAULT_INTERVAL)?
            .noise_multiplier,
    ) * (1.0 + 1e-9);
    let z_rdp = per_release(
        calibrate_noise_multiplier_rdp(target_epsilon, delta_report, j, 1.0)?.noise_multiplier,
    );
    let level = GaussianLevel { epsilon: c_delta(delta_iteration)? / z, delta: delta_iteration };
    Ok(TargetLevel { level, noise_multiplier: z, noise_multiplier_rdp: z_rdp, collusion_factor: c })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::djica::PrivacyUnit;
    use crate::djica::accounting::account;
    use crate::djica::run::DjicaPrivacy;

    fn privacy(
        method: Method,
        level: GaussianLevel,
        iterations: usize,
        sites: usize,
    ) -> DjicaPrivacy {
        DjicaPrivacy::planned(method, PrivacyUnit::Subject, level, iterations, iterations, sites)
            .expect("a valid level")
    }

    /// The level meets the target in the study's own account (guarantee view, J_max, exact
    /// composition), tightly: 0.2 % less noise would miss it.
    #[test]
    fn the_level_meets_the_target_in_the_study_account_and_no_less_noise_would() {
        for (method, sites, target, j) in [
            (Method::Cape, 4, 8.0, 150),
            (Method::Cape, 7, 2.0, 500),
            (Method::Conventional, 3, 1.0, 20),
        ] {
            let t = level_for_target(target, REPORT, 1e-5, j, method, sites).unwrap();
            let spent = account(&privacy(method, t.level, j, sites), None, REPORT)
                .unwrap()
                .ica_epsilon_at_max()
                .unwrap();
            assert!(spent <= target && spent > target * 0.999, "{method:?}: {spent} vs {target}");
            let louder = GaussianLevel { epsilon: t.level.epsilon * 1.002, ..t.level };
            let over = account(&privacy(method, louder, j, sites), None, REPORT)
                .unwrap()
                .ica_epsilon_at_max()
                .unwrap();
            assert!(over > target, "{method:?}: {over}");
            assert!(t.noise_multiplier < t.noise_multiplier_rdp, "PLD needs less noise than RDP");
        }
    }

    const REPORT: f64 = crate::djica::REPORT_DELTA;

    #[test]
    fn bad_targets_are_named() {
        let e = level_for_target(1.0, REPORT, 1e-5, 10, Method::NonPrivate, 4).unwrap_err();
        assert!(e.to_string().contains("adds no noise"), "{e}");
        let e = level_for_target(1.0, REPORT, 1e-5, 0, Method::Cape, 4).unwrap_err();
        assert!(e.to_string().contains("J_max"), "{e}");
        let e = level_for_target(-1.0, REPORT, 1e-5, 10, Method::Cape, 4).unwrap_err();
        assert!(e.to_string().contains("-1"), "{e}");
        let e = level_for_target(1.0, REPORT, 2.0, 10, Method::Cape, 4).unwrap_err();
        assert!(e.to_string().contains('2'), "{e}");
    }
}
