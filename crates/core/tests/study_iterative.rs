//! The iterative study (CAPE gradient descent for the network of `nn`) over a MemoryRoom with
//! S = 4 sites: exact zero sum and the pooled noise variance of the upfront mode, the non-private
//! run against `nn::train`, CAPE's accuracy against the non-private one, the ledger, a decline
//! on budget (of the whole announced study, later stages included), and a site leaving mid-run
//! (repaired).

use capelab_core::accountant::{Budget, Event, Ledger, Mechanism, Release};
use capelab_core::cape::Collusion;
use capelab_core::cape::privacy::c_s_full_view;
use capelab_core::data::{Dataset, Normaliser, TargetKind, synthetic};
use capelab_core::fm::Calibration;
use capelab_core::nn::{NnConfig, NnMechanism, train};
use capelab_core::rng::derive;
use capelab_core::study::iterative::nn::{NnAggregator, NnSite, NnTask};
use capelab_core::study::iterative::sim::{IterativeSim, ScriptedDeparture};
use capelab_core::study::iterative::{
    IterSitePhase, IterativeParams, NoiseMode, SiteSettings, StopReason, TooFewAccepted, kind,
};

const SITES: usize = 4;
const DELTA: f64 = 1e-2;
const LEARNING_RATE: f64 = 0.01;

fn classification(n: usize, d: usize, seed: u64) -> (Dataset, Dataset) {
    let raw = synthetic::two_gaussians(n, d, 0.25, seed);
    let (tr, te) = raw.split(0.3, seed).unwrap();
    let radius = synthetic::two_gaussians_radius(d, 0.25);
    let f = Normaliser::RowClip { radius, target: None }.fit(&tr, TargetKind::Binary).unwrap();
    (f.apply(&tr).unwrap(), f.apply(&te).unwrap())
}

struct Run {
    mode: NoiseMode,
    epsilon_per_iteration: f64,
    iterations: u32,
    hidden: usize,
    seed: u64,
    budgets: Vec<f64>,
    departures: Vec<ScriptedDeparture>,
    allow_nonprivate: bool,
    /// J_max of a later stage announced with this one (0: none).
    then_iterations: u32,
}

impl Run {
    fn new(mode: NoiseMode, iterations: u32) -> Self {
        Self {
            mode,
            epsilon_per_iteration: 1.0,
            iterations,
            hidden: 3,
            seed: 7,
            budgets: vec![1e6; SITES],
            departures: Vec::new(),
            allow_nonprivate: mode == NoiseMode::NonPrivate,
            then_iterations: 0,
        }
    }

    fn z(&self) -> f64 {
        IterativeParams::noise_multiplier_for(
            self.epsilon_per_iteration,
            DELTA,
            Calibration::default(),
        )
        .unwrap()
    }

    fn sim(&self, train: &Dataset, test: &Dataset) -> IterativeSim<NnSite, NnAggregator> {
        let parts = train.partition(SITES).unwrap();
        let n_s = parts[0].len();
        let task = NnTask { features: train.features(), hidden: self.hidden, clip: 1.0 };
        let aggregator = NnAggregator::new(
            task.clone(),
            LEARNING_RATE,
            &mut derive(self.seed, "nn/init"),
            Some(test.clone()),
        );
        let sites = parts
            .into_iter()
            .zip(&self.budgets)
            .enumerate()
            .map(|(i, (data, &budget))| {
                let ledger =
                    Ledger::new(format!("site {i}"), Budget::new(budget, DELTA).unwrap()).unwrap();
                (NnSite::new(data), ledger)
            })
            .collect();
        let (mode, iterations, z, then) =
            (self.mode, self.iterations, self.z(), self.then_iterations);
        let mut sim = IterativeSim::new(
            self.seed,
            |ids| {
                let stage = |j| {
                    IterativeParams::new(
                        ids.clone(),
                        mode,
                        j,
                        task.num_params(),
                        task.sensitivity(n_s),
                        z,
                        DELTA,
                    )
                };
                let later = if then > 0 { vec![stage(then)?] } else { Vec::new() };
                stage(iterations)?.with_followed_by(later)
            },
            aggregator,
            sites,
            SiteSettings { allow_nonprivate: self.allow_nonprivate },
            self.departures.clone(),
            1_000,
        )
        .unwrap();
        sim.run();
        sim
    }
}

#[test]
fn upfront_noise_is_exactly_zero_sum_with_the_pooled_variance_and_is_accounted() {
    let (train, test) = classification(800, 5, 1);
    let run = Run::new(NoiseMode::Upfront, 40);
    let sim = run.sim(&train, &test);
    let outcome = sim.aggregator().outcome().expect("finished");
    assert_eq!(outcome.stop, StopReason::Completed { iterations: 40 }, "{}", outcome.stop);
    assert_eq!(outcome.contributors.len(), SITES);
    assert!(sim.refusals().is_empty(), "{:?}", sim.refusals());

    let params = &outcome.params;
    let tau = params.local_sd();
    let len = params.statistic_len;
    assert_eq!(len, 5 * 3 + 2 * 3 + 1);
    let mut aggregate_sq = 0.0;
    let mut message_sq = 0.0;
    let mut coordinates = 0usize;
    for j in 0..40 {
        for k in 0..len {
            let mut e_sum = 0.0;
            let mut noise_sum = 0.0;
            for s in 0..SITES {
                let it = &sim.site(s).iterations()[j];
                assert_eq!(it.iteration as usize, j + 1);
                let e = it.zero_sum_noise.as_ref().unwrap()[k];
                // e_s of iteration j is the j-th block of the upfront split
                assert_eq!(e, sim.site(s).zero_sum_noise().unwrap()[j * len + k]);
                e_sum += e;
                let noise = it.release[k] - it.statistic[k];
                noise_sum += noise;
                message_sq += noise * noise;
            }
            assert_eq!(e_sum, 0.0, "Σe_s in iteration {} coordinate {k}", j + 1);
            let aggregate = noise_sum / SITES as f64;
            aggregate_sq += aggregate * aggregate;
            coordinates += 1;
        }
    }
    // Zero-mean Gaussian samples: Σx²/n estimates σ² with relative standard error √(2/n).
    let n = coordinates as f64;
    let aggregate_var = aggregate_sq / n;
    let expected = tau * tau / (SITES * SITES) as f64;
    let tolerance = 5.0 * (2.0 / n).sqrt();
    assert!(
        (aggregate_var / expected - 1.0).abs() < tolerance,
        "aggregate variance {aggregate_var:e} vs τ²/S² = {expected:e} (n = {n})"
    );
    let message_var = message_sq / (n * SITES as f64);
    let tolerance = 5.0 * (2.0 / (n * SITES as f64)).sqrt();
    assert!(
        (message_var / (tau * tau) - 1.0).abs() < tolerance,
        "each message carries τ²: {message_var:e} vs {:e}",
        tau * tau
    );

    // The ledger: J releases at every site, each with z and the full-view c_S of |U| = 4, and
    // the same running ε the aggregator reports.
    let c_s = c_s_full_view(&Collusion::default_for(SITES).unwrap());
    for s in 0..SITES {
        let spent = sim.site(s).spent();
        assert_eq!(spent.len(), 40);
        for (j, entry) in spent.iter().enumerate() {
            assert_eq!(entry.event.label(), format!("iter/{}", j + 1));
            assert_eq!(entry.event.count(), 1);
            assert_eq!(entry.event.gaussian().unwrap().mechanism().noise_multiplier(), run.z());
            assert!((entry.event.gaussian().unwrap().collusion_factor() - c_s).abs() < 1e-12);
            assert_eq!(outcome.records[j].epsilon_spent, Some(entry.epsilon_after));
        }
        assert_eq!(sim.site(s).phase(), IterSitePhase::Done);
        assert_eq!(sim.site(s).final_state(), Some(&outcome.final_state));
    }
    let privacy = outcome.privacy.as_ref().unwrap();
    assert_eq!(privacy.iterations, 40);
    assert!(privacy.guarantee_view.starts_with("full adversary view"));
    assert!(privacy.views[0].epsilon_exact < privacy.epsilon);
    // the whole outcome is serialisable for the dashboard
    let json = serde_json::to_string(outcome).unwrap();
    assert!(json.contains("\"completed\"") || json.contains("Completed"));
}

#[test]
fn nonprivate_mode_reproduces_nn_train_weights() {
    let (train_set, test) = classification(400, 4, 3);
    let iterations = 30;
    let mut config = NnConfig::new(NnMechanism::NonPrivate, 1.0);
    config.sites = SITES;
    config.hidden = 3;
    config.iterations = iterations as usize;
    config.learning_rate = LEARNING_RATE;
    config.seed = 7;
    let reference = train(&config, &train_set, &test).unwrap();

    let run = Run::new(NoiseMode::NonPrivate, iterations);
    let sim = run.sim(&train_set, &test);
    let outcome = sim.aggregator().outcome().unwrap();
    assert_eq!(outcome.stop, StopReason::Completed { iterations });
    assert_eq!(outcome.final_state.len(), reference.final_params.len());
    for (k, (a, b)) in outcome.final_state.iter().zip(&reference.final_params).enumerate() {
        assert!((a - b).abs() < 1e-12, "parameter {k}: {a} vs nn::train {b}");
    }
    let last = outcome.records.last().unwrap().report.accuracy.unwrap();
    assert!((last - reference.test_accuracy).abs() < 1e-12);
    assert!(outcome.privacy.is_none() && outcome.records.iter().all(|r| r.epsilon_spent.is_none()));
    for s in 0..SITES {
        assert!(sim.site(s).spent().is_empty(), "a non-private release is not a ledger release");
    }

    // A site whose settings do not allow non-private runs declines and sends nothing else.
    let mut strict = Run::new(NoiseMode::NonPrivate, 3);
    strict.allow_nonprivate = false;
    let sim = strict.sim(&train_set, &test);
    assert_eq!(sim.sent_by_site(0), vec![kind::DECLINE]);
    let outcome = sim.aggregator().outcome().unwrap();
    let StopReason::TooFewAccepted(TooFewAccepted { accepted: 0, declined, silent, need: 3 }) =
        outcome.stop
    else {
        panic!("expected too few accepted, got {:?}", outcome.stop)
    };
    // t = 3 is out of reach once two of the four have declined: the rest may still be silent.
    assert!(declined >= 2 && declined + silent == SITES, "{declined} declined, {silent} silent");
    assert!(outcome.stop.to_string().contains(&format!("{declined} declined")));
}

#[test]
fn cape_accuracy_is_close_to_nonprivate() {
    // D = 10, means ±0.25: the Bayes accuracy is Φ(0.25·√10) = 0.785
    let (train, test) = classification(2000, 10, 5);
    let iterations = 200;
    const EPSILON: f64 = 0.1;
    let mut accuracy = Vec::new();
    for mode in [NoiseMode::NonPrivate, NoiseMode::Upfront, NoiseMode::Conventional] {
        let mut run = Run::new(mode, iterations);
        run.hidden = 5;
        run.epsilon_per_iteration = EPSILON;
        let sim = run.sim(&train, &test);
        let outcome = sim.aggregator().outcome().unwrap();
        assert_eq!(outcome.stop, StopReason::Completed { iterations }, "{mode:?}");
        accuracy.push(outcome.records.last().unwrap().report.accuracy.unwrap());
    }
    let (nonprivate, cape, conventional) = (accuracy[0], accuracy[1], accuracy[2]);
    eprintln!("test accuracy: non-private {nonprivate}, CAPE {cape}, conventional {conventional}");
    assert!(nonprivate > 0.72, "the non-private run learns: {nonprivate}");
    assert!((cape - nonprivate).abs() < 0.03, "CAPE {cape} vs non-private {nonprivate}");
}

#[test]
fn a_site_without_budget_declines_before_sending_anything_else() {
    let (train, test) = classification(400, 4, 9);
    let mut run = Run::new(NoiseMode::Upfront, 20);
    // 20 releases at ε_iter = 1 cost far more than ε = 2
    run.budgets[1] = 2.0;
    let sim = run.sim(&train, &test);
    assert_eq!(sim.sent_by_site(1), vec![kind::DECLINE]);
    assert!(sim.site(1).spent().is_empty());
    assert_eq!(sim.site(1).phase(), IterSitePhase::Declined);
    assert!(sim.site(1).end_reason().unwrap().contains("insufficient privacy budget"));
    let outcome = sim.aggregator().outcome().unwrap();
    assert_eq!(outcome.declined.len(), 1);
    assert_eq!(outcome.declined[0].iteration, 0);
    // the dashboard hears the least budget that admits the study: above the site's ε = 2
    let shortfall = outcome.declined[0].shortfall.expect("a budget refusal names its shortfall");
    assert_eq!(shortfall.budget, 2.0);
    assert!(shortfall.needed.is_some_and(|n| n > 2.0), "{shortfall:?}");
    // the other three (t = 3) run the study among themselves
    assert_eq!(outcome.stop, StopReason::Completed { iterations: 20 });
    assert_eq!(outcome.contributors.len(), 3);
    let c_s = c_s_full_view(&Collusion::default_for(3).unwrap());
    for s in [0, 2, 3] {
        assert_eq!(sim.site(s).spent().len(), 20);
        assert!(
            (sim.site(s).spent()[0].event.gaussian().unwrap().collusion_factor() - c_s).abs()
                < 1e-12
        );
    }
}

#[test]
fn a_site_admits_or_declines_the_whole_announced_study_before_its_first_release() {
    let (train, test) = classification(400, 4, 9);
    let mut run = Run::new(NoiseMode::Upfront, 5);
    run.then_iterations = 40;
    // What the first stage alone and the whole study cost one site, by the ledger's accountant.
    let z = run.z();
    let budget_between = {
        let spend = |j: u64| {
            let mut l = Ledger::new("probe", Budget::new(1e6, DELTA).unwrap()).unwrap();
            let c_s = c_s_full_view(&Collusion::default_for(SITES).unwrap());
            let e = Event::with_collusion_factor(
                "probe",
                Mechanism::Gaussian { noise_multiplier: z },
                j,
                c_s,
            )
            .unwrap();
            l.try_spend(Release::new("probe", e, 0)).unwrap();
            l.spent()
        };
        let (first, whole) = (spend(5), spend(45));
        assert!(whole > 1.5 * first, "{first} vs {whole}");
        (first + whole) / 2.0
    };
    // Site 1 could afford the first stage but not the study it belongs to.
    run.budgets[1] = budget_between;
    let sim = run.sim(&train, &test);
    assert_eq!(sim.sent_by_site(1), vec![kind::DECLINE]);
    assert!(sim.site(1).spent().is_empty(), "a decline costs nothing");
    let why = sim.site(1).end_reason().unwrap();
    assert!(why.contains("insufficient privacy budget") && why.contains("stage 2"), "{why}");
    // The others admit the whole study and record only what they release in this stage.
    let outcome = sim.aggregator().outcome().unwrap();
    assert_eq!(outcome.stop, StopReason::Completed { iterations: 5 });
    for s in [0, 2, 3] {
        assert_eq!(sim.site(s).spent().len(), 5, "site {s}");
    }
    // A following stage that announces stages of its own is refused, naming it.
    let p = |j| IterativeParams::new(vec![1, 2, 3], NoiseMode::Upfront, j, 4, 0.1, 2.0, DELTA);
    let nested = p(3).unwrap().with_followed_by(vec![p(2).unwrap()]).unwrap();
    let err = p(1).unwrap().with_followed_by(vec![nested]).unwrap_err();
    assert!(err.to_string().contains("stage 2"), "{err}");
    let bad = IterativeParams { max_iterations: 0, ..p(1).unwrap() };
    let err = p(1).unwrap().with_followed_by(vec![bad]).unwrap_err();
    assert!(
        err.to_string().starts_with("stage 2 of the study: the study needs at least 1"),
        "{err}"
    );
}

#[test]
fn a_site_leaving_after_the_upfront_run_is_repaired_and_the_study_goes_on() {
    // The repair itself is tested in detail in tests/study_iterative_repair.rs.
    let (train, test) = classification(400, 4, 11);
    let mut run = Run::new(NoiseMode::Upfront, 12);
    run.departures = vec![ScriptedDeparture::on_state(2, 5)];
    let sim = run.sim(&train, &test);
    let outcome = sim.aggregator().outcome().unwrap();
    let leaver = sim.site(2).id();
    assert_eq!(outcome.stop, StopReason::Completed { iterations: 12 }, "{}", outcome.stop);
    assert_eq!(outcome.repairs.len(), 1);
    let repair = &outcome.repairs[0];
    assert_eq!((repair.left[0].site, repair.left[0].iteration), (leaver, 5));
    assert_eq!((repair.from_iteration, repair.sites_after), (5, 3));
    assert_eq!(outcome.records.len(), 12);
    assert_eq!(outcome.records[3].contributors.len(), 4);
    assert_eq!(outcome.records[4].contributors.len(), 3);
    // the leaver paid for the 4 releases it made, the others for 4 + their fifth (made before
    // the departure was known, not averaged) + the 8 under the repaired noise
    assert_eq!(sim.site(2).spent().len(), 4);
    for s in [0, 1, 3] {
        assert_eq!(sim.site(s).spent().len(), 13);
        assert_eq!(sim.site(s).final_state(), Some(&outcome.final_state));
    }

    // A site that leaves right after its release of iteration 5: iteration 5 still completes (its
    // zero-sum share is in), the repair covers 6 on.
    let mut after = Run::new(NoiseMode::Upfront, 12);
    after.departures = vec![ScriptedDeparture::after_release(2, 5)];
    let sim = after.sim(&train, &test);
    let outcome = sim.aggregator().outcome().unwrap();
    assert_eq!(outcome.stop, StopReason::Completed { iterations: 12 }, "{}", outcome.stop);
    assert_eq!(outcome.repairs[0].from_iteration, 6);
    assert_eq!(outcome.records[4].contributors.len(), 4);
    assert_eq!(sim.site(2).spent().len(), 5);
    for s in [0, 1, 3] {
        assert_eq!(sim.site(s).spent().len(), 12, "site {s} released iterations 1 to 12 once");
    }

    // Conventional noise has no zero sum to break: the others go on without the site.
    let mut conventional = Run::new(NoiseMode::Conventional, 12);
    conventional.departures = run.departures.clone();
    let sim = conventional.sim(&train, &test);
    let outcome = sim.aggregator().outcome().unwrap();
    assert_eq!(outcome.stop, StopReason::Completed { iterations: 12 });
    assert_eq!(outcome.records[3].contributors.len(), 4);
    assert_eq!(outcome.records[4].contributors.len(), 3);
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let (train, test) = classification(200, 3, 13);
    let run = Run::new(NoiseMode::Upfront, 5);
    let a = run.sim(&train, &test);
    let b = run.sim(&train, &test);
    let (a, b) = (a.aggregator().outcome().unwrap(), b.aggregator().outcome().unwrap());
    assert_eq!(a.final_state, b.final_state);
    assert_eq!(a.records, b.records);
}
