//! Measurements for capePCA/capeDJICA (not a benchmark harness): speed of one site gradient and
//! quality of whole runs. Run with a release build, e.g.
//!
//! ```text
//! cargo run --release -p capelab-core --example djica_measure -- speed
//! cargo run --release -p capelab-core --example djica_measure -- run method=cape unit=timepoint eps=0.5 seeds=5
//! ```
//!
//! Arguments are `key=value`: method (cape|conventional|local|nonprivate|pooled), unit
//! (subject|timepoint), eps, delta, subjects, sites, seeds (count), preset (well|paper), grid,
//! components, rate, jmax, schedule (auto|anneal|constant|decay:H), pca (nonprivate|private),
//! eps_pca, whiten (runica|none), verbose (0|1).

use capelab_core::djica::gradient::{ClipBounds, GradientWorkspace, SampleColumns, site_gradient};
use capelab_core::djica::{
    CapeZeroSumNoise, DjicaConfig, GaussianLevel, Method, PcaSettings, PrivacyUnit, Schedule,
    StudyData, run_study,
};
use capelab_core::fmri::{SyntheticConfig, generate};
use capelab_core::pca::{PrincipalSubspace, Whitening, project, site_covariance};
use capelab_core::rng::Seed;
use nalgebra::{DMatrix, DVector};
use std::collections::HashMap;
/// CPU time of this thread (Linux /proc/self/schedstat), so that measurements are not skewed by
/// other processes competing for the cores; falls back to wall time elsewhere.
#[derive(Clone, Copy)]
struct Instant(std::time::Instant, Option<u64>);

impl Instant {
    fn cpu_ns() -> Option<u64> {
        std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    }
    fn now() -> Self {
        Instant(std::time::Instant::now(), Self::cpu_ns())
    }
    fn elapsed(&self) -> std::time::Duration {
        match (self.1, Self::cpu_ns()) {
            (Some(a), Some(b)) => std::time::Duration::from_nanos(b - a),
            _ => self.0.elapsed(),
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("run");
    let kv: HashMap<String, String> = args
        .iter()
        .skip(1)
        .filter_map(|a| a.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
    match mode {
        "speed" => speed(&kv),
        "run" => run(&kv),
        "profile" => profile_parts(),
        "hot" => hot(&kv),
        "sweep" => sweep(&kv),
        "iteration" => iteration(&kv),
        other => eprintln!("unknown mode {other}: use speed or run"),
    }
}

fn get<T: std::str::FromStr>(kv: &HashMap<String, String>, key: &str, default: T) -> T {
    kv.get(key).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn speed(kv: &HashMap<String, String>) {
    let reps: usize = get(kv, "reps", 20);
    for subjects in [256usize, 1024] {
        let cfg = SyntheticConfig::well_conditioned(subjects / 4, 1);
        let t = Instant::now();
        let study = generate(&cfg, 1).unwrap();
        let gen_s = t.elapsed().as_secs_f64();
        let site = &study.sites[0];
        let t = Instant::now();
        let c = site_covariance(site);
        let cov_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let sub = PrincipalSubspace::from_covariance(&c, 20).unwrap();
        let eig_s = t.elapsed().as_secs_f64();
        let k = sub.projection(Whitening::Runica).unwrap();
        let x = project(&k, site);
        let w = DMatrix::<f64>::identity(20, 20) * get(kv, "w", 0.3)
            + DMatrix::from_fn(20, 20, |i, j| 0.01 * ((i * 7 + j * 3) % 11) as f64);
        let b = DVector::zeros(20);
        let mut ws = GradientWorkspace::new(20);
        let x32 = SampleColumns::<f32>::from_matrix(&x);
        let x = SampleColumns::<f64>::from_matrix(&x);
        let _ = site_gradient(&x, &w, &b, ClipBounds::default(), &mut ws);
        let mut ws32 = GradientWorkspace::<f32>::new(20);
        let g64 = site_gradient(&x, &w, &b, ClipBounds::default(), &mut ws);
        let g32 = site_gradient(&x32, &w, &b, ClipBounds::default(), &mut ws32);
        let mut times32 = Vec::new();
        let cpu = Instant::now();
        for _ in 0..reps {
            let t = std::time::Instant::now();
            let _ = site_gradient(&x32, &w, &b, ClipBounds::default(), &mut ws32);
            times32.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let cpu32 = cpu.elapsed().as_secs_f64() * 1e3 / reps as f64;
        times32.sort_by(f64::total_cmp);
        println!(
            "  f32: CPU {cpu32:.2} ms/call; wall min {:.2} ms, median {:.2} ms; ‖G32 − G64‖/‖G64‖ = {:.2e}",
            times32[0],
            times32[reps / 2],
            (&g32.g - &g64.g).norm() / g64.g.norm()
        );
        let mut clipped = (0, 0);
        let mut times = Vec::new();
        let cpu = Instant::now();
        for _ in 0..reps {
            // Wall time per call (CPU-time counters tick too coarsely for one call); the
            // minimum over many calls is the figure least disturbed by other processes.
            let t = std::time::Instant::now();
            let g = site_gradient(&x, &w, &b, ClipBounds::default(), &mut ws);
            times.push(t.elapsed().as_secs_f64() * 1e3);
            clipped = (g.clipped, g.exact_norms);
        }
        let cpu64 = cpu.elapsed().as_secs_f64() * 1e3 / reps as f64;
        times.sort_by(f64::total_cmp);
        let grad_ms = times[0];
        let median_ms = times[times.len() / 2];
        println!(
            "M = {subjects} (one site: M_s = {}, N_s = {}): f64 site gradient CPU {cpu64:.2} ms/call; wall min {grad_ms:.2} ms, median {median_ms:.2} ms (clipped, exact norms: {clipped:?}); generate {gen_s:.2} s, covariance {cov_s:.2} s, eigen {eig_s:.2} s",
            subjects / 4,
            x.samples()
        );
    }
}

fn run(kv: &HashMap<String, String>) {
    let method = match kv.get("method").map(String::as_str).unwrap_or("cape") {
        "cape" => Method::Cape,
        "conventional" => Method::Conventional,
        "local" => Method::Local,
        "nonprivate" => Method::NonPrivate,
        "pooled" => Method::PooledNonPrivate,
        m => panic!("unknown method {m}"),
    };
    let unit = match kv.get("unit").map(String::as_str).unwrap_or("subject") {
        "subject" => PrivacyUnit::Subject,
        "timepoint" => PrivacyUnit::TimePoint,
        u => panic!("unknown unit {u}"),
    };
    let schedule = parse_schedule(kv.get("schedule").map(String::as_str).unwrap_or("auto"));
    let subjects: usize = get(kv, "subjects", 256);
    let sites: usize = get(kv, "sites", 4);
    let seeds: u64 = get(kv, "seeds", 1);
    let first_seed: u64 = get(kv, "seed", 1);
    let verbose: u8 = get(kv, "verbose", 0);
    let mut synth = match kv.get("preset").map(String::as_str).unwrap_or("well") {
        "well" => SyntheticConfig::well_conditioned(subjects, sites),
        "paper" => SyntheticConfig::paper_like(subjects, sites),
        p => panic!("unknown preset {p}"),
    };
    synth.grid = get(kv, "grid", synth.grid);
    synth.components = get(kv, "components", synth.components);
    synth.timepoints = get(kv, "timepoints", synth.timepoints);
    synth.signal_rms = get(kv, "rms", synth.signal_rms);
    let config = DjicaConfig {
        method,
        unit,
        level: GaussianLevel { epsilon: get(kv, "eps", 0.5), delta: get(kv, "delta", 1e-2) },
        initial_rate: get(kv, "rate", 0.5),
        max_iterations: get(kv, "jmax", 1000),
        schedule,
        bounds: ClipBounds { gradient: get(kv, "bg", 30.0), bias: get(kv, "bh", 30f64.sqrt()) },
        ..DjicaConfig::default()
    };
    let mut pca = PcaSettings {
        private: kv.get("pca").map(String::as_str) == Some("private"),
        whitening: if kv.get("whiten").map(String::as_str) == Some("none") {
            Whitening::None
        } else {
            Whitening::Runica
        },
        ..PcaSettings::default()
    };
    pca.level.epsilon = get(kv, "eps_pca", 1.0);
    pca.sensitivity.unit = match kv.get("pca_unit").map(String::as_str).unwrap_or("subject") {
        "timepoint" => PrivacyUnit::TimePoint,
        _ => PrivacyUnit::Subject,
    };
    let mut qs = Vec::new();
    for seed in first_seed..first_seed + seeds {
        let t = Instant::now();
        let study = generate(&synth, seed).unwrap();
        let t_gen = t.elapsed().as_secs_f64();
        let mut noise = CapeZeroSumNoise::ideal(
            Seed::Fixed(seed),
            if method == Method::Local { 1 } else { sites },
        );
        let t = Instant::now();
        let mut observer = |r: &capelab_core::djica::IterationReport<'_>| {
            if verbose > 0 && (r.iteration.is_multiple_of(50) || r.iteration < 5) {
                println!(
                    "  j={:4} rho={:.4} change={:.3e} q={:.4} clipped={:.3}",
                    r.iteration,
                    r.rate,
                    r.change,
                    r.q.unwrap_or(f64::NAN),
                    r.clipped_fraction
                );
            }
        };
        let result = run_study(
            StudyData::synthetic(&study),
            &pca,
            &config,
            Seed::Fixed(seed),
            &mut noise,
            &mut observer,
        )
        .unwrap();
        let t_run = t.elapsed().as_secs_f64();
        let cos = result.principal_cosines.as_ref().unwrap();
        let mean_cos = cos.iter().sum::<f64>() / cos.len() as f64;
        let q = result.djica.q.unwrap();
        qs.push(q);
        println!(
            "seed {seed}: q = {q:.4}, J* = {}, stop {:?}, restarts {}, final rho {:.4}, mean cos {mean_cos:.4} (min {:.4}), data clipped {:.4}, gen {t_gen:.1} s, run {t_run:.1} s",
            result.djica.privacy.iterations,
            result.djica.stop,
            result.djica.restarts,
            result.djica.final_rate,
            cos.last().unwrap(),
            study.clipped_fraction
        );
    }
    let mean = qs.iter().sum::<f64>() / qs.len() as f64;
    let mut sorted = qs.clone();
    sorted.sort_by(f64::total_cmp);
    println!(
        "{method:?} {unit:?} eps={} M={subjects}: mean q = {mean:.4}, median {:.4}, over {} seeds",
        config.level.epsilon,
        sorted[sorted.len() / 2],
        qs.len()
    );
}

#[allow(dead_code)]
pub fn profile_parts() {
    use capelab_core::djica::logistic::neg_tanh_half_in_place;
    let (r, n) = (20usize, 16000usize);
    let x = DMatrix::from_fn(r, n, |i, j| (((i * 31 + j * 17) % 101) as f64 - 50.0) / 25.0);
    let w = DMatrix::<f64>::identity(r, r) * 0.7;
    let reps = 50;
    let mut z = DMatrix::zeros(r, n);
    let t = Instant::now();
    for _ in 0..reps {
        z.gemm(1.0, &w, &x, 0.0);
    }
    println!("gemm W·X (full): {:.3} ms", t.elapsed().as_secs_f64() * 1e3 / reps as f64);
    let mut zb = DMatrix::zeros(r, 256);
    let t = Instant::now();
    for _ in 0..reps {
        for s in (0..n).step_by(256) {
            let m = 256.min(n - s);
            zb.columns_mut(0, m).gemm(1.0, &w, &x.columns(s, m), 0.0);
        }
    }
    println!("gemm W·X (blocks 256): {:.3} ms", t.elapsed().as_secs_f64() * 1e3 / reps as f64);
    let mut y = z.clone();
    let t = Instant::now();
    for _ in 0..reps {
        y.copy_from(&z);
        neg_tanh_half_in_place(y.as_mut_slice());
    }
    println!(
        "neg_tanh_half (in place, {} values): {:.3} ms",
        r * n,
        t.elapsed().as_secs_f64() * 1e3 / reps as f64
    );
    let t = Instant::now();
    for _ in 0..reps {
        for (o, i) in y.iter_mut().zip(z.iter()) {
            *o = -(i * 0.5).tanh();
        }
    }
    println!("std tanh: {:.3} ms", t.elapsed().as_secs_f64() * 1e3 / reps as f64);
    let mut small: Vec<f64> = z.as_slice()[..r * 256].to_vec();
    let t = Instant::now();
    for _ in 0..reps * (n / 256) {
        neg_tanh_half_in_place(&mut small);
        for v in small.iter_mut() {
            *v *= 3.0;
        }
    }
    println!(
        "neg_tanh_half in cache (blocks of 256 samples, per 16000 samples): {:.3} ms",
        t.elapsed().as_secs_f64() * 1e3 / reps as f64
    );
    let mut small32: Vec<f32> = small.iter().map(|&v| v as f32).collect();
    let t = Instant::now();
    for _ in 0..reps * (n / 256) {
        capelab_core::djica::logistic::neg_tanh_half_in_place_f32(&mut small32);
        for v in small32.iter_mut() {
            *v *= 3.0;
        }
    }
    println!(
        "f32 neg_tanh_half in cache (per 16000 samples): {:.3} ms",
        t.elapsed().as_secs_f64() * 1e3 / reps as f64
    );
    let x32 = x.map(|v| v as f32);
    let w32 = w.map(|v| v as f32);
    let mut zb32 = DMatrix::<f32>::zeros(r, 256);
    let t = Instant::now();
    for _ in 0..reps {
        for s in (0..n).step_by(256) {
            let m = 256.min(n - s);
            zb32.columns_mut(0, m).gemm(1.0, &w32, &x32.columns(s, m), 0.0);
        }
    }
    println!("sgemm W·X (blocks 256): {:.3} ms", t.elapsed().as_secs_f64() * 1e3 / reps as f64);
    let mut outer = DMatrix::zeros(r, r);
    let t = Instant::now();
    for _ in 0..reps {
        outer.gemm(1.0, &y, &z.transpose(), 0.0);
    }
    println!("gemm Y·Zᵀ (transpose copy): {:.3} ms", t.elapsed().as_secs_f64() * 1e3 / reps as f64);
    let t = Instant::now();
    for _ in 0..reps {
        let zt = nalgebra::DMatrixView::from_slice_with_strides(z.as_slice(), n, r, r, 1);
        outer.gemm(1.0, &y, &zt, 0.0);
    }
    println!("gemm Y·Zᵀ (strided view): {:.3} ms", t.elapsed().as_secs_f64() * 1e3 / reps as f64);
}

/// Runs only the f32 (or f64 with `f64=1`) site gradient in a loop, for an external profiler.
fn hot(kv: &HashMap<String, String>) {
    let reps: usize = get(kv, "reps", 500);
    let study = generate(&SyntheticConfig::well_conditioned(64, 1), 1).unwrap();
    let c = site_covariance(&study.sites[0]);
    let k =
        PrincipalSubspace::from_covariance(&c, 20).unwrap().projection(Whitening::Runica).unwrap();
    let x = project(&k, &study.sites[0]);
    let w = DMatrix::<f64>::identity(20, 20) * get(kv, "w", 0.3);
    let b = DVector::zeros(20);
    if get(kv, "f64", 0u8) == 1 {
        let x = SampleColumns::<f64>::from_matrix(&x);
        let mut ws = GradientWorkspace::<f64>::new(20);
        for _ in 0..reps {
            std::hint::black_box(site_gradient(&x, &w, &b, ClipBounds::default(), &mut ws));
        }
    } else {
        let x32 = SampleColumns::<f32>::from_matrix(&x);
        let mut ws = GradientWorkspace::<f32>::new(20);
        for _ in 0..reps {
            std::hint::black_box(site_gradient(&x32, &w, &b, ClipBounds::default(), &mut ws));
        }
    }
}

/// q_NGI for several methods × ε_i × seeds on one study per seed, with non-private PCA computed
/// once per seed (site 0 alone for local). `methods=cape,conventional,local`, `eps=0.5,2,8`.
fn sweep(kv: &HashMap<String, String>) {
    use capelab_core::djica::NoiseScheme;
    use capelab_core::djica::{ProjectedSite, run_djica};
    use capelab_core::pca::{CovarianceSensitivity, PcaConfig, cape_pca};
    let methods: Vec<Method> = kv
        .get("methods")
        .map(String::as_str)
        .unwrap_or("cape,conventional,local")
        .split(',')
        .map(|m| match m {
            "cape" => Method::Cape,
            "conventional" => Method::Conventional,
            "local" => Method::Local,
            "nonprivate" => Method::NonPrivate,
            "pooled" => Method::PooledNonPrivate,
            m => panic!("unknown method {m}"),
        })
        .collect();
    let eps_list: Vec<f64> = kv
        .get("eps")
        .map(String::as_str)
        .unwrap_or("0.5")
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    let unit = match kv.get("unit").map(String::as_str).unwrap_or("subject") {
        "timepoint" => PrivacyUnit::TimePoint,
        _ => PrivacyUnit::Subject,
    };
    let schedule = parse_schedule(kv.get("schedule").map(String::as_str).unwrap_or("auto"));
    let subjects: usize = get(kv, "subjects", 256);
    let sites: usize = get(kv, "sites", 4);
    let seeds: u64 = get(kv, "seeds", 3);
    let mut synth = match kv.get("preset").map(String::as_str).unwrap_or("well") {
        "paper" => SyntheticConfig::paper_like(subjects, sites),
        _ => SyntheticConfig::well_conditioned(subjects, sites),
    };
    synth.grid = get(kv, "grid", synth.grid);
    synth.components = get(kv, "components", synth.components);
    let mut table: Vec<(Method, f64, Vec<f64>)> = Vec::new();
    for seed in 1..=seeds {
        let study = generate(&synth, seed).unwrap();
        let r = synth.components;
        let pca_for = |sites: &[capelab_core::fmri::SiteData]| {
            let mut unused = CapeZeroSumNoise::ideal(Seed::Fixed(seed), sites.len());
            let cfg = PcaConfig {
                components: r,
                scheme: NoiseScheme::None,
                level: GaussianLevel { epsilon: 1.0, delta: 1e-5 },
                sensitivity: CovarianceSensitivity::default(),
            };
            let res = cape_pca(sites, &cfg, Seed::Fixed(seed), &mut unused).unwrap();
            res.subspace.projection(Whitening::Runica).unwrap()
        };
        let k_all = pca_for(&study.sites);
        let k_local = pca_for(&study.sites[..1]);
        for &method in &methods {
            let k = if method == Method::Local { &k_local } else { &k_all };
            let a_eff = k * &study.mixing;
            for &eps in &eps_list {
                let projected: Vec<ProjectedSite> = study
                    .sites
                    .iter()
                    .map(|s| ProjectedSite {
                        x: project(k, s),
                        max_subject_len: s.max_subject_len(),
                    })
                    .collect();
                let config = DjicaConfig {
                    method,
                    unit,
                    level: GaussianLevel { epsilon: eps, delta: get(kv, "delta", 1e-2) },
                    initial_rate: get(kv, "rate", 0.5),
                    max_iterations: get(kv, "jmax", 1000),
                    schedule,
                    average_tail: get(kv, "avg", 0.5),
                    ..DjicaConfig::default()
                };
                let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(seed), sites);
                let t = Instant::now();
                let res = run_djica(
                    projected,
                    &config,
                    Seed::Fixed(seed),
                    &mut noise,
                    Some(&a_eff),
                    &mut |_| {},
                )
                .unwrap();
                let q = res.q.unwrap();
                println!(
                    "seed {seed} {method:?} eps {eps}: q = {q:.4} (J* {}, {:.1} s)",
                    res.privacy.iterations,
                    t.elapsed().as_secs_f64()
                );
                match table.iter_mut().find(|(m, e, _)| *m == method && *e == eps) {
                    Some(row) => row.2.push(q),
                    None => table.push((method, eps, vec![q])),
                }
            }
        }
    }
    println!("method, eps_i, mean q, min, max, seeds");
    for (m, e, qs) in &table {
        let mean = qs.iter().sum::<f64>() / qs.len() as f64;
        let min = qs.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = qs.iter().cloned().fold(0.0, f64::max);
        println!("{m:?}, {e}, {mean:.4}, {min:.4}, {max:.4}, {}", qs.len());
    }
}

/// Wall time of whole capeDJICA iterations (4 sites' releases with CAPE noise, aggregation and
/// the update) at M = 256 and 1024, in f32 and f64.
fn iteration(kv: &HashMap<String, String>) {
    use capelab_core::djica::noise::ZeroSumNoise;
    use capelab_core::djica::{
        DjicaAggregator, DjicaSite, NoiseScheme, Precision, RateController, SiteNoiseScales,
        aggregate,
    };
    let reps: usize = get(kv, "reps", 30);
    for subjects in [256usize, 1024] {
        let study = generate(&SyntheticConfig::well_conditioned(subjects, 4), 1).unwrap();
        let c = site_covariance(&study.sites[0]);
        let k = PrincipalSubspace::from_covariance(&c, 20)
            .unwrap()
            .projection(Whitening::Runica)
            .unwrap();
        for precision in [Precision::F32, Precision::F64] {
            let level = GaussianLevel { epsilon: 0.5, delta: 1e-2 };
            let mut sites: Vec<DjicaSite> = study
                .sites
                .iter()
                .enumerate()
                .map(|(s, site)| {
                    let scales = SiteNoiseScales::new(
                        PrivacyUnit::TimePoint,
                        ClipBounds::default(),
                        Some(level),
                        site.samples(),
                        250,
                    );
                    DjicaSite::new(
                        project(&k, site),
                        precision,
                        scales,
                        Seed::Fixed(1).rng(&format!("s{s}")),
                    )
                })
                .collect();
            let taus_g: Vec<f64> = sites.iter().map(|s| s.scales().tau_g).collect();
            let taus_h: Vec<f64> = sites.iter().map(|s| s.scales().tau_h).collect();
            let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(1), 4);
            let mut agg = DjicaAggregator::new(
                DMatrix::identity(20, 20),
                DVector::zeros(20),
                RateController::new(Schedule::Constant, 0.5, 1e-6),
            );
            let mut times = Vec::new();
            let cpu = Instant::now();
            for _ in 0..reps {
                let t = std::time::Instant::now();
                let eg = noise.draw(&taus_g, 400).unwrap();
                let eh = noise.draw(&taus_h, 20).unwrap();
                let (w, b) = (agg.w().clone(), agg.b().clone());
                let releases: Vec<_> = sites
                    .iter_mut()
                    .enumerate()
                    .map(|(s, site)| {
                        site.release(
                            &w,
                            &b,
                            ClipBounds::default(),
                            NoiseScheme::Cape,
                            Some((&eg[s], &eh[s])),
                            4,
                        )
                    })
                    .collect();
                let (g, h) = aggregate(&releases);
                agg.apply(&g, &h);
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let cpu_ms = cpu.elapsed().as_secs_f64() * 1e3 / reps as f64;
            times.sort_by(f64::total_cmp);
            println!(
                "M = {subjects}, {precision:?}: one 4-site iteration CPU {cpu_ms:.2} ms; wall min {:.2} ms, median {:.2} ms",
                times[0],
                times[reps / 2]
            );
        }
    }
}

/// auto | anneal | constant | decay:HALF_LIFE
fn parse_schedule(s: &str) -> Option<Schedule> {
    match s {
        "auto" => None,
        "anneal" => Some(Schedule::RUNICA),
        "constant" => Some(Schedule::Constant),
        s if s.starts_with("decay:") => {
            Some(Schedule::Decay { half_life: s[6..].parse().expect("decay:HALF_LIFE") })
        }
        s => panic!("unknown schedule {s}"),
    }
}
