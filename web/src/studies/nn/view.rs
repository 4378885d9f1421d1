/*!
What the dashboard shows of the NN study (CAPE gradient descent, core
[`capelab_core::study::iterative`] with its [`nn`](capelab_core::study::iterative::nn) step):
the held-out accuracy and loss per iteration, the ε a site has spent after each iteration, the
progress, why the study stopped and its final guarantee. Pure logic over the aggregator's
[`IterationRecord`]s, tested natively against simulated studies.

The dashboard holds no private data: its accuracy is measured on a public held-out set drawn from
the same synthetic population as the sites' seeded records
([`crate::local_data::nn_held_out`]), so it says how well the network does on that population,
not on any site's records.
*/

use capelab_core::study::iterative::nn::NnIterationReport;
use capelab_core::study::iterative::{IterationRecord, IterativePrivacy, Repair, StopReason};
use capelab_core::wire::ParticipantId;

use crate::components::charts::line::{LineChartSpec, Marker, Series};
use crate::components::charts::scale::{Scale, format_value};
use crate::components::charts::svg::PALETTE;
use crate::frame::bounds::{BoundPair, PLD_LABEL, RDP_LABEL};

pub type NnRecord = IterationRecord<NnIterationReport>;

/// Iterations done out of J_max.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    pub done: u32,
    pub total: u32,
}

impl Progress {
    pub fn of(records: &[NnRecord], max_iterations: u32) -> Self {
        let done = records.last().map_or(0, |r| r.iteration);
        Progress { done, total: max_iterations.max(1) }
    }

    /// Percent done, 0–100.
    pub fn percent(&self) -> f64 {
        100.0 * f64::from(self.done.min(self.total)) / f64::from(self.total)
    }
}

/// The held-out accuracy after the last completed iteration.
pub fn final_accuracy(records: &[NnRecord]) -> Option<f64> {
    records.last().and_then(|r| r.report.accuracy)
}

/// The ε a site that released every iteration has spent, after the last one.
pub fn final_epsilon_spent(records: &[NnRecord]) -> Option<f64> {
    records.last().and_then(|r| r.epsilon_spent)
}

/// Accuracy (dots, one per iteration) and loss on the public held-out set, per iteration.
pub fn training_chart(records: &[NnRecord], max_iterations: u32, chance: f64) -> LineChartSpec {
    let points = |f: fn(&NnIterationReport) -> Option<f64>| -> Vec<(f64, f64)> {
        records.iter().filter_map(|r| f(&r.report).map(|v| (f64::from(r.iteration), v))).collect()
    };
    let accuracy = points(|r| r.accuracy);
    let loss = points(|r| r.loss);
    let y = Scale::linear_fit(accuracy.iter().chain(&loss).map(|p| p.1), &[0.0, 1.0]);
    LineChartSpec {
        title: "Held-out accuracy and loss per iteration".into(),
        x_label: "iteration j".into(),
        y_label: "accuracy / cross-entropy loss".into(),
        x: iteration_scale(max_iterations),
        y,
        series: vec![
            Series {
                name: "accuracy on the public held-out set".into(),
                color: PALETTE[0],
                points: accuracy,
                dashed: false,
                dots: true,
            },
            Series {
                name: "loss on the public held-out set".into(),
                color: PALETTE[1],
                points: loss,
                dashed: true,
                dots: false,
            },
            Series {
                name: "chance (the larger class)".into(),
                color: PALETTE[6],
                points: vec![(0.0, chance), (f64::from(max_iterations.max(1)), chance)],
                dashed: true,
                dots: false,
            },
        ],
        markers: Vec::new(),
        note: Some(
            "Held-out data: public synthetic records of the sites' population (public seed), not \
             any site's data."
                .into(),
        ),
    }
}

/// The ε each site has spent in this study after iteration j (its ledger's accounting at the
/// study's δ), with the site's budget as a marker line when known.
pub fn epsilon_chart(
    records: &[NnRecord],
    max_iterations: u32,
    delta: f64,
    budget: Option<f64>,
) -> LineChartSpec {
    let spent: Vec<(f64, f64)> = records
        .iter()
        .filter_map(|r| r.epsilon_spent.map(|e| (f64::from(r.iteration), e)))
        .collect();
    let mut series = vec![Series {
        name: "ε spent by a site that released every iteration".into(),
        color: PALETTE[2],
        points: spent.clone(),
        dashed: false,
        dots: false,
    }];
    let include: Vec<f64> = budget.into_iter().chain([0.0]).collect();
    if let Some(b) = budget {
        series.push(Series {
            name: "a site's budget".into(),
            color: PALETTE[3],
            points: vec![(0.0, b), (f64::from(max_iterations.max(1)), b)],
            dashed: true,
            dots: false,
        });
    }
    LineChartSpec {
        title: format!("ε spent per iteration (δ = {delta:e})"),
        x_label: "iteration j".into(),
        y_label: "ε spent so far".into(),
        x: iteration_scale(max_iterations),
        y: Scale::linear_fit(spent.iter().map(|p| p.1), &include),
        series,
        markers: Vec::<Marker>::new(),
        note: None,
    }
}

fn iteration_scale(max_iterations: u32) -> Scale {
    Scale::Linear { min: 0.0, max: f64::from(max_iterations.max(1)) }
}

/// One line per zero-sum repair (who left, at which iteration, the new S), sites by name.
pub fn repair_lines(repairs: &[Repair], name: impl Fn(ParticipantId) -> String) -> Vec<String> {
    repairs.iter().map(|r| format!("Zero-sum repair: {}", r.summary(&name))).collect()
}

/// Why the study stopped, with the site's name where the reason names one.
pub fn stop_text(stop: &StopReason, name: impl Fn(ParticipantId) -> String) -> String {
    match stop {
        StopReason::ZeroSumBroken { site, .. } => format!("{} (site {site}): {stop}", name(*site)),
        _ => stop.to_string(),
    }
}

/// The guarantee's view (the largest ε) under both accountants.
pub fn guarantee_bounds(privacy: &IterativePrivacy) -> Option<BoundPair> {
    BoundPair::of_study(privacy)
}

/// One sentence per reported view, the guarantee first; each states ε under PLD and under RDP
/// and which one a site's ledger charges.
pub fn guarantee_lines(privacy: &IterativePrivacy) -> Vec<String> {
    let bounds =
        guarantee_bounds(privacy).map(|b| format!(": {}", b.sentence())).unwrap_or_default();
    let mut lines = vec![format!(
        "After {} iterations the study is ({}, {:e})-DP under the {} (z = {}){bounds}.",
        privacy.iterations,
        format_value(privacy.epsilon),
        privacy.delta,
        privacy.guarantee_view,
        format_value(privacy.noise_multiplier),
    )];
    lines.extend(privacy.views.iter().map(|v| {
        format!(
            "{}: c_S = {}, {PLD_LABEL} ε = {}, {RDP_LABEL} ε = {}.",
            v.view,
            format_value(v.collusion_factor),
            format_value(v.epsilon_exact),
            format_value(v.epsilon_rdp_improved),
        )
    }));
    lines
}

/// The larger class's share of the held-out set: what always guessing it scores.
pub fn chance_accuracy(labels: impl IntoIterator<Item = f64>) -> f64 {
    let (mut ones, mut n) = (0usize, 0usize);
    for y in labels {
        n += 1;
        ones += usize::from(y == 1.0);
    }
    if n == 0 {
        return 0.5;
    }
    let p = ones as f64 / n as f64;
    p.max(1.0 - p)
}

#[cfg(test)]
mod tests {
    use capelab_core::accountant::Ledger;
    use capelab_core::rng::derive;
    use capelab_core::study::iterative::nn::{NnAggregator, NnSite};
    use capelab_core::study::iterative::sim::{IterativeSim, ScriptedDeparture};
    use capelab_core::study::iterative::{IterativeOutcome, NoiseMode, SiteSettings};

    use super::*;
    use crate::components::charts::line;
    use crate::ledger_store::DEFAULT_BUDGET;
    use crate::local_data::{nn_held_out, nn_records};
    use crate::studies::nn::form::NnFields;

    const SITES: usize = 4;

    /// A study as the dashboard's form starts it, among `SITES` seeded sites with the default
    /// ledger budget.
    fn run(
        fields: &NnFields,
        departures: Vec<ScriptedDeparture>,
    ) -> IterativeOutcome<Vec<f64>, NnIterationReport> {
        let probe = fields.read(vec![1, 2]).unwrap();
        let (task, lr) = (probe.task.clone(), probe.learning_rate);
        let n_s: usize = fields.records_per_site.parse().unwrap();
        let aggregator = NnAggregator::new(
            task.clone(),
            lr,
            &mut derive(3, "nn/init"),
            Some(nn_held_out(task.features)),
        );
        let sites = (0..SITES)
            .map(|i| {
                let data = nn_records(10_000 + i as u64, n_s, task.features);
                let ledger = Ledger::new(format!("site {i}"), DEFAULT_BUDGET).unwrap();
                (NnSite::new(data), ledger)
            })
            .collect();
        let mut sim = IterativeSim::new(
            3,
            |ids| Ok(fields.read(ids).unwrap().params),
            aggregator,
            sites,
            SiteSettings::default(),
            departures,
            1_000,
        )
        .unwrap();
        sim.run();
        sim.aggregator().outcome().expect("finished").clone()
    }

    fn fields(iterations: u32) -> NnFields {
        NnFields { iterations: iterations.to_string(), ..NnFields::default() }
    }

    #[test]
    fn a_completed_study_charts_one_point_per_iteration_and_learns() {
        let j = 20;
        let outcome = run(&fields(j), Vec::new());
        assert_eq!(outcome.stop, StopReason::Completed { iterations: j }, "{}", outcome.stop);
        let records = &outcome.records;
        assert_eq!(records.len(), j as usize);
        let progress = Progress::of(records, outcome.params.max_iterations);
        assert_eq!((progress.done, progress.percent()), (j, 100.0));

        let chance = chance_accuracy(nn_held_out(10).y.iter().copied());
        assert!((0.5..0.56).contains(&chance), "Bernoulli(½) labels: {chance}");
        let accuracy = final_accuracy(records).unwrap();
        assert!(accuracy.is_finite() && accuracy > chance + 0.05, "{accuracy} vs chance {chance}");

        let spec = training_chart(records, j, chance);
        assert_eq!(spec.series[0].points.len(), j as usize);
        assert_eq!(spec.series[0].points[0], (1.0, records[0].report.accuracy.unwrap()));
        let svg = line::render(&spec, "acc");
        assert!(svg.matches("<circle").count() >= j as usize, "one dot per iteration");

        // ε spent grows with every iteration and stays inside the default budget
        let spent: Vec<f64> = records.iter().map(|r| r.epsilon_spent.unwrap()).collect();
        assert!(spent.windows(2).all(|w| w[1] > w[0]), "{spent:?}");
        let last = final_epsilon_spent(records).unwrap();
        assert!(last < DEFAULT_BUDGET.epsilon, "{last}");
        let eps = epsilon_chart(records, j, outcome.params.delta, Some(DEFAULT_BUDGET.epsilon));
        assert_eq!(eps.series[0].points.len(), j as usize);
        assert_eq!(eps.series[1].points[0].1, DEFAULT_BUDGET.epsilon);

        let privacy = outcome.privacy.as_ref().unwrap();
        let lines = guarantee_lines(privacy);
        assert_eq!(lines.len(), 1 + privacy.views.len());
        assert!(lines[0].contains(&format_value(privacy.epsilon)), "{}", lines[0]);
        // both accountants in every line, PLD the tighter and the one charged
        let pair = guarantee_bounds(privacy).unwrap();
        assert!(pair.pld <= pair.rdp, "{pair:?}");
        assert_eq!(pair.pld, privacy.epsilon);
        assert!(lines[0].contains(&format_value(pair.rdp)), "{}", lines[0]);
        assert!(lines[0].ends_with("the tighter, PLD."), "{}", lines[0]);
        for (line, view) in lines[1..].iter().zip(&privacy.views) {
            assert!(line.contains(PLD_LABEL) && line.contains(RDP_LABEL), "{line}");
            assert!(view.epsilon_exact <= view.epsilon_rdp_improved, "{view:?}");
        }
    }

    #[test]
    fn the_default_form_fits_a_fresh_ledger() {
        // J = 60 classroom default: every site accepts with the default budget.
        let outcome = run(&NnFields::default(), Vec::new());
        assert_eq!(outcome.stop, StopReason::Completed { iterations: 60 }, "{}", outcome.stop);
        assert!(outcome.declined.is_empty(), "{:?}", outcome.declined);
        assert_eq!(outcome.params.mode, NoiseMode::Upfront);
    }

    #[test]
    fn a_site_leaving_is_repaired_and_named_and_below_t_stops_naming_it() {
        // 4 sites, t = 3: the first departure is repaired, the study goes on with S = 3.
        let outcome = run(&fields(12), vec![ScriptedDeparture::on_state(2, 5)]);
        assert_eq!(outcome.stop, StopReason::Completed { iterations: 12 }, "{}", outcome.stop);
        let lines = repair_lines(&outcome.repairs, |id| format!("Lab {id}"));
        assert_eq!(lines.len(), 1);
        let site = outcome.repairs[0].left[0].site;
        assert!(
            lines[0].starts_with(&format!(
                "Zero-sum repair: Lab {site} (site {site}) left the room in iteration 5"
            )),
            "{}",
            lines[0]
        );
        assert!(lines[0].contains("with S = 3"), "{}", lines[0]);
        assert_eq!(Progress::of(&outcome.records, 12).done, 12);

        // A second departure leaves 2 < t: the study stops, naming the site and the iteration.
        let outcome = run(
            &fields(12),
            vec![ScriptedDeparture::on_state(2, 5), ScriptedDeparture::on_state(3, 8)],
        );
        let StopReason::ZeroSumBroken { site, iteration, completed, .. } = &outcome.stop else {
            panic!("{}", outcome.stop)
        };
        assert_eq!((*iteration, *completed), (8, 7));
        assert_eq!(outcome.records.len(), 7, "the records stop with the last completed iteration");
        let text = stop_text(&outcome.stop, |id| format!("Lab {id}"));
        assert!(text.starts_with(&format!("Lab {site} (site {site}): site {site} ")), "{text}");
        assert_eq!(Progress::of(&outcome.records, 12).done, 7);
    }

    #[test]
    fn chance_is_the_larger_class() {
        assert_eq!(chance_accuracy([1.0, 0.0, 1.0, 1.0]), 0.75);
        assert_eq!(chance_accuracy([]), 0.5);
    }
}
