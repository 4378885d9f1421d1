/*!
Iterative studies: J iterations in which the dashboard (aggregator) broadcasts a public state,
every site computes a local statistic on its private data and releases it with noise, and the
aggregator averages the releases and updates the state (spec cape-fm §5 for CAPE gradient descent,
spec cape-secagg-pca-djica §5 for capeDJICA's loop). Instances: the network of [`crate::nn`]
([`nn`]), capePCA as a study of one iteration ([`pca`]) and capeDJICA ([`djica`]); each names
itself in `iter/start` ([`SiteStep::NAME`], read by [`peek_start`]). Both roles are sans-IO [`Machine`](crate::driver::Machine)s generic over
what is computed ([`SiteStep`], [`AggregatorStep`]).

# The protocol
| step | site → aggregator | aggregator → sites |
|---|---|---|
| start | | `iter/start`: [`IterativeParams`] and the step's task |
| answer | `iter/accept`, or `iter/decline` + reason | |
| upfront noise (upfront mode only) | SecureAgg's messages over ê_s of all J_max iterations | SecureAgg's (`secagg/begin` … `secagg/result`: Σ_{s∈U} ê_s and U) |
| iteration j = 1, 2, … | `iter/release`: f_s(θ_{j−1}) + noise | `iter/state`: j and θ_{j−1} |
| zero-sum repair (a site of U left) | SecureAgg's messages over fresh ê_s of iterations j′ … J_max (or `iter/decline`) | `iter/repair`: j′, the survivors, who left; then SecureAgg's |
| end | | `iter/end`: iterations, the state reached, why |

**Noise** ([`NoiseMode`]). *Upfront*, the spec's suggestion "all noise from one SecureAgg run when
no site may drop": one SecureAgg run (the [`crate::secagg`] roles, wrapped as in
[`crate::study::mean`]) sums every site's ê_s of length J_max × len; each site splits its e_s
exactly ([`crate::cape::zero_sum`]), and iteration j releases f_s + e_s(j) + g_s with fresh
g_s ~ N(0, τ²/|U|): Σ_{s∈U} e_s(j) = 0 exactly, so the average carries noise of variance τ²/|U|²
per coordinate while every message carries τ². *Conventional*: f_s + N(0, τ²), average variance
τ²/|U|. *Non-private*: f_s itself, for comparison (a site takes part only if its settings allow).

**Dropouts and the zero-sum repair.** Inside a SecureAgg run SecureAgg handles them (U shrinks,
at least t). A site of U that leaves, declines or goes silent afterwards breaks the zero sum of
every later iteration; the survivors then repair it (spec cape-secagg-pca-djica §2, Remark 4:
the round is re-run among the survivors, with S = |U| in e_s and τ_g²): they run a fresh
SecureAgg for the noise of the iterations still to come and the study goes on with S′ = |U′|
sites. If the site had released the running iteration j, j completes and the repair covers j + 1
on; if not, the releases of j that came in are not averaged (they stay on their sites' ledgers,
once) and j is redone under the fresh noise. The details, and what changes for privacy, are in
[`aggregator`] ("the repair path"); every repair is in [`IterativeOutcome::repairs`]. With fewer
than t survivors the study stops with [`StopReason::ZeroSumBroken`] naming the site, the first
iteration that cannot complete and how many remain, keeping the state reached after the last
completed iteration. In the other modes the study goes on without the site while at least t
sites remain.

# The privacy gate
On `iter/start` a private site previews all J_max releases on its ledger (one Gaussian event of
count J_max with multiplier z and the largest full-view c_S over |U| ∈ [t, S]) and declines, sending
nothing else, if they do not fit. Each release is recorded ([`crate::study::gate::spend`]) in the
call that returns its `iter/release`, with the c_S of the actual |U| (1 for conventional
releases); a site therefore pays only for the iterations it released. After a repair, the
releases carry the c_S of the new U′ (labelled `iter/j (repair r)`), previewed on `iter/repair`
for the iterations still to come. If the ledger refuses then
(another study spent meanwhile) the site declines instead, which in upfront mode stops the study.

# Decisions the spec leaves open
- **z is public and fixed** for all iterations (τ = z·Δ), so the upfront run's noise format and the
  ledger preview are known before anything is sent. Δ is the public bound; a site whose statistic
  is more sensitive declines; one that is less sensitive is accounted at the public z
  (conservative).
- **No re-runs** in upfront mode except the repair: the noise of all iterations is committed
  up front, and only a departure from U makes a fresh run (of the remaining iterations).
- **The repair's threshold stays the study's t** (so a repair needs at least t survivors, and
  SecureAgg's collusion bound does not weaken) and its fixed-point format stays the one sized
  for S sites (safe for fewer).
- **The per-iteration ε** in [`IterationRecord::epsilon_spent`] is what a site's ledger with δ =
  the study's δ records for this study (a mirror ledger at the aggregator); the final
  [`IterativePrivacy`] gives exact-composition ε under the aggregator's and the full view.
*/

pub mod aggregator;
pub mod djica;
pub mod error;
pub mod messages;
pub mod nn;
pub mod outcome;
pub mod params;
pub mod pca;
pub mod sim;
pub mod site;
pub mod step;

pub use aggregator::{IterAggregatorPhase, IterativeAggregator};
pub use error::IterativeError;
pub use messages::{IterBody, IterMessage, kind, peek_start};
pub use outcome::{
    IterationRecord, IterativeOutcome, IterativePrivacy, Repair, SiteDecline, SiteDeparture,
    StopReason, TooFewAccepted,
};
pub use params::{IterativeConfigError, IterativeParams, NoiseMode};
pub use site::{
    IterSitePhase, IterativeSite, NoiseRun, SiteIteration, SiteSettings, ledger_study_name,
};
pub use step::{AggregatorStep, SiteStep, StepShape, Update};
