/*!
The iterative study's messages. Every payload is an [`IterMessage`] (the study id and one
[`IterBody`], postcard, [`crate::codec`]); SecureAgg's messages of the upfront run travel wrapped
in [`IterBody::SecAgg`] under their own `secagg/…` kind, as in the mean study; so do those of a
zero-sum repair run, announced by [`IterBody::Repair`].
*/

use serde::{Deserialize, Serialize};

use crate::accountant::ledger::Shortfall;
use crate::codec;
use crate::study::StudyId;
use crate::study::mean::messages::secagg_kind;
use crate::wire::ParticipantId;

use super::params::IterativeParams;

/// Envelope kinds of the study's own messages.
pub mod kind {
    /// Aggregator → all: the parameters and the step's task; opens the study.
    pub const START: &str = "iter/start";
    /// Site → aggregator: the site takes part (its ledger can afford all J_max releases).
    pub const ACCEPT: &str = "iter/accept";
    /// Site → aggregator: the site does not take part (or cannot go on), and why.
    pub const DECLINE: &str = "iter/decline";
    /// Aggregator → all: the public state of one iteration.
    pub const STATE: &str = "iter/state";
    /// Site → aggregator: the site's noisy statistic of one iteration.
    pub const RELEASE: &str = "iter/release";
    /// Aggregator → all: the study ended; the final state and why.
    pub const END: &str = "iter/end";
    /// Aggregator → all: sites of U left after a SecureAgg run; the survivors named here run a
    /// fresh SecureAgg for the zero-sum noise of the iterations still to come (its
    /// `secagg/begin` follows).
    pub const REPAIR: &str = "iter/repair";
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterMessage<T, S> {
    pub study: StudyId,
    pub body: IterBody<T, S>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum IterBody<T, S> {
    Start {
        /// Which computation ([`super::SiteStep::NAME`]); first, so [`peek_start`] can read it
        /// without knowing the task's type.
        computation: String,
        params: IterativeParams,
        task: T,
    },
    Accept,
    Decline {
        reason: String,
        /// When the site's ledger refused the study: the least budget that would admit it.
        shortfall: Option<Shortfall>,
    },
    /// One SecureAgg message (its postcard bytes) of the upfront noise run.
    SecAgg(Vec<u8>),
    State {
        iteration: u32,
        state: S,
    },
    /// The statistic of `iteration` plus this iteration's noise.
    Release {
        iteration: u32,
        values: Vec<f64>,
    },
    /// `iterations` iterations were completed; `state` is the state they reached.
    End {
        iterations: u32,
        state: S,
        reason: String,
    },
    /// The zero-sum repair (spec cape-secagg-pca-djica §2, Remark 4: a drop after Algorithm 1
    /// is repaired by re-running it among the survivors): `sites` run a fresh SecureAgg over
    /// their ê_s of iterations `from_iteration..=J_max`, and iteration `from_iteration` is the
    /// next one (redone when it was in flight). `left` are the sites that left U.
    Repair {
        from_iteration: u32,
        sites: Vec<ParticipantId>,
        left: Vec<ParticipantId>,
    },
}

impl<T, S> IterBody<T, S> {
    pub fn kind(&self) -> &'static str {
        match self {
            IterBody::Start { .. } => kind::START,
            IterBody::Accept => kind::ACCEPT,
            IterBody::Decline { .. } => kind::DECLINE,
            IterBody::SecAgg(message) => secagg_kind(message),
            IterBody::State { .. } => kind::STATE,
            IterBody::Release { .. } => kind::RELEASE,
            IterBody::End { .. } => kind::END,
            IterBody::Repair { .. } => kind::REPAIR,
        }
    }
}

impl<T: Serialize + for<'de> Deserialize<'de>, S: Serialize + for<'de> Deserialize<'de>>
    IterMessage<T, S>
{
    pub fn encode(&self) -> Vec<u8> {
        codec::encode(self)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, codec::DecodeError> {
        codec::decode("iter", bytes)
    }
}

/// The study and the computation an `iter/start` payload asks for, read without knowing the
/// task's type: a tab that can run several computations picks the role to decode it with.
/// Any other body (or bytes that are not an [`IterMessage`]) is an error.
pub fn peek_start(payload: &[u8]) -> Result<(StudyId, String), codec::DecodeError> {
    // The same serde layout as IterMessage's first fields: study id, variant 0 (Start), the
    // computation's name. The rest (params, task) is left unread.
    #[derive(Deserialize)]
    struct Head {
        study: StudyId,
        body: HeadBody,
    }
    #[derive(Deserialize)]
    enum HeadBody {
        Start { computation: String },
    }
    let (head, _rest) = postcard::take_from_bytes::<Head>(payload)
        .map_err(|e| codec::DecodeError { what: "iter/start", reason: e.to_string() })?;
    let HeadBody::Start { computation } = head.body;
    Ok((head.study, computation))
}

/// The `secagg/…` kind of wrapped SecureAgg bytes.
pub fn kind_of_secagg(message: &[u8]) -> &'static str {
    secagg_kind(message)
}
