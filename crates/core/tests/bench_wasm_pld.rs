//! The PLD accountant's timings inside a browser: the workload of `cape bench pld` (T = 20 000
//! Poisson-subsampled Gaussian releases, z = 2.042, q = 100/30162, δ = 1e−5, grid steps 1e−4 and
//! 1e−3) compiled to wasm32 and run in headless Chromium, printed as one JSON line
//! `{"bench":"pld","runner":"wasm",…}` for the wasm/native ratio.
//!
//! Not a test of correctness: its name keeps it out of the normal test command
//! (`--test 'wasm_*'`) and `#[ignore]` out of a bare `cargo test --target wasm32…`.
//! `scripts/bench` runs it in release:
//!
//! `cargo test --release -p capelab-core --target wasm32-unknown-unknown --test bench_wasm_pld -- --include-ignored --nocapture`
#![cfg(target_arch = "wasm32")]

use capelab_core::accountant::{Event, Mechanism, PldAccountant};
use serde_json::json;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn now_ms() -> f64 {
    web_sys::window().expect("a window").performance().expect("performance").now()
}

#[wasm_bindgen_test]
#[ignore = "a benchmark: run with --include-ignored (scripts/bench)"]
fn pld_timings() {
    let repetitions: usize =
        option_env!("CAPE_BENCH_PLD_REPETITIONS").unwrap_or("5").parse().expect("a number");
    let event = Event::new(
        "bench",
        Mechanism::PoissonSampledGaussian {
            noise_multiplier: 2.042,
            sampling_rate: 100.0 / 30162.0,
        },
        20_000,
    )
    .expect("a valid event");
    let mut cases = vec![];
    for interval in [1e-4, 1e-3] {
        let mut times = vec![];
        let mut epsilon = f64::NAN;
        for _ in 0..repetitions {
            let t = now_ms();
            let mut a = PldAccountant::with_interval(interval).expect("a valid grid");
            a.compose(&event);
            epsilon = a.epsilon(1e-5).expect("a valid δ").epsilon;
            times.push(now_ms() - t);
        }
        times.sort_by(f64::total_cmp);
        cases.push(json!({
            "interval": interval,
            "epsilon": epsilon,
            "median_ms": times[times.len() / 2],
            "repetitions": repetitions,
        }));
    }
    let line = json!({"bench": "pld", "runner": "wasm", "cases": cases});
    wasm_bindgen_test::console_log!("{line}");
}
