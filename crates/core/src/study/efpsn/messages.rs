//! What the dashboard and the agents of an EFPSN study say to each other, besides the agents'
//! own Phase-1 and Phase-2 messages ([`crate::efpsn::messages`]).

use serde::{Deserialize, Serialize};

use super::task::EfpsnTask;
use crate::accountant::ledger::Shortfall;
use crate::codec;
use crate::efpsn::EfpsnError;
use crate::study::StudyId;
use crate::wire::ParticipantId;

/// Envelope kinds, as the relay shows them.
pub mod kind {
    pub const START: &str = "efpsn/start";
    pub const REPORT: &str = "efpsn/report";
    pub const STOP: &str = "efpsn/stop";
    /// SecureAgg's messages of the zero-sum check, wrapped (the relay sees only this kind).
    pub const SECAGG: &str = "efpsn/secagg";
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StudyMessage {
    pub study: StudyId,
    pub body: StudyBody,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum StudyBody {
    /// Dashboard → agents: take part.
    Start(Box<EfpsnTask>),
    /// Agent → dashboard: where one of its runs is, and what it released since the last report.
    Report(Report),
    /// Dashboard → agents: the study ends (`run: None`: the teacher stopped it, or an agent
    /// declined the EFPSN run), or one comparison run cannot finish (an agent declined it).
    Stop { run: Option<StudyId>, why: Stop },
    /// Either way: one SecureAgg message of the zero-sum check over the EFPSN run's masks.
    SecAgg(Vec<u8>),
}

/// Where an agent's run is, as the dashboard shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum RunStatus {
    /// Phase 1 (EFPSN only): keys and encrypted noise exchanged with the neighbours so far.
    Phase1 {
        keys: usize,
        noise_sent: usize,
        noise_received: usize,
        neighbours: usize,
    },
    Phase2 {
        iteration: u32,
    },
    Done,
    /// The agent did not take part (nothing of its data was used, nothing recorded).
    Declined(Decline),
    /// The run ended early on this agent (an agent left, a decline, a stop, a refused message).
    Stopped(Stop),
}

impl RunStatus {
    pub fn is_over(&self) -> bool {
        matches!(self, RunStatus::Done | RunStatus::Declined(_) | RunStatus::Stopped(_))
    }

    /// Whether the run is under way on this agent (Phase 1 or 2).
    pub fn is_running(&self) -> bool {
        matches!(self, RunStatus::Phase1 { .. } | RunStatus::Phase2 { .. })
    }
}

/// Why an agent declined a run, as the dashboard shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Decline {
    /// A comparison run (the baseline or noise-free), and this site's user has not allowed
    /// non-private comparison runs.
    NoConsent,
    /// The site's ledger cannot cover the EFPSN run's (ε, δ): what its budget would have to be
    /// ([`Shortfall`]), and the run's own ε. Nothing was recorded or sent.
    Budget { shortfall: Shortfall, run_epsilon: f64 },
    /// The task or this agent's data, in words.
    Refused(String),
}

impl std::fmt::Display for Decline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Decline::NoConsent => {
                write!(f, "this site's user has not allowed non-private comparison runs")
            }
            Decline::Budget { shortfall, run_epsilon } => {
                write!(
                    f,
                    "its privacy budget (ε = {} at δ = {:e}) does not cover this run (ε = {run_epsilon:.4})",
                    shortfall.budget, shortfall.delta
                )?;
                match shortfall.needed {
                    Some(needed) => write!(f, ": raise it to {needed:.4}"),
                    None => write!(f, ": its δ is used up; raise the budget's δ"),
                }
            }
            Decline::Refused(why) => f.write_str(why),
        }
    }
}

/// Why a run ended early on an agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Stop {
    /// This participant (an agent of the graph: this one, as the dashboard saw it leave, or
    /// another) left the room; without its messages no agent can finish.
    Left(ParticipantId),
    /// This participant declined the run (the dashboard tells the others, who then stop).
    Declined { who: ParticipantId, why: Decline },
    /// The dashboard stopped the study, for this reason (the teacher's words).
    ByDashboard(String),
    /// This agent refused a message it could not use (a run cannot skip one), in words.
    Refused(String),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Left(who) => write!(f, "participant {who} left the room"),
            Stop::Declined { who, why } => write!(f, "participant {who} declined the run: {why}"),
            Stop::ByDashboard(reason) => write!(f, "the dashboard stopped the study: {reason}"),
            Stop::Refused(why) => write!(f, "{why}"),
        }
    }
}

/// One agent's news about one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub run: StudyId,
    pub status: RunStatus,
    /// (t, x_i(t)) recorded since the last report: the iterates it sent its neighbours in clear.
    pub iterates: Vec<(u32, Vec<f64>)>,
    /// ∇f̂_i(0), once its perturbed cost is fixed (in the first Phase-2 report): a function of
    /// f̂_i, which is what the guarantee protects.
    pub gradient_at_zero: Option<Vec<f64>>,
}

impl StudyMessage {
    pub fn kind(&self) -> &'static str {
        match self.body {
            StudyBody::Start(_) => kind::START,
            StudyBody::Report(_) => kind::REPORT,
            StudyBody::Stop { .. } => kind::STOP,
            StudyBody::SecAgg(_) => kind::SECAGG,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        codec::encode(self)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, EfpsnError> {
        codec::decode("EFPSN study message", bytes).map_err(|e| EfpsnError::Protocol(e.to_string()))
    }
}
