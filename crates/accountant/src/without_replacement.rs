/*!
Rényi DP of the Gaussian mechanism on a fixed-size batch of m records drawn uniformly without
replacement from n (q = m/n), **replace-one** neighbours (n is public): the bound of Wang, Balle
& Kasiviswanathan 2019 ("Subsampled Rényi DP and analytical moments accountant", AISTATS,
Theorem 27), as Google's dp-accounting computes it for `SampledWithoutReplacementDpEvent`
(`_compute_rdp_sample_wor_gaussian`), term for term, so the two agree to rounding.

With ε(α) = α/(2z²) the Gaussian's RDP, for integer α ≥ 2 the RDP is ln(A_α)/(α − 1) with

  A_α ≤ 1 + q²·C(α,2)·min(4(e^{ε(2)} − 1), 2e^{ε(2)})
          + Σ_{j=3}^{α} q^j·C(α,j)·min(4·√(Δ^{2⌊j/2⌋}·Δ^{2⌈j/2⌉}), 2e^{(j−1)ε(j)}),

Δ^ℓ the ℓ-th forward difference at 0 of v_i = e^{(i−1)ε(i)} (computed in log space with signs).
Above α = 256 only the second term of each min is used (as dp-accounting does); a fractional α
interpolates ln A between ⌊α⌋ and ⌈α⌉ (WBK19 Corollary 10), an upper bound.

**Which z.** z is the noise std over the sensitivity *under replace-one*: for a sum of
per-example vectors clipped to C, replacing one record moves the sum by up to 2C, so noise of
std σC gives z = σ/2. (Spec B4's "2.126" for σ = 2.042 passes z = σ, i.e. sensitivity C; at
z = σ/2 the same run is 5.19: see `crates/vertical-vi/src/privacy.rs`.)

There is no PLD for this event here (nor in dp-accounting 0.6.0's PLD accountant).
*/

use std::f64::consts::LN_2;

use super::conversion::epsilon_on_grid;
use super::rdp::DEFAULT_ORDERS;
use super::subsampled::check_sampled;
use super::{AccountantError, Conversion, EpsilonAt};
use crate::special::{ln_binomial, log_add_exp};

/// Above this order dp-accounting drops the forward differences (they cost O(α²)).
const EXACT_UP_TO: u32 = 256;

/// RDP of one release (multiplier z, q = m/n) at order α > 1; q = 1 gives α/(2z²).
pub fn wor_gaussian_rdp(q: f64, z: f64, order: f64) -> Result<f64, AccountantError> {
    check_sampled(q, z, order).map(|()| rdp_unchecked(q, z, order))
}

/// ε(δ) of `steps` such releases, on dp-accounting's default order grid with the improved
/// conversion (what its `RdpAccountant(REPLACE_ONE).get_epsilon` reports).
pub fn wor_gaussian_epsilon(
    sampling_rate: f64,
    noise_multiplier: f64,
    steps: u64,
    delta: f64,
) -> Result<EpsilonAt, AccountantError> {
    let mut rdp = Vec::with_capacity(DEFAULT_ORDERS.len());
    for &order in &DEFAULT_ORDERS {
        rdp.push(steps as f64 * wor_gaussian_rdp(sampling_rate, noise_multiplier, order)?);
    }
    epsilon_on_grid(&DEFAULT_ORDERS, &rdp, delta, Conversion::Improved)
}

fn rdp_unchecked(q: f64, z: f64, alpha: f64) -> f64 {
    if q == 1.0 {
        return alpha / (2.0 * z * z);
    }
    if alpha.fract() == 0.0 {
        return ln_a_integer(q, z, alpha as u32) / (alpha - 1.0);
    }
    let (lo, hi) = (alpha.floor(), alpha.ceil());
    let t = alpha - lo;
    let x = ln_a_integer(q, z, lo as u32);
    let y = ln_a_integer(q, z, hi as u32);
    ((1.0 - t) * x + t * y) / (alpha - 1.0)
}

/// ln A_α for integer α (0 for α ≤ 1).
fn ln_a_integer(q: f64, z: f64, alpha: u32) -> f64 {
    if alpha <= 1 {
        return 0.0;
    }
    let s2 = z * z;
    // (x)(x + 1)ε-style exponent: cgf(x) = x(x + 1)/(2z²) = x·ε(x + 1).
    let cgf = |x: f64| x * (x + 1.0) / (2.0 * s2);
    let eps2 = 2.0 / (2.0 * s2);
    let (ln_q, n) = (q.ln(), f64::from(alpha));
    let ln_f2m1 = eps2 + (-(-eps2).exp()).ln_1p();
    let first = 2.0 * ln_q + ln_binomial(n, 2.0) + (2.0 * LN_2 + ln_f2m1).min(eps2 + LN_2);
    let mut ln_a = log_add_exp(0.0, first);
    let deltas = (alpha <= EXACT_UP_TO).then(|| forward_differences(cgf, alpha as usize));
    for i in 3..=alpha {
        let (fi, iu) = (f64::from(i), i as usize);
        let mut s = LN_2 + cgf(fi - 1.0);
        if let Some(d) = &deltas {
            let (lo, hi) = (d[2 * (iu / 2) - 1], d[2 * iu.div_ceil(2) - 1]);
            s = s.min(2.0 * LN_2 + 0.5 * (lo + hi));
        }
        ln_a = log_add_exp(ln_a, s + fi * ln_q + ln_binomial(n, fi));
    }
    ln_a
}

/// ln|Δ^{k+1} v at 0| for k = 0..=n+1, with v = (1, e^{f(0)}, e^{f(1)}, …, e^{f(n)}): repeated
/// differencing of the log-magnitudes with signs (dp-accounting's `_get_forward_diffs`).
fn forward_differences(f: impl Fn(f64) -> f64, n: usize) -> Vec<f64> {
    let mut v = vec![0.0; n + 3];
    let mut positive = vec![true; n + 3];
    for (i, x) in v.iter_mut().enumerate().skip(1) {
        *x = f((i - 1) as f64);
    }
    let mut deltas = vec![0.0; n + 2];
    for (i, d) in deltas.iter_mut().enumerate() {
        difference_in_place(&mut v, &mut positive, n + 2 - i);
        *d = v[0];
    }
    deltas
}

/// v[j] ← v[j + 1] − v[j] for j < m, all as (sign, ln|·|).
fn difference_in_place(v: &mut [f64], positive: &mut [bool], m: usize) {
    for j in 0..m {
        if positive[j] == positive[j + 1] {
            let (sign, mag) = ln_sub_signed(v[j + 1], v[j]);
            v[j] = mag;
            positive[j] = if positive[j + 1] { sign } else { !sign };
        } else {
            v[j] = log_add_exp(v[j], v[j + 1]);
            positive[j] = positive[j + 1];
        }
    }
}

/// (sign, ln|e^x − e^y|).
fn ln_sub_signed(x: f64, y: f64) -> (bool, f64) {
    if x > y {
        (true, x + (-(y - x).exp()).ln_1p())
    } else if x < y {
        (false, y + (-(x - y).exp()).ln_1p())
    } else {
        (true, f64::NEG_INFINITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subsampled::subsampled_gaussian_rdp;

    fn rel(a: f64, b: f64) -> f64 {
        (a - b).abs() / b.abs()
    }

    /// dp-accounting 0.6.0's `_compute_rdp_sample_wor_gaussian_scalar(q, σ, α)`.
    #[test]
    fn matches_dp_accounting_order_by_order() {
        let vectors = [
            (0.01, 1.0, 2.0, 0.0005435086381094331),
            (0.01, 1.0, 3.0, 0.0008348726849544131),
            (0.01, 1.0, 10.0, 0.06742238451337361),
            (0.01, 1.0, 2.5, 0.0007377513360060864),
            (0.1, 2.0, 32.0, 1.650021505380192),
            (100.0 / 30162.0, 2.042, 40.0, 0.0002530938957695266),
            (0.05, 0.8, 300.0, 231.3715667729577),
            (0.5, 3.0, 7.0, 0.2985900664098598),
        ];
        for (q, z, a, want) in vectors {
            let got = wor_gaussian_rdp(q, z, a).unwrap();
            assert!(rel(got, want) < 1e-9, "q = {q}, z = {z}, α = {a}: {got} vs {want}");
        }
    }

    /// dp-accounting: `RdpAccountant(REPLACE_ONE)` on 20 000 × SampledWithoutReplacement(30162,
    /// 100, Gaussian(z)) at δ = 1e−5: 2.1255161857615485 (order 10) for z = 2.042 and
    /// 5.187367558896469 (order 5) for z = 1.021.
    #[test]
    fn the_spec_vector_and_the_replace_one_sensitivity() {
        let q = 100.0 / 30162.0;
        let e = wor_gaussian_epsilon(q, 2.042, 20_000, 1e-5).unwrap();
        assert!(rel(e.epsilon, 2.1255161857615485) < 1e-9, "{e:?}");
        assert_eq!(e.order, 10.0);
        let e = wor_gaussian_epsilon(q, 1.021, 20_000, 1e-5).unwrap();
        assert!(rel(e.epsilon, 5.187367558896469) < 1e-9, "{e:?}");
        assert_eq!(e.order, 5.0);
    }

    #[test]
    fn no_sampling_is_the_gaussian_and_rdp_grows_with_q_and_alpha() {
        assert_eq!(wor_gaussian_rdp(1.0, 2.0, 3.0).unwrap(), 3.0 / 8.0);
        let mut last = 0.0;
        for q in [0.001, 0.01, 0.1, 0.5] {
            let r = wor_gaussian_rdp(q, 1.5, 8.0).unwrap();
            assert!(r > last, "q = {q}: {r} after {last}");
            last = r;
        }
        let (a, b) = (wor_gaussian_rdp(0.02, 1.5, 4.0).unwrap(), wor_gaussian_rdp(0.02, 1.5, 9.0));
        assert!(b.unwrap() > a);
    }

    /// The bound is an upper bound: at α = 2 it is at least the exact Rényi divergence of one
    /// pair of neighbouring outputs, found by integrating numerically. For a sum query over
    /// records in [−1, 1] (sensitivity 2 under replace-one, so std 2z), a batch that holds the
    /// replaced record (probability q) shifts the sum by +1 or −1, and one that does not holds
    /// the same records on both sides (here all zero): P = (1−q)N(0,4z²) + qN(1,4z²) against
    /// Q = (1−q)N(0,4z²) + qN(−1,4z²).
    #[test]
    fn the_bound_holds_above_an_exact_divergence_at_order_two() {
        for (q, z) in [(0.05, 0.7), (0.2, 1.0), (0.01, 0.5)] {
            let s = 2.0 * z;
            let pdf = |x: f64, m: f64| (-(x - m) * (x - m) / (2.0 * s * s)).exp();
            let (lo, hi, steps) = (-12.0 * s - 2.0, 12.0 * s + 2.0, 200_000);
            let h = (hi - lo) / steps as f64;
            let mut integral = 0.0;
            for i in 0..=steps {
                let x = lo + i as f64 * h;
                let p = (1.0 - q) * pdf(x, 0.0) + q * pdf(x, 1.0);
                let qq = (1.0 - q) * pdf(x, 0.0) + q * pdf(x, -1.0);
                let w = if i == 0 || i == steps { 0.5 } else { 1.0 };
                integral += w * p * p / qq;
            }
            let norm = (2.0 * std::f64::consts::PI).sqrt() * s;
            let exact = (integral * h / norm).ln(); // D_2 = ln ∫ P²/Q, α − 1 = 1
            let bound = wor_gaussian_rdp(q, z, 2.0).unwrap();
            assert!(exact > 0.0 && bound >= exact, "q = {q}, z = {z}: bound {bound} < {exact}");
            // and not absurdly loose: within the Poisson add/remove RDP at twice the rate
            let poisson = subsampled_gaussian_rdp((2.0 * q).min(1.0), z, 2.0).unwrap();
            assert!(bound < 8.0 * poisson.max(exact), "q = {q}: {bound} vs {poisson}");
        }
    }

    #[test]
    fn bad_input_is_named() {
        assert!(matches!(wor_gaussian_rdp(0.0, 1.0, 2.0), Err(AccountantError::SamplingRate(_))));
        assert!(matches!(wor_gaussian_rdp(0.1, 1.0, 1.0), Err(AccountantError::Order(_))));
        assert!(wor_gaussian_rdp(0.1, -1.0, 2.0).is_err());
    }
}
