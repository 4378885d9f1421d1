/*!
Errors of the CAPE protocol steps (spec §2, Algorithms 1 and 2), split by who detects them: the
site ([`SiteError`]) and the aggregator ([`EstimateError`]). The privacy and planning errors live
next to their computations ([`super::privacy::PrivacyError`],
[`super::asymmetric::AsymmetricError`]).
*/

use crate::fixed::FixedPointError;
use crate::wire::ParticipantId;

/// A site step refused its input. Nothing was released when this is returned.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SiteError {
    #[error("{what} = {value} must be positive and finite")]
    InvalidSd { what: &'static str, value: f64 },
    #[error("weight μ = {weight} must lie in (0, 1]; a site with weight 0 takes no part")]
    InvalidWeight { weight: f64 },
    #[error("the planned sites {planned:?} must be sorted ascending and distinct")]
    MalformedPlan { planned: Vec<ParticipantId> },
    #[error("site {site} is not among the planned sites {planned:?} of this weighted round")]
    NotPlanned { site: ParticipantId, planned: Vec<ParticipantId> },
    #[error(
        "encoding the noise: {0}. The fixed-point bound must cover the noise: build the format \
         with cape::noise_format from the largest noise standard deviation"
    )]
    NoiseFormat(#[from] FixedPointError),
    #[error(
        "a zero-sum split among {parties} sites would not be exact with {frac_bits} fractional bits \
         and bound {bound}: build the format with cape::noise_format for at least {parties} sites"
    )]
    NotExact { parties: usize, frac_bits: u32, bound: f64 },
    #[error(
        "site {site}'s noise did not enter the sum over {contributors:?}: it must not release in \
         this round; it can join the next one"
    )]
    NotInNoiseSum { site: ParticipantId, contributors: Vec<ParticipantId> },
    #[error("the noise sum is malformed: {reason}")]
    MalformedNoiseSum { reason: String },
    #[error(
        "noise-sum coordinate {index} is outside what {parties} honest shares can add up to: \
         the sum is corrupt; re-run the secure sum"
    )]
    NoiseSumOutOfRange { index: usize, parties: usize },
    #[error("{what} has {got} coordinates, the noise has {expected}")]
    LengthMismatch { what: &'static str, expected: usize, got: usize },
    #[error("the local value at index {index} is {value}, not a finite number")]
    NotFinite { index: usize, value: f64 },
    #[error(
        "this weighted round was planned for sites {planned:?} but the noise sum covers \
         {contributors:?}: the weights and variances depend on who takes part, so plan again \
         (AsymmetricPlan) among the sites present and re-run the round"
    )]
    WeightedRoundChanged { planned: Vec<ParticipantId>, contributors: Vec<ParticipantId> },
    #[error(
        "site {site} already released with this noise; a second release would reuse e_s \
         (spec §8 pitfall 3): draw new noise for a new release"
    )]
    AlreadyReleased { site: ParticipantId },
}

/// The aggregator refused to form an estimate.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EstimateError {
    #[error("no site released anything")]
    NoReleases,
    #[error("the noise sum lists no contributors")]
    NoContributors,
    #[error(
        "site {site} sent a release but its noise is not in the sum over {contributors:?}: \
         drop its message, or re-run the round with it"
    )]
    UnexpectedSender { site: ParticipantId, contributors: Vec<ParticipantId> },
    #[error("site {site} sent two releases in one round")]
    DuplicateSender { site: ParticipantId },
    #[error("site {site} sent {got} coordinates, expected {expected}")]
    LengthMismatch { site: ParticipantId, expected: usize, got: usize },
    #[error("site {site} sent {value} at index {index}, not a finite number")]
    NotFinite { site: ParticipantId, index: usize, value: f64 },
    #[error(
        "sites {missing:?} put noise into the sum but sent no release, so the noise of the others \
         no longer cancels (spec Remark 4): re-run the round (Algorithms 1 and 2) among the \
         survivors {survivors:?}"
    )]
    ZeroSumBroken { missing: Vec<ParticipantId>, survivors: Vec<ParticipantId> },
    #[error(
        "this weighted round was planned for sites {planned:?} but the noise sum covers \
         {contributors:?}: plan again (AsymmetricPlan) among the sites present and re-run"
    )]
    WeightedRoundChanged { planned: Vec<ParticipantId>, contributors: Vec<ParticipantId> },
}
