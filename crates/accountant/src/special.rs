/*!
Special functions the privacy analyses need, accurate in the far tails.

δ values of 1e-15 come from Gaussian tails, so `1 - Φ(x)` is never computed by subtraction:
[`normal_sf`] uses `erfc` directly (the `libm` port of musl, accurate to about 1 ulp, also on
wasm32). Log-space helpers serve the Rényi-DP sums of the subsampled Gaussian mechanism.
*/

use std::f64::consts::{FRAC_1_SQRT_2, PI};

/// φ(x), the standard normal density.
pub fn normal_pdf(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * PI).sqrt()
}

/// Φ(x) = P(Z ≤ x) for Z ~ N(0, 1).
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x * FRAC_1_SQRT_2)
}

/// Q(x) = 1 − Φ(x) = P(Z > x), computed without cancellation.
pub fn normal_sf(x: f64) -> f64 {
    0.5 * libm::erfc(x * FRAC_1_SQRT_2)
}

/// ln Γ(x) for x > 0.
pub fn ln_gamma(x: f64) -> f64 {
    libm::lgamma(x)
}

/// ln C(n, k) for real n ≥ k ≥ 0 (fractional orders of Rényi DP need non-integer n).
pub fn ln_binomial(n: f64, k: f64) -> f64 {
    ln_gamma(n + 1.0) - ln_gamma(k + 1.0) - ln_gamma(n - k + 1.0)
}

/// ln(e^a + e^b) without overflow.
pub fn log_add_exp(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    hi + (lo - hi).exp().ln_1p()
}

/// ln(e^a − e^b) for a ≥ b; −∞ when they are equal.
pub fn log_sub_exp(a: f64, b: f64) -> f64 {
    debug_assert!(a >= b, "log_sub_exp needs a ≥ b, got {a} < {b}");
    if b == f64::NEG_INFINITY {
        return a;
    }
    if a == b {
        return f64::NEG_INFINITY;
    }
    a + (-(b - a).exp()).ln_1p()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(a: f64, b: f64) -> f64 {
        ((a - b) / b).abs()
    }

    #[test]
    fn normal_tails_match_reference_values() {
        // Reference values from mpmath at 30 digits.
        assert!(rel(normal_sf(1.0), 0.158_655_253_931_457_05) < 1e-14);
        assert!(rel(normal_sf(5.0), 2.866_515_718_791_939e-7) < 1e-13);
        assert!(rel(normal_sf(8.0), 6.220_960_574_271_785e-16) < 1e-12);
        assert!(rel(normal_sf(20.0), 2.753_624_118_606_233_6e-89) < 1e-11);
        assert!(rel(normal_cdf(-8.0), 6.220_960_574_271_785e-16) < 1e-12);
        assert_eq!(normal_cdf(0.0), 0.5);
        assert!(rel(normal_pdf(1.5), 0.129_517_595_665_891_74) < 1e-14);
    }

    #[test]
    fn normal_sf_is_the_integral_of_the_pdf() {
        // Trapezoid rule over [x, x + 12] with a fine grid, independent of erfc.
        for &x in &[-1.0, 0.5, 2.0, 4.0] {
            let n = 200_000;
            let h = 12.0 / n as f64;
            let mut s = 0.5 * (normal_pdf(x) + normal_pdf(x + 12.0));
            for i in 1..n {
                s += normal_pdf(x + i as f64 * h);
            }
            assert!(rel(normal_sf(x), s * h) < 1e-8, "x = {x}");
        }
    }

    #[test]
    fn log_space_helpers() {
        assert!(rel(log_add_exp(1.0, 2.0), (1f64.exp() + 2f64.exp()).ln()) < 1e-15);
        assert!(rel(log_add_exp(1000.0, 1000.0), 1000.0 + 2f64.ln()) < 1e-15);
        assert_eq!(log_add_exp(f64::NEG_INFINITY, 3.0), 3.0);
        assert!(rel(log_sub_exp(2.0, 1.0), (2f64.exp() - 1f64.exp()).ln()) < 1e-14);
        assert_eq!(log_sub_exp(5.0, 5.0), f64::NEG_INFINITY);
        assert!(rel(ln_binomial(10.0, 3.0), 120f64.ln()) < 1e-13);
        assert!(rel(ln_gamma(0.5), PI.sqrt().ln()) < 1e-14);
    }
}
