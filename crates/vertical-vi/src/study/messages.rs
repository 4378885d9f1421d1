//! What the aggregator (dashboard), the parties and the dealer say to each other. The relay sees
//! each envelope's kind and sender; the payload is a [`VviMessage`] (postcard, core codec) whose
//! MPC traffic ([`Body::Triples`], [`Body::Round`], [`Body::Opened`]) is sealed end to end
//! ([`super::seal`]).

use capelab_core::accountant::ledger::Shortfall;
use capelab_core::codec;
use capelab_core::study::StudyId;
use serde::{Deserialize, Serialize};

use super::StudyError;
use super::task::VviTask;
use crate::model::Variational;

/// Envelope kinds, as the relay shows them.
pub mod kind {
    /// Aggregator → parties and dealer: the task and the aggregator's link key.
    pub const START: &str = "vvi/start";
    /// Party or dealer → the other members: its link public key (also "ready" to the aggregator).
    pub const KEY: &str = "vvi/key";
    /// Aggregator → dealer: step t has a batch of this size (all the dealer needs to deal).
    pub const DEAL: &str = "vvi/deal";
    /// Dealer → party: the step's Beaver triples, truncation pairs and comparison masks (sealed).
    pub const TRIPLES: &str = "vvi/triples";
    /// Aggregator → party: the step's public θ and batch indices.
    pub const STEP: &str = "vvi/step";
    /// Party → party: one MPC round's message (sealed).
    pub const ROUND: &str = "vvi/round";
    /// Party → aggregator: its share of the noisy clipped sum G̃ (sealed).
    pub const OPENED: &str = "vvi/opened";
    /// Aggregator → parties and dealer: the released posterior and its ε.
    pub const REPORT: &str = "vvi/report";
    /// Any member → the others: the run stopped, and why.
    pub const STOP: &str = "vvi/stop";
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VviMessage {
    pub study: StudyId,
    pub body: Body,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Body {
    Start {
        task: Box<VviTask>,
        aggregator_key: [u8; 32],
    },
    Key {
        public: [u8; 32],
    },
    Deal {
        step: u32,
        batch: u32,
    },
    Triples {
        step: u32,
        sealed: Vec<u8>,
    },
    Step {
        step: u32,
        theta: Vec<f64>,
        batch: Vec<u32>,
    },
    Round {
        step: u32,
        round: u32,
        sealed: Vec<u8>,
    },
    Opened {
        step: u32,
        sealed: Vec<u8>,
    },
    Report(Release),
    /// `budget`: the stopping party declined for its ledger, short by this much (so the
    /// dashboard can say which budget to raise and to what, without seeing the ledger).
    Stop {
        reason: String,
        budget: Option<Shortfall>,
    },
}

/// What the run releases: the posterior after `steps` steps and the analyst's (ε, δ) for it.
/// The test NLL is not here: it needs every party's test rows (per-row densities would leak), so
/// it is an in-process metric ([`super::sim::StudySim::test_nll`], the CLI).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Release {
    pub steps: u32,
    pub epsilon: f64,
    pub delta: f64,
    pub posterior: Variational,
}

impl VviMessage {
    pub fn kind(&self) -> &'static str {
        match self.body {
            Body::Start { .. } => kind::START,
            Body::Key { .. } => kind::KEY,
            Body::Deal { .. } => kind::DEAL,
            Body::Triples { .. } => kind::TRIPLES,
            Body::Step { .. } => kind::STEP,
            Body::Round { .. } => kind::ROUND,
            Body::Opened { .. } => kind::OPENED,
            Body::Report(_) => kind::REPORT,
            Body::Stop { .. } => kind::STOP,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        codec::encode(self)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, StudyError> {
        codec::decode("DPVI-VPD study", bytes).map_err(|e| StudyError::Malformed(e.to_string()))
    }
}
