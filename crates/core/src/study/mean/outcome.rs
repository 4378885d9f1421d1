/*!
What the dashboard shows at the end of a study: the estimates, every message the aggregator saw
(the masked SecureAgg vectors, the noisy â_s), who dropped where, and the theory to compare with
(variances of spec §2 Lemma 1 / Proposition 1, privacy of Theorem 1 with the errata and the full
adversary view). Everything is serde-serialisable for the browser and the CLI.
*/

use serde::{Deserialize, Serialize};

use crate::cape::SiteRelease;
use crate::cape::privacy::{
    Collusion, PrivacyLoss, c_s_closed_form, c_s_full_view, c_s_paper_eq1, delta_conv, delta_pool,
};
use crate::secagg::{DropReason, Dropout, Phase};
pub use crate::study::admission::TooFewAccepted;
use crate::wire::ParticipantId;

use super::messages::DeclineReason;
use super::params::{NoisePlan, StudyParams};
use crate::study::StudyId;

/// The end of a study, as the aggregator saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StudyOutcome {
    pub study: StudyId,
    pub params: StudyParams,
    pub noise: NoisePlan,
    /// Set when the classical calibration does not cover ε (ε ≥ 1): show it next to the numbers.
    pub calibration_note: Option<String>,
    /// Sites that accepted `mean/start`.
    pub accepted: Vec<ParticipantId>,
    /// Sites that declined, when, and why.
    pub declined: Vec<Declined>,
    /// Everyone who stopped answering, in which phase of which attempt.
    pub dropouts: Vec<StudyDropout>,
    /// One report per SecureAgg + release round, in order (re-runs after a broken zero sum).
    pub attempts: Vec<AttemptReport>,
    pub result: StudyResult,
    /// Variances and privacy at |U| of the last attempt that produced a noise sum.
    pub theory: Option<Theory>,
    pub finished_at_ms: u64,
}

/// The estimates, or why there are none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum StudyResult {
    Estimated(Estimates),
    Aborted { reason: AbortReason },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimates {
    pub attempt: u32,
    /// U: the sites whose data is in the estimate.
    pub survivors: Vec<ParticipantId>,
    /// a_cape = (1/|U|)Σâ_s: noise variance τ²/|U|² per coordinate (pooled accuracy).
    pub cape: Vec<f64>,
    /// a_conv: the mean of U's conventional messages, noise variance τ²/|U|.
    pub conventional: Option<Vec<f64>>,
    /// The â_s the estimate is formed from: each carries noise of variance τ².
    pub messages: Vec<SiteRelease>,
    pub conventional_messages: Vec<SiteRelease>,
}

/// Why a study ended without an estimate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AbortReason {
    #[error("{0}")]
    TooFewAccepted(TooFewAccepted),
    #[error(
        "SecureAgg aborted in attempt {attempt} ({phase}): {message}; nothing that could unmask a \
         site was sent"
    )]
    SecAgg { attempt: u32, phase: Phase, message: String },
    #[error(
        "sites {missing:?} broke the zero sum of attempt {attempt} and only {survivors} sites \
         remain, fewer than t = {need}"
    )]
    TooFewToRerun { attempt: u32, missing: Vec<ParticipantId>, survivors: usize, need: usize },
    #[error(
        "sites {missing:?} broke the zero sum of attempt {attempt}, the last of the {max} attempts \
         the study allows"
    )]
    RerunsExhausted { attempt: u32, missing: Vec<ParticipantId>, max: u32 },
    #[error("the dashboard stopped the study: {reason}")]
    Stopped { reason: String },
}

/// A site that declined, with the attempt it declined (0 = at `mean/start`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Declined {
    pub site: ParticipantId,
    pub attempt: u32,
    pub reason: DeclineReason,
}

/// Where in the study a participant stopped answering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum StudyPhase {
    /// Before answering `mean/start`.
    Invitation,
    /// Inside SecureAgg (phase 1): its round.
    #[serde(rename = "secagg")]
    SecAgg { round: Phase },
    /// After the noise sum, before its release arrived (phase 2): breaks the zero sum.
    Release,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StudyDropout {
    pub site: ParticipantId,
    /// 0 for the invitation, then the attempt.
    pub attempt: u32,
    pub phase: StudyPhase,
    pub reason: DropReason,
}

/// One attempt: a SecureAgg instance over fresh ê_s, then the releases.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttemptReport {
    pub attempt: u32,
    /// Who was asked to take part (the SecureAgg invitees).
    pub invited: Vec<ParticipantId>,
    /// U: whose ê_s is in the noise sum (empty if SecureAgg aborted).
    pub survivors: Vec<ParticipantId>,
    /// Who dropped inside SecureAgg, and in which round (its own report).
    pub secagg_dropouts: Vec<Dropout>,
    /// Σ_{s∈U} ê_s as broadcast (public).
    pub noise_sum: Option<Vec<f64>>,
    /// What the aggregator received in SecureAgg's masked-input round: uniform-looking ring
    /// elements, nothing like the ê_s they hide.
    pub masked_inputs: Vec<MaskedInput>,
    /// The â_s that arrived.
    pub releases: Vec<SiteRelease>,
    /// Conventional messages that arrived with them.
    pub conventional: Vec<SiteRelease>,
    /// Sites of U whose release never came (the zero sum is then broken).
    pub missing: Vec<ParticipantId>,
}

/// One site's masked vector y_u as the aggregator saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MaskedInput {
    pub site: ParticipantId,
    /// y_u in Z_{2^64}.
    pub ring: Vec<u64>,
    /// y_u read with the noise's fixed-point format, as if it were ê_u: noise of magnitude ~2^31
    /// where ê_u is of order τ.
    pub decoded: Vec<f64>,
}

/// The numbers to set the estimates against, at S = |U|.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Theory {
    pub sites: usize,
    /// S_C = ⌈S/3⌉ − 1 (spec §1).
    pub colluders: usize,
    /// τ², the noise variance of each message â_s (and of each conventional message).
    pub var_message: f64,
    /// τ²/S²: CAPE's estimate, equal to the pooled mechanism's τ_pool² (Lemma 1).
    pub var_cape: f64,
    pub var_pooled: f64,
    /// τ²/S: the conventional estimate with the same local noise (Proposition 1).
    pub var_conventional: f64,
    /// var_conventional / var_cape = S.
    pub gain: f64,
    pub privacy: PrivacyReport,
}

/// One CAPE release's (ε, δ) under three views of the adversary, and the baselines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrivacyReport {
    pub epsilon: f64,
    /// z = τ/Δ.
    pub noise_multiplier: f64,
    /// The guarantee: the adversary also subtracts the colluders' own ê_c, which the threat model
    /// hands it (cape::privacy::c_s_full_view). This is the c_S the ledger accounts.
    pub full_view: ViewPrivacy,
    /// The paper's Theorem 1 view, with the spec's erratum (exact c_S): understates what
    /// colluders learn.
    pub theorem1: ViewPrivacy,
    /// Theorem 1 with eq. (1) as printed (the erratum's value), where it is defined.
    pub paper_eq1: Option<ViewPrivacy>,
    /// δ_conv = 1.25·exp(−(εz)²/(2S)) (Appendix F): conventional noise at CAPE's accuracy.
    pub delta_conv: Option<f64>,
    /// δ_pool = 1.25·exp(−(εz)²/2) (Appendix F): pooled data at the same accuracy.
    pub delta_pool: Option<f64>,
    /// Whether the classical bound behind δ_conv and δ_pool holds at this ε (ε < 1).
    pub classical_bound_covers: bool,
}

/// c_S, the privacy-loss distribution N(μ_z, 2μ_z) and δ at ε under one view. The δ's are `None`
/// where ε ≤ μ_z (spec §8 pitfall 9).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewPrivacy {
    pub c_s: f64,
    pub mu_z: f64,
    pub sigma_z: f64,
    /// 2·Q((ε − μ_z)/σ_z): the exact tail, the δ quoted as δ_cape.
    pub delta_tail: Option<f64>,
    /// The paper's looser 2·(σ_z/(ε − μ_z))·φ((ε − μ_z)/σ_z).
    pub delta_phi_bound: Option<f64>,
}

impl ViewPrivacy {
    fn new(c_s: f64, noise_multiplier: f64, epsilon: f64) -> Option<Self> {
        let loss = PrivacyLoss::from_c_s(c_s, noise_multiplier).ok()?;
        Some(ViewPrivacy {
            c_s,
            mu_z: loss.mu_z,
            sigma_z: loss.sigma_z,
            delta_tail: loss.delta_tail(epsilon).ok(),
            delta_phi_bound: loss.delta_phi_bound(epsilon).ok(),
        })
    }
}

impl Theory {
    /// The theory of one symmetric CAPE round among `sites` = |U| sites with `plan`'s noise, at
    /// the study's ε. `None` for fewer than 2 sites.
    pub fn new(plan: &NoisePlan, sites: usize, epsilon: f64) -> Option<Self> {
        let collusion = Collusion::default_for(sites).ok()?;
        let z = plan.noise_multiplier;
        let s = sites as f64;
        let tau2 = plan.local_sd * plan.local_sd;
        let privacy = PrivacyReport {
            epsilon,
            noise_multiplier: z,
            full_view: ViewPrivacy::new(c_s_full_view(&collusion), z, epsilon)?,
            theorem1: ViewPrivacy::new(c_s_closed_form(&collusion), z, epsilon)?,
            paper_eq1: c_s_paper_eq1(&collusion).and_then(|c| ViewPrivacy::new(c, z, epsilon)),
            delta_conv: delta_conv(epsilon, z, sites).ok(),
            delta_pool: delta_pool(epsilon, z).ok(),
            classical_bound_covers: epsilon < 1.0,
        };
        Some(Theory {
            sites,
            colluders: collusion.colluders(),
            var_message: tau2,
            var_cape: tau2 / (s * s),
            var_pooled: tau2 / (s * s),
            var_conventional: tau2 / s,
            gain: s,
            privacy,
        })
    }
}

impl StudyOutcome {
    /// The estimates, if the study produced them.
    pub fn estimates(&self) -> Option<&Estimates> {
        match &self.result {
            StudyResult::Estimated(e) => Some(e),
            StudyResult::Aborted { .. } => None,
        }
    }

    /// Why the study ended without estimates.
    pub fn abort_reason(&self) -> Option<&AbortReason> {
        match &self.result {
            StudyResult::Estimated(_) => None,
            StudyResult::Aborted { reason } => Some(reason),
        }
    }

    /// How many attempts were re-runs.
    pub fn reruns(&self) -> usize {
        self.attempts.len().saturating_sub(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::mean::StudyParams;

    #[test]
    fn theory_matches_the_spec_test_vectors() {
        // spec §2: S = 4, z = 10, ε = 0.5 → exact (Theorem 1) μ_z = 0.0064762, δ_pool = 4.658e-6,
        // δ_conv = 5.492e-2; full view c_S = 4·7/(5·3) = 1.8667.
        let mut plan = StudyParams::new(vec![1, 2, 3, 4], 0.5, 1e-5, 1).unwrap().noise().unwrap();
        plan.noise_multiplier = 10.0;
        plan.local_sd = 10.0;
        let t = Theory::new(&plan, 4, 0.5).unwrap();
        assert_eq!((t.sites, t.colluders), (4, 1));
        assert!((t.privacy.theorem1.mu_z - 0.0064762).abs() < 1e-7);
        assert!((t.privacy.full_view.c_s - 28.0 / 15.0).abs() < 1e-12);
        assert!(t.privacy.full_view.mu_z > t.privacy.theorem1.mu_z);
        assert!((t.privacy.delta_pool.unwrap() / 4.658e-6 - 1.0).abs() < 1e-3);
        assert!((t.privacy.delta_conv.unwrap() / 5.492e-2 - 1.0).abs() < 1e-3);
        assert!((t.privacy.paper_eq1.unwrap().c_s - 1.474510).abs() < 1e-6);
        assert_eq!(
            (t.var_message, t.var_cape, t.var_conventional, t.gain),
            (100.0, 6.25, 25.0, 4.0)
        );
        // the φ bound is looser than the tail
        let th = t.privacy.theorem1;
        assert!(th.delta_tail.unwrap() < th.delta_phi_bound.unwrap());
        assert!((th.delta_phi_bound.unwrap() / 1.519e-5 - 1.0).abs() < 2e-3);
    }
}
