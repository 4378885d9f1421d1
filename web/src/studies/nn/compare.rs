/*!
The session's finished runs side by side (issue 6, browser): the NN trainings' held-out accuracy
per iteration overlaid in one chart, and the regression rounds' losses in one table. Pure logic
over what the dashboard keeps ([`NnFinished`], [`FinishedRound`]), tested natively.

The legend names what differs between runs: the noise mode, the ε each iteration was calibrated
to and the overall ε the run guarantees (spec cape-fm §5 \[N\]: accounted over all iterations), or
"non-private" for a comparison run, which has no guarantee.
*/

use capelab_core::fm::Model;

use crate::components::charts::line::{LineChartSpec, Series};
use crate::components::charts::scale::{Scale, format_value};
use crate::components::charts::svg::PALETTE;
use crate::frame::dashboard::FinishedRound;
use crate::studies::nn::run::NnFinished;
use crate::studies::regression::view::summary;

/// One NN run's legend: "Training 2 · CAPE · ε/iter 0.5 · overall ε 3.1".
pub fn nn_run_label(run: &NnFinished) -> String {
    let o = &run.outcome;
    let mode = match o.params.mode {
        capelab_core::study::iterative::NoiseMode::Upfront => "CAPE",
        capelab_core::study::iterative::NoiseMode::Conventional => "conventional",
        capelab_core::study::iterative::NoiseMode::NonPrivate => "non-private",
    };
    match &o.privacy {
        Some(p) => format!(
            "Training {} · {mode} · ε/iter {} · overall ε {} ({} it.)",
            run.number,
            format_value(run.epsilon_per_iteration),
            format_value(p.epsilon),
            p.iterations
        ),
        None => format!("Training {} · {mode} · no guarantee ({} it.)", run.number, o.iterations),
    }
}

/// Held-out accuracy per iteration of every finished run (oldest first), one line each.
pub fn nn_comparison_chart(runs: &[NnFinished]) -> LineChartSpec {
    let longest = runs.iter().map(|r| r.outcome.params.max_iterations).max().unwrap_or(1).max(1);
    let series: Vec<Series> = runs
        .iter()
        .enumerate()
        .map(|(i, run)| Series {
            name: nn_run_label(run),
            color: PALETTE[i % (PALETTE.len() - 1)],
            points: run
                .outcome
                .records
                .iter()
                .filter_map(|r| r.report.accuracy.map(|a| (f64::from(r.iteration), a)))
                .collect(),
            dashed: run.outcome.privacy.is_none(),
            dots: false,
        })
        .collect();
    let y =
        Scale::linear_fit(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)), &[0.5, 1.0]);
    LineChartSpec {
        title: "Held-out accuracy per iteration, this session's trainings".into(),
        x_label: "iteration j".into(),
        y_label: "accuracy on the public held-out set".into(),
        x: Scale::Linear { min: 0.0, max: f64::from(longest) },
        y,
        series,
        markers: Vec::new(),
        note: Some(
            "Dashed: non-private comparison runs (the opted-in sites' exact gradients). The \
             overall ε composes every iteration of a run at its δ."
                .into(),
        ),
    }
}

/// One regression round in the comparison table.
#[derive(Clone, Debug, PartialEq)]
pub struct RegressionRow {
    pub round: usize,
    pub model: Model,
    /// The ε the noise was calibrated to, and the one guaranteed against the full view.
    pub requested_epsilon: f64,
    pub guaranteed_epsilon: Option<f64>,
    pub sites: usize,
    /// The room's loss at ŵ estimated from the released arrays (CAPE, conventional).
    pub cape_loss: Option<f64>,
    pub conventional_loss: Option<f64>,
}

/// Every regression round that produced a model, oldest first.
pub fn regression_rows(rounds: &[FinishedRound]) -> Vec<RegressionRow> {
    rounds
        .iter()
        .filter_map(|round| {
            let s = summary(round)?;
            Some(RegressionRow {
                round: round.number,
                model: s.model,
                requested_epsilon: s.epsilon,
                guaranteed_epsilon: s.guarantee.as_ref().map(|g| g.epsilon),
                sites: s.sites,
                cape_loss: s.cape.room_loss_estimate,
                conventional_loss: s.conventional.as_ref().and_then(|c| c.room_loss_estimate),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use capelab_core::accountant::{Budget, Ledger};
    use capelab_core::rng::derive;
    use capelab_core::study::iterative::nn::{NnAggregator, NnSite};
    use capelab_core::study::iterative::sim::IterativeSim;
    use capelab_core::study::iterative::{NoiseMode, SiteSettings, StopReason, TooFewAccepted};

    use super::*;
    use crate::components::charts::line;
    use crate::local_data::{nn_held_out, nn_records};
    use crate::studies::nn::form::NnFields;
    use crate::studies::nn::view::chance_accuracy;

    /// A 6-iteration training among 3 seeded sites in `mode`, as the dashboard keeps it.
    fn training(number: usize, mode: NoiseMode, allow_nonprivate: bool) -> NnFinished {
        let fields = NnFields { iterations: "6".into(), mode, ..NnFields::default() };
        let probe = fields.read(vec![1, 2]).unwrap();
        let task = probe.task.clone();
        let held_out = nn_held_out(task.features);
        let chance = chance_accuracy(held_out.y.iter().copied());
        let aggregator = NnAggregator::new(
            task.clone(),
            probe.learning_rate,
            &mut derive(number as u64, "nn/init"),
            Some(held_out),
        );
        let sites = (0..3)
            .map(|i| {
                let data = nn_records(20_000 + i, 200, task.features);
                let ledger = Ledger::new(format!("s{i}"), Budget::new(100.0, 1e-5).unwrap());
                (NnSite::new(data), ledger.unwrap())
            })
            .collect();
        let mut sim = IterativeSim::new(
            number as u64,
            |ids| Ok(fields.read(ids).unwrap().params),
            aggregator,
            sites,
            SiteSettings { allow_nonprivate },
            Vec::new(),
            1_000,
        )
        .unwrap();
        sim.run();
        let outcome = sim.aggregator().outcome().expect("finished").clone();
        NnFinished { number, outcome, chance, epsilon_per_iteration: 0.5, names: BTreeMap::new() }
    }

    #[test]
    fn runs_overlay_with_mode_and_epsilons_in_the_legend() {
        let runs =
            [training(1, NoiseMode::Upfront, false), training(2, NoiseMode::NonPrivate, true)];
        let chart = nn_comparison_chart(&runs);
        assert_eq!(chart.series.len(), 2);
        for (series, run) in chart.series.iter().zip(&runs) {
            assert_eq!(series.points.len(), run.outcome.records.len());
            assert_eq!(series.points.len(), 6, "{}", run.outcome.stop);
            assert_eq!(series.points[5].1, run.outcome.records[5].report.accuracy.unwrap());
        }
        let eps = runs[0].outcome.privacy.as_ref().unwrap().epsilon;
        assert_eq!(
            chart.series[0].name,
            format!(
                "Training 1 · CAPE · ε/iter {} · overall ε {} (6 it.)",
                format_value(0.5),
                format_value(eps)
            )
        );
        assert!(eps > 0.5, "six iterations compose to more than one: {eps}");
        assert_eq!(chart.series[1].name, "Training 2 · non-private · no guarantee (6 it.)");
        assert!(chart.series[1].dashed && !chart.series[0].dashed);
        let svg = line::render(&chart, "cmp");
        assert!(svg.contains("non-private") && svg.contains("CAPE"), "the legend is drawn");
    }

    #[test]
    fn regression_rounds_line_up_with_their_losses_and_epsilons() {
        use crate::studies::regression::view::tests::round;
        let rounds = [round(1, 0.5), round(2, 0.9)];
        let rows = regression_rows(&rounds);
        assert_eq!(rows.len(), 2);
        for (row, round) in rows.iter().zip(&rounds) {
            let s = summary(round).unwrap();
            assert_eq!(row.round, round.number);
            assert_eq!(row.requested_epsilon, s.epsilon);
            assert_eq!(row.cape_loss, s.cape.room_loss_estimate);
            assert!(row.conventional_loss.is_some_and(f64::is_finite));
            assert!(row.guaranteed_epsilon.is_some_and(|g| g > 0.0));
            assert_eq!((row.sites, row.model), (4, Model::Linear));
        }
        assert!(
            regression_rows(&[crate::studies::mean::fixtures::simulated(3, false, None)])
                .is_empty()
        );
    }

    #[test]
    fn sites_without_the_opt_in_decline_a_non_private_run() {
        let run = training(3, NoiseMode::NonPrivate, false);
        // the first decline leaves too few possible sites for t: the run stops before iteration 1
        assert!(!run.outcome.declined.is_empty());
        assert!(
            matches!(
                run.outcome.stop,
                StopReason::TooFewAccepted(TooFewAccepted { accepted: 0, .. })
            ),
            "{}",
            run.outcome.stop
        );
        assert!(run.outcome.records.is_empty());
        let reason = &run.outcome.declined[0].reason;
        assert!(reason.contains("non-private"), "{reason}");
    }
}
