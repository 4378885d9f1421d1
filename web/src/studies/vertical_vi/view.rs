//! What the vertical synthetic-data study (DP-VI + MPC, seed 004) shows, as pure functions: where a
//! role is, ε per player, the synthetic twin of a release (the same draw on every tab for the same
//! seed), a party's marginals real beside synthetic, and the exports. Tested natively.

use capelab_vertical_vi::model::tv::{TV_BINS, histogram};
use capelab_vertical_vi::model::twin::{TextTable, decode, from_unit, join};
use capelab_vertical_vi::model::{Model, Posterior};
use capelab_vertical_vi::privacy::{self, Adjacency};
use capelab_vertical_vi::schema::{FeatureKind, PartyBlock, PartySchema, Schema};
use capelab_vertical_vi::study::{Release, Status, VviTask};
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use capelab_core::accountant::ledger::Shortfall;
use capelab_core::wire::ParticipantId;

use crate::components::charts::bars::{BarChartSpec, BarSeries};
use crate::components::charts::line::{LineChartSpec, Series};
use crate::components::charts::scale::Scale;
use crate::components::charts::svg::PALETTE;
use crate::numbers::show;
use crate::studies::vertical_vi::baseline::CliRun;

/// A role's status as a sentence and a progress fraction (steps done of T).
pub fn status_text(status: &Status, steps: u32) -> (String, f64) {
    let t = f64::from(steps.max(1));
    match status {
        Status::Waiting => ("Starting: waiting for every member's link key".into(), 0.0),
        Status::Running { step } => (
            format!("Step {step} of {steps}: secret-shared gradients, clipped and noised in MPC"),
            f64::from(step.saturating_sub(1)) / t,
        ),
        Status::Released(r) => (
            format!(
                "Done: released after {} steps, ε = {} at δ = {}",
                r.steps,
                show(r.epsilon),
                show(r.delta)
            ),
            1.0,
        ),
        Status::Stopped(reason) => (format!("Stopped: {reason}"), 0.0),
    }
}

/// "A", "B", …: a party as the form and the pages name it.
pub fn party_letter(p: usize) -> &'static str {
    ["A", "B", "C", "D"].get(p).copied().unwrap_or("?")
}

/// A message of the study's roles with its participants named as people named them: "party 0
/// (participant 2)" becomes "party A (Lab A)", "the dealer (participant 4)" "the dealer (Lab C)",
/// the aggregator "the dashboard", any other "participant 7" its name.
pub fn named(
    text: &str,
    task: &VviTask,
    aggregator: ParticipantId,
    names: &BTreeMap<ParticipantId, String>,
) -> String {
    let name = |id: ParticipantId| names.get(&id).cloned().unwrap_or_else(|| format!("site {id}"));
    let mut out = text.to_owned();
    for (p, &id) in task.parties.iter().enumerate() {
        let role = format!("party {} ({})", party_letter(p), name(id));
        out = out.replace(&format!("party {p} (participant {id})"), &role);
    }
    let dealer = format!("the dealer ({})", name(task.dealer));
    out = out.replace(&format!("the dealer (participant {})", task.dealer), &dealer);
    out = out.replace(&format!("the aggregator (participant {aggregator})"), "the dashboard");
    // Whoever else: "participant 7" (not "participant 71") is its name.
    let mut rest = out.as_str();
    let mut done = String::with_capacity(out.len());
    while let Some(at) = rest.find("participant ") {
        let (head, tail) = rest.split_at(at);
        done.push_str(head);
        let after = &tail["participant ".len()..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        match after[..digits].parse::<ParticipantId>() {
            Ok(id) => done.push_str(&name(id)),
            Err(_) => done.push_str("participant "),
        }
        rest = &after[digits..];
    }
    done.push_str(rest);
    done
}

/// What the dashboard says when `site`'s ledger declined the run: which budget to raise, and
/// to what ([`crate::frame::budget`], as every study says it).
pub fn budget_sentence(site: &str, s: &Shortfall) -> String {
    let place = format!("on {site}'s page");
    format!(
        "{site} declined before anything was charged or released: {}, then start again.",
        crate::frame::budget::raise_sentence(s, &place)
    )
}

/// One row of the privacy table: who looks, under which neighbouring relation, and ε at δ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlayerEpsilon {
    pub viewer: String,
    pub adjacency: String,
    /// The tightest valid bound, min(RDP, PLD): what a ledger charges.
    pub epsilon: f64,
    /// PLD (pessimistic, grid step 1e−4).
    pub pld: f64,
    /// RDP with Balle et al.'s conversion.
    pub rdp: f64,
}

/// Spec B5's table for the task: the outside analyst (what the parties' ledgers record), a party
/// (which knows the batch indices and its own noise share) and, for P ≥ 3, colluding parties.
pub fn epsilons(task: &VviTask) -> Result<Vec<PlayerEpsilon>, String> {
    let rows = privacy::table(&task.privacy_run(), task.delta).map_err(|e| e.to_string())?;
    Ok(rows
        .into_iter()
        .map(|g| PlayerEpsilon {
            viewer: g.viewer.name(),
            adjacency: match g.adjacency {
                Adjacency::AddRemove => "add/remove one record".into(),
                Adjacency::ReplaceOne => "replace one record".into(),
            },
            epsilon: g.epsilon.best(),
            pld: g.epsilon.pld,
            rdp: g.epsilon.rdp.epsilon,
        })
        .collect())
}

/// `rows` records of the synthetic twin of `release`, every party's block (drawn with the stream
/// `vvi/twin` of `seed`: the same seed gives the same twin on every tab).
pub fn twin(task: &VviTask, release: &Release, rows: usize, seed: u64) -> Vec<PartyBlock> {
    let posterior = Posterior {
        model: Model::new(task.schema.clone(), task.components),
        q: release.posterior.clone(),
    };
    posterior.sample_twin(rows, &mut capelab_core::rng::Seed::Fixed(seed).rng("vvi/twin"))
}

/// The twin as one table: every party's columns, decoded to values and labels.
pub fn twin_table(schema: &Schema, blocks: &[PartyBlock]) -> TextTable {
    join(&decode(schema, blocks))
}

/// One column's marginal, real beside synthetic (shares per label, or per bin of the public range).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Marginal {
    pub column: String,
    /// The labels or bins, as people read them ("−5 to −1", "17–21").
    pub labels: Vec<String>,
    /// Empty where no real rows are at hand (the dashboard, on the parties' own columns).
    pub real: Vec<f64>,
    /// Empty before the first step.
    pub synthetic: Vec<f64>,
}

impl Marginal {
    /// The total-variation distance between real and synthetic (0: the same shares), once both
    /// are at hand.
    pub fn tv(&self) -> Option<f64> {
        (!self.real.is_empty() && self.real.len() == self.synthetic.len()).then(|| {
            0.5 * self.real.iter().zip(&self.synthetic).map(|(a, b)| (a - b).abs()).sum::<f64>()
        })
    }
}

/// A party's columns' marginals: its real block (never leaves the tab) against its columns of
/// the twin.
pub fn marginals(party: &PartySchema, real: &PartyBlock, synthetic: &PartyBlock) -> Vec<Marginal> {
    party
        .features
        .iter()
        .enumerate()
        .map(|(j, f)| Marginal {
            column: f.name.clone(),
            labels: bin_labels(&f.kind),
            real: histogram(&f.kind, real, j),
            synthetic: histogram(&f.kind, synthetic, j),
        })
        .collect()
}

/// Every party's columns, in schema order, with the shares of whichever tables are at hand.
pub fn column_marginals(
    schema: &Schema,
    real: Option<&[PartyBlock]>,
    synthetic: Option<&[PartyBlock]>,
) -> Vec<Marginal> {
    let shares = |blocks: Option<&[PartyBlock]>, p: usize, kind: &FeatureKind, j: usize| {
        blocks.and_then(|b| b.get(p)).map(|b| histogram(kind, b, j)).unwrap_or_default()
    };
    schema
        .parties
        .iter()
        .enumerate()
        .flat_map(|(p, party)| {
            party.features.iter().enumerate().map(move |(j, f)| Marginal {
                column: f.name.clone(),
                labels: bin_labels(&f.kind),
                real: shares(real, p, &f.kind, j),
                synthetic: shares(synthetic, p, &f.kind, j),
            })
        })
        .collect()
}

/// A label as people read it: a numeric range "-5--1" (how CPS1988's files write experience)
/// reads "−5 to −1"; anything else as it is.
pub fn people_label(label: &str) -> String {
    for (i, _) in label.match_indices('-').filter(|(i, _)| *i > 0) {
        if let (Ok(a), Ok(b)) = (label[..i].parse::<i64>(), label[i + 1..].parse::<i64>()) {
            return format!("{} to {}", show(a as f64), show(b as f64));
        }
    }
    label.to_owned()
}

/// A Categorical's labels, or a Beta's bins as ranges of the column's own values.
fn bin_labels(kind: &FeatureKind) -> Vec<String> {
    match kind {
        FeatureKind::Categorical { labels } => labels.iter().map(|l| people_label(l)).collect(),
        FeatureKind::Beta { lo, hi, log } => (0..TV_BINS)
            .map(|b| {
                let edge = |i: usize| from_unit(*lo, *hi, *log, i as f64 / TV_BINS as f64).round();
                format!("{}–{}", show(edge(b)), show(edge(b + 1)))
            })
            .collect(),
    }
}

/// The bar chart of one marginal.
pub fn marginal_chart(m: &Marginal) -> BarChartSpec {
    BarChartSpec {
        title: m.column.clone(),
        y_label: "share of rows".into(),
        categories: m.labels.clone(),
        series: vec![
            BarSeries { name: "real (this tab)".into(), color: PALETTE[0], values: m.real.clone() },
            BarSeries {
                name: "synthetic twin".into(),
                color: PALETTE[1],
                values: m.synthetic.clone(),
            },
        ],
    }
}

/// The release as JSON: the public task, ε per player and the posterior q (μ, log σ).
pub fn release_json(task: &VviTask, release: &Release, players: &[PlayerEpsilon]) -> String {
    let parties: Vec<serde_json::Value> = task
        .schema
        .parties
        .iter()
        .map(|p| {
            serde_json::json!({
                "name": p.name,
                "columns": p.features.iter().map(|f| f.name.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    let value = serde_json::json!({
        "study": "vertical synthetic data (DP-VI + MPC)",
        "parties": parties,
        "components": task.components,
        "noise_multiplier": task.noise_multiplier,
        "clip": task.clip,
        "batch": task.batch,
        "steps": release.steps,
        "rows": task.rows,
        "train_rows": task.train_rows(),
        "delta": release.delta,
        "epsilon_analyst": release.epsilon,
        "epsilon_per_player": players,
        "posterior": release.posterior,
    });
    serde_json::to_string_pretty(&value).unwrap_or_default()
}

/// The posterior's test NLL against the step (the dashboard's, on a public table), and beside it
/// a CLI run's when one is loaded. A line without points (the parties' own columns: no NLL) is
/// left out of the legend.
pub fn nll_chart(nll: &[(u32, f64)], steps: u32, cli: Option<&CliRun>) -> LineChartSpec {
    let points: Vec<(f64, f64)> = nll.iter().map(|&(s, v)| (f64::from(s), v)).collect();
    let cli_points = cli.map(CliRun::points).unwrap_or_default();
    let x_max = cli_points.iter().map(|p| p.0).fold(f64::from(steps.max(1)), f64::max);
    let mut series = Vec::new();
    if !points.is_empty() {
        series.push(Series {
            name: "DP-VI + MPC (this run)".into(),
            color: PALETTE[0],
            dots: points.len() <= 30,
            points: points.clone(),
            dashed: false,
        });
    }
    if let Some(run) = cli {
        series.push(Series {
            name: run.legend(),
            color: PALETTE[1],
            dots: cli_points.len() <= 30,
            points: cli_points.clone(),
            dashed: true,
        });
    }
    LineChartSpec {
        title: "Test NLL of the posterior (held-out rows)".into(),
        x_label: "step t".into(),
        y_label: "mean NLL per record (nats)".into(),
        x: Scale::Linear { min: 0.0, max: x_max },
        y: Scale::linear_fit(points.iter().chain(&cli_points).map(|p| p.1), &[]),
        series,
        markers: Vec::new(),
        note: None,
    }
}

#[cfg(test)]
mod tests {
    use capelab_vertical_vi::model::generate::adult_like;
    use capelab_vertical_vi::model::gradient::Variational;
    use capelab_vertical_vi::study::BatchSampling;

    use super::*;

    fn task() -> VviTask {
        VviTask {
            schema: capelab_vertical_vi::model::generate::adult_like_schema(),
            parties: vec![2, 3],
            dealer: 4,
            components: 3,
            noise_multiplier: 1.0,
            clip: 1.0,
            sampling: BatchSampling::Poisson,
            batch: 20,
            steps: 10,
            learning_rate: 0.05,
            init_scale: 0.5,
            init_log_sigma: -3.0,
            split_seed: 1,
            test_fraction: 0.2,
            rows: 400,
            delta: 1e-5,
        }
    }

    fn release(task: &VviTask) -> Release {
        let d = Model::new(task.schema.clone(), task.components).zeta_len();
        Release {
            steps: task.steps,
            epsilon: 1.0,
            delta: task.delta,
            posterior: Variational { mu: vec![0.0; d], log_sigma: vec![-3.0; d] },
        }
    }

    #[test]
    fn the_twin_is_the_same_for_the_same_seed_and_has_every_column() {
        let task = task();
        let r = release(&task);
        let a = twin(&task, &r, 50, 7);
        assert_eq!(a, twin(&task, &r, 50, 7));
        assert_ne!(a, twin(&task, &r, 50, 8));
        let csv = twin_table(&task.schema, &a).to_csv();
        assert!(csv.starts_with("age,education,sex,hours-per-week,income\n"), "{csv}");
        assert_eq!(csv.lines().count(), 51);
    }

    #[test]
    fn marginals_are_shares_per_label_and_bin() {
        let task = task();
        let real = adult_like(400, 3).blocks;
        let synthetic = twin(&task, &release(&task), 400, 1);
        let m = marginals(&task.schema.parties[0], &real[0], &synthetic[0]);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].labels.len(), TV_BINS);
        assert_eq!(m[0].labels[0], "17–21");
        assert_eq!(m[1].labels.len(), 8);
        for col in &m {
            assert!((col.real.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            assert!((col.synthetic.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        }
    }

    #[test]
    fn epsilon_per_player_and_the_release_json() {
        let task = task();
        let players = epsilons(&task).unwrap();
        assert_eq!(players[0].viewer, "outside analyst");
        assert!(players.iter().all(|p| p.epsilon > 0.0));
        // the charged ε is the tighter bound, and for the subsampled Gaussian that is PLD
        assert!(players.iter().all(|p| p.epsilon == p.pld.min(p.rdp)), "{players:?}");
        assert!(players[0].pld < players[0].rdp, "{:?}", players[0]);
        assert!(players.iter().any(|p| p.viewer == "a party"));
        let json = release_json(&task, &release(&task), &players);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["parties"][1]["columns"][0], "hours-per-week");
        assert_eq!(v["epsilon_per_player"][0]["viewer"], "outside analyst");
        let (text, p) = status_text(&Status::Running { step: 3 }, 10);
        assert!(text.starts_with("Step 3 of 10") && (p - 0.2).abs() < 1e-12);
    }

    #[test]
    fn the_nll_chart_draws_one_point_per_step_recorded() {
        let spec = nll_chart(&[(0, 3.9), (1, 3.5), (4, 3.1)], 10, None);
        assert_eq!(spec.series[0].points, vec![(0.0, 3.9), (1.0, 3.5), (4.0, 3.1)]);
        assert_eq!(spec.x, Scale::Linear { min: 0.0, max: 10.0 });
        let svg = crate::components::charts::line::render(&spec, "t");
        assert!(svg.contains("<svg"), "{svg}");
    }

    #[test]
    fn a_cli_run_is_a_second_dashed_line_and_widens_the_axis() {
        let cli = crate::studies::vertical_vi::baseline::parse(include_str!(
            "testdata/vvi_nonpartitioned_cps1988.json"
        ))
        .unwrap();
        let spec = nll_chart(&[(0, 3.9), (1, 3.5)], 20, Some(&cli));
        assert_eq!(spec.series.len(), 2);
        assert!(spec.series[1].dashed && spec.series[1].name.contains("non-partitioned baseline"));
        assert_eq!(spec.series[1].points, cli.points());
        assert_eq!(spec.x, Scale::Linear { min: 0.0, max: 200.0 });
        let svg = crate::components::charts::line::render(&spec, "t");
        assert!(svg.contains("non-partitioned baseline"), "the legend names it");
        // The parties' own columns: no NLL of this run, the baseline alone, one legend entry.
        let alone = nll_chart(&[], 20, Some(&cli));
        assert_eq!(alone.series.len(), 1);
        assert!(crate::components::charts::line::render(&alone, "t").contains("<svg"));
    }

    #[test]
    fn messages_name_the_participants_as_people_named_them() {
        let task = task();
        let names: BTreeMap<ParticipantId, String> =
            [(2, "Lab A"), (3, "Lab B"), (4, "Lab C"), (17, "Visitor")]
                .into_iter()
                .map(|(id, n)| (id, n.to_owned()))
                .collect();
        let said = "party 1 (participant 3) stopped the run: the dealer (participant 4) left \
                    during step 2 of 10; the aggregator (participant 1) stopped it; participant \
                    17, who is not in this run, and participant 170";
        assert_eq!(
            named(said, &task, 1, &names),
            "party B (Lab B) stopped the run: the dealer (Lab C) left during step 2 of 10; the \
             dashboard stopped it; Visitor, who is not in this run, and site 170"
        );
    }

    #[test]
    fn a_budget_refusal_says_which_budget_to_raise_and_to_what() {
        let s = Shortfall { budget: 10.0, needed: Some(12.3401), delta: 1e-5 };
        assert_eq!(
            budget_sentence("Lab B", &s),
            "Lab B declined before anything was charged or released: its budget (ε = 10 at \
             δ = 10⁻⁵) does not cover this study: raise it to at least ε = 12.4 (2.35 more) on \
             Lab B's page, then start again."
        );
        let d = budget_sentence("Lab B", &Shortfall { needed: None, ..s });
        assert!(d.contains("use up its budget's δ = 10⁻⁵"), "{d}");
    }

    #[test]
    fn labels_read_as_people_read_them() {
        assert_eq!(people_label("-5--1"), "−5 to −1");
        assert_eq!(people_label("60-64"), "60 to 64");
        assert_eq!(people_label("northeast"), "northeast");
        assert_eq!(people_label("Some-college"), "Some-college");
        assert_eq!(people_label("12"), "12");
        let schema = capelab_vertical_vi::cps1988::schema();
        let m = column_marginals(&schema, None, None);
        assert_eq!(m.len(), 7);
        assert_eq!(m[1].column, "experience");
        assert_eq!(m[1].labels[0], "−5 to −1");
        assert!(m.iter().all(|c| c.real.is_empty() && c.tv().is_none()));
        let wage = &m[5];
        assert_eq!(wage.labels[0], "50–67", "{:?}", wage.labels);
        assert_eq!(wage.labels.last().unwrap(), "14\u{202f}823–20\u{202f}000");
    }

    #[test]
    fn the_dashboard_s_marginals_are_the_parties_own() {
        let task = task();
        let real = adult_like(400, 3).blocks;
        let synthetic = twin(&task, &release(&task), 400, 1);
        let all = column_marginals(&task.schema, Some(&real), Some(&synthetic));
        let a = marginals(&task.schema.parties[0], &real[0], &synthetic[0]);
        let b = marginals(&task.schema.parties[1], &real[1], &synthetic[1]);
        assert_eq!(all, [a, b].concat());
        let tv = all[0].tv().unwrap();
        assert!((0.0..=1.0).contains(&tv), "{tv}");
    }
}
