/*!
What a run actually guarantees, and how that was worked out (spec cape-fm §7.1, §7.3, §7.4).

Every Gaussian release here is reduced to one Gaussian mechanism with an effective noise multiplier
z_eff, and the guaranteed ε at the target δ is read off its exact privacy profile (Balle & Wang
2018, [`crate::accountant::analytic_gaussian::epsilon_for_delta`]):
- **Joint release of the blocks** (§7.1): blocks calibrated with multiplier z each are one
  mechanism with z_eff = z/m. Paper-faithful mode (z from the target alone) therefore guarantees
  less than the target; strict mode calibrates z = m·z_target so that z_eff = z_target.
- **CAPE** (§1.5, §7.4): an adversary whose view has collusion factor c_S sees a Gaussian loss with
  μ_z = c_S/(2z_eff²), i.e. a Gaussian mechanism with multiplier z_eff/√c_S. Three views are
  reported: the aggregator alone (S_C = 0), Theorem 1's view at S_C colluders (the paper's, with
  the exact c_S of the spec's erratum), and the full view of the threat model
  ([`crate::cape::privacy::c_s_full_view`]), the weakest and the one stated as the guarantee.
  Theorem 1's own δ at the target ε is given too (φ-bound as printed, and 2Q).
*/

use serde::{Deserialize, Serialize};

use crate::accountant::analytic_gaussian::epsilon_for_delta;
use crate::cape::PrivacyError;
use crate::cape::privacy::{Collusion, PrivacyLoss, c_s_closed_form, c_s_full_view};

use super::calibration::{Calibrated, Formula};

/// The kind of promise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuaranteeKind {
    /// (ε, δ)-DP.
    Approximate,
    /// ε-DP (δ = 0).
    Pure,
    /// No privacy.
    None,
}

/// The privacy of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Guarantee {
    pub kind: GuaranteeKind,
    pub requested_epsilon: f64,
    pub requested_delta: f64,
    /// The ε actually guaranteed at [`Self::delta`] (for CAPE: against the full view).
    pub epsilon: f64,
    pub delta: f64,
    /// How the numbers were obtained, in words.
    pub how: String,
    pub calibration: Option<Calibrated>,
    /// m, the joint multiplier of the released blocks (1 for a single block).
    pub joint_multiplier: Option<f64>,
    pub strict: bool,
    /// z_eff of the whole release, before any collusion factor.
    pub effective_noise_multiplier: Option<f64>,
    pub cape: Option<CapeViews>,
    pub warnings: Vec<String>,
}

/// A CAPE release under three adversary views.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CapeViews {
    pub sites: usize,
    pub colluders: usize,
    pub aggregator_only: View,
    pub theorem1: View,
    pub full_view: View,
}

/// One view: its collusion factor, the privacy-loss distribution, Theorem 1's δ at the target ε
/// (`None` where ε ≤ μ_z) and the exact ε at the target δ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct View {
    pub c_s: f64,
    pub mu_z: f64,
    pub sigma_z: f64,
    pub delta_phi_bound: Option<f64>,
    pub delta_tail: Option<f64>,
    pub epsilon_exact: f64,
}

impl View {
    fn new(c_s: f64, z_eff: f64, epsilon: f64, delta: f64) -> Result<Self, PrivacyError> {
        let loss = PrivacyLoss::from_c_s(c_s, z_eff)?;
        let epsilon_exact =
            epsilon_for_delta(z_eff / c_s.sqrt(), delta).map_err(|_| PrivacyError::Delta(delta))?;
        Ok(Self {
            c_s,
            mu_z: loss.mu_z,
            sigma_z: loss.sigma_z,
            delta_phi_bound: loss.delta_phi_bound(epsilon).ok(),
            delta_tail: loss.delta_tail(epsilon).ok(),
            epsilon_exact,
        })
    }
}

fn formula_text(c: &Calibrated) -> &'static str {
    match c.formula {
        Formula::Classical => "classical calibration z = c(δ)/ε (ε < 1)",
        Formula::Analytic => "analytic Gaussian calibration (Balle & Wang 2018)",
        Formula::PaperExtrapolation => {
            "the papers' extrapolation z = c(δ)/ε at ε ≥ 1 (not a theorem there)"
        }
    }
}

impl Guarantee {
    /// No noise at all.
    pub fn none(epsilon: f64, delta: f64) -> Self {
        Self {
            kind: GuaranteeKind::None,
            requested_epsilon: epsilon,
            requested_delta: delta,
            epsilon: f64::INFINITY,
            delta: 1.0,
            how: "non-private: no noise".into(),
            calibration: None,
            joint_multiplier: None,
            strict: false,
            effective_noise_multiplier: None,
            cape: None,
            warnings: vec![],
        }
    }

    /// A pure ε-DP mechanism (Laplace FM, output perturbation).
    pub fn pure(epsilon: f64, requested_delta: f64, how: impl Into<String>) -> Self {
        Self {
            kind: GuaranteeKind::Pure,
            requested_epsilon: epsilon,
            requested_delta,
            epsilon,
            delta: 0.0,
            how: how.into(),
            calibration: None,
            joint_multiplier: None,
            strict: false,
            effective_noise_multiplier: None,
            cape: None,
            warnings: vec![],
        }
    }

    /// Gaussian blocks calibrated with `calibrated` (times m when `strict`), released jointly
    /// with multiplier m. `what` names the mechanism and whose data it protects.
    pub fn gaussian(
        what: &str,
        epsilon: f64,
        delta: f64,
        calibrated: Calibrated,
        m: f64,
        strict: bool,
    ) -> Result<Self, PrivacyError> {
        let z_block = calibrated.multiplier * if strict { m } else { 1.0 };
        let z_eff = z_block / m;
        let guaranteed = epsilon_for_delta(z_eff, delta).map_err(|_| PrivacyError::Delta(delta))?;
        let mut warnings = Vec::new();
        if !calibrated.is_guarantee {
            warnings.push(format!(
                "ε = {epsilon} ≥ 1 calibrated with the classical formula as the papers do: that \
                 formula is not a theorem for ε ≥ 1; the guaranteed ε is given instead"
            ));
        }
        if m > 1.0 && !strict && guaranteed > epsilon {
            warnings.push(format!(
                "paper-faithful mode: each block is calibrated to (ε, δ) on its own, but the \
                 blocks are released together (multiplier m = {m}, spec §7.1), so the release is \
                 only ({guaranteed:.4}, {delta:e})-DP; use strict mode for ({epsilon}, {delta:e})"
            ));
        }
        let how = format!(
            "{what}: {}, z = {z_block:.4} per block; the blocks together are one Gaussian \
             mechanism with z/m = {z_eff:.4} (m = {m}{}); ε at δ from its exact privacy profile",
            formula_text(&calibrated),
            if strict { ", strict: z = m·z_target" } else { ", paper-faithful" },
        );
        Ok(Self {
            kind: GuaranteeKind::Approximate,
            requested_epsilon: epsilon,
            requested_delta: delta,
            epsilon: guaranteed,
            delta,
            how,
            calibration: Some(calibrated),
            joint_multiplier: Some(m),
            strict,
            effective_noise_multiplier: Some(z_eff),
            cape: None,
            warnings,
        })
    }

    /// capeFM: as [`Self::gaussian`] per site, then the three adversary views of CAPE.
    pub fn cape(
        epsilon: f64,
        delta: f64,
        calibrated: Calibrated,
        m: f64,
        strict: bool,
        collusion: &Collusion,
    ) -> Result<Self, PrivacyError> {
        let mut g =
            Self::gaussian("capeFM, each site's message", epsilon, delta, calibrated, m, strict)?;
        let z_eff = g.effective_noise_multiplier.expect("set by gaussian()");
        let aggregator = Collusion::new(collusion.sites(), 0)?;
        let views = CapeViews {
            sites: collusion.sites(),
            colluders: collusion.colluders(),
            aggregator_only: View::new(c_s_closed_form(&aggregator), z_eff, epsilon, delta)?,
            theorem1: View::new(c_s_closed_form(collusion), z_eff, epsilon, delta)?,
            full_view: View::new(c_s_full_view(collusion), z_eff, epsilon, delta)?,
        };
        g.epsilon = views.full_view.epsilon_exact;
        g.how.push_str(&format!(
            "; CAPE: against the full adversary view (S_C = {} of S = {}, c_S = {:.4}) the \
             release is ({:.4}, {delta:e})-DP; Theorem 1's view (c_S = {:.4}) gives δ = {} at \
             ε = {epsilon} (φ-bound as printed)",
            collusion.colluders(),
            collusion.sites(),
            views.full_view.c_s,
            views.full_view.epsilon_exact,
            views.theorem1.c_s,
            views
                .theorem1
                .delta_phi_bound
                .map_or("none (ε ≤ μ_z)".into(), |d| format!("{d:.3e}")),
        ));
        if views.theorem1.delta_phi_bound.is_some_and(|d| d > delta) {
            g.warnings.push(format!(
                "Theorem 1's δ at ε = {epsilon} is larger than the calibration δ = {delta:e} \
                 (spec §7.4): the per-site δ is not the calibration δ"
            ));
        }
        g.cape = Some(views);
        Ok(g)
    }
}
