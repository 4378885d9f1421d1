//! capeDJICA gives the same bits in the browser as natively: a few CAPE iterations (time-point
//! level, zero-sum noise through `crate::cape`) on a tiny study, digested (FNV-1a over the bits
//! of W, b and every iteration's q_NGI).
//!
//! `cargo test -p capelab-core --test wasm_djica` (native) and
//! `cargo test -p capelab-core --target wasm32-unknown-unknown --test wasm_djica` (headless Chromium).
//!
//! How the two are tied together: both builds run the same function [`digest_of_run`] and assert
//! the same constant [`EXPECTED_DIGEST`]. The constant was recorded from the native build; the
//! native test keeps it honest (if the numerics change, the native test fails and the constant is
//! re-recorded on purpose), and the browser test shows wasm32 reproduces it bit for bit. Both also
//! check that the run learns (q falls well below that of W = I), so neither passes on a digest of
//! garbage.
//!
//! Why the bits can agree: the gradient path uses only +, −, ×, ÷ in a fixed order (no FMA, no
//! libm: `djica::logistic`, `djica::kernels`), the data here are built from integer arithmetic
//! (the synthetic generator calls exp/ln, whose last bit may differ between glibc and wasm's
//! libm), and the noise is ChaCha20 plus the ziggurat normal sampler, which only calls exp/ln in
//! its rare wedge and tail branches. PCA (an eigendecomposition) is left out for the same reason.
//!
//! The wasm build has `+simd128` (`.cargo/config.toml`): LLVM vectorises those loops into
//! f64x2/f32x4 lanes, which are IEEE operations like the scalar ones (SIMD128 has no fused
//! multiply–add; only the separate relaxed-simd proposal does, and it is not enabled), so the
//! digest must not change. Checked in the dev and release profiles.

use capelab_core::djica::{
    CapeZeroSumNoise, DjicaConfig, GaussianLevel, Method, PrivacyUnit, ProjectedSite, run_djica,
};
use capelab_core::ica_quality::q_ngi;
use capelab_core::rng::Seed;
use nalgebra::DMatrix;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::*;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test_configure!(run_in_browser);

/// The digest of [`digest_of_run`] as the native build computes it.
const EXPECTED_DIGEST: u64 = 0x0cce_1c92_df70_fb5c;

const R: usize = 3;

/// A xorshift stream and heavy-tailed sources from integer arithmetic only: the product of two
/// centred uniforms has excess kurtosis > 0, enough for infomax.
fn sources(samples: usize, state: &mut u64) -> DMatrix<f64> {
    let mut uniform = || {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        (*state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    DMatrix::from_fn(R, samples, |_, _| 12.0 * uniform() * uniform())
}

fn mixing() -> DMatrix<f64> {
    DMatrix::from_row_slice(R, R, &[1.0, 0.3, -0.2, 0.25, 0.9, 0.1, -0.15, 0.2, 1.1])
}

/// Runs 20 capeDJICA iterations over 4 sites; returns the digest and the first and last q.
fn digest_of_run() -> (u64, f64, f64) {
    let a = mixing();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let sites: Vec<ProjectedSite> = (0..4)
        .map(|_| ProjectedSite { x: &a * sources(400, &mut state) * 0.25, max_subject_len: 100 })
        .collect();
    let config = DjicaConfig {
        method: Method::Cape,
        unit: PrivacyUnit::TimePoint,
        level: GaussianLevel { epsilon: 0.5, delta: 1e-2 },
        max_iterations: 20,
        ..DjicaConfig::default()
    };
    let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(11), 4);
    let result =
        run_djica(sites, &config, Seed::Fixed(11), &mut noise, Some(&a), &mut |_| {}).unwrap();
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let mut eat = |v: f64| {
        for byte in v.to_bits().to_le_bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    result.w.iter().chain(result.b.iter()).for_each(|&v| eat(v));
    result.history.iter().for_each(|h| eat(h.q.unwrap()));
    let start = q_ngi(&a);
    (hash, start, result.q.unwrap())
}

fn check() {
    let (digest, start, end) = digest_of_run();
    assert!(end < 0.5 * start, "the run learns: q {start} → {end}");
    assert_eq!(digest, EXPECTED_DIGEST, "digest {digest:#x}");
}

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn native_run_has_the_recorded_digest() {
    check();
}

#[cfg(target_arch = "wasm32")]
#[wasm_bindgen_test]
fn browser_run_has_the_native_digest() {
    check();
}
