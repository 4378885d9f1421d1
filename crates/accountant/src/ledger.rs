/*!
A site's privacy ledger: every release it has made, the running total, and the budget the site
set (ε at a δ). The running total is the tightest valid bound of two accountants, RDP (Balle et
al.'s conversion) and PLD ([`super::pld`]; exact for unsampled Gaussian releases): both are upper
bounds on the same composition, so their minimum is one too. Every entry records both and which
one was used ([`Bound`]). The ledger is a privacy filter (style §4,
OpenDP's odometer): a release that would take the total over the budget is refused **before**
anything is sent, with an error that says what it would spend and what is left, and the ledger is
left unchanged.

**Releases known only to be (ε, δ)-DP** ([`LedgerEvent::Approximate`], an [`ApproximateEvent`]
of k runs): EFPSN's privacy theorem gives only a pair (ε, δ) per run (efpsn-vertical-dpvi Part A,
A3, Theorem IV.1), which neither RDP nor a Gaussian PLD can represent. The ledger composes them
with the Gaussian part by basic composition, which holds for any (ε, δ)-DP mechanisms (adaptively
too) and is therefore valid, if loose: at the budget's δ_B,

```text
ε_total = Σ_a k_a·ε_a + ε_G(δ_B − Σ_a k_a·δ_a)
```

where ε_G(δ) is the tightest-of-RDP-and-PLD total of the Gaussian releases at δ (0 without any).
When Σ_a k_a·δ_a ≥ δ_B no ε bounds the total: it is +∞, so such a release never fits a budget
(a leftover δ_B − Σ_a k_a·δ_a within float rounding of 0 counts as none: `DELTA_SLACK`).
Each entry records the basic-composition part (`epsilon_after_basic`, `delta_after_basic`); the
RDP and PLD totals include it.

Protocol drivers call [`Ledger::try_spend`] before they send a noisy message and send only on
`Ok`. Time is whatever number the caller passes (`time_ms`); the ledger never reads a clock.

Persistence: [`Ledger::to_json`] / [`Ledger::from_json`] with a format `version`
([`LEDGER_FORMAT_VERSION`]). Version 1 files, whose totals were RDP only, are read and restated;
version 2 files (Gaussian releases only, no basic-composition part) are read as they are. An
import is replayed release by release and rejected, with the existing ledger untouched
([`Ledger::load_json`]), if it is malformed, of another version, out of time order, over its own
budget, or if a stored running total disagrees with the replay.
*/

use serde::{Deserialize, Serialize};

use super::conversion::{Conversion, check_orders};
use super::event::{ApproximateEvent, Event, EventRecord};
use super::pld::{self, PldAccountant, PldError};
use super::rdp::{DEFAULT_ORDERS, RdpAccountant};
use super::{AccountantError, PrivacyAccountant, check_delta};

/// The JSON format version this build writes (3: entries may hold (ε, δ)-DP releases and record
/// the basic-composition part). It also reads version 1 (RDP-only totals) and 2 (Gaussian only).
pub const LEDGER_FORMAT_VERSION: u32 = 3;

/// Relative tolerance when checking a stored running total against the replay (JSON numbers are
/// written round-trip exact; the slack only absorbs a re-serialisation by another tool).
const REPLAY_TOLERANCE: f64 = 1e-9;

/// The site's budget: at most ε at δ, in total.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    pub epsilon: f64,
    pub delta: f64,
}

impl Budget {
    pub fn new(epsilon: f64, delta: f64) -> Result<Self, LedgerError> {
        let b = Budget { epsilon, delta };
        b.validate()?;
        Ok(b)
    }

    fn validate(&self) -> Result<(), LedgerError> {
        if !(self.epsilon > 0.0 && self.epsilon.is_finite()) {
            return Err(LedgerError::BudgetEpsilon(self.epsilon));
        }
        check_delta(self.delta)?;
        Ok(())
    }
}

/// How the ledger converts its releases into a total: RDP composition on `orders`, converted with
/// `conversion` (and at the exact optimal order while every release is an unsampled Gaussian),
/// and PLD composition on a grid of step `pld_interval`; the total is the smaller of the two.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerAccounting {
    pub conversion: Conversion,
    pub orders: Vec<f64>,
    #[serde(default = "default_pld_interval")]
    pub pld_interval: f64,
}

fn default_pld_interval() -> f64 {
    pld::DEFAULT_INTERVAL
}

impl Default for LedgerAccounting {
    /// Balle et al.'s conversion on dp-accounting's default orders; PLD at dp-accounting's grid.
    fn default() -> Self {
        LedgerAccounting {
            conversion: Conversion::Improved,
            orders: DEFAULT_ORDERS.to_vec(),
            pld_interval: pld::DEFAULT_INTERVAL,
        }
    }
}

/// The accountant whose bound a total is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    Rdp,
    Pld,
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Bound::Rdp => "RDP",
            Bound::Pld => "PLD",
        })
    }
}

/// A total under both accountants, and the tightest. Both include the part of the (ε, δ)-DP
/// releases by basic composition (`basic_epsilon`, at `basic_delta`); the Gaussian releases are
/// converted at the budget's δ minus `basic_delta`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    /// min(rdp, pld): what the ledger charges. +∞ when `basic_delta` reaches the budget's δ.
    pub epsilon: f64,
    pub rdp: f64,
    /// +∞ when the PLD could not be computed on the ledger's grid (then RDP is used).
    pub pld: f64,
    pub bound: Bound,
    /// Σ k·ε over the (ε, δ)-DP releases: their part of `epsilon`, by basic composition.
    pub basic_epsilon: f64,
    /// Σ k·δ over the (ε, δ)-DP releases: the part of the budget's δ they use.
    pub basic_delta: f64,
}

impl Spend {
    const NOTHING: Spend = Spend {
        epsilon: 0.0,
        rdp: 0.0,
        pld: 0.0,
        bound: Bound::Pld,
        basic_epsilon: 0.0,
        basic_delta: 0.0,
    };

    /// The total from the Gaussian part's ε under each accountant and the basic part.
    fn of(gaussian_rdp: f64, gaussian_pld: f64, basic_epsilon: f64, basic_delta: f64) -> Spend {
        let (rdp, pld) = (basic_epsilon + gaussian_rdp, basic_epsilon + gaussian_pld);
        // Ties go to PLD: it is exact for unsampled Gaussians.
        let (epsilon, bound) = if pld <= rdp { (pld, Bound::Pld) } else { (rdp, Bound::Rdp) };
        Spend { epsilon, rdp, pld, bound, basic_epsilon, basic_delta }
    }
}

/// What one ledger release spends.
///
/// JSON: a Gaussian event as [`Event`] writes it (`{"label", "mechanism", "count",
/// "collusion_factor"}`, as in format versions 1 and 2); an (ε, δ)-DP one as
/// `{"label": "efpsn run", "approximate": {"epsilon": 0.5, "delta": 1e-6}, "count": 2}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "LedgerEventRecord", into = "LedgerEventRecord")]
pub enum LedgerEvent {
    /// Gaussian releases: composed under RDP and PLD.
    Gaussian(Event),
    /// Runs of a mechanism known only to be (ε, δ)-DP: composed by basic composition.
    Approximate(ApproximateEvent),
}

impl LedgerEvent {
    pub fn label(&self) -> &str {
        match self {
            LedgerEvent::Gaussian(e) => e.label(),
            LedgerEvent::Approximate(a) => a.label(),
        }
    }

    /// How many releases (runs) it stands for.
    pub fn count(&self) -> u64 {
        match self {
            LedgerEvent::Gaussian(e) => e.count(),
            LedgerEvent::Approximate(a) => a.count(),
        }
    }

    /// The Gaussian event, if it is one.
    pub fn gaussian(&self) -> Option<&Event> {
        match self {
            LedgerEvent::Gaussian(e) => Some(e),
            LedgerEvent::Approximate(_) => None,
        }
    }

    /// The (ε, δ)-DP event, if it is one.
    pub fn approximate(&self) -> Option<&ApproximateEvent> {
        match self {
            LedgerEvent::Gaussian(_) => None,
            LedgerEvent::Approximate(a) => Some(a),
        }
    }
}

impl From<Event> for LedgerEvent {
    fn from(e: Event) -> Self {
        LedgerEvent::Gaussian(e)
    }
}

impl From<ApproximateEvent> for LedgerEvent {
    fn from(a: ApproximateEvent) -> Self {
        LedgerEvent::Approximate(a)
    }
}

/// The serialised form of [`LedgerEvent`]: an [`EventRecord`] (`mechanism`) or an (ε, δ) pair
/// (`approximate`), exactly one of them; converting it back validates.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LedgerEventRecord {
    #[serde(default)]
    label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mechanism: Option<super::event::Mechanism>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    approximate: Option<EpsilonDelta>,
    count: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    collusion_factor: Option<f64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EpsilonDelta {
    epsilon: f64,
    delta: f64,
}

impl TryFrom<LedgerEventRecord> for LedgerEvent {
    type Error = String;
    fn try_from(r: LedgerEventRecord) -> Result<Self, Self::Error> {
        match (r.mechanism, r.approximate, r.collusion_factor) {
            (Some(mechanism), None, collusion_factor) => Event::try_from(EventRecord {
                label: r.label,
                mechanism,
                count: r.count,
                collusion_factor: collusion_factor.unwrap_or(1.0),
            })
            .map(LedgerEvent::Gaussian)
            .map_err(|e| e.to_string()),
            (None, Some(ed), None) => ApproximateEvent::new(r.label, ed.epsilon, ed.delta, r.count)
                .map(LedgerEvent::Approximate)
                .map_err(|e| e.to_string()),
            (None, Some(_), Some(_)) => Err("an (ε, δ)-DP release (`approximate`) takes no \
                `collusion_factor`: its (ε, δ) is the guarantee as proven"
                .into()),
            (Some(_), Some(_), _) => {
                Err("a release has either a `mechanism` or an `approximate` (ε, δ), not both"
                    .into())
            }
            (None, None, _) => Err("missing field `mechanism` (or `approximate`)".into()),
        }
    }
}

impl From<LedgerEvent> for LedgerEventRecord {
    fn from(e: LedgerEvent) -> Self {
        match e {
            LedgerEvent::Gaussian(e) => {
                let r = EventRecord::from(e);
                LedgerEventRecord {
                    label: r.label,
                    mechanism: Some(r.mechanism),
                    approximate: None,
                    count: r.count,
                    collusion_factor: Some(r.collusion_factor),
                }
            }
            LedgerEvent::Approximate(a) => LedgerEventRecord {
                approximate: Some(EpsilonDelta { epsilon: a.epsilon(), delta: a.delta() }),
                count: a.count(),
                label: a.label().to_owned(),
                mechanism: None,
                collusion_factor: None,
            },
        }
    }
}

/// A release the caller asks to make.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Release {
    pub study: String,
    pub event: LedgerEvent,
    /// Caller-supplied time (e.g. ms since the epoch); must not go backwards.
    pub time_ms: u64,
}

impl Release {
    /// A release of `event`: an [`Event`] (Gaussian) or an [`ApproximateEvent`] ((ε, δ)-DP).
    pub fn new(study: impl Into<String>, event: impl Into<LedgerEvent>, time_ms: u64) -> Self {
        Release { study: study.into(), event: event.into(), time_ms }
    }
}

/// A recorded release and the site's total ε (at the budget's δ) after it: the charged total
/// (the tightest), each accountant's, and the part of them that is basic composition of the
/// (ε, δ)-DP releases so far.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerEntry {
    pub study: String,
    pub event: LedgerEvent,
    pub time_ms: u64,
    pub epsilon_after: f64,
    pub epsilon_after_rdp: f64,
    /// `null` in JSON when the PLD could not be computed (then the RDP total was charged).
    #[serde(with = "infinite_as_null")]
    pub epsilon_after_pld: f64,
    pub bound: Bound,
    /// Σ k·ε of the (ε, δ)-DP releases so far (this one included): the part of the three totals
    /// above that is basic composition. 0 for a ledger of Gaussian releases (and in version-2
    /// files, which have no such field).
    #[serde(default)]
    pub epsilon_after_basic: f64,
    /// Σ k·δ of the (ε, δ)-DP releases so far: the Gaussian part is converted at the budget's δ
    /// minus this.
    #[serde(default)]
    pub delta_after_basic: f64,
}

impl LedgerEntry {
    pub fn spend_after(&self) -> Spend {
        Spend {
            epsilon: self.epsilon_after,
            rdp: self.epsilon_after_rdp,
            pld: self.epsilon_after_pld,
            bound: self.bound,
            basic_epsilon: self.epsilon_after_basic,
            basic_delta: self.delta_after_basic,
        }
    }

    fn set_spend_after(&mut self, after: &Spend) {
        self.epsilon_after = after.epsilon;
        self.epsilon_after_rdp = after.rdp;
        self.epsilon_after_pld = after.pld;
        self.bound = after.bound;
        self.epsilon_after_basic = after.basic_epsilon;
        self.delta_after_basic = after.basic_delta;
    }
}

/// A version-1 entry: the total was RDP's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LedgerEntryV1 {
    study: String,
    event: Event,
    time_ms: u64,
    epsilon_after: f64,
}

/// JSON has no infinity: +∞ is written as `null`.
mod infinite_as_null {
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() { s.serialize_f64(*v) } else { s.serialize_none() }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

/// What a release would do to the total, without recording it (Flower's `would_exceed`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Preview {
    pub spent_before: f64,
    pub spent_after: f64,
    pub cost: f64,
    pub remaining_after: f64,
    pub within_budget: bool,
    /// Both accountants' totals after the release; `spent_after` is the tightest.
    pub after: Spend,
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LedgerError {
    /// The release does not fit: its ε would go over the budget, or (when `basic_delta` reaches
    /// `delta`) the (ε, δ)-DP releases would use up all of the budget's δ.
    #[error(
        "insufficient privacy budget at site '{site}': release '{label}' of study '{study}' {}; \
         nothing was recorded or sent",
        over_budget(*.spent, *.spent_after, *.budget, *.remaining, *.delta, *.bound, *.basic_delta)
    )]
    InsufficientBudget {
        // Boxed strings keep the error small (it travels in every `Result` of a preview).
        site: Box<str>,
        study: Box<str>,
        label: Box<str>,
        spent: f64,
        /// The total after the release (its cost is `spent_after − spent`).
        spent_after: f64,
        budget: f64,
        remaining: f64,
        delta: f64,
        bound: Bound,
        /// Σ k·δ of the (ε, δ)-DP releases after this one.
        basic_delta: f64,
    },
    #[error("budget ε = {0} must be positive and finite")]
    BudgetEpsilon(f64),
    #[error(
        "the new budget (ε = {requested}, δ = {delta:e}) is below what site '{site}' has already \
         spent: {}; a budget can only be set at or above the spend",
        below_spend(*.spent, *.delta, *.basic_delta)
    )]
    BudgetBelowSpend {
        site: String,
        requested: f64,
        spent: f64,
        delta: f64,
        /// Σ k·δ of the (ε, δ)-DP releases recorded.
        basic_delta: f64,
    },
    #[error(
        "release time {time_ms} is before the last recorded release ({last_ms}); pass the current \
         time, which must not go backwards"
    )]
    TimeWentBackwards { time_ms: u64, last_ms: u64 },
    #[error("the site name is empty; give the site an identifier")]
    EmptySite,
    #[error(transparent)]
    Accountant(#[from] AccountantError),
    #[error("the ledger's PLD accounting is misconfigured: {0}")]
    Pld(PldError),
    #[error("ledger JSON is malformed: {0}")]
    Malformed(String),
    #[error(
        "ledger JSON has format version {found}, this build reads versions 1 to {}",
        LEDGER_FORMAT_VERSION
    )]
    UnsupportedVersion { found: String },
    #[error("ledger JSON is inconsistent: {0}")]
    Inconsistent(String),
    #[error("ledger JSON belongs to site '{found}', not to this ledger's site '{expected}'")]
    SiteMismatch { expected: String, found: String },
}

/// Σ k·δ is a sum of floats, within a few ulps of the exact sum: a leftover δ − Σ k·δ below this
/// fraction of δ could be rounding alone, so it counts as none (and the Gaussian part is never
/// converted at a δ the exact sum might not leave). Far above the rounding of any real ledger,
/// far below any δ worth converting at.
const DELTA_SLACK: f64 = 1e-9;

/// True when the (ε, δ)-DP releases' Σ k·δ leaves nothing of `delta`: then no ε bounds the
/// total (also for NaN).
fn delta_exhausted(basic_delta: f64, delta: f64) -> bool {
    let left = delta - basic_delta;
    left.is_nan() || left <= DELTA_SLACK * delta
}

/// The body of [`LedgerError::InsufficientBudget`]'s message.
fn over_budget(
    spent: f64,
    spent_after: f64,
    budget: f64,
    remaining: f64,
    delta: f64,
    bound: Bound,
    basic_delta: f64,
) -> String {
    if delta_exhausted(basic_delta, delta) {
        return format!(
            "would bring the δ of the site's (ε, δ)-DP releases, by basic composition, to \
             Σ k·δ = {basic_delta:e}, which leaves nothing of the budget's δ = {delta:e}: no ε \
             bounds the total then (the budget is ε = {budget:.6}, {remaining:.6} left)"
        );
    }
    let basic = if basic_delta > 0.0 {
        format!(", with the (ε, δ)-DP releases by basic composition using δ = {basic_delta:e}")
    } else {
        String::new()
    };
    let cost = spent_after - spent;
    format!(
        "would raise ε from {spent:.6} to {spent_after:.6} (δ = {delta:e}, by {bound}, the \
         tightest bound{basic}), spending {cost:.6}, but the budget is ε = {budget:.6} and only \
         {remaining:.6} is left"
    )
}

/// How far a refused release is over a site's budget: what its user would raise the budget to.
/// A site that declines a study for its budget sends this along, so the dashboard can say which
/// budget to raise and by how much without seeing the ledger.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Shortfall {
    /// The budget's ε now.
    pub budget: f64,
    /// The total ε the site would reach with the release, at the budget's δ: the least budget ε
    /// that admits it. `None` when the budget's δ is what runs out (no ε would do: raise δ).
    pub needed: Option<f64>,
    /// The budget's δ.
    pub delta: f64,
}

impl Shortfall {
    /// How much the budget's ε would have to grow (`None`: δ is what runs out).
    pub fn raise_by(&self) -> Option<f64> {
        self.needed.map(|n| (n - self.budget).max(0.0))
    }
}

impl LedgerError {
    /// The shortfall, when the ledger refused a release for its budget.
    pub fn shortfall(&self) -> Option<Shortfall> {
        match self {
            LedgerError::InsufficientBudget { spent_after, budget, delta, basic_delta, .. } => {
                Some(Shortfall {
                    budget: *budget,
                    needed: (!delta_exhausted(*basic_delta, *delta)).then_some(*spent_after),
                    delta: *delta,
                })
            }
            _ => None,
        }
    }
}

/// The body of [`LedgerError::BudgetBelowSpend`]'s message.
fn below_spend(spent: f64, delta: f64, basic_delta: f64) -> String {
    if !delta_exhausted(basic_delta, delta) {
        format!("ε = {spent:.6} at δ = {delta:e}")
    } else {
        format!(
            "its (ε, δ)-DP releases use δ = {basic_delta:e} by basic composition, which leaves \
             nothing of the new δ, so no ε bounds its total at that δ"
        )
    }
}

/// The serialised ledger (`E`: the entry of the file's version).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LedgerFile<E> {
    version: u32,
    site: String,
    budget: Budget,
    accounting: LedgerAccounting,
    releases: Vec<E>,
}

/// One site's releases against its budget.
#[derive(Clone, Debug, PartialEq)]
pub struct Ledger {
    site: String,
    budget: Budget,
    accounting: LedgerAccounting,
    entries: Vec<LedgerEntry>,
    composed: Composition,
}

/// Everything released so far: the Gaussian events in both accountants, and Σ k·ε, Σ k·δ of the
/// (ε, δ)-DP ones (basic composition).
#[derive(Clone, Debug, PartialEq)]
struct Composition {
    rdp: RdpAccountant,
    pld: PldAccountant,
    basic_epsilon: f64,
    basic_delta: f64,
}

impl Composition {
    fn empty(accounting: &LedgerAccounting) -> Result<Self, LedgerError> {
        let rdp = RdpAccountant::with_orders(accounting.orders.clone(), accounting.conversion)?;
        let pld =
            PldAccountant::with_interval(accounting.pld_interval).map_err(LedgerError::Pld)?;
        Ok(Composition { rdp, pld, basic_epsilon: 0.0, basic_delta: 0.0 })
    }

    fn compose(&mut self, event: &LedgerEvent) {
        match event {
            LedgerEvent::Gaussian(e) => {
                self.rdp.compose(e);
                self.pld.compose(e);
            }
            LedgerEvent::Approximate(a) => {
                let k = a.count() as f64;
                self.basic_epsilon += k * a.epsilon();
                self.basic_delta += k * a.delta();
            }
        }
    }

    /// The totals at `delta`: Σ k·ε + ε_G(δ − Σ k·δ) under each accountant, +∞ when Σ k·δ ≥ δ.
    /// A PLD too large for the grid is +∞ (RDP is then charged); an RDP failure is +∞ too, so a
    /// release whose cost cannot be bounded never fits a budget.
    fn measure(&self, delta: f64) -> Spend {
        let (basic_epsilon, basic_delta) = (self.basic_epsilon, self.basic_delta);
        let gaussian_delta = delta - basic_delta;
        if delta_exhausted(basic_delta, delta) {
            let inf = f64::INFINITY;
            return Spend::of(inf, inf, basic_epsilon, basic_delta);
        }
        let rdp = self.rdp.epsilon(gaussian_delta).map(|e| e.epsilon).unwrap_or(f64::INFINITY);
        let pld = self.pld.epsilon(gaussian_delta).map(|e| e.epsilon).unwrap_or(f64::INFINITY);
        Spend::of(rdp, pld, basic_epsilon, basic_delta)
    }
}

impl Ledger {
    /// An empty ledger for `site` with the default accounting (improved RDP conversion).
    pub fn new(site: impl Into<String>, budget: Budget) -> Result<Self, LedgerError> {
        Self::with_accounting(site, budget, LedgerAccounting::default())
    }

    pub fn with_accounting(
        site: impl Into<String>,
        budget: Budget,
        accounting: LedgerAccounting,
    ) -> Result<Self, LedgerError> {
        let site = site.into();
        if site.is_empty() {
            return Err(LedgerError::EmptySite);
        }
        budget.validate()?;
        check_orders(&accounting.orders)?;
        let composed = Composition::empty(&accounting)?;
        Ok(Ledger { site, budget, accounting, entries: Vec::new(), composed })
    }

    pub fn site(&self) -> &str {
        &self.site
    }
    pub fn budget(&self) -> Budget {
        self.budget
    }
    pub fn accounting(&self) -> &LedgerAccounting {
        &self.accounting
    }
    pub fn entries(&self) -> &[LedgerEntry] {
        &self.entries
    }

    /// Total ε spent so far, at the budget's δ: the tightest of RDP and PLD (each with the
    /// basic-composition part of the (ε, δ)-DP releases).
    pub fn spent(&self) -> f64 {
        self.spend().epsilon
    }

    /// The total under both accountants, which one is charged, and the basic-composition part.
    pub fn spend(&self) -> Spend {
        self.entries.last().map_or(Spend::NOTHING, LedgerEntry::spend_after)
    }

    /// Budget ε minus spent ε (never negative: the ledger refuses to go over).
    pub fn remaining(&self) -> f64 {
        (self.budget.epsilon - self.spent()).max(0.0)
    }

    /// The composition and its totals at `delta` if `event` were composed next.
    fn spend_with(&self, event: &LedgerEvent, delta: f64) -> (Composition, Spend) {
        let mut composed = self.composed.clone();
        composed.compose(event);
        let spend = composed.measure(delta);
        (composed, spend)
    }

    /// What `release` would spend, without recording it.
    pub fn preview(&self, release: &Release) -> Result<Preview, LedgerError> {
        self.check_time(release.time_ms)?;
        let (_, after) = self.spend_with(&release.event, self.budget.delta);
        let spent_before = self.spent();
        Ok(Preview {
            spent_before,
            spent_after: after.epsilon,
            cost: after.epsilon - spent_before,
            remaining_after: self.budget.epsilon - after.epsilon,
            within_budget: after.epsilon <= self.budget.epsilon,
            after,
        })
    }

    /// Records `release` if the total stays within budget; otherwise refuses with
    /// [`LedgerError::InsufficientBudget`] and changes nothing. Call it before sending.
    pub fn try_spend(&mut self, release: Release) -> Result<&LedgerEntry, LedgerError> {
        self.check_time(release.time_ms)?;
        let (composed, after) = self.spend_with(&release.event, self.budget.delta);
        let spent = self.spent();
        // NaN and +∞ never fit a budget, so test for "fits" rather than "exceeds".
        let fits = after.epsilon <= self.budget.epsilon;
        if !fits {
            return Err(LedgerError::InsufficientBudget {
                site: self.site.as_str().into(),
                study: release.study.into(),
                label: release.event.label().into(),
                spent,
                spent_after: after.epsilon,
                budget: self.budget.epsilon,
                remaining: (self.budget.epsilon - spent).max(0.0),
                delta: self.budget.delta,
                bound: after.bound,
                basic_delta: after.basic_delta,
            });
        }
        self.composed = composed;
        let mut entry = LedgerEntry {
            study: release.study,
            event: release.event,
            time_ms: release.time_ms,
            epsilon_after: 0.0,
            epsilon_after_rdp: 0.0,
            epsilon_after_pld: 0.0,
            bound: Bound::Pld,
            epsilon_after_basic: 0.0,
            delta_after_basic: 0.0,
        };
        entry.set_spend_after(&after);
        self.entries.push(entry);
        Ok(self.entries.last().expect("just pushed"))
    }

    /// Sets a new budget; refuses one below what is already spent (at the new δ), which includes
    /// a δ not above what the (ε, δ)-DP releases already use.
    pub fn set_budget(&mut self, budget: Budget) -> Result<(), LedgerError> {
        budget.validate()?;
        let now = self.composed.measure(budget.delta);
        // NaN and +∞ never fit a budget, so test for "fits" rather than "exceeds".
        let fits = now.epsilon <= budget.epsilon;
        if !fits {
            return Err(LedgerError::BudgetBelowSpend {
                site: self.site.clone(),
                requested: budget.epsilon,
                spent: now.epsilon,
                delta: budget.delta,
                basic_delta: now.basic_delta,
            });
        }
        // Running totals are stated at the budget's δ: restate them at the new one.
        let mut composed = Composition::empty(&self.accounting)?;
        for e in &mut self.entries {
            composed.compose(&e.event);
            e.set_spend_after(&composed.measure(budget.delta));
        }
        self.budget = budget;
        Ok(())
    }

    fn check_time(&self, time_ms: u64) -> Result<(), LedgerError> {
        match self.entries.last() {
            Some(last) if time_ms < last.time_ms => {
                Err(LedgerError::TimeWentBackwards { time_ms, last_ms: last.time_ms })
            }
            _ => Ok(()),
        }
    }

    /// The ledger as JSON (format version [`LEDGER_FORMAT_VERSION`]).
    pub fn to_json(&self) -> String {
        let file = LedgerFile {
            version: LEDGER_FORMAT_VERSION,
            site: self.site.clone(),
            budget: self.budget,
            accounting: self.accounting.clone(),
            releases: self.entries.clone(),
        };
        serde_json::to_string_pretty(&file).expect("a ledger of finite numbers always serialises")
    }

    /// Reads a ledger from JSON, replaying and checking every release. A version-1 file's totals
    /// (RDP only) are checked against the RDP replay and restated under both accountants; a
    /// version-2 file is a version-3 one with Gaussian releases only.
    pub fn from_json(json: &str) -> Result<Self, LedgerError> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| LedgerError::Malformed(e.to_string()))?;
        let malformed = |e: serde_json::Error| LedgerError::Malformed(e.to_string());
        match value.get("version").and_then(serde_json::Value::as_u64) {
            Some(version @ (2 | 3)) => {
                let file: LedgerFile<LedgerEntry> =
                    serde_json::from_value(value).map_err(malformed)?;
                let approximate = file.releases.iter().find(|e| e.event.gaussian().is_none());
                if let (2, Some(e)) = (version, approximate) {
                    return Err(LedgerError::Malformed(format!(
                        "release '{}' is an (ε, δ)-DP release, which a version-2 ledger cannot \
                         hold (version 3 can)",
                        e.event.label()
                    )));
                }
                let stored = file.releases.iter().map(|e| e.epsilon_after).collect();
                let releases = file.releases.into_iter().map(|e| (e.study, e.event, e.time_ms));
                Self::replay(file.site, file.budget, file.accounting, releases, stored, |s| {
                    s.epsilon
                })
            }
            Some(1) => {
                let file: LedgerFile<LedgerEntryV1> =
                    serde_json::from_value(value).map_err(malformed)?;
                let stored = file.releases.iter().map(|e| e.epsilon_after).collect();
                let releases =
                    file.releases.into_iter().map(|e| (e.study, e.event.into(), e.time_ms));
                Self::replay(file.site, file.budget, file.accounting, releases, stored, |s| s.rdp)
            }
            _ => match value.get("version") {
                Some(v) => Err(LedgerError::UnsupportedVersion { found: v.to_string() }),
                None => Err(LedgerError::Malformed("missing field `version`".into())),
            },
        }
    }

    /// Rebuilds a ledger release by release; `stored[i]` must equal `check(total after release i)`.
    fn replay(
        site: String,
        budget: Budget,
        accounting: LedgerAccounting,
        releases: impl Iterator<Item = (String, LedgerEvent, u64)>,
        stored: Vec<f64>,
        check: impl Fn(&Spend) -> f64,
    ) -> Result<Self, LedgerError> {
        let mut ledger = Ledger::with_accounting(site, budget, accounting)?;
        for (i, ((study, event, time_ms), stored)) in releases.zip(stored).enumerate() {
            let label = event.label().to_owned();
            let replayed = match ledger.try_spend(Release { study, event, time_ms }) {
                Ok(e) => e.spend_after(),
                Err(LedgerError::TimeWentBackwards { time_ms, last_ms }) => {
                    return Err(LedgerError::Inconsistent(format!(
                        "release #{i} ('{label}') has time {time_ms}, before the previous \
                         release's {last_ms}"
                    )));
                }
                Err(LedgerError::InsufficientBudget { delta, basic_delta, .. })
                    if delta_exhausted(basic_delta, delta) =>
                {
                    return Err(LedgerError::Inconsistent(format!(
                        "release #{i} ('{label}') takes the δ of the (ε, δ)-DP releases to \
                         {basic_delta:e}, over the ledger's own budget δ = {delta:e}"
                    )));
                }
                Err(LedgerError::InsufficientBudget { spent_after, budget, .. }) => {
                    return Err(LedgerError::Inconsistent(format!(
                        "release #{i} ('{label}') takes the total to ε = {spent_after:.6}, over \
                         the ledger's own budget ε = {budget}"
                    )));
                }
                Err(other) => return Err(other),
            };
            let replayed = check(&replayed);
            let agrees = (replayed - stored).abs() <= REPLAY_TOLERANCE * replayed.abs().max(1e-12);
            if !agrees {
                return Err(LedgerError::Inconsistent(format!(
                    "release #{i} ('{label}') records a running total ε = {stored} but \
                     replaying the releases gives {replayed}"
                )));
            }
        }
        Ok(ledger)
    }

    /// Replaces this ledger with the one in `json` (same site only). On any error this ledger is
    /// left exactly as it was.
    pub fn load_json(&mut self, json: &str) -> Result<(), LedgerError> {
        let imported = Ledger::from_json(json)?;
        if imported.site != self.site {
            return Err(LedgerError::SiteMismatch {
                expected: self.site.clone(),
                found: imported.site,
            });
        }
        *self = imported;
        Ok(())
    }
}
