//! What an iterative study produced, for the dashboard (serde): one record per iteration, the
//! state reached, why it stopped and the privacy of the iterations actually run.

use serde::{Deserialize, Serialize};

use crate::accountant::ledger::Shortfall;
use crate::nn::ViewAccount;
use crate::study::StudyId;
pub use crate::study::admission::TooFewAccepted;
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
    /// When the site's ledger refused: the least budget that would admit the study.
    pub shortfall: Option<Shortfall>,
}

/// Why the study stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, thiserror::Error)]
pub enum StopReason {
    #[error("completed all J_max = {iterations} iterations")]
    Completed { iterations: u32 },
    #[error("the aggregator's step stopped after iteration {iteration}: {reason}")]
    Converged { iteration: u32, reason: String },
    #[error("{0}")]
    TooFewAccepted(TooFewAccepted),
    #[error("the upfront SecureAgg run failed: {message}")]
    SecAgg { message: String },
    #[error(
        "site {site} {cause}, after a SecureAgg run of the zero-sum noise: its share is missing \
         from iteration {iteration} on, and only {remaining} sites remain, fewer than the \
         SecureAgg threshold t = {need} a fresh run for the remaining iterations needs; stopped \
         with the state reached after iteration {completed}"
    )]
    ZeroSumBroken {
        site: ParticipantId,
        /// The first iteration that cannot complete.
        iteration: u32,
        completed: u32,
        /// How it went, e.g. "left the room in iteration 5".
        cause: String,
        /// The sites left for a repair run, and the threshold t it needed.
        #[serde(default)]
        remaining: usize,
        #[serde(default)]
        need: usize,
    },
    #[error(
        "the zero-sum repair (a fresh SecureAgg run for iterations {iteration} on) failed: \
         {message}; stopped with the state reached after iteration {completed}"
    )]
    RepairFailed { iteration: u32, completed: u32, message: String },
    #[error(
        "only {remaining} sites remain in iteration {iteration}, the study needs t = {need}; \
         stopped with the state reached after iteration {completed}"
    )]
    TooFewSites { iteration: u32, completed: u32, remaining: usize, need: usize },
    #[error("stopped by the dashboard: {reason}")]
    Stopped { reason: String },
}

/// A site that left U (left the room, declined or went silent) after a SecureAgg run of the
/// zero-sum noise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SiteDeparture {
    pub site: ParticipantId,
    /// The iteration running when it left (0: during the upfront run).
    pub iteration: u32,
    /// How, e.g. "left the room in iteration 5".
    pub cause: String,
}

/// One zero-sum repair (spec cape-secagg-pca-djica §2, Remark 4; module docs of
/// [`super::aggregator`]): sites of U left after a SecureAgg run, the others ran a fresh one for
/// the noise of iterations `from_iteration..=J_max` and the study went on with them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Repair {
    /// Who left, when and how.
    pub left: Vec<SiteDeparture>,
    /// The first iteration under the fresh noise: the iteration in flight when a site left
    /// before releasing it (redone), or the next one when every release of it was in.
    pub from_iteration: u32,
    /// |U| before the repair.
    pub sites_before: usize,
    /// The new S: |U| of the repair run (the invited survivors while it runs).
    pub sites_after: usize,
    /// U of the repair run (the invited survivors while it runs).
    pub contributors: Vec<ParticipantId>,
    /// Sites whose release of the iteration in flight was made but not averaged (its zero sum
    /// was broken). It is on their ledgers once, at the c_S of the old U; the redo is another
    /// release, at the c_S of the new U.
    pub discarded: Vec<ParticipantId>,
    /// Whether the repair run has completed.
    pub done: bool,
}

impl Repair {
    /// One line for the dashboard, naming sites by `name`.
    pub fn summary(&self, name: impl Fn(ParticipantId) -> String) -> String {
        let left: Vec<String> = self
            .left
            .iter()
            .map(|d| format!("{} (site {}) {}", name(d.site), d.site, d.cause))
            .collect();
        let redo = if self.discarded.is_empty() {
            String::new()
        } else {
            format!(" (iteration {} redone)", self.from_iteration)
        };
        let state = if self.done { "went on" } else { "are summing it" };
        format!(
            "{}; the other {} sites ran a fresh SecureAgg for the zero-sum noise of iterations \
             {} on and {state} with S = {}{redo}",
            left.join(", "),
            self.sites_after,
            self.from_iteration,
            self.sites_after,
        )
    }
}

/// ε of the iterations actually run, under each reported view (exact Gaussian composition and
/// RDP, `nn::privacy::account`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterativePrivacy {
    pub iterations: u32,
    /// The most releases one site made: `iterations`, plus the releases a zero-sum repair
    /// discarded (made, not averaged). The views compose these.
    #[serde(default)]
    pub releases: u32,
    pub delta: f64,
    pub noise_multiplier: f64,
    /// Upfront: the aggregator alone (S_C = 0) and the full adversary view (S_C = ⌈|U|/3⌉ − 1);
    /// conventional: the aggregator's. After a zero-sum repair each release is accounted with the
    /// c_S of its own U, and a view's `collusion_factor` is their mean over the worst site's
    /// releases (Gaussian releases compose through Σ c_S/z², so this is exact).
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
    /// U of the last SecureAgg run (upfront mode: the upfront run or the last repair), or the
    /// sites that took part in the last iteration.
    pub contributors: Vec<ParticipantId>,
    /// The zero-sum repairs, in order (upfront mode).
    #[serde(default)]
    pub repairs: Vec<Repair>,
    pub records: Vec<IterationRecord<R>>,
    /// Completed iterations.
    pub iterations: u32,
    /// The state reached: after the last completed iteration (the initial state if none).
    pub final_state: S,
    pub stop: StopReason,
    pub privacy: Option<IterativePrivacy>,
    pub finished_at_ms: u64,
}
