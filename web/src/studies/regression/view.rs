/*!
What the dashboard makes of a finished private-regression round (capeFM, core
[`capelab_core::study::regression`]): the model fitted from the CAPE estimate (and from the
conventional one), the guarantee, and the charts. Pure logic, tested natively.

The dashboard never sees a site's records, so it cannot fit the non-private model of the room.
What it shows beside the private ŵ instead:
- w* of the synthetic population (public: [`crate::local_data::POPULATION_SEED`]), the model
  that generated the seeded records (a reference only when the sites use seeded data);
- the room's loss at ŵ as estimated from the released arrays themselves (f̂(ŵ), no extra privacy
  cost, noisy and biased low), one point per round run so far: that is "loss vs ε for the room's
  data". Every point is a real release that every site paid for in its ledger.

Each site tab shows, locally, the shared model's loss on its own records next to its own
non-private fit ([`capelab_core::study::regression::local_comparison`]).
*/

use capelab_core::fm::{Guarantee, Model};
use capelab_core::study::mean::Query;
use capelab_core::study::regression::{FittedModel, fit_model, study_guarantee};

use crate::components::charts::forest::{ForestRow, ForestSpec};
use crate::components::charts::line::{LineChartSpec, Series};
use crate::components::charts::scale::Scale;
use crate::components::charts::svg::PALETTE;
use crate::frame::bounds::BoundPair;
use crate::frame::dashboard::FinishedRound;
use crate::local_data::population_weights;

/// One finished regression round's models and guarantee.
#[derive(Clone, Debug, PartialEq)]
pub struct RegressionSummary {
    pub model: Model,
    pub epsilon: f64,
    pub sites: usize,
    pub cape: FittedModel,
    pub conventional: Option<FittedModel>,
    pub guarantee: Option<Guarantee>,
    /// w* of the synthetic population at this D.
    pub population: Vec<f64>,
}

/// The summary of `round`, if it was a regression that produced estimates.
pub fn summary(round: &FinishedRound) -> Option<RegressionSummary> {
    let outcome = &round.outcome;
    let Query::Regression(q) = outcome.params.query else { return None };
    let est = outcome.estimates()?;
    let s = est.survivors.len() as f64;
    let tau = outcome.noise.local_sd;
    let cape = fit_model(&outcome.params, &est.cape, tau / s).ok()?;
    let conventional =
        est.conventional.as_ref().and_then(|c| fit_model(&outcome.params, c, tau / s.sqrt()).ok());
    Some(RegressionSummary {
        model: q.model,
        epsilon: outcome.params.epsilon,
        sites: est.survivors.len(),
        cape,
        conventional,
        guarantee: study_guarantee(&outcome.params, est.survivors.len()).ok(),
        population: population_weights(outcome.params.dimension),
    })
}

/// The guarantee's one release (its effective multiplier, the full view's c_S) under PLD and
/// under RDP at `delta` (the sites' ledgers' δ, or the study's), and which one a site's ledger
/// charges; `None` without a CAPE view.
pub fn guarantee_bounds(g: &Guarantee, delta: f64) -> Option<BoundPair> {
    let z = g.effective_noise_multiplier?;
    let c_s = g.cape.as_ref()?.full_view.c_s;
    BoundPair::gaussian(z, 1, c_s, delta).ok()
}

/// After the bounds, when they are stated at the ledgers' δ rather than the study's: say so.
pub fn bounds_delta_note(ledger_delta: f64, study_delta: f64) -> String {
    if ledger_delta == study_delta {
        return String::new();
    }
    format!(
        " (at δ = {ledger_delta:e}, the sites' ledgers' budget δ; the study's δ = {study_delta:e} \
         set the noise)"
    )
}

/// ŵ (CAPE, conventional) and w* per coordinate, as rows of a forest chart without error bars.
/// The presenter's version: capeFM's ŵ against w* alone, two rows per coordinate and no note, so
/// it fills the projector's screen at a legible size.
pub fn presenter_weights_chart(summary: &RegressionSummary) -> ForestSpec {
    let mut spec = weights_chart(summary);
    spec.rows.retain(|r| !r.label.ends_with(" conventional"));
    spec.note = None;
    spec.title =
        format!("The private model ŵ against the population's w* ({})", summary.model.name());
    spec
}

pub fn weights_chart(summary: &RegressionSummary) -> ForestSpec {
    let mut rows = Vec::new();
    for (j, w) in summary.cape.weights.iter().enumerate() {
        rows.push(ForestRow {
            label: format!("w{} capeFM", j + 1),
            value: *w,
            sd: 0.0,
            color: PALETTE[0],
            emphasis: true,
        });
        if let Some(conv) = &summary.conventional {
            rows.push(ForestRow {
                label: format!("w{} conventional", j + 1),
                value: conv.weights[j],
                sd: 0.0,
                color: PALETTE[1],
                emphasis: false,
            });
        }
        if let Some(star) = summary.population.get(j) {
            rows.push(ForestRow {
                label: format!("w{} population w*", j + 1),
                value: *star,
                sd: 0.0,
                color: PALETTE[2],
                emphasis: false,
            });
        }
    }
    ForestSpec {
        title: format!("The fitted {} model, coordinate by coordinate", summary.model.name()),
        x_label: "weight".into(),
        rows,
        note: Some(
            "capeFM's ŵ minimises the noisy objective formed from the CAPE estimate of the \
             arrays; w* is the synthetic population's true model (a reference when the sites use \
             seeded data; the dashboard never sees any site's records)."
                .into(),
        ),
    }
}

/// The room's loss at ŵ (estimated from the released arrays) against ε, one point per
/// regression round of `model` so far.
pub fn loss_chart(rounds: &[FinishedRound], model: Model) -> LineChartSpec {
    let summaries: Vec<RegressionSummary> =
        rounds.iter().filter_map(summary).filter(|s| s.model == model).collect();
    let points = |f: &dyn Fn(&RegressionSummary) -> Option<f64>| {
        let mut p: Vec<(f64, f64)> =
            summaries.iter().filter_map(|s| f(s).map(|v| (s.epsilon, v))).collect();
        p.sort_by(|a, b| a.0.total_cmp(&b.0));
        p
    };
    let cape = points(&|s| s.cape.room_loss_estimate);
    let conv = points(&|s| s.conventional.as_ref().and_then(|c| c.room_loss_estimate));
    let all_eps = || summaries.iter().map(|s| s.epsilon);
    let (lo, hi) = all_eps().fold((f64::INFINITY, 0.0f64), |(a, b), e| (a.min(e), b.max(e)));
    let x = if summaries.is_empty() {
        Scale::Log { min: 0.1, max: 10.0 }
    } else {
        Scale::Log { min: lo / 2.0, max: hi * 2.0 }
    };
    let y = Scale::linear_fit(cape.iter().chain(&conv).map(|p| p.1), &[0.0]);
    let mut series = vec![Series {
        name: "capeFM: f̂(ŵ) from the released arrays".into(),
        color: PALETTE[0],
        points: cape,
        dashed: false,
        dots: true,
    }];
    if !conv.is_empty() {
        series.push(Series {
            name: "conventional: f̂(ŵ) from its arrays".into(),
            color: PALETTE[1],
            points: conv,
            dashed: true,
            dots: true,
        });
    }
    LineChartSpec {
        title: format!("The room's {} loss vs ε, one point per round", model.name()),
        x_label: "ε of the round".into(),
        y_label: match model {
            Model::Linear => "training MSE (estimated)".into(),
            Model::Logistic => "Taylor loss (estimated)".into(),
        },
        x,
        y,
        series,
        markers: Vec::new(),
        note: Some(
            "Each point is a real round: every site paid for it in its ledger. The loss is the \
             noisy objective at ŵ, computed from the released coefficients alone (no extra \
             privacy cost): noisy, and biased low because ŵ minimises that same noise."
                .into(),
        ),
    }
}

/// When the noise swamps the fit, a sentence saying so and what to change; `None` when every
/// eigen-direction of Λ̂₂ cleared the noise floor. A direction at or below the floor is one the
/// noise hides: the minimiser leaves ŵ at 0 there, so ŵ shrinks towards 0 whatever the data say.
pub fn swamped_note(s: &RegressionSummary) -> Option<String> {
    let m = &s.cape.minimiser;
    let d = s.cape.weights.len();
    let hidden = d.saturating_sub(m.kept_eigenvalues);
    (hidden > 0).then(|| {
        format!(
            "The noise swamps this fit along {hidden} of {d} directions: ŵ is held at 0 there, so \
             it says little about the data. More records per site (the noise on the arrays falls \
             like 1/N) or a larger ε give a fit closer to the data; at the defaults (4 sites of \
             10 000 records, ε = 0.5) every direction clears the noise."
        )
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use capelab_core::study::mean::sim::{StudySim, StudySimConfig};
    use capelab_core::study::regression::RegressionQuery;
    use std::collections::BTreeMap;

    use crate::local_data::regression_records;

    /// A linear capeFM round with the conventional release, of 4 sites holding `records` seeded
    /// records each (site i's seed `first_seed + i`), run by the core's simulator.
    fn simulate(
        number: usize,
        epsilon: f64,
        records: usize,
        features: usize,
        first_seed: u64,
    ) -> FinishedRound {
        let query = Query::Regression(RegressionQuery::new(Model::Linear));
        let config = StudySimConfig::new(number as u64, epsilon, 1e-5, records)
            .with_dimension(features)
            .with_conventional(true)
            .with_query(query);
        let sites = (0..4)
            .map(|i| {
                let ledger = capelab_core::accountant::Ledger::new(
                    format!("s{i}"),
                    capelab_core::accountant::Budget::new(100.0, 1e-5).unwrap(),
                )
                .unwrap();
                (regression_records(first_seed + i, records, features, Model::Linear), ledger)
            })
            .collect();
        let outcome = StudySim::new(config, sites).unwrap().run().outcome.unwrap();
        FinishedRound { number, outcome, names: BTreeMap::new(), step_mode: false }
    }

    /// A linear capeFM round of 4 seeded sites (D = 3, N_s = 200).
    pub(crate) fn round(number: usize, epsilon: f64) -> FinishedRound {
        simulate(number, epsilon, 200, 3, 100)
    }

    #[test]
    fn a_round_gives_a_model_a_guarantee_and_a_point_per_epsilon() {
        let rounds = [round(1, 0.5), round(2, 0.9)];
        let s = summary(&rounds[0]).unwrap();
        assert_eq!((s.sites, s.cape.weights.len(), s.population.len()), (4, 3, 3));
        let g = s.guarantee.as_ref().unwrap();
        assert_eq!(g.joint_multiplier, Some(1.5));
        let views = g.cape.as_ref().unwrap();
        assert!(g.epsilon > views.aggregator_only.epsilon_exact, "the full view is the weakest");
        assert!(g.epsilon > 0.0 && g.epsilon < 1.0, "{}", g.epsilon);
        // PLD is the guarantee's exact ε, RDP above it, and PLD is charged
        let b = guarantee_bounds(g, g.delta).unwrap();
        assert!((b.pld - g.epsilon).abs() <= 1e-9 * g.epsilon, "{b:?} vs {}", g.epsilon);
        assert_eq!(bounds_delta_note(g.delta, g.delta), "");
        // at a ledger's smaller δ the same release costs more ε, and the note says which δ
        let tighter = guarantee_bounds(g, g.delta / 100.0).unwrap();
        assert!(tighter.pld > b.pld * 1.05, "{tighter:?} vs {b:?}");
        assert!(bounds_delta_note(g.delta / 100.0, g.delta).contains("ledgers' budget δ"));
        assert!(b.pld <= b.rdp, "{b:?}");
        assert_eq!(b.charged(), capelab_core::accountant::ledger::Bound::Pld);
        let chart = weights_chart(&s);
        assert_eq!(chart.rows.len(), 9, "ŵ, conventional and w* for each of 3 coordinates");
        let loss = loss_chart(&rounds, Model::Linear);
        assert_eq!(loss.series[0].points.len(), 2);
        assert_eq!(loss.series[0].points[0].0, 0.5);
        assert!(loss.series[0].points.iter().all(|p| p.1.is_finite()));
        assert!(loss_chart(&rounds, Model::Logistic).series[0].points.is_empty());
    }

    /// The default regression (4 sites of seeded records, the form's ε and D) at `records` per
    /// site, against the population's w*.
    fn default_fit(records: usize, seed: u64) -> RegressionSummary {
        let form =
            crate::studies::regression::form::RegressionFields::default().read(vec![1, 2, 3, 4]);
        let p = form.unwrap().params;
        assert!(p.also_conventional && matches!(p.query, Query::Regression(_)));
        summary(&simulate(seed as usize, p.epsilon, records, p.dimension, seed * 10)).unwrap()
    }

    fn relative_error(s: &RegressionSummary) -> f64 {
        let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
        let w = &s.cape.weights;
        norm(&mut w.iter().zip(&s.population).map(|(a, b)| a - b))
            / norm(&mut s.population.iter().copied())
    }

    #[test]
    fn the_default_fit_lands_near_w_star_and_a_swamped_fit_says_so() {
        let defaults = crate::studies::regression::form::RegressionFields::default();
        let records: usize = defaults.records_per_site.parse().unwrap();
        // Measured (seeds 0–4): 500 records per site leave ‖ŵ − w*‖/‖w*‖ at 0.97–0.99 (ŵ ≈ −0.08
        // on every coordinate); 5 000 at 0.03–0.30; the default 10 000 below 0.3.
        for seed in 0..3 {
            let s = default_fit(records, seed);
            let e = relative_error(&s);
            assert!(e < 0.3, "seed {seed}: ‖ŵ − w*‖/‖w*‖ = {e}, ŵ = {:?}", s.cape.weights);
            assert_eq!(swamped_note(&s), None, "seed {seed}");
        }
        let swamped = default_fit(500, 0);
        assert!(relative_error(&swamped) > 0.9, "{:?}", swamped.cape.weights);
        let note = swamped_note(&swamped).expect("500 records per site are swamped");
        assert!(note.starts_with("The noise swamps this fit along"), "{note}");
    }
}
