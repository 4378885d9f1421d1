//! capePCA + capeDJICA timings inside a browser: the workload of `cape bench djica` at M = 256
//! (S = 4, D = 900, R = 20; CAPE noise, subject level), compiled to wasm32 and run in headless
//! Chromium, printed as one JSON line of the same shape as the native figures
//! (`{"bench":"djica",…}`), for the wasm/native ratio.
//!
//! Not a test of correctness: its name keeps it out of the normal test command
//! (`--test 'wasm_*'`) and `#[ignore]` out of a bare `cargo test --target wasm32…`.
//! `scripts/bench` runs it in release and merges it with the native figures:
//!
//! `WASM_BINDGEN_TEST_TIMEOUT=3600 cargo test --release -p capelab-core --target wasm32-unknown-unknown --test bench_wasm_djica -- --include-ignored --nocapture`
//!
//! Settings from the build environment: `CAPE_BENCH_DJICA_SUBJECTS` (default 256) and
//! `CAPE_BENCH_DJICA_ITERATIONS` (50). capePCA is done site by site (the same steps as
//! `pca::cape_pca`), yielding to the event loop in between: ChromeDriver gives up on a page that
//! is busy for 30 s. Last, the browser's arithmetic ceiling (`capelab_core::roofline`) for the
//! ratio of ceilings next to the ratio of runtimes.
#![cfg(target_arch = "wasm32")]

use capelab_core::djica::{
    CapeZeroSumNoise, DjicaConfig, Method, NoiseScheme, PrivacyUnit, ProjectedSite, Schedule,
    ZeroSumNoise, run_djica,
};
use capelab_core::fmri::{SyntheticConfig, generate};
use capelab_core::pca::{
    CovarianceSensitivity, PrincipalSubspace, Whitening, aggregate, project, site_covariance,
    site_release, upper_len,
};
use capelab_core::rng::Seed;
use serde_json::json;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn now_ms() -> f64 {
    web_sys::window().expect("a window").performance().expect("performance").now()
}

async fn yield_to_browser() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        web_sys::window()
            .expect("a window")
            .set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, 0)
            .expect("setTimeout");
    });
    wasm_bindgen_futures::JsFuture::from(promise).await.expect("a timer never fails");
}

#[wasm_bindgen_test]
#[ignore = "a benchmark: run with --include-ignored (scripts/bench)"]
async fn djica_timings() {
    let subjects: usize =
        option_env!("CAPE_BENCH_DJICA_SUBJECTS").unwrap_or("256").parse().expect("a number");
    let iterations: usize =
        option_env!("CAPE_BENCH_DJICA_ITERATIONS").unwrap_or("50").parse().expect("a number");
    let (sites, r, jmax) = (4usize, 20usize, 1000usize);
    let t = now_ms();
    let config = SyntheticConfig::well_conditioned(subjects, sites);
    let study = generate(&config, 1).expect("a study");
    let generate_s = (now_ms() - t) / 1e3;
    yield_to_browser().await;

    let mut pca_ms = 0.0;
    let t = now_ms();
    let level = capelab_core::djica::GaussianLevel { epsilon: 1.0, delta: 1e-5 };
    let z = level.multiplier().expect("a valid level");
    let sensitivity = CovarianceSensitivity::default();
    let taus: Vec<f64> = study
        .sites
        .iter()
        .map(|s| sensitivity.delta(s.samples(), s.max_subject_len()) * z)
        .collect();
    let d = study.sites[0].voxels();
    let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(1), sites);
    let shares = noise.draw(&taus, upper_len(d)).expect("zero-sum noise");
    pca_ms += now_ms() - t;
    let mut releases = vec![];
    for (s, site) in study.sites.iter().enumerate() {
        yield_to_browser().await;
        let t = now_ms();
        let mut rng = Seed::Fixed(1).rng(&format!("site/{s}/pca-noise"));
        releases.push(site_release(
            &site_covariance(site),
            NoiseScheme::Cape,
            Some(&shares[s]),
            taus[s],
            sites,
            &mut rng,
        ));
        pca_ms += now_ms() - t;
    }
    yield_to_browser().await;
    let t = now_ms();
    let subspace = PrincipalSubspace::from_covariance(&aggregate(&releases), r).expect("R ≤ D");
    let k = subspace.projection(Whitening::Runica).expect("whitening");
    let projected: Vec<ProjectedSite> = study
        .sites
        .iter()
        .map(|s| ProjectedSite { x: project(&k, s), max_subject_len: s.max_subject_len() })
        .collect();
    pca_ms += now_ms() - t;
    yield_to_browser().await;

    let djica = DjicaConfig {
        method: Method::Cape,
        unit: PrivacyUnit::Subject,
        max_iterations: iterations,
        schedule: Some(Schedule::Constant),
        average_tail: 0.0,
        ..DjicaConfig::default()
    };
    let t = now_ms();
    let result =
        run_djica(projected, &djica, Seed::Fixed(1), &mut noise, None, &mut |_| {}).expect("a run");
    let iteration_ms = (now_ms() - t) / result.privacy.iterations as f64;
    let pca_s = pca_ms / 1e3;
    yield_to_browser().await;
    let mut now_s = || now_ms() / 1e3;
    let f64_gflops = capelab_core::roofline::gemm_gflops_f64(&mut now_s);
    let f32_gflops = capelab_core::roofline::gemm_gflops_f32(&mut now_s);
    let line = json!({
        "bench": "djica",
        "runner": "wasm32 (headless Chromium)",
        "build": if cfg!(debug_assertions) { "debug" } else { "release" },
        "cells": [{
            "subjects": subjects, "sites": sites, "voxels": d, "components": r,
            "timepoints": config.timepoints, "generate_s": generate_s, "pca_s": pca_s,
            "iterations": result.privacy.iterations, "iteration_ms": iteration_ms, "jmax": jmax,
            "end_to_end_s": pca_s + jmax as f64 * iteration_ms / 1e3,
        }],
        "ceiling": { "f64_gflops": f64_gflops, "f32_gflops": f32_gflops },
    });
    console_log!("{line}");
}
