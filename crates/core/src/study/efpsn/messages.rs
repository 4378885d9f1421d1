//! What the dashboard and the agents of an EFPSN study say to each other, besides the agents'
//! own Phase-1 and Phase-2 messages ([`crate::efpsn::messages`]).

use serde::{Deserialize, Serialize};

use super::task::EfpsnTask;
use crate::codec;
use crate::efpsn::EfpsnError;
use crate::study::StudyId;

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
    /// Dashboard → agents: the teacher ended the study (`run: None`), or one run cannot finish
    /// (an agent declined it).
    Stop { run: Option<StudyId>, reason: String },
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
    /// The agent did not take part (its reason; nothing of its data was used).
    Declined(String),
    /// The run ended early on this agent (a neighbour left, a refused message, a stop).
    Failed(String),
}

impl RunStatus {
    pub fn is_over(&self) -> bool {
        matches!(self, RunStatus::Done | RunStatus::Declined(_) | RunStatus::Failed(_))
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
