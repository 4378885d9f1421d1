//! capePCA and capeDJICA as iterative studies over a MemoryRoom with S = 4 sites (the roles the
//! browser runs): the same subspace and the same W as the one-process pipeline when nothing is
//! private, exactly zero-sum noise of the announced scale on both of capeDJICA's blocks, a CAPE
//! run that recovers the maps, and `iter/start` naming its computation.

use capelab_core::accountant::{Budget, Ledger};
use capelab_core::djica::noise::CapeZeroSumNoise;
use capelab_core::djica::{
    ClipBounds, DjicaConfig, GaussianLevel, Method, Precision, PrivacyUnit, ProjectedSite,
    run_djica,
};
use capelab_core::fmri::SiteData;
use capelab_core::ica_quality::q_ngi;
use capelab_core::pca::{CovarianceSensitivity, PcaConfig, Whitening, cape_pca, project};
use capelab_core::rng::Seed;
use capelab_core::study::iterative::djica::{
    DjicaSchedule, DjicaStudyAggregator, DjicaStudySite, DjicaTask, noise_for,
};
use capelab_core::study::iterative::pca::{
    PcaAggregator, PcaSite, PcaState, PcaTask, PublicSynthetic, SyntheticPreset,
};
use capelab_core::study::iterative::sim::IterativeSim;
use capelab_core::study::iterative::{
    IterBody, IterMessage, IterativeParams, NoiseMode, SiteSettings, StopReason, peek_start,
};

const SITES: usize = 4;
const SUBJECTS: usize = 4;
const DELTA: f64 = 1e-2;

fn public() -> PublicSynthetic {
    PublicSynthetic {
        preset: SyntheticPreset::WellConditioned,
        grid: 8,
        components: 4,
        timepoints: 100,
        subjects_per_site: SUBJECTS,
        maps_seed: 11,
    }
}

/// Every site mixes its own subjects (sources from its own seed) with the public maps.
fn site_data(public: &PublicSynthetic) -> Vec<SiteData> {
    (0..SITES).map(|s| public.site_data(100 + s as u64).unwrap()).collect()
}

fn ledger(i: usize) -> Ledger {
    Ledger::new(format!("site {i}"), Budget::new(1e9, DELTA).unwrap()).unwrap()
}

fn pca_task(public: &PublicSynthetic) -> PcaTask {
    PcaTask {
        voxels: public.voxels(),
        components: public.components,
        sensitivity: CovarianceSensitivity { unit: PrivacyUnit::TimePoint, rigorous: false },
        whitening: Whitening::Runica,
        synthetic: Some(public.clone()),
    }
}

fn run_pca(
    data: &[SiteData],
    public: &PublicSynthetic,
    mode: NoiseMode,
    epsilon: f64,
) -> IterativeSim<PcaSite, PcaAggregator> {
    let task = pca_task(public);
    let n_s = data[0].samples();
    let delta_c = task.sensitivity.delta(n_s, data[0].max_subject_len());
    let z = GaussianLevel { epsilon, delta: DELTA }.multiplier().unwrap();
    let len = task.statistic_len();
    let sites =
        data.iter().enumerate().map(|(i, d)| (PcaSite::new(d.clone()), ledger(i))).collect();
    let mut sim = IterativeSim::new(
        3,
        |ids| IterativeParams::new(ids, mode, 1, len, delta_c, z, DELTA),
        PcaAggregator::new(task, Some(public.maps())),
        sites,
        SiteSettings { allow_nonprivate: true },
        vec![],
        1_000,
    )
    .unwrap();
    sim.run();
    sim
}

fn run_ica(
    data: &[SiteData],
    task: &DjicaTask,
    mode: NoiseMode,
    epsilon: f64,
    iterations: u32,
    truth: Option<&nalgebra::DMatrix<f64>>,
) -> IterativeSim<DjicaStudySite, DjicaStudyAggregator> {
    let level = GaussianLevel { epsilon, delta: DELTA };
    let (sensitivity, z) =
        noise_for(task, level, data[0].samples(), data[0].max_subject_len()).unwrap();
    let schedule = DjicaSchedule::for_private(mode != NoiseMode::NonPrivate);
    let aggregator = DjicaStudyAggregator::new(task.clone(), schedule, iterations, truth).unwrap();
    let sites =
        data.iter().enumerate().map(|(i, d)| (DjicaStudySite::new(d.clone()), ledger(i))).collect();
    let len = task.statistic_len();
    let mut sim = IterativeSim::new(
        5,
        |ids| IterativeParams::new(ids, mode, iterations, len, sensitivity, z, DELTA),
        aggregator,
        sites,
        SiteSettings { allow_nonprivate: true },
        vec![],
        1_000,
    )
    .unwrap();
    sim.run();
    sim
}

fn djica_task(public: &PublicSynthetic, k: &PcaState) -> DjicaTask {
    DjicaTask {
        voxels: public.voxels(),
        components: public.components,
        projection: k.projection.clone(),
        bounds: ClipBounds::default(),
        unit: PrivacyUnit::TimePoint,
        precision: Precision::F64,
    }
}

#[test]
fn nonprivate_pca_and_djica_over_the_roles_equal_the_one_process_pipeline() {
    let public = public();
    let data = site_data(&public);
    let sim = run_pca(&data, &public, NoiseMode::NonPrivate, 1.0);
    let outcome = sim.aggregator().outcome().expect("finished");
    assert!(matches!(outcome.stop, StopReason::Converged { iteration: 1, .. }), "{}", outcome.stop);
    let state = &outcome.final_state;

    let direct = cape_pca(
        &data,
        &PcaConfig {
            components: 4,
            scheme: capelab_core::djica::NoiseScheme::None,
            level: GaussianLevel { epsilon: 1.0, delta: DELTA },
            sensitivity: CovarianceSensitivity::default(),
        },
        Seed::Fixed(1),
        &mut CapeZeroSumNoise::ideal(Seed::Fixed(1), SITES),
    )
    .unwrap();
    let k_direct = direct.subspace.projection(Whitening::Runica).unwrap();
    let k_roles = state.projection_matrix().expect("a subspace");
    assert!((&k_roles - &k_direct).amax() < 1e-9, "K differs by {}", (&k_roles - &k_direct).amax());
    let cosines = outcome.records[0].report.principal_cosines.clone().expect("truth known");
    assert!(cosines.iter().all(|&c| c > 0.99), "noiseless PCA finds span(A): {cosines:?}");

    // capeDJICA without noise: the same W as run_djica on the same projected data.
    let task = djica_task(&public, state);
    let a = public.maps();
    let sim = run_ica(&data, &task, NoiseMode::NonPrivate, 1.0, 300, Some(&a));
    let outcome = sim.aggregator().outcome().expect("finished");
    let projected: Vec<ProjectedSite> = data
        .iter()
        .map(|s| ProjectedSite { x: project(&k_roles, s), max_subject_len: s.max_subject_len() })
        .collect();
    let config = DjicaConfig {
        method: Method::NonPrivate,
        max_iterations: 300,
        precision: Precision::F64,
        average_tail: 0.0,
        ..DjicaConfig::default()
    };
    let direct = run_djica(
        projected,
        &config,
        Seed::Fixed(1),
        &mut CapeZeroSumNoise::ideal(Seed::Fixed(1), SITES),
        Some(&(&k_roles * &a)),
        &mut |_| {},
    )
    .unwrap();
    let w_roles = outcome.final_state.w_matrix();
    assert_eq!(outcome.iterations as usize, direct.history.len());
    assert!((&w_roles - &direct.w).amax() < 1e-9, "W differs by {}", (&w_roles - &direct.w).amax());
    let q = outcome.records.last().unwrap().report.q.unwrap();
    assert!((q - direct.q.unwrap()).abs() < 1e-9);
    assert!(q < 0.1, "noiseless djICA separates the sources: q = {q}");
}

#[test]
fn cape_djica_noise_is_zero_sum_with_the_papers_scale_on_both_blocks_and_the_maps_emerge() {
    let public = public();
    let data = site_data(&public);
    let pca = run_pca(&data, &public, NoiseMode::Upfront, 4.0);
    let pca_outcome = pca.aggregator().outcome().unwrap();
    assert!(pca.refusals().is_empty(), "{:?}", pca.refusals());
    // capePCA's noise: exactly zero-sum over the sites, one draw per upper-triangle entry.
    let shares: Vec<Vec<f64>> =
        (0..SITES).map(|i| pca.site(i).iterations()[0].zero_sum_noise.clone().unwrap()).collect();
    for j in 0..shares[0].len() {
        assert_eq!(shares.iter().map(|s| s[j]).sum::<f64>(), 0.0, "entry {j}");
    }
    assert_eq!(pca.site(0).spent().len(), 1, "one capePCA release in the ledger");

    let task = djica_task(&public, &pca_outcome.final_state);
    let a = public.maps();
    let j = 200;
    let sim = run_ica(&data, &task, NoiseMode::Upfront, 0.5, j, Some(&a));
    let outcome = sim.aggregator().outcome().unwrap();
    assert!(sim.refusals().is_empty(), "{:?}", sim.refusals());
    assert_eq!(outcome.iterations, j);

    // Per-coordinate noise of every release: sd τ_G = z·Δ_G on G, and on the scaled h block
    // too, i.e. τ_h = z·Δ_h after the aggregator divides by B_G/B_h (the paper's two releases).
    let level = GaussianLevel { epsilon: 0.5, delta: DELTA };
    let z = level.multiplier().unwrap();
    let n_s = data[0].samples();
    let tau_g = z * 2.0 * ClipBounds::default().gradient / n_s as f64;
    let r = task.components;
    let (mut sq_g, mut sq_h, mut n_g, mut n_h) = (0.0, 0.0, 0usize, 0usize);
    let mut worst_sum = 0.0f64;
    for it in 0..j as usize {
        let mut sum = vec![0.0; r * r + r];
        for i in 0..SITES {
            let rec = &sim.site(i).iterations()[it];
            for (c, (rel, stat)) in rec.release.iter().zip(&rec.statistic).enumerate() {
                let noise = rel - stat;
                if c < r * r {
                    sq_g += noise * noise;
                    n_g += 1;
                } else {
                    sq_h += noise * noise;
                    n_h += 1;
                }
            }
            for (s, e) in sum.iter_mut().zip(rec.zero_sum_noise.as_ref().unwrap()) {
                *s += e;
            }
        }
        worst_sum = sum.iter().fold(worst_sum, |m, v| m.max(v.abs()));
    }
    assert_eq!(worst_sum, 0.0, "Σ_s e_s = 0 exactly in every coordinate of every iteration");
    for (sq, n, what) in [(sq_g, n_g, "G"), (sq_h, n_h, "scaled h")] {
        let var = sq / n as f64;
        // Var of a sample variance of n normals: 2σ⁴/n.
        let se = (2.0 / n as f64).sqrt() * tau_g * tau_g;
        assert!(
            (var - tau_g * tau_g).abs() < 5.0 * se,
            "{what}: noise variance {var:e} vs τ_G² = {:e}",
            tau_g * tau_g
        );
    }
    // Each iteration is one Gaussian release per site in the ledger.
    assert_eq!(sim.site(0).spent().len(), j as usize);
    let q = outcome.records.last().unwrap().report.q.unwrap();
    let w_final = outcome.final_state.w_matrix();
    let k = pca_outcome.final_state.projection_matrix().unwrap();
    let q_final = q_ngi(&(&w_final * (&k * &a)));
    assert!((q_final - q).abs() < 1e-12, "the last report scores the final state");
    assert!(q_final < 0.1, "CAPE at time-point level, ε_i = 0.5: the maps emerge, q = {q_final}");
}

#[test]
fn iter_start_names_its_computation() {
    let public = public();
    let task = pca_task(&public);
    let params = IterativeParams::new(
        vec![1, 2, 3],
        NoiseMode::Upfront,
        1,
        task.statistic_len(),
        0.1,
        3.0,
        DELTA,
    )
    .unwrap();
    let (_agg, out) = capelab_core::study::iterative::IterativeAggregator::start(
        params,
        PcaAggregator::new(task, None),
        1_000,
        capelab_core::rng::derive(1, "t"),
        0,
    )
    .unwrap();
    let (study, computation) = peek_start(&out[0].payload).unwrap();
    assert_eq!(computation, "capepca");
    let decoded = IterMessage::<PcaTask, PcaState>::decode(&out[0].payload).unwrap();
    assert_eq!(decoded.study, study);
    // Not a start: peek refuses.
    let state = IterMessage::<PcaTask, PcaState> {
        study,
        body: IterBody::State { iteration: 1, state: PcaState::default() },
    };
    assert!(peek_start(&state.encode()).is_err());
    assert!(peek_start(b"\x01\x02").is_err());
}
