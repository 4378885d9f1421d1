/*!
The private-mean study's messages, as they travel inside relay envelopes.

Every payload is a [`MeanMessage`]: the study id and one [`MeanBody`], postcard-encoded
([`crate::codec`]). The envelope `kind` names the message for logs and the dashboard: `mean/…` for
the study's own messages, and for SecureAgg's messages (wrapped in [`MeanBody::SecAgg`] with the
attempt number, so that the rounds of a re-run never mix with the failed one) SecureAgg's own
`secagg/…` kind, unchanged.
*/

use serde::{Deserialize, Serialize};

use crate::accountant::ledger::Shortfall;
use crate::codec;
use crate::secagg::messages::SecAggMessage;
use crate::study::StudyId;
use crate::wire::ParticipantId;

use super::data::DataError;
use super::params::StudyParams;

/// Envelope kinds of the study's own messages.
pub mod kind {
    /// Aggregator → all: the parameters; opens the study.
    pub const START: &str = "mean/start";
    /// Site → aggregator: the site takes part (its ledger can afford the first release).
    pub const ACCEPT: &str = "mean/accept";
    /// Site → aggregator: the site does not take part, and why.
    pub const DECLINE: &str = "mean/decline";
    /// Site → aggregator: â_s (and the conventional release on the site's first release).
    pub const RELEASE: &str = "mean/release";
    /// Aggregator → all: the estimates.
    pub const RESULT: &str = "mean/result";
    /// Aggregator → all: the study ended without an estimate.
    pub const ABORT: &str = "mean/abort";
    /// Any wrapped SecureAgg message, when its own kind is not known (errors only).
    pub const SECAGG: &str = "secagg/*";
}

/// Every message of the study.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeanMessage {
    pub study: StudyId,
    pub body: MeanBody,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum MeanBody {
    Start(StudyParams),
    Accept,
    Decline(DeclineReason),
    /// One SecureAgg message (its postcard bytes) of attempt `attempt` (1 = the first round).
    SecAgg {
        attempt: u32,
        message: Vec<u8>,
    },
    Release(ReleaseMessage),
    Result(PublicResult),
    Abort {
        reason: String,
    },
}

/// A site's CAPE message â_s = f(x_s) + e_s + g_s for one attempt, and with its first one the
/// conventional message f(x_s) + N(0, τ²) when the study asks for it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReleaseMessage {
    pub attempt: u32,
    pub cape: Vec<f64>,
    pub conventional: Option<Vec<f64>>,
}

/// What every participant learns at the end.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PublicResult {
    /// The attempt whose releases formed the estimate.
    pub attempt: u32,
    /// U of that attempt: whose data is in the estimate.
    pub survivors: Vec<ParticipantId>,
    /// a_cape = (1/|U|)Σâ_s.
    pub cape: Vec<f64>,
    /// a_conv = (1/|U|)Σ of the conventional messages of U, if the study asked for them.
    pub conventional: Option<Vec<f64>>,
}

/// Why a site does not take part (or stops before releasing): shown on the dashboard as is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, thiserror::Error)]
pub enum DeclineReason {
    #[error("its data does not fit the study: {0}")]
    Data(DataError),
    /// The site's ledger refused: `message` is the accountant's own text.
    #[error("{message}")]
    Budget {
        message: String,
        /// The least budget that would admit the study (none when δ is what runs out).
        shortfall: Option<Shortfall>,
    },
    #[error("it cannot accept the study's parameters: {0}")]
    Params(String),
    /// A protocol step failed at the site (e.g. a corrupt noise sum); it cannot release.
    #[error("it could not release: {0}")]
    Protocol(String),
}

impl MeanBody {
    /// The envelope kind of this message ([`kind::SECAGG`] for a wrapped SecureAgg message whose
    /// bytes do not decode).
    pub fn kind(&self) -> &'static str {
        match self {
            MeanBody::Start(_) => kind::START,
            MeanBody::Accept => kind::ACCEPT,
            MeanBody::Decline(_) => kind::DECLINE,
            MeanBody::SecAgg { message, .. } => secagg_kind(message),
            MeanBody::Release(_) => kind::RELEASE,
            MeanBody::Result(_) => kind::RESULT,
            MeanBody::Abort { .. } => kind::ABORT,
        }
    }
}

impl MeanMessage {
    /// The attempt a wrapped SecureAgg message or a release belongs to.
    pub fn attempt(&self) -> Option<u32> {
        match &self.body {
            MeanBody::SecAgg { attempt, .. } => Some(*attempt),
            MeanBody::Release(r) => Some(r.attempt),
            _ => None,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        codec::encode(self)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, codec::DecodeError> {
        codec::decode("mean", bytes)
    }
}

/// The `secagg/…` kind of SecureAgg message bytes.
pub fn secagg_kind(message: &[u8]) -> &'static str {
    codec::decode::<SecAggMessage>("secagg", message).map_or(kind::SECAGG, |m| m.body.kind())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secagg::messages::{Body, Phase, SessionId};

    #[test]
    fn round_trip_and_kinds() {
        let inner = codec::encode(&SecAggMessage {
            session: SessionId([7; 16]),
            body: Body::Abort { phase: Phase::Unmask, reason: "x".into() },
        });
        let m = MeanMessage {
            study: StudyId([1; 16]),
            body: MeanBody::SecAgg { attempt: 2, message: inner },
        };
        assert_eq!(MeanMessage::decode(&m.encode()).unwrap(), m);
        assert_eq!(m.body.kind(), "secagg/abort");
        assert_eq!(m.attempt(), Some(2));
        let bad = MeanBody::SecAgg { attempt: 1, message: vec![1, 2, 3] };
        assert_eq!(bad.kind(), kind::SECAGG);
        let decline = MeanBody::Decline(DeclineReason::Data(DataError::OutOfRange {
            row: 3,
            column: 0,
            value: 1.5,
        }));
        assert_eq!(decline.kind(), "mean/decline");
        assert!(MeanMessage::decode(&[0xff; 3]).is_err());
    }
}
