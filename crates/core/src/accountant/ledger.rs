/*!
A site's privacy ledger: every release it has made, the running total under the chosen
accountant, and the budget the site set (ε at a δ). The ledger is a privacy filter (style §4,
OpenDP's odometer): a release that would take the total over the budget is refused **before**
anything is sent, with an error that says what it would spend and what is left, and the ledger is
left unchanged.

Protocol drivers call [`Ledger::try_spend`] before they send a noisy message and send only on
`Ok`. Time is whatever number the caller passes (`time_ms`); the ledger never reads a clock.

Persistence: [`Ledger::to_json`] / [`Ledger::from_json`] with a format `version`
([`LEDGER_FORMAT_VERSION`]). An import is replayed release by release and rejected, with the
existing ledger untouched ([`Ledger::load_json`]), if it is malformed, of another version, out of
time order, over its own budget, or if a stored running total disagrees with the replay.
*/

use serde::{Deserialize, Serialize};

use super::conversion::{Conversion, check_orders};
use super::event::Event;
use super::rdp::{DEFAULT_ORDERS, RdpAccountant};
use super::{AccountantError, PrivacyAccountant, check_delta};

/// The JSON format version this build writes and reads.
pub const LEDGER_FORMAT_VERSION: u32 = 1;

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
/// `conversion` (and at the exact optimal order while every release is an unsampled Gaussian).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerAccounting {
    pub conversion: Conversion,
    pub orders: Vec<f64>,
}

impl Default for LedgerAccounting {
    /// Balle et al.'s conversion on dp-accounting's default orders.
    fn default() -> Self {
        LedgerAccounting { conversion: Conversion::Improved, orders: DEFAULT_ORDERS.to_vec() }
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

/// A recorded release and the site's total ε (at the budget's δ) after it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerEntry {
    pub study: String,
    pub event: Event,
    pub time_ms: u64,
    pub epsilon_after: f64,
}

/// What a release would do to the total, without recording it (Flower's `would_exceed`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Preview {
    pub spent_before: f64,
    pub spent_after: f64,
    pub cost: f64,
    pub remaining_after: f64,
    pub within_budget: bool,
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LedgerError {
    #[error(
        "insufficient privacy budget at site '{site}': release '{label}' of study '{study}' would \
         raise ε from {spent:.6} to {spent_after:.6} (δ = {delta:e}), spending {cost:.6}, but the \
         budget is ε = {budget:.6} and only {remaining:.6} is left; nothing was recorded or sent"
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
    #[error("ledger JSON is malformed: {0}")]
    Malformed(String),
    #[error(
        "ledger JSON has format version {found}, this build reads version {}",
        LEDGER_FORMAT_VERSION
    )]
    UnsupportedVersion { found: String },
    #[error("ledger JSON is inconsistent: {0}")]
    Inconsistent(String),
    #[error("ledger JSON belongs to site '{found}', not to this ledger's site '{expected}'")]
    SiteMismatch { expected: String, found: String },
}

/// The serialised ledger.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LedgerFile {
    version: u32,
    site: String,
    budget: Budget,
    accounting: LedgerAccounting,
    releases: Vec<LedgerEntry>,
}

/// One site's releases against its budget.
#[derive(Clone, Debug, PartialEq)]
pub struct Ledger {
    site: String,
    budget: Budget,
    accounting: LedgerAccounting,
    entries: Vec<LedgerEntry>,
    accountant: RdpAccountant,
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
        let accountant =
            RdpAccountant::with_orders(accounting.orders.clone(), accounting.conversion)?;
        Ok(Ledger { site, budget, accounting, entries: Vec::new(), accountant })
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

    /// Total ε spent so far, at the budget's δ.
    pub fn spent(&self) -> f64 {
        self.total(&self.accountant)
    }

    /// Budget ε minus spent ε (never negative: the ledger refuses to go over).
    pub fn remaining(&self) -> f64 {
        (self.budget.epsilon - self.spent()).max(0.0)
    }

    fn total(&self, accountant: &RdpAccountant) -> f64 {
        accountant.epsilon(self.budget.delta).map(|e| e.epsilon).unwrap_or(f64::INFINITY)
    }

    /// What `release` would spend, without recording it.
    pub fn preview(&self, release: &Release) -> Result<Preview, LedgerError> {
        self.check_time(release.time_ms)?;
        let mut trial = self.accountant.clone();
        trial.compose(&release.event);
        let spent_before = self.spent();
        let spent_after = self.total(&trial);
        Ok(Preview {
            spent_before,
            spent_after,
            cost: spent_after - spent_before,
            remaining_after: self.budget.epsilon - spent_after,
            within_budget: spent_after <= self.budget.epsilon,
        })
    }

    /// Records `release` if the total stays within budget; otherwise refuses with
    /// [`LedgerError::InsufficientBudget`] and changes nothing. Call it before sending.
    pub fn try_spend(&mut self, release: Release) -> Result<&LedgerEntry, LedgerError> {
        self.check_time(release.time_ms)?;
        let mut trial = self.accountant.clone();
        trial.compose(&release.event);
        let spent = self.spent();
        let spent_after = self.total(&trial);
        // NaN never fits a budget, so test for "fits" rather than "exceeds".
        let fits = spent_after <= self.budget.epsilon;
        if !fits {
            return Err(LedgerError::InsufficientBudget {
                site: self.site.clone(),
                study: release.study,
                label: release.event.label().to_owned(),
                spent,
                spent_after,
                cost: spent_after - spent,
                budget: self.budget.epsilon,
                remaining: (self.budget.epsilon - spent).max(0.0),
                delta: self.budget.delta,
            });
        }
        self.accountant = trial;
        self.entries.push(LedgerEntry {
            study: release.study,
            event: release.event,
            time_ms: release.time_ms,
            epsilon_after: spent_after,
        });
        Ok(self.entries.last().expect("just pushed"))
    }

    /// Sets a new budget; refuses one below what is already spent (at the new δ).
    pub fn set_budget(&mut self, budget: Budget) -> Result<(), LedgerError> {
        budget.validate()?;
        let spent = self.accountant.epsilon(budget.delta)?.epsilon;
        if spent > budget.epsilon {
            return Err(LedgerError::BudgetBelowSpend {
                site: self.site.clone(),
                requested: budget.epsilon,
                spent,
                delta: budget.delta,
            });
        }
        // Running totals are stated at the budget's δ: restate them at the new one.
        let mut replay =
            RdpAccountant::with_orders(self.accounting.orders.clone(), self.accounting.conversion)?;
        for e in &mut self.entries {
            replay.compose(&e.event);
            e.epsilon_after = replay.epsilon(budget.delta)?.epsilon;
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

    /// Reads a ledger from JSON, replaying and checking every release.
    pub fn from_json(json: &str) -> Result<Self, LedgerError> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| LedgerError::Malformed(e.to_string()))?;
        match value.get("version") {
            Some(v) if v.as_u64() == Some(LEDGER_FORMAT_VERSION as u64) => {}
            Some(v) => return Err(LedgerError::UnsupportedVersion { found: v.to_string() }),
            None => return Err(LedgerError::Malformed("missing field `version`".into())),
        }
        let file: LedgerFile =
            serde_json::from_value(value).map_err(|e| LedgerError::Malformed(e.to_string()))?;
        let mut ledger = Ledger::with_accounting(file.site, file.budget, file.accounting)?;
        for (i, entry) in file.releases.into_iter().enumerate() {
            let label = entry.event.label().to_owned();
            let stored = entry.epsilon_after;
            let release =
                Release { study: entry.study, event: entry.event, time_ms: entry.time_ms };
            let replayed = match ledger.try_spend(release) {
                Ok(e) => e.epsilon_after,
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
