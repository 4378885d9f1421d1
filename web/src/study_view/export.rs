//! A finished round as files: JSON (the core's outcome, the site names and the ledger reports)
//! and CSV (one value per line, ready for a spreadsheet).

use std::collections::BTreeMap;
use std::fmt::Write;

use capelab_core::wire::ParticipantId;
use serde::Serialize;

use crate::ledger_report::LedgerReport;
use crate::study_driver::dashboard::FinishedRound;

#[derive(Serialize)]
struct RoundFile<'a> {
    round: usize,
    step_by_step: bool,
    site_names: &'a BTreeMap<ParticipantId, String>,
    outcome: &'a capelab_core::study::mean::StudyOutcome,
    ledgers: &'a BTreeMap<ParticipantId, LedgerReport>,
}

/// The round as pretty JSON.
pub fn round_json(
    round: &FinishedRound,
    ledgers: &BTreeMap<ParticipantId, LedgerReport>,
) -> String {
    let file = RoundFile {
        round: round.number,
        step_by_step: round.step_mode,
        site_names: &round.names,
        outcome: &round.outcome,
        ledgers,
    };
    serde_json::to_string_pretty(&file).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// `series,site_id,site_name,attempt,coordinate,value` lines: every message the aggregator saw,
/// the estimates, and the theory's standard deviations.
pub fn round_csv(round: &FinishedRound) -> String {
    let mut out = String::from("series,site_id,site_name,attempt,coordinate,value\n");
    let mut line =
        |series: &str, site: Option<ParticipantId>, attempt: Option<u32>, values: &[f64]| {
            let name = site.map(|s| csv_text(&round.name(s))).unwrap_or_default();
            let site = site.map(|s| s.to_string()).unwrap_or_default();
            let attempt = attempt.map(|a| a.to_string()).unwrap_or_default();
            for (j, v) in values.iter().enumerate() {
                let _ = writeln!(out, "{series},{site},{name},{attempt},{},{v:e}", j + 1);
            }
        };
    let outcome = &round.outcome;
    for a in &outcome.attempts {
        for m in &a.masked_inputs {
            line("masked_input_decoded", Some(m.site), Some(a.attempt), &m.decoded);
        }
        if let Some(sum) = &a.noise_sum {
            line("noise_sum", None, Some(a.attempt), sum);
        }
        for r in &a.releases {
            line("cape_message", Some(r.site), Some(a.attempt), &r.values);
        }
        for r in &a.conventional {
            line("conventional_message", Some(r.site), Some(a.attempt), &r.values);
        }
    }
    if let Some(est) = outcome.estimates() {
        line("cape_estimate", None, Some(est.attempt), &est.cape);
        if let Some(conv) = &est.conventional {
            line("conventional_estimate", None, Some(est.attempt), conv);
        }
    }
    if let Some(t) = &outcome.theory {
        line("sd_message", None, None, &[t.var_message.sqrt()]);
        line("sd_cape", None, None, &[t.var_cape.sqrt()]);
        line("sd_conventional", None, None, &[t.var_conventional.sqrt()]);
    }
    out
}

/// A CSV field: quoted when it holds a comma, quote or line break.
fn csv_text(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study_view::fixtures::simulated;

    #[test]
    fn json_holds_the_core_outcome_and_reads_back() {
        let round = simulated(3, true, None);
        let json = round_json(&round, &BTreeMap::new());
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["round"], 1);
        assert_eq!(value["outcome"]["result"]["status"], "estimated");
        let back: capelab_core::study::mean::StudyOutcome =
            serde_json::from_value(value["outcome"].clone()).unwrap();
        assert_eq!(back, round.outcome);
    }

    #[test]
    fn csv_has_one_value_per_line_and_the_estimates_parse_back() {
        let mut round = simulated(3, true, None);
        round.names.insert(round.outcome.params.sites[0], "North, \"A\"".into());
        let csv = round_csv(&round);
        let est = round.outcome.estimates().unwrap();
        let cape: Vec<f64> = csv
            .lines()
            .filter(|l| l.starts_with("cape_estimate,"))
            .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(cape, est.cape, "values round-trip exactly");
        assert_eq!(csv.lines().filter(|l| l.starts_with("cape_message,")).count(), 3 * 400);
        assert!(csv.contains(",\"North, \"\"A\"\"\","));
        assert!(csv.lines().any(|l| l.starts_with("sd_cape,")));
    }
}
