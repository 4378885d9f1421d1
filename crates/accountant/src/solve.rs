/*!
Scalar root finding by bisection, for the monotone equations of the accountant (analytic Gaussian
calibration, ε ↔ δ inversions, optimal Rényi orders). Bisection is slow but cannot fail on a
bracketed monotone function, and every call here is cheap.
*/

/// The root of `f` in [lo, hi], where f(lo) and f(hi) have opposite signs (or one is zero).
/// Stops when the bracket is below `rel_tol` relative (absolute near 0) or after 300 halvings.
pub(crate) fn bisect(mut f: impl FnMut(f64) -> f64, mut lo: f64, mut hi: f64, rel_tol: f64) -> f64 {
    let f_lo = f(lo);
    if f_lo == 0.0 {
        return lo;
    }
    let lo_negative = f_lo < 0.0;
    for _ in 0..300 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi || (hi - lo) <= rel_tol * mid.abs().max(1e-300) {
            return mid;
        }
        let v = f(mid);
        if v == 0.0 {
            return mid;
        }
        if (v < 0.0) == lo_negative {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_roots_of_both_orientations() {
        let r = bisect(|x| x * x - 2.0, 0.0, 2.0, 1e-15);
        assert!((r - 2f64.sqrt()).abs() < 1e-14);
        let r = bisect(|x| 1.0 - x.exp(), -3.0, 4.0, 1e-15);
        assert!(r.abs() < 1e-14);
    }
}
