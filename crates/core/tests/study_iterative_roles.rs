//! The iterative study's roles driven by hand: what the aggregator and a site refuse, a site
//! holding the aggregator to J_max, a dropout inside the upfront SecureAgg run, and the
//! conventional mode's aggregate variance τ²/S.

use capelab_core::accountant::{Budget, Ledger};
use capelab_core::data::{Dataset, synthetic};
use capelab_core::driver::Outgoing;
use capelab_core::rng::derive;
use capelab_core::study::StudyId;
use capelab_core::study::iterative::nn::{NnAggregator, NnSite, NnTask};
use capelab_core::study::iterative::sim::{IterativeSim, ScriptedDeparture};
use capelab_core::study::iterative::{
    AggregatorStep, IterAggregatorPhase, IterBody, IterMessage, IterSitePhase, IterativeAggregator,
    IterativeError, IterativeParams, IterativeSite, NoiseMode, SiteSettings, StopReason, kind,
};

type Msg = IterMessage<NnTask, Vec<f64>>;

const AGGREGATOR: u32 = 100;

fn data(n: usize, d: usize, seed: u64) -> Dataset {
    synthetic::two_gaussians(n, d, 0.25, seed)
}

fn task() -> NnTask {
    NnTask { features: 3, hidden: 2, clip: 1.0 }
}

fn params(mode: NoiseMode, iterations: u32) -> IterativeParams {
    let t = task();
    IterativeParams::new(
        vec![1, 2, 3, 4],
        mode,
        iterations,
        t.num_params(),
        t.sensitivity(50),
        2.0,
        1e-2,
    )
    .unwrap()
}

fn ledger() -> Ledger {
    Ledger::new("site", Budget::new(1e6, 1e-2).unwrap()).unwrap()
}

fn send(study: StudyId, body: IterBody<NnTask, Vec<f64>>) -> Vec<u8> {
    Msg { study, body }.encode()
}

fn decode(out: &Outgoing) -> Msg {
    Msg::decode(&out.payload).unwrap()
}

#[test]
fn the_aggregator_refuses_bad_releases_and_changes_nothing() {
    let step = NnAggregator::new(task(), 0.01, &mut derive(1, "nn/init"), None);
    let (mut agg, start) = IterativeAggregator::start(
        params(NoiseMode::Conventional, 3),
        step,
        1_000,
        derive(1, "agg"),
        0,
    )
    .unwrap();
    let study = agg.study();
    assert_eq!(start[0].kind, kind::START);
    let mut out = Vec::new();
    for s in 1..=4 {
        out = agg.handle(1, s, &send(study, IterBody::Accept)).unwrap();
    }
    assert_eq!(out[0].kind, kind::STATE, "all accepted: iteration 1 begins");
    assert_eq!(agg.phase(), IterAggregatorPhase::Iterating { iteration: 1 });
    let len = task().num_params();
    let good = |iteration| send(study, IterBody::Release { iteration, values: vec![0.1; len] });

    let short = send(study, IterBody::Release { iteration: 1, values: vec![0.1; len - 1] });
    assert!(matches!(agg.handle(2, 1, &short), Err(IterativeError::Inconsistent { .. })));
    let nan = send(study, IterBody::Release { iteration: 1, values: vec![f64::NAN; len] });
    assert!(matches!(agg.handle(2, 1, &nan), Err(IterativeError::Inconsistent { .. })));
    assert!(matches!(
        agg.handle(2, 1, &good(2)),
        Err(IterativeError::WrongIteration { expected: 1, got: 2, .. })
    ));
    assert!(matches!(
        agg.handle(2, 9, &good(1)),
        Err(IterativeError::UnknownSender { from: 9, .. })
    ));
    let other = Msg { study: StudyId([0; 16]), body: IterBody::Accept }.encode();
    assert!(matches!(agg.handle(2, 1, &other), Err(IterativeError::WrongStudy { .. })));
    assert!(matches!(agg.handle(2, 1, &[0xff, 0xff]), Err(IterativeError::Malformed(_))));
    assert!(agg.handle(2, 1, &good(1)).unwrap().is_empty());
    assert!(matches!(agg.handle(2, 1, &good(1)), Err(IterativeError::Duplicate { .. })));
    assert!(agg.records().is_empty(), "nothing was averaged yet");
    for s in 2..=4 {
        out = agg.handle(3, s, &good(1)).unwrap();
    }
    // the average of four equal releases is that release: Adam's first step moves every
    // parameter by lr·sign(g) (up to Adam's ε)
    assert_eq!(agg.records().len(), 1);
    let Msg { body: IterBody::State { iteration: 2, state }, .. } = decode(&out[0]) else {
        panic!("iteration 2's state expected")
    };
    let mut init = NnAggregator::new(task(), 0.01, &mut derive(1, "nn/init"), None);
    let theta0 = init.initial_state();
    for (a, b) in state.iter().zip(&theta0) {
        assert!((b - a - 0.01).abs() < 1e-9, "{a} vs {b}");
    }
    // a silent site past the deadline is dropped in conventional mode; the study goes on
    agg.handle(4, 1, &good(2)).unwrap();
    agg.handle(4, 2, &good(2)).unwrap();
    agg.handle(4, 3, &good(2)).unwrap();
    let out = agg.handle_timeout(2_000).unwrap();
    assert_eq!(agg.records()[1].contributors, vec![1, 2, 3]);
    assert_eq!(decode(&out[0]).body.kind(), kind::STATE);
    // with t = 3, losing one more ends it, keeping the state reached
    let out = agg.handle_departure(2_001, 3).unwrap();
    let outcome = agg.outcome().unwrap();
    assert!(matches!(
        outcome.stop,
        StopReason::TooFewSites { iteration: 3, completed: 2, remaining: 2, need: 3 }
    ));
    assert_eq!(outcome.final_state, *agg.current_state());
    let Msg { body: IterBody::End { iterations: 2, .. }, .. } = decode(&out[0]) else {
        panic!("iter/end expected")
    };
}

#[test]
fn a_site_keeps_the_aggregator_to_the_announced_iterations() {
    let mut site = IterativeSite::new(
        1,
        AGGREGATOR,
        NnSite::new(data(50, 3, 2)),
        ledger(),
        derive(2, "site"),
        SiteSettings::default(),
    );
    let study = StudyId([7; 16]);
    let p = params(NoiseMode::Conventional, 2);
    let out = site
        .handle(
            0,
            AGGREGATOR,
            &send(
                study,
                IterBody::Start { computation: "nn".into(), params: p.clone(), task: task() },
            ),
        )
        .unwrap();
    assert_eq!(out[0].kind, kind::ACCEPT);
    let theta = vec![0.1; task().num_params()];
    let state = |iteration| send(study, IterBody::State { iteration, state: theta.clone() });
    assert!(matches!(
        site.handle(1, AGGREGATOR, &state(2)),
        Err(IterativeError::WrongIteration { expected: 1, got: 2, .. })
    ));
    assert!(matches!(site.handle(1, 5, &state(1)), Err(IterativeError::UnknownSender { .. })));
    for j in 1..=2 {
        let out = site.handle(j as u64, AGGREGATOR, &state(j)).unwrap();
        assert_eq!(out[0].kind, kind::RELEASE);
    }
    let wrong_shape = send(study, IterBody::State { iteration: 3, state: vec![0.0; 3] });
    let out = site.handle(3, AGGREGATOR, &wrong_shape).unwrap();
    assert_eq!(out[0].kind, kind::DECLINE, "iteration 3 was never announced");
    let Msg { body: IterBody::Decline { reason, shortfall: None }, .. } = decode(&out[0]) else {
        panic!()
    };
    assert!(reason.contains("J_max = 2"), "{reason}");
    assert_eq!(site.spent().len(), 2, "only the announced releases were paid for");
    assert_eq!(site.phase(), IterSitePhase::Declined);

    // data that does not fit the task: a decline naming it, and nothing else
    let mut other = IterativeSite::new(
        2,
        AGGREGATOR,
        NnSite::new(data(50, 4, 3)),
        ledger(),
        derive(3, "site"),
        SiteSettings::default(),
    );
    let out = other
        .handle(
            0,
            AGGREGATOR,
            &send(study, IterBody::Start { computation: "nn".into(), params: p, task: task() }),
        )
        .unwrap();
    let Msg { body: IterBody::Decline { reason, shortfall: None }, .. } = decode(&out[0]) else {
        panic!()
    };
    assert!(reason.contains("4 features") && reason.contains("D = 3"), "{reason}");
    // fewer records than the announced N_s = 50 make Δ = 2C/N_s larger than the noise covers
    let mut small = IterativeSite::new(
        3,
        AGGREGATOR,
        NnSite::new(data(20, 3, 4)),
        ledger(),
        derive(4, "site"),
        SiteSettings::default(),
    );
    let out = small
        .handle(
            0,
            AGGREGATOR,
            &send(
                study,
                IterBody::Start {
                    computation: "nn".into(),
                    params: params(NoiseMode::Upfront, 2),
                    task: task(),
                },
            ),
        )
        .unwrap();
    let Msg { body: IterBody::Decline { reason, shortfall: None }, .. } = decode(&out[0]) else {
        panic!()
    };
    assert!(reason.contains("sensitivity"), "{reason}");
}

fn sim(
    mode: NoiseMode,
    iterations: u32,
    departures: Vec<ScriptedDeparture>,
) -> IterativeSim<NnSite, NnAggregator> {
    let t = task();
    let parts = data(800, 3, 5).partition(4).unwrap();
    let n_s = parts[0].len();
    let aggregator = NnAggregator::new(t.clone(), 0.01, &mut derive(5, "nn/init"), None);
    let sites = parts.into_iter().map(|d| (NnSite::new(d), ledger())).collect();
    let mut sim = IterativeSim::new(
        5,
        |ids| {
            IterativeParams::new(
                ids,
                mode,
                iterations,
                t.num_params(),
                t.sensitivity(n_s),
                2.0,
                1e-2,
            )
        },
        aggregator,
        sites,
        SiteSettings::default(),
        departures,
        1_000,
    )
    .unwrap();
    sim.run();
    sim
}

#[test]
fn a_dropout_inside_the_upfront_secagg_run_shrinks_u() {
    let sim = sim(NoiseMode::Upfront, 6, vec![ScriptedDeparture::on_state(3, 0)]);
    let outcome = sim.aggregator().outcome().unwrap();
    assert_eq!(outcome.stop, StopReason::Completed { iterations: 6 }, "{}", outcome.stop);
    let gone = sim.site(3).id();
    assert_eq!(outcome.contributors.len(), 3);
    assert!(!outcome.contributors.contains(&gone));
    assert!(sim.site(3).spent().is_empty());
    // the zero sum holds among the three of U, and each g_s was drawn with τ²/|U| = τ²/3
    for j in 0..6 {
        let len = outcome.params.statistic_len;
        for k in 0..len {
            let sum: f64 = (0..3)
                .map(|s| sim.site(s).iterations()[j].zero_sum_noise.as_ref().unwrap()[k])
                .sum();
            assert_eq!(sum, 0.0);
        }
    }
    for s in 0..3 {
        assert_eq!(sim.site(s).survivors().unwrap(), outcome.contributors.as_slice());
    }
}

#[test]
fn conventional_noise_averages_to_tau_squared_over_s() {
    let sim = sim(NoiseMode::Conventional, 60, Vec::new());
    let outcome = sim.aggregator().outcome().unwrap();
    assert_eq!(outcome.stop, StopReason::Completed { iterations: 60 });
    let tau = outcome.params.local_sd();
    let len = outcome.params.statistic_len;
    let mut sq = 0.0;
    let mut n = 0.0;
    for j in 0..60 {
        for k in 0..len {
            let mean: f64 = (0..4)
                .map(|s| {
                    let it = &sim.site(s).iterations()[j];
                    assert!(it.zero_sum_noise.is_none());
                    it.release[k] - it.statistic[k]
                })
                .sum::<f64>()
                / 4.0;
            sq += mean * mean;
            n += 1.0;
        }
    }
    let var = sq / n;
    let expected = tau * tau / 4.0;
    assert!(
        (var / expected - 1.0).abs() < 5.0 * (2.0 / n).sqrt(),
        "{var:e} vs τ²/S = {expected:e}"
    );
    // conventional releases are accounted with c_S = 1
    assert!(
        sim.site(0).spent().iter().all(|e| e.event.gaussian().unwrap().collusion_factor() == 1.0)
    );
    let privacy = outcome.privacy.as_ref().unwrap();
    assert_eq!(privacy.views.len(), 1);
}
