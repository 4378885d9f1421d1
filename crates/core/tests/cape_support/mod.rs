//! Statistics shared by the CAPE Monte Carlo tests.
#![allow(dead_code)]

/// How many standard deviations the Monte Carlo checks allow: a correct implementation fails one
/// check with probability about 6e-7 (two-sided normal tail at 5).
pub const Z: f64 = 5.0;

/// Bounds on s²/σ² where s² = (1/n)Σx_i² for n independent N(0, σ²) draws: n·s²/σ² ~ χ²_n, whose
/// quantiles the Wilson–Hilferty approximation gives as n·(1 − 2/(9n) ± z·√(2/(9n)))³ (accurate to
/// well under 1% of the interval's width for n ≥ 1000).
pub fn chi2_ratio_bounds(n: usize, z: f64) -> (f64, f64) {
    let a = 2.0 / (9.0 * n as f64);
    ((1.0 - a - z * a.sqrt()).powi(3), (1.0 - a + z * a.sqrt()).powi(3))
}

/// (1/n)Σx², the variance estimate for zero-mean data.
pub fn mean_square(xs: &[f64]) -> f64 {
    xs.iter().map(|x| x * x).sum::<f64>() / xs.len() as f64
}

/// (1/n)Σx·y, the covariance estimate for zero-mean data.
pub fn mean_product(xs: &[f64], ys: &[f64]) -> f64 {
    xs.iter().zip(ys).map(|(x, y)| x * y).sum::<f64>() / xs.len() as f64
}

/// The standard error of [`mean_product`] for jointly Gaussian zero-mean x, y with variances
/// vx, vy and covariance c: Var(xy) = vx·vy + c².
pub fn product_se(vx: f64, vy: f64, c: f64, n: usize) -> f64 {
    ((vx * vy + c * c) / n as f64).sqrt()
}

/// Asserts that the variance estimate `estimate` from `n` zero-mean Gaussian draws is consistent
/// with the true variance `truth` (chi-square bounds at [`Z`]).
pub fn assert_variance(what: &str, estimate: f64, truth: f64, n: usize) {
    let (lo, hi) = chi2_ratio_bounds(n, Z);
    let ratio = estimate / truth;
    assert!(
        (lo..=hi).contains(&ratio),
        "{what}: variance {estimate:.6e} vs {truth:.6e}, ratio {ratio:.5} outside [{lo:.5}, {hi:.5}]"
    );
}
