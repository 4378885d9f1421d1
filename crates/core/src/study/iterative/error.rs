//! Errors of the iterative study's roles: a refused input. Why a site declined and why a study
//! stopped are data the dashboard shows ([`super::StopReason`], the decline's text), not errors.

use crate::codec::DecodeError;
use crate::secagg::RoundError;
use crate::study::StudyId;
use crate::wire::ParticipantId;

/// A role refused one input (a message, a departure, a timeout); the role is as it was unless
/// its phase says it ended.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum IterativeError {
    #[error(transparent)]
    Malformed(#[from] DecodeError),
    #[error("message for study {got}, but this role runs study {expected}")]
    WrongStudy { expected: StudyId, got: StudyId },
    #[error("{kind} from participant {from}, who has no part in this study")]
    UnknownSender { from: ParticipantId, kind: &'static str },
    #[error("site {me} is not invited to study {study}; it stays out")]
    NotInvited { me: ParticipantId, study: StudyId },
    #[error("while {phase}, got {got} from participant {from}")]
    WrongPhase { phase: &'static str, got: &'static str, from: ParticipantId },
    #[error("participant {from} already sent {kind}; the copy is ignored")]
    Duplicate { from: ParticipantId, kind: &'static str },
    #[error("{kind} from participant {from} is for iteration {got}, but iteration {expected} runs")]
    WrongIteration { from: ParticipantId, kind: &'static str, expected: u32, got: u32 },
    #[error("participant {from} sent {kind} that does not fit this study: {detail}")]
    Inconsistent { from: ParticipantId, kind: &'static str, detail: String },
    #[error("{kind} from participant {from} arrived after the study ended")]
    AlreadyOver { from: ParticipantId, kind: &'static str },
    #[error("SecureAgg: {0}")]
    SecAgg(#[from] RoundError),
}
