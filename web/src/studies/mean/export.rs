//! A finished round as files: JSON (the core's outcome, the site names and the ledger reports)
//! and CSV (one value per line, ready for a spreadsheet). A regression round also has its own
//! files ([`regression_json`], [`regression_csv`]): the fitted ŵ (CAPE, conventional) next to the
//! population's w*, the loss-vs-ε points of the session and the guarantee.

use std::collections::BTreeMap;
use std::fmt::Write;

use capelab_core::wire::ParticipantId;
use serde::Serialize;

use crate::frame::dashboard::FinishedRound;
use crate::ledger_report::LedgerReport;
use crate::studies::nn::compare::regression_rows;
use crate::studies::regression::view::summary;

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

#[derive(Serialize)]
struct RegressionFile<'a> {
    round: usize,
    model: &'static str,
    epsilon: f64,
    delta: f64,
    sites: usize,
    cape: &'a capelab_core::study::regression::FittedModel,
    conventional: Option<&'a capelab_core::study::regression::FittedModel>,
    /// The synthetic population's true model: a reference when the sites use seeded data.
    population_w_star: &'a [f64],
    guarantee: Option<&'a capelab_core::fm::Guarantee>,
    /// The room's estimated loss at ŵ for every round of this model so far, by ε.
    loss_vs_epsilon: Vec<LossPoint>,
}

#[derive(Serialize)]
struct LossPoint {
    round: usize,
    epsilon: f64,
    cape_loss: Option<f64>,
    conventional_loss: Option<f64>,
}

fn loss_points(round: &FinishedRound, rounds: &[FinishedRound]) -> Vec<LossPoint> {
    let model = summary(round).map(|s| s.model);
    regression_rows(rounds)
        .into_iter()
        .filter(|r| Some(r.model) == model)
        .map(|r| LossPoint {
            round: r.round,
            epsilon: r.requested_epsilon,
            cape_loss: r.cape_loss,
            conventional_loss: r.conventional_loss,
        })
        .collect()
}

/// A regression round's fit as pretty JSON; `rounds` are the session's rounds so far (for the
/// loss-vs-ε points). `None` if the round produced no model.
pub fn regression_json(round: &FinishedRound, rounds: &[FinishedRound]) -> Option<String> {
    let s = summary(round)?;
    let file = RegressionFile {
        round: round.number,
        model: s.model.name(),
        epsilon: round.outcome.params.epsilon,
        delta: round.outcome.params.delta,
        sites: s.sites,
        cape: &s.cape,
        conventional: s.conventional.as_ref(),
        population_w_star: &s.population,
        guarantee: s.guarantee.as_ref(),
        loss_vs_epsilon: loss_points(round, rounds),
    };
    Some(serde_json::to_string_pretty(&file).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}")))
}

/// `section,key,round,value` lines: ŵ per coordinate (capeFM, conventional, population w*), the
/// loss-vs-ε points, and the guarantee's numbers. `None` if the round produced no model.
pub fn regression_csv(round: &FinishedRound, rounds: &[FinishedRound]) -> Option<String> {
    let s = summary(round)?;
    let mut out = String::from("section,key,round,value\n");
    let n = round.number;
    let mut weights = |series: &str, w: &[f64]| {
        for (j, v) in w.iter().enumerate() {
            let _ = writeln!(out, "weights,{series}_w{},{n},{v:e}", j + 1);
        }
    };
    weights("cape", &s.cape.weights);
    if let Some(c) = &s.conventional {
        weights("conventional", &c.weights);
    }
    weights("population", &s.population);
    for p in loss_points(round, rounds) {
        let _ = writeln!(out, "loss_vs_epsilon,epsilon,{},{:e}", p.round, p.epsilon);
        if let Some(v) = p.cape_loss {
            let _ = writeln!(out, "loss_vs_epsilon,cape_loss,{},{v:e}", p.round);
        }
        if let Some(v) = p.conventional_loss {
            let _ = writeln!(out, "loss_vs_epsilon,conventional_loss,{},{v:e}", p.round);
        }
    }
    if let Some(g) = &s.guarantee {
        for (key, v) in [
            ("requested_epsilon", g.requested_epsilon),
            ("requested_delta", g.requested_delta),
            ("epsilon", g.epsilon),
            ("delta", g.delta),
        ] {
            let _ = writeln!(out, "guarantee,{key},{n},{v:e}");
        }
        if let Some(m) = g.joint_multiplier {
            let _ = writeln!(out, "guarantee,joint_multiplier,{n},{m:e}");
        }
    }
    Some(out)
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
    use crate::studies::mean::fixtures::simulated;

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
    fn regression_files_hold_the_weights_the_loss_points_and_the_guarantee() {
        use crate::studies::regression::view::tests::round;
        let rounds = [round(1, 0.5), round(2, 0.9)];
        let s = summary(&rounds[1]).unwrap();
        let json = regression_json(&rounds[1], &rounds).unwrap();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let cape: Vec<f64> = serde_json::from_value(v["cape"]["weights"].clone()).unwrap();
        assert_eq!(cape, s.cape.weights);
        let w_star: Vec<f64> = serde_json::from_value(v["population_w_star"].clone()).unwrap();
        assert_eq!(w_star, s.population);
        assert_eq!(v["loss_vs_epsilon"].as_array().unwrap().len(), 2);
        assert_eq!(v["loss_vs_epsilon"][0]["epsilon"], 0.5);
        assert_eq!(v["guarantee"]["epsilon"], s.guarantee.as_ref().unwrap().epsilon);

        let csv = regression_csv(&rounds[1], &rounds).unwrap();
        let value = |key: &str| -> Vec<f64> {
            csv.lines()
                .filter(|l| l.split(',').take(2).collect::<Vec<_>>().join(",") == key)
                .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
                .collect()
        };
        assert_eq!(value("weights,cape_w2"), [s.cape.weights[1]], "values round-trip exactly");
        assert_eq!(value("weights,conventional_w3"), [s.conventional.as_ref().unwrap().weights[2]]);
        assert_eq!(value("weights,population_w1"), [s.population[0]]);
        assert_eq!(value("loss_vs_epsilon,epsilon"), [0.5, 0.9]);
        assert_eq!(value("loss_vs_epsilon,cape_loss")[1], s.cape.room_loss_estimate.unwrap());
        assert_eq!(value("guarantee,joint_multiplier"), [1.5]);
        assert!(regression_json(&simulated(3, false, None), &[]).is_none(), "a mean round");
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
