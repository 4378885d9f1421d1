//! SecureAgg timings inside a browser: the workload of `cape bench secagg` (per round, per role,
//! on the bare roles through `Lockstep`), compiled to wasm32 and run in headless Chromium, printed
//! as one JSON line of the same shape as the native figures (`{"bench":"secagg",…}`).
//!
//! Not a test of correctness (though it checks every sum): its name keeps it out of the normal
//! test command (`--test 'wasm_*'`) and `#[ignore]` out of a bare `cargo test --target wasm32…`.
//! `scripts/bench` runs it in release and merges it with the native figures:
//!
//! `WASM_BINDGEN_TEST_TIMEOUT=3600 cargo test --release -p capelab-core --target wasm32-unknown-unknown --test bench_wasm_secagg -- --include-ignored --nocapture`
//!
//! The grid comes from the build environment: `CAPE_BENCH_SITES` (default "4,16,64"),
//! `CAPE_BENCH_LENGTHS` ("1000,100000"), `CAPE_BENCH_REPETITIONS` ("3"), and
//! `CAPE_BENCH_DROPOUTS` ("0": nobody leaves; "1": the last S − t sites leave after R1, as
//! `cape bench secagg --with-dropouts`).
//! Timing uses `performance.now()`, which Chromium coarsens (to 0.1 ms without cross-origin
//! isolation): sub-millisecond cells are rough, the large ones are what the ratio is about.
#![cfg(target_arch = "wasm32")]

use capelab_core::secagg::lockstep::{Actor, Lockstep, Work};
use capelab_core::secagg::{AggregatorConfig, Encoding, Params, Phase, SiteInput};
use capelab_core::wire::ParticipantId;
use serde_json::json;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn list<T: std::str::FromStr>(value: Option<&str>, default: &str) -> Vec<T> {
    value
        .unwrap_or(default)
        .split(',')
        .map(|x| x.trim().parse().unwrap_or_else(|_| panic!("bad benchmark setting {x:?}")))
        .collect()
}

fn now_ms() -> f64 {
    web_sys::window().expect("a window").performance().expect("performance").now()
}

#[derive(Default, Clone)]
struct RoundTiming {
    site_ms: Vec<f64>,
    site_bytes: usize,
    aggregator_ms: f64,
    aggregator_bytes: usize,
}

/// Lets the browser run its event loop: a long synchronous test starves the renderer, and
/// ChromeDriver gives up on a page that does not answer for 30 s.
async fn yield_to_browser() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        web_sys::window()
            .expect("a window")
            .set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, 0)
            .expect("setTimeout");
    });
    wasm_bindgen_futures::JsFuture::from(promise).await.expect("a timer never fails");
}

async fn measure(s: u32, len: usize, dropped: u32, seed: u64) -> Vec<RoundTiming> {
    let params = Params::new((1..=s).collect(), len, Encoding::Ring).unwrap();
    let config = AggregatorConfig::new(params).unwrap().with_retain_masked_inputs(false);
    let inputs =
        (1..=s).map(|id| SiteInput::Ring((0..len as u64).map(|j| j * u64::from(id)).collect()));
    let leaving: Vec<ParticipantId> = (s - dropped + 1..=s).collect();
    let mut ls = Lockstep::new(config, inputs.collect(), seed, &leaving).unwrap();
    let mut rounds = vec![RoundTiming::default(); 4];
    let mut probe = |w: &mut Work<'_>| {
        let t0 = now_ms();
        w.run();
        let ms = now_ms() - t0;
        let r = &mut rounds[match w.phase {
            Phase::AdvertiseKeys => 0,
            Phase::ShareKeys => 1,
            Phase::MaskedInput => 2,
            Phase::Unmask => 3,
        }];
        match w.actor {
            Actor::Site(_) => {
                r.site_ms.push(ms);
                r.site_bytes = r.site_bytes.max(w.sent_bytes());
            }
            Actor::Aggregator => {
                r.aggregator_ms += ms;
                r.aggregator_bytes += w.sent_bytes();
            }
        }
    };
    // One round at a time, handing the event loop back in between.
    while ls.round(&mut probe).unwrap().is_some() {
        yield_to_browser().await;
    }
    let expected: Vec<u64> = (0..len as u64)
        .map(|j| (1..=u64::from(s - dropped)).fold(0u64, |a, id| a.wrapping_add(j * id)))
        .collect();
    assert_eq!(ls.outcome().unwrap().unwrap().sum, expected, "S = {s}, D = {len}");
    rounds
}

fn median_min(xs: &mut [f64]) -> (f64, f64) {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    let median = if n % 2 == 1 { xs[n / 2] } else { (xs[n / 2 - 1] + xs[n / 2]) / 2.0 };
    (median, xs[0])
}

#[wasm_bindgen_test]
#[ignore = "timing, minutes long: scripts/bench runs it with --include-ignored"]
async fn secagg_round_timings_in_the_browser() {
    let sites: Vec<u32> = list(option_env!("CAPE_BENCH_SITES"), "4,16,64");
    let lengths: Vec<usize> = list(option_env!("CAPE_BENCH_LENGTHS"), "1000,100000");
    let repetitions: usize = list(option_env!("CAPE_BENCH_REPETITIONS"), "3")[0];
    let with_dropouts = list::<u8>(option_env!("CAPE_BENCH_DROPOUTS"), "0")[0] != 0;
    let mut cells = Vec::new();
    for &s in &sites {
        let dropped =
            if with_dropouts { s - Params::default_threshold(s as usize) as u32 } else { 0 };
        for &len in &lengths {
            // One discarded run first: V8 compiles wasm with its baseline tier and optimises
            // hot functions later, which would otherwise land in the first repetition.
            measure(s, len, dropped, u64::MAX).await;
            let mut runs: Vec<Vec<RoundTiming>> = Vec::with_capacity(repetitions);
            for rep in 0..repetitions {
                runs.push(measure(s, len, dropped, rep as u64).await);
            }
            for round in 0..4 {
                let mut site: Vec<f64> = runs
                    .iter()
                    .map(|r| {
                        r[round].site_ms.iter().sum::<f64>() / r[round].site_ms.len().max(1) as f64
                    })
                    .collect();
                let mut agg: Vec<f64> = runs.iter().map(|r| r[round].aggregator_ms).collect();
                let (site_median, site_min) = median_min(&mut site);
                let (agg_median, agg_min) = median_min(&mut agg);
                for (role, median, min, bytes) in [
                    ("site", site_median, site_min, runs[0][round].site_bytes),
                    ("aggregator", agg_median, agg_min, runs[0][round].aggregator_bytes),
                ] {
                    cells.push(json!({
                        "sites": s, "length": len, "dropped": dropped, "round": format!("R{round}"),
                        "role": role, "median_ms": median, "min_ms": min, "bytes": bytes,
                    }));
                }
            }
        }
    }
    let run = json!({
        "bench": "secagg",
        "runner": "wasm32 (headless Chromium)",
        "build": if cfg!(debug_assertions) { "debug" } else { "release" },
        "repetitions": repetitions,
        "with_dropouts": with_dropouts,
        "cells": cells,
    });
    // serde_json writes keys in alphabetical order, so the line starts with {"bench":"secagg",
    // which is how `cape bench secagg --wasm` finds it in the runner's output.
    console_log!("{run}");
}
