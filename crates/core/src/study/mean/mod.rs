/*!
The private-mean study: CAPE (spec cape-secagg-pca-djica §2) over the real SecureAgg (§3), as two
sans-IO roles. Each browser tab runs a [`MeanSite`], the dashboard runs the [`MeanAggregator`],
over the relay; `cape mean` and the tests run the same roles on a
[`MemoryRoom`](crate::transport::MemoryRoom) through [`sim::StudySim`].

# The query and its noise
Site s holds N_s rows in [0, 1]^d ([`data`]); f(x_s) is their mean, with replace-one sensitivity
Δ = √d/N_s. The local noise τ is calibrated to the study's (ε, δ) ([`params`]; classical by
default, with [`NoisePlan::classical_bound_covers`] false at ε ≥ 1, or analytic), and each release
is accounted in the site's ledger as a Gaussian release with z = τ/Δ.

# The protocol
| step | site → aggregator | aggregator → sites |
|---|---|---|
| start | | `mean/start`: [`StudyParams`] |
| answer | `mean/accept`, or `mean/decline` + [`DeclineReason`] | |
| phase 1, attempt k | SecureAgg's own messages (`secagg/…`) over the quantised ê_s | SecureAgg's (`secagg/begin` … `secagg/result`: Σ_{s∈U} ê_s and U) |
| phase 2, attempt k | `mean/release`: â_s (+ the conventional message on the first release) | |
| end | | `mean/result` ([`PublicResult`]) or `mean/abort` |

SecureAgg messages keep their kinds and travel wrapped in [`MeanBody::SecAgg`] with the attempt
number. Every payload carries the random [`StudyId`](crate::study::StudyId).

**Dropouts.** Inside SecureAgg the SecureAgg roles handle them (U shrinks; "S" is |U|, spec
Remark 4). A site of U whose release never comes (it left, went silent or declined) breaks the
zero sum ([`EstimateError::ZeroSumBroken`](crate::cape::EstimateError)): the aggregator re-runs
among the sites that released, with fresh noise in a new SecureAgg instance, up to
[`StudyParams::max_reruns`] times. Each re-run is one more release for every site in it, in its
ledger. Fewer than t sites at any point ends the study with [`AbortReason`], and SecureAgg never
sends anything that could unmask a site. [`StudyOutcome::dropouts`] says who dropped in which
phase of which attempt.

# The privacy gate
A site checks its ledger before it sends anything: on `mean/start` (and again at each attempt's
`secagg/begin`) it previews the releases it would make — CAPE's â_s, accounted with the collusion
factor c_S of the adversary's **full view** (the largest over the |U| still possible), and the
conventional message as a second release when the study asks for it — and declines with the
accountant's own message if they do not fit. Nothing but the `mean/decline` is sent then. The
releases are recorded ([`Ledger::try_spend`](crate::accountant::Ledger::try_spend), all or
nothing, [`crate::study::gate`]) in the call that returns `mean/release`, with the c_S of the
actual |U|; if the ledger refuses at that moment (another study spent meanwhile), the site sends
`mean/decline` instead. The role never owns persistence: it reaches the ledger through
[`LedgerAccess`](crate::study::gate::LedgerAccess), and [`MeanSite::spent`] lists what it
recorded, for the driver to save.

# Driving it
Both roles are [`Machine`](crate::driver::Machine)s: wrap each in a
[`Driver`](crate::driver::Driver) with the participant's transport, call `pump(now_ms)` whenever
the transport has events, and for the aggregator `fire_timeout(now_ms)` from a timer set to
`poll_timeout()`. Pass wall-clock milliseconds (`Date.now()`) as `now_ms` at the sites: ledger
entries are stamped with it (never earlier than the ledger's last entry). The dashboard renders
[`MeanAggregator::outcome`] ([`StudyOutcome`], serde) and, while the study runs,
[`MeanAggregator::phase`], [`MeanAggregator::waiting_for`], [`MeanAggregator::attempts`] and
[`MeanAggregator::secagg`]; a tab renders [`MeanSite::phase`], [`MeanSite::attempts`] (its own
ê_s, e_s, â_s) and [`MeanSite::outcome`]. A tab can check its rows before joining with
[`check_rows`], and show τ and z with [`StudyParams::noise`].

# Decisions the spec leaves open
- **ε ≥ 1**: accepted with the classical calibration and flagged ([`StudyOutcome::calibration_note`]);
  the analytic calibration is the choice that backs (ε, δ) there. The ledger is unaffected either
  way (it accounts z, not ε).
- **The guarantee shown** is the full adversary view (cape::privacy::c_s_full_view); Theorem 1's
  view (exact c_S, spec erratum) and eq. (1) as printed are reported beside it
  ([`PrivacyReport`]).
- **The conventional baseline** uses the same local τ (spec Proposition 1: variance τ²/S, gain S);
  it is sent once per site, with its first CAPE release, and formed from the final U's messages.
- **t** is the study's threshold for every attempt; a re-run needs t sites that released.
- **Masked vectors** the aggregator saw are kept in the outcome ([`MaskedInput`]), ring and
  decoded, for the dashboard to show that they look like noise.
*/

pub mod aggregator;
pub mod data;
pub mod error;
pub mod messages;
pub mod outcome;
pub mod params;
pub mod query;
pub mod sim;
pub mod site;

pub use aggregator::{AggregatorPhase, AggregatorSettings, MeanAggregator};
pub use data::{DataError, check_rows, row_mean};
pub use error::{StudyConfigError, StudyError};
pub use messages::{DeclineReason, MeanBody, MeanMessage, PublicResult, ReleaseMessage, kind};
pub use outcome::{
    AbortReason, AttemptReport, Declined, Estimates, MaskedInput, PrivacyReport, StudyDropout,
    StudyOutcome, StudyPhase, StudyResult, Theory, TooFewAccepted, ViewPrivacy,
};
pub use params::{Calibration, Masking, NoisePlan, StudyParams, collusion_factor};
pub use query::Query;
pub use site::{MeanSite, SiteAbort, SiteAttempt, SiteOutcome, SitePhase, ledger_study_name};
