/*!
Privacy accounting: what a run of Gaussian releases costs in (ε, δ), under several analyses.

Spec sections implemented: cape-secagg-pca-djica §5 (RDP accounting, moments accountant and its
erratum, strong composition, collusion-aware accounting) and §7 (RDP facts); cape-fm §5 (noisy GD:
ε* = C + 2·sqrt(C·ln(1/δ))) and §7.3 (analytic Gaussian); efpsn-vertical-dpvi B4 (Poisson-subsampled
Gaussian, the two conversions).

Every formula is written in terms of the noise multiplier z = σ/Δ (spec Conventions).

capelab's accounting floor, its own crate (`capelab-accountant`, re-exported by `capelab-core` as
`capelab_core::accountant` with `special` and `gaussian`): it depends on nothing else of capelab.

The pieces, one concept per file:
- [`special`]: normal tails and log-space helpers, accurate where δ lives.
- [`gaussian`]: classical Gaussian-mechanism calibration, with its ε < 1 validity enforced.
- [`event`]: a release as data ([`Event`], [`Mechanism`]): replayable, storable as JSON.
- [`analytic_gaussian`]: the exact δ(ε) of one Gaussian release and calibration for any ε
  (Balle & Wang 2018).
- [`rdp`]: Rényi DP of the Gaussian mechanism, additive composition, and [`RdpAccountant`].
- [`subsampled`]: RDP of the Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019).
- [`conversion`]: RDP → (ε, δ), the standard conversion and Balle et al. 2020's tighter one, on an
  order grid and, for a pure Gaussian curve, at the exact optimum.
- [`moments`]: the moments accountant with the corrected quadratic (spec §5 erratum).
- [`composition`]: basic and strong (DRV'10) composition, for comparison.
- [`comparison`]: every number above for one homogeneous run (what `cape account` prints).
- [`pld`]: privacy loss distributions (dp-accounting's PLD accountant): the tightest bound,
  used by the ledger beside RDP.
- [`ledger`]: a site's record of releases against its budget; refuses over-budget requests. It
  also takes releases known only to be (ε, δ)-DP ([`ApproximateEvent`]), by basic composition.

**Collusion-aware accounting** (spec §5, a \[PROPOSAL\] there): a release whose colluding-adversary view has
collusion factor c_S has per-release RDP α·c_S/(2z²): it is accounted as a Gaussian release with
effective multiplier z/√c_S ([`Event::effective_noise_multiplier`]). c_S itself is computed in
`cape::privacy`; here it is an input.

Accountants follow Flower's `RdpAccountant` / Google dp-accounting: they ingest events
([`PrivacyAccountant::compose`]) and answer ε(δ) and δ(ε).
*/

pub mod analytic_gaussian;
pub mod comparison;
pub mod composition;
pub mod conversion;
pub mod event;
pub mod gaussian;
pub mod ledger;
mod log_tails;
pub mod moments;
pub mod pld;
pub mod rdp;
mod solve;
pub mod special;
pub mod subsampled;
pub mod without_replacement;

pub use comparison::{ComparisonReport, ComparisonRequest, PldReport, PldView, ViewReport};
pub use conversion::Conversion;
pub use event::{ApproximateEvent, Event, Mechanism};
pub use ledger::{Budget, Ledger, LedgerError, LedgerEvent, Release};
pub use moments::{MomentsAccountant, MomentsQuadratic};
pub use pld::{Pld, PldAccountant, PldEpsilon, PldError};
pub use rdp::{DEFAULT_ORDERS, RdpAccountant};

/// Bad input to the accountant. Each message names the value and the valid range.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AccountantError {
    #[error("noise multiplier z = {0} must be positive and finite")]
    NoiseMultiplier(f64),
    #[error("sampling rate q = {0} must lie in (0, 1]; use q = 1 for no subsampling")]
    SamplingRate(f64),
    #[error(
        "collusion factor c_S = {0} must be finite and at least 1 (c_S = τ²[Σ⁻¹]₁₁ ≥ 1 for any \
         view that contains the release; pass c_S, not 1/c_S)"
    )]
    CollusionFactor(f64),
    #[error("an event must count at least one release, got count = 0")]
    ZeroCount,
    #[error("δ = {0} must lie strictly between 0 and 1")]
    Delta(f64),
    #[error("ε = {0} must be non-negative and finite")]
    Epsilon(f64),
    #[error("an (ε, δ)-DP release needs ε > 0 and finite, got ε = {0}")]
    ApproximateEpsilon(f64),
    #[error("a target ε must be positive and finite, got ε = {0}")]
    TargetEpsilon(f64),
    #[error("an (ε, δ)-DP release needs δ in [0, 1), got δ = {0}")]
    ApproximateDelta(f64),
    #[error("Laplace scale b/Δ = {0} must be positive and finite")]
    LaplaceScale(f64),
    #[error("RDP order α = {0} must be finite and greater than 1")]
    Order(f64),
    #[error("the list of RDP orders is empty; give at least one order α > 1")]
    NoOrders,
    #[error("an RDP curve needs one value per order: got {rdp} values for {orders} orders")]
    CurveLength { orders: usize, rdp: usize },
}

/// An ε with the order at which the conversion was optimal.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EpsilonAt {
    pub epsilon: f64,
    /// The optimal order: the RDP order α for RDP conversions, the moment order λ (= α − 1) for the
    /// moments accountant.
    pub order: f64,
    /// True when the order was optimised over the whole real line (pure Gaussian curve), false
    /// when it is the best point of a finite grid.
    pub exact: bool,
}

/// A privacy accountant in the style of Flower's `RdpAccountant` and Google's dp-accounting:
/// events in, ε(δ) or δ(ε) out.
pub trait PrivacyAccountant {
    /// Adds `event` (with its count) to the spend.
    fn compose(&mut self, event: &Event);
    /// Every event composed so far, in order: the spend can be replayed from these.
    fn events(&self) -> &[Event];
    /// The smallest ε such that the composition so far is (ε, δ)-DP under this analysis.
    fn epsilon(&self, delta: f64) -> Result<EpsilonAt, AccountantError>;
    /// The smallest δ this analysis certifies at `epsilon`.
    fn delta(&self, epsilon: f64) -> Result<f64, AccountantError>;
}

pub(crate) fn check_delta(delta: f64) -> Result<(), AccountantError> {
    if delta > 0.0 && delta < 1.0 { Ok(()) } else { Err(AccountantError::Delta(delta)) }
}

pub(crate) fn check_epsilon(epsilon: f64) -> Result<(), AccountantError> {
    if epsilon >= 0.0 && epsilon.is_finite() {
        Ok(())
    } else {
        Err(AccountantError::Epsilon(epsilon))
    }
}

pub(crate) fn check_noise_multiplier(z: f64) -> Result<(), AccountantError> {
    if z > 0.0 && z.is_finite() { Ok(()) } else { Err(AccountantError::NoiseMultiplier(z)) }
}
