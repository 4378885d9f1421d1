//! What an iterative study produced, for the dashboard (serde): one record per iteration, the
//! state reached, why it stopped and the privacy of the iterations actually run.

use serde::{Deserialize, Serialize};

use crate::nn::ViewAccount;
use crate::study::StudyId;
use crate::wire::ParticipantId;

use super::params::IterativeParams;

/// One completed iteration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterationRecord<R> {
    pub iteration: u32,
    /// The sites whose releases were averaged.
    pub contributors: Vec<ParticipantId>,
    /// ε (at the study's δ) a site that released every iteration so far has spent in this study,
    /// as its ledger computes it (RDP, improved conversion, full-view c_S); `None` when
    /// non-private.
    pub epsilon_spent: Option<f64>,
    /// The aggregator step's report on the state after this iteration.
    pub report: R,
}

/// A site that declined, and its own words.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SiteDecline {
    pub site: ParticipantId,
    /// 0: the invitation; j: in iteration j.
    pub iteration: u32,
    pub reason: String,
}

/// Why the study stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, thiserror::Error)]
pub enum StopReason {
    #[error("completed all J_max = {iterations} iterations")]
    Completed { iterations: u32 },
    #[error("the aggregator's step stopped after iteration {iteration}: {reason}")]
    Converged { iteration: u32, reason: String },
    #[error("only {accepted} sites accepted; the study needs t = {need}")]
    TooFewAccepted { accepted: usize, need: usize },
    #[error("the upfront SecureAgg run failed: {message}")]
    SecAgg { message: String },
    #[error(
        "site {site} {cause}, after the upfront SecureAgg run: its share of the zero-sum noise \
         is missing from iteration {iteration} on, so no average from there would cancel; \
         stopped with the state reached after iteration {completed}"
    )]
    ZeroSumBroken {
        site: ParticipantId,
        /// The first iteration that cannot complete.
        iteration: u32,
        completed: u32,
        /// How it went, e.g. "left the room in iteration 5".
        cause: String,
    },
    #[error(
        "only {remaining} sites remain in iteration {iteration}, the study needs t = {need}; \
         stopped with the state reached after iteration {completed}"
    )]
    TooFewSites { iteration: u32, completed: u32, remaining: usize, need: usize },
    #[error("stopped by the dashboard: {reason}")]
    Stopped { reason: String },
}

/// ε of the iterations actually run, under each reported view (exact Gaussian composition and
/// RDP, `nn::privacy::account`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterativePrivacy {
    pub iterations: u32,
    pub delta: f64,
    pub noise_multiplier: f64,
    /// Upfront: the aggregator alone (S_C = 0) and the full adversary view (S_C = ⌈|U|/3⌉ − 1);
    /// conventional: the aggregator's.
    pub views: Vec<ViewAccount>,
    /// The guarantee: the largest exact ε over the views.
    pub epsilon: f64,
    pub guarantee_view: String,
}

/// The end of an iterative study.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterativeOutcome<S, R> {
    pub study: StudyId,
    pub params: IterativeParams,
    pub accepted: Vec<ParticipantId>,
    pub declined: Vec<SiteDecline>,
    /// U of the upfront run (upfront mode), or the sites that took part in the first iteration.
    pub contributors: Vec<ParticipantId>,
    pub records: Vec<IterationRecord<R>>,
    /// Completed iterations.
    pub iterations: u32,
    /// The state reached: after the last completed iteration (the initial state if none).
    pub final_state: S,
    pub stop: StopReason,
    pub privacy: Option<IterativePrivacy>,
    pub finished_at_ms: u64,
}
