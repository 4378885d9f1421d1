/*!
Logarithms of normal tails that stay accurate where the tails underflow.

`special::normal_cdf` is accurate in relative terms down to about Φ(−37) ≈ 6e-301; below that it
underflows. The fractional-order sum of the subsampled Gaussian and the analytic Gaussian's δ(ε) at
large ε need ln Φ further out, so past −37 the asymptotic series of the Mills ratio is used, whose
truncation error there is below 1e-15 relative.
*/

use std::f64::consts::{LN_2, SQRT_2};

use crate::special::{normal_cdf, normal_sf};

/// Below this, Φ(x) is subnormal: switch to the asymptotic series.
const ASYMPTOTIC_BELOW: f64 = -37.0;

/// ln Φ(x) for every finite x.
pub(crate) fn ln_normal_cdf(x: f64) -> f64 {
    if x > 0.0 {
        // Φ is close to 1: ln(1 − Q(x)) without cancellation.
        (-normal_sf(x)).ln_1p()
    } else if x >= ASYMPTOTIC_BELOW {
        normal_cdf(x).ln()
    } else {
        // Φ(x) = φ(x)/|x| · (1 − 1/x² + 3/x⁴ − 15/x⁶ + 105/x⁸ − …) for x → −∞.
        let u = 1.0 / (x * x);
        let series = 1.0 - u * (1.0 - 3.0 * u * (1.0 - 5.0 * u * (1.0 - 7.0 * u)));
        -0.5 * x * x - (-x).ln() - 0.5 * (2.0 * std::f64::consts::PI).ln() + series.ln()
    }
}

/// ln erfc(x) = ln 2 + ln Φ(−x√2).
pub(crate) fn ln_erfc(x: f64) -> f64 {
    LN_2 + ln_normal_cdf(-x * SQRT_2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_direct_values_and_is_continuous_at_the_switch() {
        for &x in &[-36.9, -20.0, -5.0, -1.0, 0.0, 0.5, 3.0, 9.0] {
            let direct = normal_cdf(x).ln();
            assert!((ln_normal_cdf(x) - direct).abs() <= 1e-13 * direct.abs().max(1e-3), "x = {x}");
        }
        // Both sides of the switch against mpmath (40 digits).
        assert!((ln_normal_cdf(-37.0) + 689.030_585_576_890_6).abs() < 1e-11);
        assert!((ln_normal_cdf(-37.000_000_001) + 689.030_585_613_917_5).abs() < 1e-11);
        assert!((ln_normal_cdf(-38.0) + 726.557_216_018_820_1).abs() < 1e-11);
        // mpmath: ln Φ(−40) = −804.6084420137538, ln Φ(−100) = −5005.524208694205.
        assert!((ln_normal_cdf(-40.0) + 804.608_442_013_753_8).abs() < 1e-10);
        assert!((ln_normal_cdf(-100.0) + 5_005.524_208_694_205).abs() < 1e-9);
        // ln erfc(30) via the same route, mpmath: −903.9741171106439.
        assert!((ln_erfc(30.0) + 903.974_117_110_643_9).abs() < 1e-9);
    }
}
