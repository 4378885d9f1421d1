//! The zero-sum repair of an iterative study (module docs of `study::iterative::aggregator`,
//! "the repair path"; spec cape-secagg-pca-djica §2, Remark 4): S = 4 sites (t = 3), J = 20, a
//! site leaves at iteration 5. The study completes with S = 3; Σ_s e_s = 0 exactly (on the
//! fixed-point grid) in every later iteration; every ledger records exactly the releases its site
//! made, each at the c_S of its own noise run; below t the study stops cleanly, naming who left
//! and when. NN and capeDJICA.

use capelab_core::accountant::{Budget, Ledger};
use capelab_core::cape::Collusion;
use capelab_core::cape::privacy::c_s_full_view;
use capelab_core::data::{Dataset, Normaliser, TargetKind, synthetic};
use capelab_core::djica::{ClipBounds, GaussianLevel, Precision, PrivacyUnit};
use capelab_core::fm::Calibration;
use capelab_core::nn::account;
use capelab_core::rng::derive;
use capelab_core::study::iterative::djica::{
    DjicaSchedule, DjicaStudyAggregator, DjicaStudySite, DjicaTask, noise_for,
};
use capelab_core::study::iterative::nn::{NnAggregator, NnSite, NnTask};
use capelab_core::study::iterative::pca::{PublicSynthetic, SyntheticPreset};
use capelab_core::study::iterative::sim::{IterativeSim, ScriptedDeparture};
use capelab_core::study::iterative::{
    AggregatorStep, IterSitePhase, IterativeOutcome, IterativeParams, IterativeSite, NoiseMode,
    SiteSettings, SiteStep, StopReason,
};
use capelab_core::wire::ParticipantId;

const SITES: usize = 4;
const DELTA: f64 = 1e-2;
const J: u32 = 20;

fn classification(n: usize, d: usize, seed: u64) -> (Dataset, Dataset) {
    let raw = synthetic::two_gaussians(n, d, 0.25, seed);
    let (tr, te) = raw.split(0.3, seed).unwrap();
    let radius = synthetic::two_gaussians_radius(d, 0.25);
    let f = Normaliser::RowClip { radius, target: None }.fit(&tr, TargetKind::Binary).unwrap();
    (f.apply(&tr).unwrap(), f.apply(&te).unwrap())
}

fn ledger(i: usize) -> Ledger {
    Ledger::new(format!("site {i}"), Budget::new(1e9, DELTA).unwrap()).unwrap()
}

fn nn_sim(
    mode: NoiseMode,
    departures: Vec<ScriptedDeparture>,
) -> IterativeSim<NnSite, NnAggregator> {
    let (train, test) = classification(800, 4, 11);
    let parts = train.partition(SITES).unwrap();
    let n_s = parts[0].len();
    let task = NnTask { features: train.features(), hidden: 3, clip: 1.0 };
    let aggregator = NnAggregator::new(task.clone(), 0.01, &mut derive(7, "nn/init"), Some(test));
    let sites = parts.into_iter().enumerate().map(|(i, d)| (NnSite::new(d), ledger(i))).collect();
    let z = IterativeParams::noise_multiplier_for(1.0, DELTA, Calibration::default()).unwrap();
    let mut sim = IterativeSim::new(
        7,
        |ids| {
            IterativeParams::new(ids, mode, J, task.num_params(), task.sensitivity(n_s), z, DELTA)
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

fn c_s(u: usize) -> f64 {
    c_s_full_view(&Collusion::default_for(u).unwrap())
}

/// e_s on the noise format's grid: the integer d_s = e_s·2^l (exact, or the test fails).
fn on_grid(e: f64, frac_bits: u32) -> i128 {
    let scaled = e * f64::from(frac_bits).exp2();
    assert_eq!(scaled, scaled.round(), "e_s = {e} is not on the 2^-{frac_bits} grid");
    scaled as i128
}

/// Σ_s e_s = 0 exactly, on the fixed-point grid and in f64, in every coordinate of iterations
/// `iterations` among `sites`, using the releases carrying noise run `run`.
fn assert_zero_sum<C: SiteStep, U: AggregatorStep<Task = C::Task, State = C::State>>(
    sim: &IterativeSim<C, U>,
    sites: &[usize],
    run: usize,
    iterations: std::ops::RangeInclusive<u32>,
    frac_bits: u32,
) {
    for j in iterations {
        let noises: Vec<&Vec<f64>> = sites
            .iter()
            .map(|&s| {
                let it = sim
                    .site(s)
                    .iterations()
                    .iter()
                    .find(|it| it.iteration == j && it.noise_run == run)
                    .unwrap_or_else(|| panic!("site {s} released iteration {j} of run {run}"));
                it.zero_sum_noise.as_ref().unwrap()
            })
            .collect();
        for k in 0..noises[0].len() {
            let grid: i128 = noises.iter().map(|e| on_grid(e[k], frac_bits)).sum();
            assert_eq!(grid, 0, "Σ d_s in iteration {j} coordinate {k} (run {run})");
            let sum: f64 = noises.iter().map(|e| e[k]).sum();
            assert_eq!(sum, 0.0, "Σ e_s in iteration {j} coordinate {k} (run {run})");
        }
    }
}

/// A site's ledger holds exactly its releases, in order: one Gaussian event of count 1 at the
/// study's z per release, labelled by iteration and noise run, at the full-view c_S of the U its
/// e_s was split among.
fn assert_ledger_matches_releases<C: SiteStep>(site: &IterativeSite<C>, z: f64) {
    let history = site.iterations();
    let spent = site.spent();
    assert_eq!(spent.len(), history.len(), "one ledger entry per release");
    for (it, entry) in history.iter().zip(spent) {
        let label = match it.noise_run {
            0 => format!("iter/{}", it.iteration),
            r => format!("iter/{} (repair {r})", it.iteration),
        };
        assert_eq!(entry.event.label(), label);
        assert_eq!(entry.event.count(), 1);
        let gaussian = entry.event.gaussian().unwrap();
        assert_eq!(gaussian.mechanism().noise_multiplier(), z);
        let u = site.noise_runs()[it.noise_run].survivors.len();
        assert!((gaussian.collusion_factor() - c_s(u)).abs() < 1e-12, "{label}: c_S of |U| = {u}");
    }
    // Replaying the same events in a fresh ledger gives the same ε: nothing else was charged.
    let mut replay = ledger(99);
    let mut last = 0.0;
    for entry in spent {
        let release =
            capelab_core::accountant::Release::new(entry.study.clone(), entry.event.clone(), 0);
        last = replay.try_spend(release).unwrap().epsilon_after;
    }
    assert!((last - spent.last().unwrap().epsilon_after).abs() < 1e-12);
}

/// The outcome's guarantee is the worst site's releases composed, each at its own c_S: checked
/// against one Gaussian of Σ c_S (exact composition of Gaussians adds c_S/z²).
fn assert_guarantee_composes<S, R>(outcome: &IterativeOutcome<S, R>, worst: &[usize], z: f64) {
    let privacy = outcome.privacy.as_ref().unwrap();
    assert_eq!(privacy.releases as usize, worst.len());
    let sum: f64 = worst.iter().map(|u| c_s(*u)).sum();
    let one = account("one Gaussian of Σ c_S", z, 1, DELTA, sum).unwrap();
    let full = privacy.views.iter().find(|v| v.view.starts_with("full adversary view")).unwrap();
    assert!(
        (full.epsilon_exact - one.epsilon_exact).abs() < 1e-9 * one.epsilon_exact,
        "{} vs {}",
        full.epsilon_exact,
        one.epsilon_exact
    );
    assert_eq!(privacy.epsilon, full.epsilon_exact.max(privacy.views[0].epsilon_exact));
}

#[test]
fn a_site_leaving_at_iteration_5_of_20_is_repaired_and_the_study_completes_with_s_3() {
    let sim = nn_sim(NoiseMode::Upfront, vec![ScriptedDeparture::on_state(2, 5)]);
    let outcome = sim.aggregator().outcome().expect("finished");
    assert!(sim.refusals().is_empty(), "{:?}", sim.refusals());
    assert_eq!(outcome.stop, StopReason::Completed { iterations: J }, "{}", outcome.stop);
    let leaver = sim.site(2).id();
    let survivors = [0usize, 1, 3];
    let survivor_ids: Vec<ParticipantId> = survivors.iter().map(|&s| sim.site(s).id()).collect();

    // Every iteration once in the records: 1–4 averaged over 4 sites, 5–20 over the 3.
    assert_eq!(outcome.records.len(), J as usize);
    for (j, record) in outcome.records.iter().enumerate() {
        assert_eq!(record.iteration as usize, j + 1);
        let expected = if j < 4 { SITES } else { 3 };
        assert_eq!(record.contributors.len(), expected, "iteration {}", j + 1);
    }
    assert_eq!(outcome.contributors, survivor_ids);

    // The repair as the dashboard shows it: who left, at which iteration, the new S.
    assert_eq!(outcome.repairs.len(), 1);
    let repair = &outcome.repairs[0];
    assert_eq!(repair.left.len(), 1);
    assert_eq!(repair.left[0].site, leaver);
    assert_eq!(repair.left[0].iteration, 5);
    assert_eq!(repair.left[0].cause, "left the room in iteration 5");
    assert_eq!((repair.from_iteration, repair.sites_before, repair.sites_after), (5, 4, 3));
    assert!(repair.done);
    assert_eq!(repair.contributors, survivor_ids);
    // The survivors had released iteration 5 under the old noise: made, not averaged.
    let mut discarded = repair.discarded.clone();
    discarded.sort_unstable();
    assert_eq!(discarded, survivor_ids);
    let line = repair.summary(|id| format!("Lab {id}"));
    assert!(
        line.starts_with(&format!("Lab {leaver} (site {leaver}) left the room in iteration 5"))
    );
    assert!(line.contains("with S = 3") && line.contains("iteration 5 redone"), "{line}");

    // The zero sum: among the 4 in iterations 1–4 (upfront run), among the 3 in 5–20 (repair).
    let frac_bits = outcome.params.format().unwrap().frac_bits();
    assert_zero_sum(&sim, &[0, 1, 2, 3], 0, 1..=4, frac_bits);
    assert_zero_sum(&sim, &survivors, 1, 5..=J, frac_bits);
    for &s in &survivors {
        let runs = sim.site(s).noise_runs();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[1].from_iteration, 5);
        assert_eq!(runs[1].survivors, survivor_ids);
        assert_eq!(runs[1].noise.len(), 16 * outcome.params.statistic_len);
        assert_eq!(sim.site(s).phase(), IterSitePhase::Done);
        assert_eq!(sim.site(s).final_state(), Some(&outcome.final_state));
    }

    // Each message still carries τ²; after the repair g_s has τ²/3 (before: τ²/4).
    let tau = outcome.params.local_sd();
    for (run, range, u) in [(0, 1..=4u32, 4.0), (1, 5..=J, 3.0)] {
        let (mut sq, mut n) = (0.0, 0.0);
        for &s in &survivors {
            for it in sim.site(s).iterations().iter().filter(|it| it.noise_run == run) {
                if !range.contains(&it.iteration) {
                    continue;
                }
                let e = it.zero_sum_noise.as_ref().unwrap();
                for (k, e) in e.iter().enumerate() {
                    let g = it.release[k] - it.statistic[k] - e;
                    sq += g * g;
                    n += 1.0;
                }
            }
        }
        let var = sq / n;
        let expected = tau * tau / u;
        assert!(
            (var / expected - 1.0).abs() < 5.0 * (2.0f64 / n).sqrt(),
            "run {run}: Var(g_s) {var:e} vs τ²/{u} = {expected:e} (n = {n})"
        );
    }

    // Ledgers: the leaver paid for its 4 releases at c_S(4); each survivor for 4 + the discarded
    // iteration 5 at c_S(4), then 16 at c_S(3); nothing twice.
    let z = outcome.params.noise_multiplier;
    assert_eq!(sim.site(2).spent().len(), 4);
    assert_ledger_matches_releases(sim.site(2), z);
    for &s in &survivors {
        let site = sim.site(s);
        assert_eq!(site.spent().len(), 21, "site {s}");
        assert_ledger_matches_releases(site, z);
        let labels: Vec<&str> = site.spent().iter().map(|e| e.event.label()).collect();
        assert_eq!(labels[4], "iter/5");
        assert_eq!(labels[5], "iter/5 (repair 1)");
        assert_eq!(labels[20], "iter/20 (repair 1)");
        // the aggregator's per-iteration ε is a survivor's: the mirror also recorded the
        // discarded release
        for (j, record) in outcome.records.iter().enumerate() {
            let entry = if j < 4 { j } else { j + 1 };
            let (a, b) = (record.epsilon_spent.unwrap(), site.spent()[entry].epsilon_after);
            assert!((a - b).abs() < 1e-12, "iteration {}: {a} vs {b}", j + 1);
        }
    }
    let mut worst = vec![4usize; 5];
    worst.extend([3usize; 16]);
    assert_guarantee_composes(outcome, &worst, z);
    let privacy = outcome.privacy.as_ref().unwrap();
    assert_eq!(privacy.iterations, J);
    assert!(privacy.guarantee_view.contains("S_C = 1, then 0"), "{}", privacy.guarantee_view);
    let json = serde_json::to_string(outcome).unwrap();
    assert!(json.contains("\"repairs\""));
}

#[test]
fn a_site_leaving_after_its_release_of_iteration_5_completes_it_and_repairs_from_6() {
    let sim = nn_sim(NoiseMode::Upfront, vec![ScriptedDeparture::after_release(2, 5)]);
    let outcome = sim.aggregator().outcome().unwrap();
    assert!(sim.refusals().is_empty(), "{:?}", sim.refusals());
    assert_eq!(outcome.stop, StopReason::Completed { iterations: J }, "{}", outcome.stop);
    assert_eq!(outcome.records[4].contributors.len(), SITES, "iteration 5 completes with 4");
    assert_eq!(outcome.records[5].contributors.len(), 3);
    let repair = &outcome.repairs[0];
    assert_eq!(repair.left[0].site, sim.site(2).id());
    assert_eq!(repair.left[0].cause, "left the room after releasing iteration 5");
    assert_eq!((repair.from_iteration, repair.sites_after), (6, 3));
    assert!(repair.discarded.is_empty(), "nothing to redo");
    let frac_bits = outcome.params.format().unwrap().frac_bits();
    assert_zero_sum(&sim, &[0, 1, 2, 3], 0, 1..=5, frac_bits);
    assert_zero_sum(&sim, &[0, 1, 3], 1, 6..=J, frac_bits);
    let z = outcome.params.noise_multiplier;
    assert_eq!(sim.site(2).spent().len(), 5);
    for s in 0..SITES {
        assert_ledger_matches_releases(sim.site(s), z);
    }
    for s in [0, 1, 3] {
        assert_eq!(sim.site(s).spent().len(), J as usize, "no release made twice");
        for (j, record) in outcome.records.iter().enumerate() {
            assert_eq!(record.epsilon_spent, Some(sim.site(s).spent()[j].epsilon_after));
        }
    }
    let mut worst = vec![4usize; 5];
    worst.extend([3usize; 15]);
    assert_guarantee_composes(outcome, &worst, z);
}

#[test]
fn below_the_threshold_the_study_stops_cleanly_naming_who_left_and_when() {
    // Site 2 leaves at iteration 5 (repaired: 3 = t remain), site 3 at iteration 8: 2 < t.
    let sim = nn_sim(
        NoiseMode::Upfront,
        vec![ScriptedDeparture::on_state(2, 5), ScriptedDeparture::on_state(3, 8)],
    );
    let outcome = sim.aggregator().outcome().unwrap();
    let second = sim.site(3).id();
    assert_eq!(
        outcome.stop,
        StopReason::ZeroSumBroken {
            site: second,
            iteration: 8,
            completed: 7,
            cause: "left the room in iteration 8".into(),
            remaining: 2,
            need: 3,
        }
    );
    let text = outcome.stop.to_string();
    assert!(text.contains(&format!("site {second} left the room in iteration 8")), "{text}");
    assert!(text.contains("only 2 sites remain") && text.contains("t = 3"), "{text}");
    assert!(text.contains("state reached after iteration 7"), "{text}");
    assert_eq!(outcome.records.len(), 7);
    assert_eq!(outcome.repairs.len(), 1, "the first departure was repaired");
    for s in [0, 1] {
        let site = sim.site(s);
        assert_eq!(site.final_state(), Some(&outcome.final_state));
        assert!(site.end_reason().unwrap().contains("iteration 8"));
        // 4 + discarded 5 + 5..7 + their release of 8 (made before the departure was known)
        assert_eq!(site.spent().len(), 9);
        assert_ledger_matches_releases(site, outcome.params.noise_multiplier);
    }
    // The departed sites' releases keep the guarantee they were made under.
    assert_eq!(sim.site(2).spent().len(), 4);
    assert_eq!(sim.site(3).spent().len(), 8);

    // Conventional noise has no zero sum to repair: the others go on without the site.
    let sim = nn_sim(NoiseMode::Conventional, vec![ScriptedDeparture::on_state(2, 5)]);
    let outcome = sim.aggregator().outcome().unwrap();
    assert_eq!(outcome.stop, StopReason::Completed { iterations: J });
    assert!(outcome.repairs.is_empty());
    assert_eq!(outcome.records[4].contributors.len(), 3);
}

// -- Joint ICA ----------------------------------------------------------------------------------

#[test]
fn a_djica_site_leaving_at_iteration_5_is_repaired_too() {
    let public = PublicSynthetic {
        preset: SyntheticPreset::WellConditioned,
        grid: 6,
        components: 3,
        timepoints: 60,
        subjects_per_site: 3,
        maps_seed: 11,
    };
    let data: Vec<_> = (0..SITES).map(|s| public.site_data(100 + s as u64).unwrap()).collect();
    // A public projection (what capePCA would give) keeps the test to the iterations.
    let voxels = public.voxels();
    let r = public.components;
    // K (R×D, column-major) keeps the first R voxels.
    let projection: Vec<f64> =
        (0..r * voxels).map(|i| if i % r == i / r { 1.0 } else { 0.0 }).collect();
    let task = DjicaTask {
        voxels,
        components: r,
        projection,
        bounds: ClipBounds::default(),
        unit: PrivacyUnit::TimePoint,
        precision: Precision::F64,
    };
    let level = GaussianLevel { epsilon: 0.5, delta: DELTA };
    let (sensitivity, z) =
        noise_for(&task, level, data[0].samples(), data[0].max_subject_len()).unwrap();
    let aggregator =
        DjicaStudyAggregator::new(task.clone(), DjicaSchedule::for_private(true), J, None).unwrap();
    let sites =
        data.iter().enumerate().map(|(i, d)| (DjicaStudySite::new(d.clone()), ledger(i))).collect();
    let len = task.statistic_len();
    let mut sim = IterativeSim::new(
        5,
        |ids| IterativeParams::new(ids, NoiseMode::Upfront, J, len, sensitivity, z, DELTA),
        aggregator,
        sites,
        SiteSettings::default(),
        vec![ScriptedDeparture::on_state(1, 5)],
        1_000,
    )
    .unwrap();
    sim.run();
    let outcome = sim.aggregator().outcome().unwrap();
    assert!(sim.refusals().is_empty(), "{:?}", sim.refusals());
    // capeDJICA's step ends itself at J_max (it averages the last iterates)
    assert!(matches!(outcome.stop, StopReason::Converged { iteration: J, .. }), "{}", outcome.stop);
    assert_eq!(outcome.records.len(), J as usize);
    assert_eq!(outcome.records[4].contributors.len(), 3);
    assert_eq!(outcome.repairs.len(), 1);
    assert_eq!(outcome.repairs[0].left[0].site, sim.site(1).id());
    assert_eq!((outcome.repairs[0].from_iteration, outcome.repairs[0].sites_after), (5, 3));
    let frac_bits = outcome.params.format().unwrap().frac_bits();
    assert_zero_sum(&sim, &[0, 1, 2, 3], 0, 1..=4, frac_bits);
    assert_zero_sum(&sim, &[0, 2, 3], 1, 5..=J, frac_bits);
    for s in 0..SITES {
        assert_ledger_matches_releases(sim.site(s), z);
    }
    assert_eq!(sim.site(1).spent().len(), 4);
    let mut worst = vec![4usize; 5];
    worst.extend([3usize; 16]);
    assert_guarantee_composes(outcome, &worst, z);
}
