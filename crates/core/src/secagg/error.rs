//! SecureAgg errors, split by when they happen (quinn's `ConnectError` / `ConnectionError`):
//! [`ConfigError`] before any message is sent, [`RoundError`] while the rounds run.

use super::messages::{Phase, SessionId};
use crate::codec::DecodeError;
use crate::fixed::FixedPointError;
use crate::wire::ParticipantId;

/// The parameters or the input cannot work; nothing was sent.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error(
        "SecureAgg needs at least 2 sites, got {sites}: the sum of one site is that site's input"
    )]
    TooFewSites { sites: usize },
    #[error("site {site} is listed twice")]
    DuplicateSite { site: ParticipantId },
    #[error("the site list must be sorted ascending")]
    UnsortedSites,
    #[error(
        "threshold t = {threshold} exceeds the {sites} sites: the masks could never be removed; \
         use t ≤ {sites}"
    )]
    ThresholdAboveSites { threshold: usize, sites: usize },
    #[error(
        "threshold t = {threshold} is at most half of the {sites} sites: an aggregator could ask \
         one half of the sites for a site's self-mask shares and the other half for its key shares \
         and unmask that site alone; use t > {sites}/2 (the default is ⌊2n/3⌋ + 1)"
    )]
    ThresholdAtMostHalf { threshold: usize, sites: usize },
    #[error(
        "SecAgg+ needs a degree k with 2 ≤ k < S − 1 = {}, got k = {k} for {sites} sites; \
         for k ≥ S − 1 use the complete graph",
        sites.saturating_sub(1)
    )]
    HararyDegreeOutOfRange { k: usize, sites: usize },
    #[error(
        "SecAgg+'s Harary graph needs an even degree k (k/2 neighbours on each side of the \
         cycle), got k = {k}"
    )]
    HararyDegreeOdd { k: usize },
    #[error(
        "threshold t = {threshold} exceeds a SecAgg+ neighbourhood of k + 1 = {} sites: the masks \
         could never be removed; use t ≤ k + 1",
        k + 1
    )]
    ThresholdAboveNeighbourhood { threshold: usize, k: usize },
    #[error(
        "threshold t = {threshold} is at most half of a SecAgg+ neighbourhood of k + 1 = {} \
         sites: an aggregator could ask one half of a site's neighbours for its self-mask shares \
         and the other half for its key shares; use t > (k + 1)/2",
        k + 1
    )]
    ThresholdAtMostHalfNeighbourhood { threshold: usize, k: usize },
    #[error("SecAgg+ parameters: {what}, got {value}")]
    GraphParameter { what: &'static str, value: f64 },
    #[error(
        "no SecAgg+ degree k < S − 1 = {} meets a failure probability of 2^-{sigma} with \
         δ = {dropout} dropouts and γ = {corruption} colluders among {sites} sites; use the \
         complete graph (or accept a larger failure probability)",
        sites.saturating_sub(1)
    )]
    NoSparseGraph { sites: usize, dropout: f64, corruption: f64, sigma: f64 },
    #[error("the vector length must be at least 1")]
    EmptyVector,
    #[error(
        "this site's input has {got} values, but the session sums vectors of length {expected}"
    )]
    InputLength { expected: usize, got: usize },
    #[error(
        "this site encodes its input as {ours:?}, but the session decodes with {theirs:?}; \
         both must use the same fixed-point format"
    )]
    EncodingMismatch { ours: crate::fixed::FixedPoint, theirs: super::config::Encoding },
    #[error(transparent)]
    FixedPoint(#[from] FixedPointError),
}

/// A message was refused, or an instance ended without a sum.
///
/// A role that returns an error from `handle*` has refused that input. Most refusals leave the
/// role as it was (a malformed, late or duplicate message is simply not used); the ones an honest
/// site must not continue after (the aggregator asked for something that could unmask a site)
/// also end the role, which then reports the same error from `outcome()`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RoundError {
    // -- the message itself is bad: dropped, nothing changes --
    #[error(transparent)]
    Malformed(#[from] DecodeError),
    #[error("message for session {got}, but this instance is session {expected}")]
    WrongSession { expected: SessionId, got: SessionId },
    #[error("{kind} from participant {from}, who has no part in {phase}")]
    UnknownSender { from: ParticipantId, kind: &'static str, phase: &'static str },
    #[error("in {phase} expected {expected}, got {got} from participant {from}")]
    WrongPhase {
        phase: &'static str,
        expected: &'static str,
        got: &'static str,
        from: ParticipantId,
    },
    #[error("participant {from} already sent {kind}; the copy is ignored")]
    Duplicate { from: ParticipantId, kind: &'static str },
    #[error("participant {from} sent a vector of length {got}, expected {expected}")]
    WrongLength { from: ParticipantId, expected: usize, got: usize },
    #[error(
        "participant {from} sent an invalid {which} public key (not a Ristretto point, or the identity)"
    )]
    InvalidKey { from: ParticipantId, which: &'static str },
    #[error("participant {from} sent {kind} that does not fit this round: {detail}")]
    Inconsistent { from: ParticipantId, kind: &'static str, detail: String },
    #[error("{kind} from participant {from} arrived after the instance ended")]
    AlreadyOver { from: ParticipantId, kind: &'static str },

    // -- the instance cannot produce a sum --
    #[error(
        "{phase}: only {have} sites remain, need t = {need}; the round is aborted and nothing that \
         could unmask a site was revealed"
    )]
    TooFewSites { have: usize, need: usize, phase: Phase },
    #[error(
        "{phase}: site {site}'s SecAgg+ neighbourhood has only {have} live sites (itself \
         included), need t = {need} to rebuild its secrets; the round is aborted and nothing that \
         could unmask a site was revealed"
    )]
    TooFewNeighbours { site: ParticipantId, have: usize, need: usize, phase: Phase },
    #[error("the aggregator aborted in {phase}: {reason}")]
    AbortedByAggregator { phase: Phase, reason: String },
    #[error("the aggregator (participant {aggregator}) left the room")]
    AggregatorLeft { aggregator: ParticipantId },

    // -- an honest site refuses the aggregator's request --
    #[error("site {me} is not invited to session {session}")]
    NotInvited { me: ParticipantId, session: SessionId },
    #[error("the session parameters are unacceptable: {0}")]
    UnacceptableParams(ConfigError),
    #[error("sites {a} and {b} advertised the same public key; refusing to share keys")]
    DuplicateKeys { a: ParticipantId, b: ParticipantId },
    #[error("the key directory lists different keys for this site ({me}) than it advertised")]
    KeysReplaced { me: ParticipantId },
    #[error("the share ciphertext from site {from} does not authenticate (tampered or misrouted)")]
    DecryptionFailed { from: ParticipantId },
    #[error("the unmask request is inconsistent with U2: {detail}")]
    InconsistentRequest { detail: String },
    #[error(
        "refused: revealing a {asked} share of site {peer} after its {revealed} share (or both at \
         once) would let the aggregator remove that site's masks and read its input"
    )]
    WouldRevealBoth { peer: ParticipantId, revealed: &'static str, asked: &'static str },

    // -- the aggregator's reconstruction failed (a site lied or a bug) --
    #[error(
        "the secret key reconstructed for site {site} does not match its advertised public key"
    )]
    ReconstructionMismatch { site: ParticipantId },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_values() {
        let e = RoundError::TooFewSites { have: 2, need: 3, phase: Phase::MaskedInput };
        assert_eq!(
            e.to_string(),
            "R2 masked input: only 2 sites remain, need t = 3; the round is aborted and nothing \
             that could unmask a site was revealed"
        );
        let e = RoundError::WrongPhase {
            phase: "R1 share keys",
            expected: "secagg/encrypted-shares",
            got: "secagg/masked-input",
            from: 4,
        };
        assert_eq!(
            e.to_string(),
            "in R1 share keys expected secagg/encrypted-shares, got secagg/masked-input from \
             participant 4"
        );
        let e = ConfigError::InputLength { expected: 10, got: 9 };
        assert!(e.to_string().contains("9 values") && e.to_string().contains("length 10"));
    }
}
