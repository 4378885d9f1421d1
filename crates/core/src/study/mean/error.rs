/*!
Errors of the private-mean study, split by when they happen (quinn style): [`StudyConfigError`]
before anything is sent, [`StudyError`] when a role refuses one input. Why a site declined and why
a study ended without an estimate are data the dashboard shows, not errors of a call: see
[`super::DeclineReason`] and [`super::AbortReason`].
*/

use crate::cape::SiteError;
use crate::codec::DecodeError;
use crate::gaussian::CalibrationError;
use crate::secagg::{ConfigError, RoundError};
use crate::wire::ParticipantId;

use crate::study::StudyId;

/// The study's parameters cannot work; nothing was sent.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StudyConfigError {
    #[error("ε = {0} must be positive and finite")]
    Epsilon(f64),
    #[error("δ = {0} must lie strictly between 0 and 1")]
    Delta(f64),
    #[error("values per site N_s must be at least 1")]
    NoValues,
    #[error("dimension d = {dimension} must lie in 1..={max}")]
    Dimension { dimension: usize, max: usize },
    #[error(
        "max_reruns = {max_reruns} is more than {max}: each re-run is one more release for every \
         site, so an aggregator could drain budgets by breaking rounds"
    )]
    TooManyReruns { max_reruns: u32, max: u32 },
    #[error("calibrating the noise: {0}")]
    Calibration(CalibrationError),
    #[error("the noise τ cannot be summed exactly: {0}")]
    NoiseFormat(String),
    #[error("SecureAgg parameters: {0}")]
    SecAgg(ConfigError),
}

/// A role refused one input (a message, a departure, a timeout).
///
/// Most refusals leave the role as it was (a malformed, stray or duplicate message is not used);
/// the few an honest site must not continue after also end it, and its phase then says so.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StudyError {
    #[error(transparent)]
    Malformed(#[from] DecodeError),
    #[error("message for study {got}, but this role runs study {expected}")]
    WrongStudy { expected: StudyId, got: StudyId },
    #[error("{kind} from participant {from}, who has no part in this study")]
    UnknownSender { from: ParticipantId, kind: &'static str },
    #[error("site {me} is not invited to study {study}; it stays out")]
    NotInvited { me: ParticipantId, study: StudyId },
    #[error("while {phase} expected {expected}, got {got} from participant {from}")]
    WrongPhase {
        phase: &'static str,
        expected: &'static str,
        got: &'static str,
        from: ParticipantId,
    },
    #[error("participant {from} already sent {kind}; the copy is ignored")]
    Duplicate { from: ParticipantId, kind: &'static str },
    #[error(
        "{kind} from participant {from} is for attempt {got}, but attempt {expected} is running"
    )]
    WrongAttempt { from: ParticipantId, kind: &'static str, expected: u32, got: u32 },
    #[error(
        "the aggregator opened attempt {attempt}, but the study allows at most {max} attempts \
         (max_reruns + 1); refusing a release the study did not announce"
    )]
    RerunLimit { attempt: u32, max: u32 },
    #[error("participant {from} sent {kind} that does not fit this study: {detail}")]
    Inconsistent { from: ParticipantId, kind: &'static str, detail: String },
    #[error("{kind} from participant {from} arrived after the study ended")]
    AlreadyOver { from: ParticipantId, kind: &'static str },
    /// SecureAgg (the first phase) refused a message; see the inner error.
    #[error("SecureAgg: {0}")]
    SecAgg(#[from] RoundError),
    /// A CAPE step at the site failed (e.g. a corrupt noise sum): the site cannot release.
    #[error("CAPE: {0}")]
    Cape(#[from] SiteError),
}
