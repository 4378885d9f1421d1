//! capeDJICA end to end at a CI-friendly size (spec §5, §6, §9): non-private convergence,
//! CAPE against local DP-ICA at time-point level, determinism, and the iteration accounting.

use capelab_core::djica::{
    CapeZeroSumNoise, DjicaConfig, DjicaError, GaussianLevel, Method, PcaSettings, PrivacyUnit,
    ProjectedSite, Schedule, StopReason, StudyData, run_djica, run_study,
};
use capelab_core::fmri::{SyntheticConfig, SyntheticStudy, generate};
use capelab_core::pca::project;
use capelab_core::rng::Seed;
use nalgebra::DMatrix;

/// 16 subjects over 4 sites, 10×10 maps, R = 6, 250 time points each (N_s = 1000).
fn study(seed: u64) -> SyntheticStudy {
    let cfg =
        SyntheticConfig { grid: 10, components: 6, ..SyntheticConfig::well_conditioned(16, 4) };
    generate(&cfg, seed).unwrap()
}

fn config(method: Method, epsilon: f64) -> DjicaConfig {
    DjicaConfig {
        method,
        unit: PrivacyUnit::TimePoint,
        level: GaussianLevel { epsilon, delta: 1e-2 },
        max_iterations: 400,
        ..DjicaConfig::default()
    }
}

fn run(
    study: &SyntheticStudy,
    config: &DjicaConfig,
    seed: u64,
) -> capelab_core::djica::StudyResult {
    let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(seed), study.sites.len());
    run_study(
        StudyData::synthetic(study),
        &PcaSettings::default(),
        config,
        Seed::Fixed(seed),
        &mut noise,
        &mut |_| {},
    )
    .unwrap()
}

#[test]
fn non_private_djica_separates_the_default_sources_and_pooling_agrees() {
    let s = study(1);
    let decentralized = run(&s, &config(Method::NonPrivate, 1.0), 1);
    let q = decentralized.djica.q.unwrap();
    assert!(q <= 0.05, "non-private q_NGI {q}");
    assert_eq!(decentralized.djica.stop, StopReason::Converged);
    assert!(decentralized.principal_cosines.unwrap().iter().all(|&c| c > 1.0 - 1e-9));
    // Equal site sizes: the mean of site means is the pooled mean, so the runs coincide up to
    // rounding.
    let pooled = run(&s, &config(Method::PooledNonPrivate, 1.0), 1);
    assert!((pooled.djica.q.unwrap() - q).abs() < 2e-3, "{} vs {q}", pooled.djica.q.unwrap());
    assert_eq!(pooled.djica.privacy.sites, 1);
    assert!(pooled.djica.privacy.z_w.is_none());
}

#[test]
fn cape_beats_local_dp_ica_at_time_point_level() {
    let mut cape = Vec::new();
    let mut local = Vec::new();
    for seed in 1..=3 {
        let s = study(seed);
        cape.push(run(&s, &config(Method::Cape, 0.5), seed).djica.q.unwrap());
        local.push(run(&s, &config(Method::Local, 0.5), seed).djica.q.unwrap());
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (c, l) = (median(&mut cape), median(&mut local));
    assert!(c <= 0.05, "capeDJICA median q {c} ({cape:?})");
    assert!(c < l, "capeDJICA {c} should beat local DP-ICA {l}");
}

#[test]
fn the_same_seed_gives_the_same_w_bit_for_bit() {
    let s = study(2);
    let cfg = DjicaConfig { max_iterations: 60, ..config(Method::Cape, 0.5) };
    let a = run(&s, &cfg, 7);
    let b = run(&s, &cfg, 7);
    assert_eq!(a.djica.w, b.djica.w);
    assert_eq!(a.djica.b, b.djica.b);
    assert_eq!(a.unmixing, b.unmixing);
    let c = run(&s, &cfg, 8);
    assert_ne!(a.djica.w, c.djica.w, "a different noise seed changes the run");
}

#[test]
fn every_iteration_counts_including_restarts_and_the_observer_sees_each() {
    let s = study(3);
    let k = DMatrix::<f64>::identity(6, 100);
    let sites: Vec<ProjectedSite> = s
        .sites
        .iter()
        .map(|site| ProjectedSite { x: project(&k, site) * 50.0, max_subject_len: 250 })
        .collect();
    // A huge rate blows the weights up: the controller restarts from W₀ with a smaller rate,
    // and the thrown-away iterations still count towards J* (they were released).
    let cfg = DjicaConfig {
        initial_rate: 1e12,
        max_iterations: 30,
        schedule: Some(Schedule::Constant),
        ..config(Method::Cape, 0.5)
    };
    let mut seen = Vec::new();
    let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(1), 4);
    let result =
        run_djica(sites, &cfg, Seed::Fixed(1), &mut noise, None, &mut |r| seen.push(r.iteration))
            .unwrap();
    assert!(result.restarts >= 1, "expected a blow-up restart");
    assert_eq!(result.privacy.iterations, 30);
    assert_eq!(result.history.len(), 30);
    assert_eq!(seen, (1..=30).collect::<Vec<_>>());
    assert_eq!(result.privacy.releases_per_iteration, 2);
    assert!(result.final_rate < 1e12);
    let z = result.privacy.z_w.unwrap();
    assert!((z - 3.10751 / 0.5).abs() < 1e-4);
}

#[test]
fn the_default_schedule_anneals_only_without_noise() {
    assert_eq!(Method::NonPrivate.default_schedule(), Schedule::RUNICA);
    assert!(matches!(Method::Cape.default_schedule(), Schedule::Decay { .. }));
    assert!(matches!(Method::Local.default_schedule(), Schedule::Decay { .. }));
}

#[test]
fn bad_inputs_are_typed_errors() {
    let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(1), 2);
    let sites = vec![
        ProjectedSite { x: DMatrix::zeros(3, 10), max_subject_len: 10 },
        ProjectedSite { x: DMatrix::zeros(4, 10), max_subject_len: 10 },
    ];
    let err =
        run_djica(sites, &DjicaConfig::default(), Seed::Fixed(1), &mut noise, None, &mut |_| {})
            .unwrap_err();
    assert!(matches!(err, DjicaError::Components { site: 1, got: 4, expected: 3 }), "{err}");
    let sites = vec![ProjectedSite { x: DMatrix::zeros(3, 10), max_subject_len: 10 }];
    let cfg = DjicaConfig {
        level: GaussianLevel { epsilon: -1.0, delta: 1e-2 },
        ..DjicaConfig::default()
    };
    let err = run_djica(sites, &cfg, Seed::Fixed(1), &mut noise, None, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("ε = -1"), "{err}");
}

#[test]
fn tail_averaging_reports_the_mean_of_the_last_iterates() {
    let s = study(4);
    let k = DMatrix::<f64>::identity(6, 100);
    let sites: Vec<ProjectedSite> = s
        .sites
        .iter()
        .map(|site| ProjectedSite { x: project(&k, site) * 20.0, max_subject_len: 250 })
        .collect();
    let cfg = DjicaConfig { max_iterations: 40, average_tail: 0.25, ..config(Method::Cape, 0.5) };
    let mut tail = Vec::new();
    let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(2), 4);
    let result = run_djica(sites, &cfg, Seed::Fixed(2), &mut noise, None, &mut |r| {
        if r.iteration > 30 {
            tail.push(r.w.clone());
        }
    })
    .unwrap();
    assert_eq!(result.stop, StopReason::MaxIterations);
    assert_eq!(tail.len(), 10);
    let mean = tail.iter().fold(DMatrix::zeros(6, 6), |acc, w| acc + w) / 10.0;
    assert!((&result.w - &mean).amax() < 1e-12);
    assert_ne!(result.w, tail[9], "the average differs from the last iterate under noise");
}
