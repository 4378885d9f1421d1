//! The site gradient of capeDJICA (spec §5 steps 2–5) against a direct per-sample computation,
//! the clip as a property, and the sensitivities as the spec states them. Native only (proptest).
#![cfg(not(target_arch = "wasm32"))]

use capelab_core::djica::GaussianLevel;
use capelab_core::djica::calibration::{PrivacyUnit, mean_sensitivity};
use capelab_core::djica::gradient::{ClipBounds, GradientWorkspace, SampleColumns, site_gradient};
use capelab_core::djica::site::SiteNoiseScales;
use capelab_core::rng::derive;
use nalgebra::{DMatrix, DVector};
use proptest::prelude::*;
use rand::RngExt;
use rand_distr::StandardNormal;

fn logistic(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// Algorithm 4 steps 2–5 written out literally: form every G_{s,n}, clip it, average.
fn reference(
    x: &DMatrix<f64>,
    w: &DMatrix<f64>,
    b: &DVector<f64>,
    bounds: ClipBounds,
) -> (DMatrix<f64>, DVector<f64>, Vec<f64>) {
    let r = w.nrows();
    let mut g = DMatrix::zeros(r, r);
    let mut h = DVector::zeros(r);
    let mut norms = Vec::new();
    for x_n in x.column_iter() {
        let z = w * x_n + b;
        let y = z.map(|v| 1.0 - 2.0 * logistic(v));
        let g_n = (DMatrix::identity(r, r) + &y * z.transpose()) * w;
        let norm = g_n.norm();
        norms.push(norm);
        g += g_n / (norm / bounds.gradient).max(1.0);
        h += &y / (y.norm() / bounds.bias).max(1.0);
    }
    let n = x.ncols() as f64;
    (g / n, h / n, norms)
}

fn cols(x: &DMatrix<f64>) -> SampleColumns<f64> {
    SampleColumns::from_matrix(x)
}

fn cols32(x: &DMatrix<f64>) -> SampleColumns<f32> {
    SampleColumns::from_matrix(x)
}

fn random_matrix(seed: u64, rows: usize, cols: usize, scale: f64) -> DMatrix<f64> {
    let mut rng = derive(seed, "test-matrix");
    DMatrix::from_fn(rows, cols, |_, _| scale * rng.sample::<f64, _>(StandardNormal))
}

#[test]
fn fast_gradient_equals_the_literal_algorithm() {
    // Sizes chosen so that several blocks, a partial last block and both clipped and unclipped
    // samples occur.
    let (r, n) = (7, 1000);
    let x = random_matrix(1, r, n, 2.0);
    let w = random_matrix(2, r, r, 0.8) + DMatrix::identity(r, r);
    let b = DVector::from_iterator(r, (0..r).map(|i| 0.1 * i as f64 - 0.3));
    // Put B_G at the median per-sample norm so that half the samples are clipped.
    let (_, _, mut unclipped) =
        reference(&x, &w, &b, ClipBounds { gradient: f64::INFINITY, bias: f64::INFINITY });
    unclipped.sort_by(f64::total_cmp);
    let bounds =
        ClipBounds { gradient: 0.5 * (unclipped[n / 2] + unclipped[n / 2 + 1]), bias: 2.0 };
    let (g_ref, h_ref, norms) = reference(&x, &w, &b, bounds);
    let clipped_ref = norms.iter().filter(|&&v| v > bounds.gradient).count();
    assert!(clipped_ref > 50 && clipped_ref < n - 50, "test needs a mix: {clipped_ref}");

    let mut ws = GradientWorkspace::with_block(r, 128);
    let got = site_gradient(&cols(&x), &w, &b, bounds, &mut ws);
    assert_eq!(got.clipped, clipped_ref);
    assert_eq!(got.samples, n);
    let scale = g_ref.norm();
    assert!((&got.g - &g_ref).norm() < 1e-12 * scale, "{}", (&got.g - &g_ref).norm());
    assert!((&got.h - &h_ref).norm() < 1e-13);

    // The f32 path on the same (f32-representable) data agrees to f32 accuracy.
    let x32 = x.map(|v| v as f32 as f64);
    let (g32_ref, h32_ref, norms32) = reference(&x32, &w, &b, bounds);
    let got32 =
        site_gradient(&cols32(&x), &w, &b, bounds, &mut GradientWorkspace::with_block(r, 100));
    let clipped32 = norms32.iter().filter(|&&v| v > bounds.gradient).count();
    assert_eq!(got32.clipped, clipped32);
    assert!((&got32.g - &g32_ref).norm() < 1e-5 * scale, "{}", (&got32.g - &g32_ref).norm());
    assert!((&got32.h - &h32_ref).norm() < 1e-6);

    // A second call with the same workspace (reuse) and a different block size agree.
    let again =
        site_gradient(&cols(&x), &w, &b, bounds, &mut GradientWorkspace::with_block(r, 1000));
    assert!((&again.g - &got.g).norm() < 1e-12 * scale);
}

#[test]
fn per_sample_norm_identity_matches_the_direct_frobenius_norm() {
    // ‖(I + yzᵀ)W‖_F² = ‖W‖² + 2(Wᵀy)·(Wᵀz) + ‖y‖²‖Wᵀz‖², checked on random vectors.
    for seed in 0..20 {
        let r = 3 + seed as usize % 9;
        let w = random_matrix(100 + seed, r, r, 1.0);
        let y = random_matrix(200 + seed, r, 1, 1.0);
        let z = random_matrix(300 + seed, r, 1, 3.0);
        let direct = ((DMatrix::identity(r, r) + &y * z.transpose()) * &w).norm_squared();
        let wty = w.transpose() * &y;
        let wtz = w.transpose() * &z;
        let formula =
            w.norm_squared() + 2.0 * wty.dot(&wtz) + y.norm_squared() * wtz.norm_squared();
        assert!((direct - formula).abs() < 1e-10 * direct, "{direct} vs {formula}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Every clipped per-sample gradient has norm ≤ B_G, so the mean has too and one sample
    /// moves the site mean by at most 2B_G/N_s: checked by replacing one sample.
    #[test]
    fn clipped_gradient_never_exceeds_the_bound(
        seed in 0u64..10_000,
        r in 2usize..8,
        n in 1usize..40,
        data_scale in 0.1f64..50.0,
        bound in 0.5f64..40.0,
    ) {
        let x = random_matrix(seed, r, n, data_scale);
        let w = random_matrix(seed + 1, r, r, 1.5);
        let b = random_matrix(seed + 2, r, 1, 1.0).column(0).into_owned();
        let bounds = ClipBounds { gradient: bound, bias: bound.sqrt() };
        let mut ws = GradientWorkspace::with_block(r, 16);
        let mut ws32 = GradientWorkspace::<f32>::with_block(r, 16);
        // One sample alone: its clipped gradient is the mean, in either precision.
        for j in 0..n {
            let single = x.columns(j, 1).into_owned();
            let g = site_gradient(&cols(&single), &w, &b, bounds, &mut ws);
            prop_assert!(g.g.norm() <= bound * (1.0 + 1e-12), "{} > {}", g.g.norm(), bound);
            prop_assert!(g.h.norm() <= bounds.bias * (1.0 + 1e-12));
            let g32 = site_gradient(&cols32(&single), &w, &b, bounds, &mut ws32);
            prop_assert!(g32.g.norm() <= bound * (1.0 + 1e-12), "f32: {} > {}", g32.g.norm(), bound);
            prop_assert!(g32.h.norm() <= bounds.bias * (1.0 + 1e-12));
        }
        let before = site_gradient(&cols(&x), &w, &b, bounds, &mut ws);
        let mut replaced = x.clone();
        replaced.set_column(0, &random_matrix(seed + 3, r, 1, 100.0).column(0));
        let after = site_gradient(&cols(&replaced), &w, &b, bounds, &mut ws);
        let moved = (&after.g - &before.g).norm();
        prop_assert!(moved <= 2.0 * bound / n as f64 * (1.0 + 1e-9));
    }
}

#[test]
fn sensitivities_are_as_the_spec_states() {
    // Subject level: Δ_G = 2B_G·N_m/N_s = 2B_G/M_s; time point: 2B_G/N_s (spec §5, §9.4–9.5).
    let (m_s, n_m) = (64, 250);
    let n_s = m_s * n_m;
    let subject = mean_sensitivity(PrivacyUnit::Subject, 30.0, n_s, n_m);
    let point = mean_sensitivity(PrivacyUnit::TimePoint, 30.0, n_s, n_m);
    assert!((subject - 60.0 / 64.0).abs() < 1e-15);
    assert!((point - 60.0 / 16_000.0).abs() < 1e-18);

    // τ = Δ·c(δ)/ε with c(1e-2) = 3.10751 (spec conventions), bias with B_h = √30.
    let level = GaussianLevel { epsilon: 0.5, delta: 1e-2 };
    let s =
        SiteNoiseScales::new(PrivacyUnit::Subject, ClipBounds::default(), Some(level), n_s, n_m);
    assert!((s.tau_g - subject * 3.10751 / 0.5).abs() < 1e-4);
    assert!((s.delta_h - 2.0 * 30f64.sqrt() / 64.0).abs() < 1e-15);
    assert!((s.tau_h / s.delta_h - s.tau_g / s.delta_g).abs() < 1e-12);
    // §9.4: the aggregate CAPE noise per entry at M = 256, S = 4 is τ_G/S ≈ 1.457.
    assert!((s.tau_g / 4.0 - 1.457).abs() < 1e-3, "{}", s.tau_g / 4.0);
    // Ragged subjects: the largest subject sets the subject-level sensitivity.
    assert!((mean_sensitivity(PrivacyUnit::Subject, 1.0, 1000, 300) - 0.6).abs() < 1e-15);
}

#[test]
fn clip_decisions_match_the_literal_algorithm_for_many_weight_shapes() {
    // The fast path skips the exact norm when a bound on σ_max(W) proves the clip cannot bind;
    // whatever W looks like (near-orthogonal, ill-conditioned, tiny, huge), the clip count and
    // the gradient must equal the literal computation.
    let (r, n) = (6, 300);
    let x = random_matrix(11, r, n, 1.5);
    let b = DVector::from_element(r, 0.05);
    for (k, scale) in [0.01, 0.3, 1.0, 3.0, 20.0].into_iter().enumerate() {
        let mut w = random_matrix(20 + k as u64, r, r, 0.2) + DMatrix::identity(r, r);
        w.row_mut(0).scale_mut(5.0); // ill-conditioned
        let w = w * scale;
        let (_, _, mut norms) =
            reference(&x, &w, &b, ClipBounds { gradient: f64::INFINITY, bias: f64::INFINITY });
        norms.sort_by(f64::total_cmp);
        // A third of the samples clipped (the block path for exact norms) and 3 in 300 (the
        // per-sample path).
        for index in [2 * n / 3, n - 4] {
            let bounds = ClipBounds {
                gradient: 0.5 * (norms[index] + norms[index + 1]),
                bias: 30f64.sqrt(),
            };
            let (g_ref, _, _) = reference(&x, &w, &b, bounds);
            let got =
                site_gradient(&cols(&x), &w, &b, bounds, &mut GradientWorkspace::with_block(r, 64));
            assert_eq!(got.clipped, n - index - 1, "scale {scale}");
            assert!(got.exact_norms >= got.clipped);
            assert!((&got.g - &g_ref).norm() <= 1e-11 * g_ref.norm().max(1.0), "scale {scale}");
        }
    }
}

#[test]
fn every_cpu_path_gives_the_same_bits() {
    // The dispatched gradient (AVX-512 or AVX2 when the CPU has them) and the baseline build
    // perform the same operations in the same order.
    use capelab_core::djica::gradient::site_gradient_portable;
    let (r, n) = (9, 700);
    let x = random_matrix(31, r, n, 2.0);
    let w = random_matrix(32, r, r, 0.5) + DMatrix::identity(r, r);
    let b = DVector::from_element(r, -0.1);
    let bounds = ClipBounds { gradient: 8.0, bias: 2.0 };
    let fast = site_gradient(&cols32(&x), &w, &b, bounds, &mut GradientWorkspace::new(r));
    let base = site_gradient_portable(&cols32(&x), &w, &b, bounds, &mut GradientWorkspace::new(r));
    assert!(fast.clipped > 0);
    assert_eq!(fast, base);
    let fast = site_gradient(&cols(&x), &w, &b, bounds, &mut GradientWorkspace::new(r));
    let base = site_gradient_portable(&cols(&x), &w, &b, bounds, &mut GradientWorkspace::new(r));
    assert_eq!(fast, base);
}
