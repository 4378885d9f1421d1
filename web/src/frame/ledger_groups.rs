//! A site's ledger by study: one group per study with a human name ("Joint ICA: capeDJICA #1 ·
//! 150 iterations"), ε before → after and the bound charged, and its releases, each with its
//! mechanism (a Gaussian's multiplier, or the (ε, δ) of a release known only to be (ε, δ)-DP,
//! which the ledger composes by basic composition). The ledger itself (and its JSON export) stays
//! one entry per release; this is only how the tab shows it.

use std::collections::BTreeMap;

use capelab_core::accountant::Mechanism;
use capelab_core::accountant::ledger::{LedgerEntry, LedgerEvent};

use crate::components::charts::scale::format_value;

/// One study in a site's ledger.
#[derive(Clone, Debug, PartialEq)]
pub struct StudyGroup {
    /// The ledger's study name (e.g. `mean 1f2e…`), unique per study.
    pub key: String,
    /// A name for people: the kind of study and its number among this ledger's studies of that kind.
    pub name: String,
    /// "1 release", "150 iterations".
    pub size: String,
    pub epsilon_before: f64,
    pub epsilon_after: f64,
    /// The bound charged after the study's last release ("PLD" or "RDP", with "+ basic" once the
    /// total has a part from (ε, δ)-DP releases by basic composition).
    pub bound: String,
    /// Its releases, oldest first.
    pub releases: Vec<GroupRelease>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct GroupRelease {
    pub label: String,
    /// "z = 8.0000", "z = 2.0000, q = 0.0100 × 500", "(ε, δ) = (0.4200, 1e-6), basic composition".
    pub mechanism: String,
    /// c_S of a Gaussian release; `None` for an (ε, δ)-DP one (its guarantee is as proven).
    pub collusion_factor: Option<f64>,
    pub epsilon_after: f64,
    pub bound: String,
}

/// What a release was, for people: a Gaussian's multiplier (and sampling rate), or the (ε, δ) of
/// a release known only to be (ε, δ)-DP; "× k" for k releases.
pub fn mechanism_text(event: &LedgerEvent) -> String {
    let times = match event.count() {
        1 => String::new(),
        k => format!(" × {k}"),
    };
    match event {
        LedgerEvent::Gaussian(e) => match e.mechanism() {
            Mechanism::Gaussian { noise_multiplier } => {
                format!("z = {}{times}", format_value(noise_multiplier))
            }
            Mechanism::PoissonSampledGaussian { noise_multiplier, sampling_rate } => format!(
                "z = {}, q = {}{times}",
                format_value(noise_multiplier),
                format_value(sampling_rate)
            ),
        },
        LedgerEvent::Approximate(a) => format!(
            "(ε, δ) = ({}, {:e}){times}, basic composition",
            format_value(a.epsilon()),
            a.delta()
        ),
    }
}

/// The bound an entry's total was charged by, with "+ basic" when part of it is the basic
/// composition of (ε, δ)-DP releases.
fn bound_text(entry: &LedgerEntry) -> String {
    if entry.epsilon_after_basic > 0.0 {
        format!("{} + basic", entry.bound)
    } else {
        entry.bound.to_string()
    }
}

/// The kind of study a ledger study name stands for. `kinds` maps the names of iterative studies
/// seen in this tab to their computation (`nn`, `capepca`, `capedjica`): the ledger's names do not
/// say which iterative study it was.
fn kind_name(key: &str, kinds: &BTreeMap<String, String>) -> (&'static str, bool) {
    if key.starts_with("mean ") {
        return ("Private mean", false);
    }
    if key.starts_with("capefm ") {
        return ("Private regression", false);
    }
    if key.starts_with("iterative/") {
        let name = match kinds.get(key).map(String::as_str) {
            Some("nn") => "Neural network",
            Some("capepca") => "Joint ICA: capePCA",
            Some("capedjica") => "Joint ICA: capeDJICA",
            _ => "Iterative study",
        };
        return (name, true);
    }
    ("Study", false)
}

fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 { format!("1 {one}") } else { format!("{n} {many}") }
}

/// The ledger's entries grouped by study, in the order the studies first released.
pub fn by_study(entries: &[LedgerEntry], kinds: &BTreeMap<String, String>) -> Vec<StudyGroup> {
    let mut groups: Vec<StudyGroup> = Vec::new();
    let mut ordinals: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut before = 0.0;
    for entry in entries {
        let release = GroupRelease {
            label: entry.event.label().to_owned(),
            mechanism: mechanism_text(&entry.event),
            collusion_factor: entry.event.gaussian().map(|e| e.collusion_factor()),
            epsilon_after: entry.epsilon_after,
            bound: bound_text(entry),
        };
        match groups.iter_mut().find(|g| g.key == entry.study) {
            Some(group) => {
                group.epsilon_after = entry.epsilon_after;
                group.bound = release.bound.clone();
                group.releases.push(release);
            }
            None => {
                let (kind, _) = kind_name(&entry.study, kinds);
                let n = ordinals.entry(kind).or_insert(0);
                *n += 1;
                groups.push(StudyGroup {
                    key: entry.study.clone(),
                    name: format!("{kind} #{n}"),
                    size: String::new(),
                    epsilon_before: before,
                    epsilon_after: entry.epsilon_after,
                    bound: release.bound.clone(),
                    releases: vec![release],
                });
            }
        }
        before = entry.epsilon_after;
    }
    for group in &mut groups {
        let (_, iterative) = kind_name(&group.key, kinds);
        let n = group.releases.len();
        group.size = if iterative {
            count(n, "iteration", "iterations")
        } else {
            count(n, "release", "releases")
        };
    }
    groups
}

#[cfg(test)]
mod tests {
    use capelab_core::accountant::ledger::{Bound, Release};
    use capelab_core::accountant::{ApproximateEvent, Budget, Event, Ledger};

    use super::*;

    fn entry(study: &str, label: &str, after: f64) -> LedgerEntry {
        LedgerEntry {
            study: study.into(),
            event: Event::gaussian(label, 2.0, 1).unwrap().into(),
            time_ms: 0,
            epsilon_after: after,
            epsilon_after_rdp: after * 1.1,
            epsilon_after_pld: after,
            bound: Bound::Pld,
            epsilon_after_basic: 0.0,
            delta_after_basic: 0.0,
        }
    }

    #[test]
    fn groups_by_study_with_names_and_running_totals() {
        let entries = vec![
            entry("mean aa", "mean/cape attempt 1", 0.5),
            entry("mean aa", "mean/conventional attempt 1", 0.8),
            entry("iterative/bb", "iter/1", 1.0),
            entry("iterative/bb", "iter/2", 1.2),
            entry("iterative/bb", "iter/3", 1.3),
            entry("mean cc", "mean/cape attempt 1", 1.6),
            entry("iterative/dd", "iter/1", 1.9),
        ];
        let kinds = BTreeMap::from([("iterative/bb".to_owned(), "capedjica".to_owned())]);
        let groups = by_study(&entries, &kinds);
        let names: Vec<_> = groups.iter().map(|g| (g.name.as_str(), g.size.as_str())).collect();
        assert_eq!(
            names,
            [
                ("Private mean #1", "2 releases"),
                ("Joint ICA: capeDJICA #1", "3 iterations"),
                ("Private mean #2", "1 release"),
                ("Iterative study #1", "1 iteration"),
            ]
        );
        let totals: Vec<_> = groups.iter().map(|g| (g.epsilon_before, g.epsilon_after)).collect();
        assert_eq!(totals, [(0.0, 0.8), (0.8, 1.3), (1.3, 1.6), (1.6, 1.9)]);
        assert_eq!(groups[1].releases.len(), 3);
        assert_eq!(groups[1].bound, "PLD");
    }

    #[test]
    fn releases_show_their_mechanism_and_the_basic_part() {
        let mut ledger = Ledger::new("Lab", Budget::new(10.0, 1e-5).unwrap()).unwrap();
        ledger
            .try_spend(Release::new("mean aa", Event::gaussian("g", 8.0, 1).unwrap(), 1))
            .unwrap();
        let efpsn = ApproximateEvent::new("efpsn run", 0.42, 1e-6, 2).unwrap();
        ledger.try_spend(Release::new("efpsn bb", efpsn, 2)).unwrap();
        let groups = by_study(ledger.entries(), &BTreeMap::new());
        let (g, a) = (&groups[0].releases[0], &groups[1].releases[0]);
        assert_eq!((g.mechanism.as_str(), g.collusion_factor), ("z = 8.0000", Some(1.0)));
        assert_eq!(g.bound, "PLD");
        assert_eq!(a.mechanism, "(ε, δ) = (0.4200, 1e-6) × 2, basic composition");
        assert_eq!(a.collusion_factor, None);
        assert_eq!(a.bound, "PLD + basic");
        assert_eq!(groups[1].bound, "PLD + basic");
    }

    #[test]
    fn an_empty_ledger_has_no_groups() {
        assert!(by_study(&[], &BTreeMap::new()).is_empty());
    }
}
