//! The Poisson-subsampled Gaussian's RDP against an independent computation: A_α as a direct
//! numerical integral, E_{x∼N(0,σ²)}[(1 − q + q·e^{(2x−1)/(2σ²)})^α], by the trapezoid rule in
//! log space (the integrand is smooth and decays like a Gaussian, so the rule converges fast).

use capelab_accountant::special::log_add_exp;
use capelab_accountant::subsampled::{ln_a_fractional, ln_a_integer, subsampled_gaussian_rdp};

fn ln_a_by_quadrature(q: f64, sigma: f64, alpha: f64) -> f64 {
    let s2 = sigma * sigma;
    let ln_integrand = |x: f64| {
        let ln_density = -x * x / (2.0 * s2) - (sigma * (2.0 * std::f64::consts::PI).sqrt()).ln();
        // ln(1 − q + q·e^u), u = (2x − 1)/(2σ²), without overflow.
        let u = (2.0 * x - 1.0) / (2.0 * s2);
        let ln_mix = log_add_exp((-q).ln_1p(), q.ln() + u);
        ln_density + alpha * ln_mix
    };
    // The integrand peaks between 0 and about α; cover ±25σ around that.
    let (lo, hi) = (-25.0 * sigma, alpha + 25.0 * sigma);
    let h = sigma / 400.0;
    let n = ((hi - lo) / h).ceil() as usize;
    let mut acc = f64::NEG_INFINITY;
    for i in 0..=n {
        let w = if i == 0 || i == n { 0.5f64.ln() } else { 0.0 };
        acc = log_add_exp(acc, w + ln_integrand(lo + i as f64 * h));
    }
    acc + h.ln()
}

#[test]
fn fractional_orders_match_the_integral() {
    let cases = [
        (0.01, 1.0, 2.5),
        (0.01, 1.0, 10.7),
        (100.0 / 30162.0, 2.042, 1.5),
        (100.0 / 30162.0, 2.042, 17.3),
        (0.1, 0.7, 5.3),
        (0.3, 4.0, 40.5),
        (0.9, 1.5, 3.25),
    ];
    for (q, sigma, alpha) in cases {
        let series = ln_a_fractional(q, sigma, alpha);
        let integral = ln_a_by_quadrature(q, sigma, alpha);
        assert!(
            (series - integral).abs() < 1e-9 * integral.abs().max(1e-3),
            "q {q} σ {sigma} α {alpha}: series {series}, integral {integral}"
        );
    }
}

#[test]
fn integer_orders_match_the_integral() {
    for (q, sigma, alpha) in [(0.01, 1.0, 2u32), (0.05, 0.8, 9), (0.2, 3.0, 64)] {
        let sum = ln_a_integer(q, sigma, alpha);
        let integral = ln_a_by_quadrature(q, sigma, alpha as f64);
        assert!(
            (sum - integral).abs() < 1e-9 * integral.abs().max(1e-3),
            "q {q} σ {sigma} α {alpha}"
        );
    }
}

#[test]
fn rdp_curve_is_monotone_and_below_the_unsampled_gaussian() {
    let (q, sigma) = (0.02, 1.1);
    let mut last = 0.0;
    for i in 1..200 {
        let alpha = 1.0 + i as f64 * 0.25;
        let r = subsampled_gaussian_rdp(q, sigma, alpha).unwrap();
        // Rényi divergence is non-decreasing in the order; subsampling never hurts.
        assert!(r >= last - 1e-12, "α {alpha}: {r} < {last}");
        assert!(r <= alpha / (2.0 * sigma * sigma) + 1e-12);
        last = r;
    }
    // q = 1 is the Gaussian itself.
    assert_eq!(subsampled_gaussian_rdp(1.0, 2.0, 3.0).unwrap(), 3.0 / 8.0);
    // Small q: ρ(2) = ln(1 + q²(e^{1/σ²} − 1)) exactly (binomial sum at α = 2).
    let r2 = subsampled_gaussian_rdp(q, sigma, 2.0).unwrap();
    let exact = (q * q * (1.0 / (sigma * sigma)).exp_m1()).ln_1p();
    assert!((r2 - exact).abs() < 1e-14);
}

#[test]
fn bad_inputs_are_refused() {
    assert!(subsampled_gaussian_rdp(0.0, 1.0, 2.0).is_err());
    assert!(subsampled_gaussian_rdp(0.5, -1.0, 2.0).is_err());
    assert!(subsampled_gaussian_rdp(0.5, 1.0, 1.0).is_err());
    assert!(subsampled_gaussian_rdp(0.5, 1.0, f64::NAN).is_err());
}
