/*!
A site's privacy ledger: every release it has made, the running total, and the budget the site
set (ε at a δ). The running total is the tightest valid bound of two accountants, RDP (Balle et
al.'s conversion) and PLD ([`super::pld`]; exact for unsampled Gaussian releases): both are upper
bounds on the same composition, so their minimum is one too. Every entry records both and which
one was used ([`Bound`]). The ledger is a privacy filter (style §4,
OpenDP's odometer): a release that would take the total over the budget is refused **before**
anything is sent, with an error that says what it would spend and what is left, and the ledger is
left unchanged.

Protocol drivers call [`Ledger::try_spend`] before they send a noisy message and send only on
`Ok`. Time is whatever number the caller passes (`time_ms`); the ledger never reads a clock.

Persistence: [`Ledger::to_json`] / [`Ledger::from_json`] with a format `version`
([`LEDGER_FORMAT_VERSION`]; version 1 files, whose totals were RDP only, are read and restated). An import is replayed release by release and rejected, with the
existing ledger untouched ([`Ledger::load_json`]), if it is malformed, of another version, out of
time order, over its own budget, or if a stored running total disagrees with the replay.
*/

use serde::{Deserialize, Serialize};

use super::conversion::{Conversion, check_orders};
use super::event::Event;
use super::pld::{self, PldAccountant, PldError};
use super::rdp::{DEFAULT_ORDERS, RdpAccountant};
use super::{AccountantError, PrivacyAccountant, check_delta};

/// The JSON format version this build writes. It also reads version 1 (RDP-only totals).
pub const LEDGER_FORMAT_VERSION: u32 = 2;

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

/// A total under both accountants, and the tightest.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    /// min(rdp, pld): what the ledger charges.
    pub epsilon: f64,
    pub rdp: f64,
    /// +∞ when the PLD could not be computed on the ledger's grid (then RDP is used).
    pub pld: f64,
    pub bound: Bound,
}

impl Spend {
    const NOTHING: Spend = Spend { epsilon: 0.0, rdp: 0.0, pld: 0.0, bound: Bound::Pld };

    fn of(rdp: f64, pld: f64) -> Spend {
        // Ties go to PLD: it is exact for unsampled Gaussians.
        if pld <= rdp {
            Spend { epsilon: pld, rdp, pld, bound: Bound::Pld }
        } else {
            Spend { epsilon: rdp, rdp, pld, bound: Bound::Rdp }
        }
    }
}

/// A release the caller asks to make.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Release {
    pub study: String,
    pub event: Event,
    /// Caller-supplied time (e.g. ms since the epoch); must not go backwards.
    pub time_ms: u64,
}

/// A recorded release and the site's total ε (at the budget's δ) after it: the charged total
/// (the tightest), and each accountant's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerEntry {
    pub study: String,
    pub event: Event,
    pub time_ms: u64,
    pub epsilon_after: f64,
    pub epsilon_after_rdp: f64,
    /// `null` in JSON when the PLD could not be computed (then the RDP total was charged).
    #[serde(with = "infinite_as_null")]
    pub epsilon_after_pld: f64,
    pub bound: Bound,
}

impl LedgerEntry {
    pub fn spend_after(&self) -> Spend {
        Spend {
            epsilon: self.epsilon_after,
            rdp: self.epsilon_after_rdp,
            pld: self.epsilon_after_pld,
            bound: self.bound,
        }
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
    #[error(
        "insufficient privacy budget at site '{site}': release '{label}' of study '{study}' would \
         raise ε from {spent:.6} to {spent_after:.6} (δ = {delta:e}, by {bound}, the tightest \
         bound), spending {cost:.6}, but the budget is ε = {budget:.6} and only {remaining:.6} is \
         left; nothing was recorded or sent"
    )]
    InsufficientBudget {
        site: String,
        study: String,
        label: String,
        spent: f64,
        spent_after: f64,
        cost: f64,
        budget: f64,
        remaining: f64,
        delta: f64,
        bound: Bound,
    },
    #[error("budget ε = {0} must be positive and finite")]
    BudgetEpsilon(f64),
    #[error(
        "the new budget ε = {requested} is below what site '{site}' has already spent \
         ({spent:.6} at δ = {delta:e}); a budget can only be set at or above the spend"
    )]
    BudgetBelowSpend { site: String, requested: f64, spent: f64, delta: f64 },
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
    rdp: RdpAccountant,
    pld: PldAccountant,
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
        let (rdp, pld) = accountants(&accounting)?;
        Ok(Ledger { site, budget, accounting, entries: Vec::new(), rdp, pld })
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

    /// Total ε spent so far, at the budget's δ: the tightest of RDP and PLD.
    pub fn spent(&self) -> f64 {
        self.spend().epsilon
    }

    /// The total under both accountants, and which one is charged.
    pub fn spend(&self) -> Spend {
        self.entries.last().map_or(Spend::NOTHING, LedgerEntry::spend_after)
    }

    /// Budget ε minus spent ε (never negative: the ledger refuses to go over).
    pub fn remaining(&self) -> f64 {
        (self.budget.epsilon - self.spent()).max(0.0)
    }

    /// The totals if `event` were composed next, at `delta`.
    fn spend_with(&self, event: &Event, delta: f64) -> (RdpAccountant, PldAccountant, Spend) {
        let (mut rdp, mut pld) = (self.rdp.clone(), self.pld.clone());
        rdp.compose(event);
        pld.compose(event);
        let spend = measure(&rdp, &pld, delta);
        (rdp, pld, spend)
    }

    /// What `release` would spend, without recording it.
    pub fn preview(&self, release: &Release) -> Result<Preview, LedgerError> {
        self.check_time(release.time_ms)?;
        let (_, _, after) = self.spend_with(&release.event, self.budget.delta);
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
        let (rdp, pld, after) = self.spend_with(&release.event, self.budget.delta);
        let spent = self.spent();
        // NaN never fits a budget, so test for "fits" rather than "exceeds".
        let fits = after.epsilon <= self.budget.epsilon;
        if !fits {
            return Err(LedgerError::InsufficientBudget {
                site: self.site.clone(),
                study: release.study,
                label: release.event.label().to_owned(),
                spent,
                spent_after: after.epsilon,
                cost: after.epsilon - spent,
                budget: self.budget.epsilon,
                remaining: (self.budget.epsilon - spent).max(0.0),
                delta: self.budget.delta,
                bound: after.bound,
            });
        }
        self.rdp = rdp;
        self.pld = pld;
        self.entries.push(LedgerEntry {
            study: release.study,
            event: release.event,
            time_ms: release.time_ms,
            epsilon_after: after.epsilon,
            epsilon_after_rdp: after.rdp,
            epsilon_after_pld: after.pld,
            bound: after.bound,
        });
        Ok(self.entries.last().expect("just pushed"))
    }

    /// Sets a new budget; refuses one below what is already spent (at the new δ).
    pub fn set_budget(&mut self, budget: Budget) -> Result<(), LedgerError> {
        budget.validate()?;
        let spent = measure(&self.rdp, &self.pld, budget.delta).epsilon;
        if spent > budget.epsilon {
            return Err(LedgerError::BudgetBelowSpend {
                site: self.site.clone(),
                requested: budget.epsilon,
                spent,
                delta: budget.delta,
            });
        }
        // Running totals are stated at the budget's δ: restate them at the new one.
        let (mut rdp, mut pld) = accountants(&self.accounting)?;
        for e in &mut self.entries {
            rdp.compose(&e.event);
            pld.compose(&e.event);
            let after = measure(&rdp, &pld, budget.delta);
            e.epsilon_after = after.epsilon;
            e.epsilon_after_rdp = after.rdp;
            e.epsilon_after_pld = after.pld;
            e.bound = after.bound;
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
    /// (RDP only) are checked against the RDP replay and restated under both accountants.
    pub fn from_json(json: &str) -> Result<Self, LedgerError> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| LedgerError::Malformed(e.to_string()))?;
        let malformed = |e: serde_json::Error| LedgerError::Malformed(e.to_string());
        match value.get("version") {
            Some(v) if v.as_u64() == Some(LEDGER_FORMAT_VERSION as u64) => {
                let file: LedgerFile<LedgerEntry> =
                    serde_json::from_value(value).map_err(malformed)?;
                let stored = file.releases.iter().map(|e| e.epsilon_after).collect();
                let releases = file.releases.into_iter().map(|e| (e.study, e.event, e.time_ms));
                Self::replay(file.site, file.budget, file.accounting, releases, stored, |s| {
                    s.epsilon
                })
            }
            Some(v) if v.as_u64() == Some(1) => {
                let file: LedgerFile<LedgerEntryV1> =
                    serde_json::from_value(value).map_err(malformed)?;
                let stored = file.releases.iter().map(|e| e.epsilon_after).collect();
                let releases = file.releases.into_iter().map(|e| (e.study, e.event, e.time_ms));
                Self::replay(file.site, file.budget, file.accounting, releases, stored, |s| s.rdp)
            }
            Some(v) => Err(LedgerError::UnsupportedVersion { found: v.to_string() }),
            None => Err(LedgerError::Malformed("missing field `version`".into())),
        }
    }

    /// Rebuilds a ledger release by release; `stored[i]` must equal `check(total after release i)`.
    fn replay(
        site: String,
        budget: Budget,
        accounting: LedgerAccounting,
        releases: impl Iterator<Item = (String, Event, u64)>,
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

/// Empty accountants for `accounting`.
fn accountants(
    accounting: &LedgerAccounting,
) -> Result<(RdpAccountant, PldAccountant), LedgerError> {
    let rdp = RdpAccountant::with_orders(accounting.orders.clone(), accounting.conversion)?;
    let pld = PldAccountant::with_interval(accounting.pld_interval).map_err(LedgerError::Pld)?;
    Ok((rdp, pld))
}

/// Both totals at `delta`. A PLD too large for the grid is +∞ (RDP is then charged); an RDP
/// failure is +∞ too, so a release whose cost cannot be bounded never fits a budget.
fn measure(rdp: &RdpAccountant, pld: &PldAccountant, delta: f64) -> Spend {
    let rdp = rdp.epsilon(delta).map(|e| e.epsilon).unwrap_or(f64::INFINITY);
    let pld = pld.epsilon(delta).map(|e| e.epsilon).unwrap_or(f64::INFINITY);
    Spend::of(rdp, pld)
}
