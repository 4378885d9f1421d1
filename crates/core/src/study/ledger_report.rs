/*!
A site's privacy ledger as it reports it to the dashboard: a message of its own kind ([`KIND`]),
sent on joining, whenever a dashboard arrives and whenever the ledger changes, so the dashboard can
show every site's budget and its spend round by round. Here in the core so that every site (the
app's tabs, a page built on the npm package) sends the same message.

It carries totals the site has already published through its releases' noise levels (budget, ε
spent after each release, which study): no data and no noise. The relay routes it like any
envelope and never reads it.
*/

use crate::accountant::Ledger;
use crate::accountant::ledger::Bound;
use crate::codec::{self, DecodeError};
use serde::{Deserialize, Serialize};

/// The envelope kind of a ledger report.
pub const KIND: &str = "ledger/report";

/// At most this many releases travel in one report (the newest): enough for any chart of a
/// lesson, and it keeps the message small for a ledger with a long history.
pub const MAX_RELEASES: usize = 200;

/// A site's ledger totals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LedgerReport {
    /// The name the ledger is kept under.
    pub site: String,
    pub budget_epsilon: f64,
    pub budget_delta: f64,
    /// ε spent so far at the budget's δ: the tighter of the two totals below.
    pub spent: f64,
    /// The same total under RDP and under PLD, and which one `spent` is, so the dashboard can
    /// say which bound each site is charged by (the site's ledger panel shows the same).
    pub spent_rdp: f64,
    /// +∞ when the site's ledger could not compute the PLD (then RDP is charged).
    pub spent_pld: f64,
    pub bound: Bound,
    /// How many releases the ledger holds in all (the list below may be cut).
    pub release_count: usize,
    /// The newest releases, oldest first.
    pub releases: Vec<ReportedRelease>,
    /// Whether the site's user allows non-private comparison runs, in any study (the one switch
    /// on its page): the dashboard offers comparison runs by default only when every site does.
    pub allows_comparisons: bool,
}

/// One release: which study, which label, and the running total after it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReportedRelease {
    pub study: String,
    pub label: String,
    pub time_ms: u64,
    pub epsilon_after: f64,
}

impl LedgerReport {
    pub fn of(ledger: &Ledger) -> Self {
        let entries = ledger.entries();
        let skip = entries.len().saturating_sub(MAX_RELEASES);
        let spend = ledger.spend();
        LedgerReport {
            site: ledger.site().to_owned(),
            budget_epsilon: ledger.budget().epsilon,
            budget_delta: ledger.budget().delta,
            spent: spend.epsilon,
            spent_rdp: spend.rdp,
            spent_pld: spend.pld,
            bound: spend.bound,
            release_count: entries.len(),
            releases: entries[skip..]
                .iter()
                .map(|e| ReportedRelease {
                    study: e.study.clone(),
                    label: e.event.label().to_owned(),
                    time_ms: e.time_ms,
                    epsilon_after: e.epsilon_after,
                })
                .collect(),
            allows_comparisons: false,
        }
    }

    /// The same report with the site's consent to comparison runs.
    pub fn with_consent(self, allows_comparisons: bool) -> Self {
        LedgerReport { allows_comparisons, ..self }
    }

    pub fn encode(&self) -> Vec<u8> {
        codec::encode(self)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        codec::decode(KIND, bytes)
    }

    /// ε spent before round 1 and after each round, for rounds whose ledger study names are
    /// `rounds` (in order): `K + 1` values. After round k the spend is the running total after the
    /// last release of rounds 1..=k; a site that took no part yet keeps its spend from before.
    pub fn spend_by_round(&self, rounds: &[String]) -> Vec<f64> {
        let first = self.releases.iter().position(|r| rounds.contains(&r.study));
        let before = match first {
            Some(0) => 0.0,
            Some(i) => self.releases[i - 1].epsilon_after,
            None => self.spent,
        };
        let mut spend = vec![before];
        for k in 1..=rounds.len() {
            let so_far = &rounds[..k];
            let last = self.releases.iter().rposition(|r| so_far.contains(&r.study));
            spend.push(last.map_or(before, |i| self.releases[i].epsilon_after));
        }
        spend
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accountant::{Budget, Event, Release};

    fn ledger_with(studies: &[&str]) -> Ledger {
        let mut ledger = Ledger::new("Clinic North", Budget::new(10.0, 1e-5).unwrap()).unwrap();
        for (i, study) in studies.iter().enumerate() {
            let event = Event::gaussian("mean/cape attempt 1", 8.0, 1).unwrap();
            let release = Release::new(*study, event, 100 * i as u64);
            ledger.try_spend(release).unwrap();
        }
        ledger
    }

    #[test]
    fn the_report_carries_the_ledger_totals_and_round_trips() {
        let ledger = ledger_with(&["old", "mean a", "mean a", "mean b"]);
        let report = LedgerReport::of(&ledger);
        assert_eq!(report.site, "Clinic North");
        assert_eq!((report.budget_epsilon, report.budget_delta), (10.0, 1e-5));
        assert_eq!(report.release_count, 4);
        assert_eq!(report.spent, ledger.spent());
        // both totals travel, and which one is charged: unsampled Gaussians, so PLD
        assert_eq!((report.spent_pld, report.spent_rdp), (ledger.spend().pld, ledger.spend().rdp));
        assert!(report.spent_pld < report.spent_rdp, "{report:?}");
        assert_eq!((report.bound, report.spent), (Bound::Pld, report.spent_pld));
        assert_eq!(report.releases[3].epsilon_after, ledger.spent());
        assert_eq!(LedgerReport::decode(&report.encode()).unwrap(), report);
        assert!(LedgerReport::decode(&[0xff, 0xff]).is_err());
    }

    #[test]
    fn spend_per_round_reads_the_running_totals() {
        let ledger = ledger_with(&["old", "mean a", "mean a", "mean b"]);
        let report = LedgerReport::of(&ledger);
        let after = |i: usize| ledger.entries()[i].epsilon_after;
        let rounds = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            report.spend_by_round(&rounds(&["mean a", "mean b"])),
            [after(0), after(2), after(3)]
        );
        // a round the site was not in keeps the spend it had
        assert_eq!(
            report.spend_by_round(&rounds(&["mean z", "mean a", "mean y"])),
            [after(0), after(0), after(2), after(2)]
        );
        // no round of this dashboard in the ledger: the whole spend came before
        assert_eq!(report.spend_by_round(&rounds(&["mean z"])), [ledger.spent(); 2]);
        assert_eq!(report.spend_by_round(&rounds(&["old"])), [0.0, after(0)]);
    }

    #[test]
    fn a_long_history_is_cut_to_the_newest_releases() {
        let names: Vec<String> = (0..MAX_RELEASES + 5).map(|i| format!("s{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut ledger = Ledger::new("A", Budget::new(1e6, 1e-5).unwrap()).unwrap();
        for (i, study) in refs.iter().enumerate() {
            let event = Event::gaussian("x", 50.0, 1).unwrap();
            ledger.try_spend(Release::new(*study, event, i as u64)).unwrap();
        }
        let report = LedgerReport::of(&ledger);
        assert_eq!(report.releases.len(), MAX_RELEASES);
        assert_eq!(report.release_count, MAX_RELEASES + 5);
        assert_eq!(report.releases[0].study, "s5");
    }
}
