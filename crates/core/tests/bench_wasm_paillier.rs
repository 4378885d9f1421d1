//! Paillier-2048 and EFPSN's Phase 1 inside a browser: the workload of `cape bench paillier`
//! compiled to wasm32 and run in headless Chromium, printed as one JSON line
//! `{"bench":"paillier","runner":"wasm",…}` for the ratios to native and to python-phe.
//!
//! Not a test of correctness: its name keeps it out of the normal test command
//! (`--test 'wasm_*'`) and `#[ignore]` out of a bare `cargo test --target wasm32…`.
//! `scripts/bench` runs it in release:
//!
//! `cargo test --release -p capelab-core --target wasm32-unknown-unknown --test bench_wasm_paillier -- --include-ignored --nocapture`
#![cfg(target_arch = "wasm32")]

use capelab_core::efpsn::bench::phase1_on_a_ring;
use capelab_core::rng::derive;
use capelab_paillier::{DjnEncryptor, KeySize, Keypair};
use serde_json::json;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn now_ms() -> f64 {
    web_sys::window().expect("a window").performance().expect("performance").now()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[wasm_bindgen_test]
#[ignore = "a benchmark: run with --include-ignored (scripts/bench)"]
fn paillier_timings() {
    let repetitions: usize =
        option_env!("CAPE_BENCH_PAILLIER_REPETITIONS").unwrap_or("11").parse().expect("a number");
    let mut rng = derive(1, "bench/paillier");
    let mut keys = vec![];
    let mut keygen = vec![];
    for _ in 0..5 {
        let t = now_ms();
        keys.push(Keypair::generate(KeySize::Standard2048, &mut rng));
        keygen.push(now_ms() - t);
    }
    let (mut enc, mut dec) = (vec![], vec![]);
    for i in 0..repetitions {
        let t = now_ms();
        let c = keys[0].public.encrypt_i64(i as i64 - 5, &mut rng);
        enc.push(now_ms() - t);
        let t = now_ms();
        assert_eq!(keys[0].secret.decrypt_i64(&c).expect("decrypts"), i as i64 - 5);
        dec.push(now_ms() - t);
    }
    let t = now_ms();
    let djn = DjnEncryptor::new(&keys[0].public, &mut rng);
    let djn_setup = now_ms() - t;
    let mut enc_djn = vec![];
    for i in 0..repetitions {
        let t = now_ms();
        let c = djn.encrypt_i64(i as i64 - 5, &mut rng);
        enc_djn.push(now_ms() - t);
        assert_eq!(keys[0].secret.decrypt_i64(&c).expect("decrypts"), i as i64 - 5);
    }
    let t = now_ms();
    phase1_on_a_ring(keys, 1).expect("Phase 1 completes");
    let phase1 = now_ms() - t;
    let cases = json!([
        {"op": "keygen", "median_ms": median(keygen), "repetitions": 5},
        {"op": "encrypt", "median_ms": median(enc), "repetitions": repetitions},
        {"op": "decrypt", "median_ms": median(dec), "repetitions": repetitions},
        {"op": "djn_setup", "median_ms": djn_setup, "repetitions": 1},
        {"op": "encrypt_djn", "median_ms": median(enc_djn), "repetitions": repetitions},
        {"op": "phase1_ring5", "median_ms": phase1, "repetitions": 1},
    ]);
    let line = json!({"bench": "paillier", "runner": "wasm", "cases": cases});
    wasm_bindgen_test::console_log!("{line}");
}
