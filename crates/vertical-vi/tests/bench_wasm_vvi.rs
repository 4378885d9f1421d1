//! One DP-VI step of seed 004 inside a browser: `cape bench vertical-vi`'s workload (P = 2,
//! K = 20, B = 100, C = 1, σ = 2.042 on CPS1988, dealer and both parties in one wasm32 process,
//! every MPC round in memory) in headless Chromium, printed as one JSON line
//! `{"bench":"vertical-vi","runner":"wasm",…}` for the wasm/native ratio. The relay's hops are
//! not in it: a step over the relay adds its 54 rounds' round trips.
//!
//! Not a test of correctness: its name keeps it out of the test command and `#[ignore]` out of a
//! bare `cargo test --target wasm32…`. CPS1988 is compiled in from `data/cps1988.csv` (written
//! by set-up). `scripts/bench` runs it in release:
//!
//! `cargo test --release -p capelab-vertical-vi --target wasm32-unknown-unknown --test bench_wasm_vvi -- --include-ignored --nocapture`
#![cfg(target_arch = "wasm32")]

use capelab_core::rng::Seed;
use capelab_vertical_vi::batch::PartyLocal;
use capelab_vertical_vi::cps1988;
use capelab_vertical_vi::model::{Sampling, TrainConfig, train};
use capelab_vertical_vi::mpc::GradientConfig;
use capelab_vertical_vi::mpc::circuit::mpc_clipped_sum;
use serde_json::json;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const CPS1988: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/cps1988.csv"));

fn now_ms() -> f64 {
    web_sys::window().expect("a window").performance().expect("performance").now()
}

#[wasm_bindgen_test]
#[ignore = "a benchmark: run with --include-ignored (scripts/bench)"]
fn one_mpc_step() {
    let steps: usize =
        option_env!("CAPE_BENCH_VVI_STEPS").unwrap_or("10").parse().expect("a number");
    let (tables, _) = cps1988::load(CPS1988).expect("CPS1988 loads");
    let blocks: Vec<_> = tables.into_iter().map(|t| t.block).collect();
    let config = TrainConfig {
        components: 20,
        steps,
        sampling: Sampling::Fixed { size: 100 },
        clip: 1.0,
        noise_multiplier: 2.042,
        seed: Seed::Fixed(1),
        ..TrainConfig::default()
    };
    let mut times = Vec::new();
    let mut rounds = 0;
    let mut bytes = Vec::new();
    let mut step = 0u64;
    let mut engine = |pi: &[f64], locals: &[PartyLocal], clip: f64| -> Vec<f64> {
        step += 1;
        let cfg = GradientConfig::new(pi.to_vec(), clip, 2.042);
        let start = now_ms();
        let (g, report) = mpc_clipped_sum(locals, &cfg, Seed::Fixed(step)).expect("the MPC step");
        times.push(now_ms() - start);
        rounds = report.rounds;
        bytes = report.bytes_sent;
        g
    };
    train(&cps1988::schema(), &blocks, &config, &mut engine, &mut |_| {});
    times.sort_by(f64::total_cmp);
    let line = json!({
        "bench": "vertical-vi", "runner": "wasm", "data": "CPS1988", "parties": 2,
        "components": 20, "batch": 100, "steps": steps,
        "modes": [{"mode": "mpc", "median_ms": times[times.len() / 2], "min_ms": times[0],
                   "rounds": rounds, "bytes_sent_per_party": bytes}],
    });
    wasm_bindgen_test::console_log!("{line}");
}
