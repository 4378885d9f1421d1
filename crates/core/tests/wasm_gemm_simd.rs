//! faer's large products (capePCA's covariances, the projection) run on the `gemm` crate, whose
//! wasm32 simd128 kernels stay off unless its `wasm-simd128-enable` feature is on: without it the
//! browser ran gemm's scalar kernel (capePCA at M = 256 took 9.18 s in Chromium, 5.73 s with it;
//! the in-cache f64 product rate went from 7.96 to 14.4 GFLOP/s, `scripts/bench`).
//! capelab-core turns the feature on through its own wasm32 dependency on `gemm-common`, which
//! only works while that is the very `gemm-common` faer uses.
//!
//! `cargo test -p capelab-core --test wasm_gemm_simd` checks the lock file holds one
//! `gemm-common`; `cargo test -p capelab-core --target wasm32-unknown-unknown --test wasm_gemm_simd`
//! checks in headless Chromium that the switch is on.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::*;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test_configure!(run_in_browser);

#[cfg(target_arch = "wasm32")]
#[wasm_bindgen_test]
fn gemm_runs_its_simd128_kernels_in_the_browser() {
    assert!(gemm_common::get_wasm_simd128(), "gemm's simd128 kernels are off");
}

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn the_lock_file_holds_one_gemm_common_the_one_whose_feature_core_sets() {
    let lock = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    let text = std::fs::read_to_string(&lock).expect("the workspace's Cargo.lock");
    let versions: Vec<&str> = text
        .split("[[package]]")
        .filter(|p| p.lines().any(|l| l.trim() == "name = \"gemm-common\""))
        .filter_map(|p| p.lines().find_map(|l| l.trim().strip_prefix("version = ")))
        .collect();
    assert_eq!(
        versions.len(),
        1,
        "gemm-common {versions:?}: faer's must be the one capelab-core's Cargo.toml names, or the \
         browser's products fall back to gemm's scalar kernel"
    );
    let manifest = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml"),
    )
    .expect("the workspace's Cargo.toml");
    let pinned = versions[0].trim_matches('"');
    assert!(
        manifest.contains(&format!("gemm-common = {{ version = \"{pinned}\"")),
        "the workspace's gemm-common entry must name the locked version {pinned}"
    );
}
