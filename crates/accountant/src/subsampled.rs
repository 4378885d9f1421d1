/*!
Rényi DP of the Poisson-subsampled Gaussian mechanism (Mironov, Talwar & Zhang 2019, "Rényi
Differential Privacy of the Sampled Gaussian Mechanism", arXiv 1908.10530, §3.3), as used by
DP-SGD (efpsn-vertical-dpvi B4), add/remove-one neighbours.

With μ₀ = N(0, σ²), μ₁ = N(1, σ²) and sampling rate q, the RDP at order α is ln(A_α)/(α − 1) with

  A_α = E_{x∼μ₀}[(1 − q + q·μ₁(x)/μ₀(x))^α].

- **Integer α** (binomial expansion): A_α = Σ_{k=0}^{α} C(α,k)·(1−q)^{α−k}·q^k·exp((k²−k)/(2σ²)).
- **Fractional α** (the paper's series): split the integral at z₀ = σ²·ln(1/q − 1) + ½, where the two
  summands of the mixture cross, expand each side with the generalised binomial series (which
  converges there) and integrate term by term; the terms carry erfc factors and the coefficients
  C(α, i) change sign for i > α.

Both are summed in log space ([`crate::special::log_add_exp`]); the erfc factors use a log-tail that
stays accurate where erfc underflows. As in Google's dp-accounting, a fractional order whose series
has not converged after 1000 terms is reported as +∞ (excluded from the optimisation).
*/

use std::f64::consts::{LN_2, SQRT_2};

use super::log_tails::ln_erfc;
use super::{AccountantError, check_noise_multiplier};
use crate::special::{ln_binomial, ln_gamma, log_add_exp};

const MAX_SERIES_TERMS: usize = 1000;

/// RDP ρ(α) of one Poisson-subsampled Gaussian release (multiplier z, rate q) at order α > 1.
/// q = 1 gives the Gaussian's α/(2z²).
pub fn subsampled_gaussian_rdp(
    sampling_rate: f64,
    noise_multiplier: f64,
    order: f64,
) -> Result<f64, AccountantError> {
    check_sampled(sampling_rate, noise_multiplier, order)?;
    Ok(rdp_unchecked(sampling_rate, noise_multiplier, order))
}

/// z > 0 finite, q ∈ (0, 1], α > 1 finite: what every sampled Gaussian's RDP needs.
pub(crate) fn check_sampled(q: f64, z: f64, order: f64) -> Result<(), AccountantError> {
    check_noise_multiplier(z)?;
    if !(q > 0.0 && q <= 1.0) {
        return Err(AccountantError::SamplingRate(q));
    }
    if !(order > 1.0 && order.is_finite()) {
        return Err(AccountantError::Order(order));
    }
    Ok(())
}

pub(crate) fn rdp_unchecked(q: f64, sigma: f64, alpha: f64) -> f64 {
    if q == 1.0 {
        return alpha / (2.0 * sigma * sigma);
    }
    let ln_a = if alpha.fract() == 0.0 && alpha <= u32::MAX as f64 {
        ln_a_integer(q, sigma, alpha as u32)
    } else {
        ln_a_fractional(q, sigma, alpha)
    };
    ln_a / (alpha - 1.0)
}

/// ln A_α for integer α ≥ 2 by the binomial expansion.
pub fn ln_a_integer(q: f64, sigma: f64, alpha: u32) -> f64 {
    let (ln_q, ln_1mq) = (q.ln(), (-q).ln_1p());
    let n = alpha as f64;
    let mut acc = f64::NEG_INFINITY;
    for k in 0..=alpha {
        let k = k as f64;
        let term =
            ln_binomial(n, k) + k * ln_q + (n - k) * ln_1mq + (k * k - k) / (2.0 * sigma * sigma);
        acc = log_add_exp(acc, term);
    }
    acc
}

/// ln A_α for real α > 1 by the series of Mironov, Talwar & Zhang (2019, §3.3). Exact at integer α
/// too (the coefficients vanish past α), which the tests use as a check.
pub fn ln_a_fractional(q: f64, sigma: f64, alpha: f64) -> f64 {
    let (ln_q, ln_1mq) = (q.ln(), (-q).ln_1p());
    let s2 = sigma * sigma;
    let z0 = s2 * (1.0 / q - 1.0).ln() + 0.5;
    let ln_gamma_alpha_1 = ln_gamma(alpha + 1.0);
    let (mut a0, mut a1) = (SignedLog::ZERO, SignedLog::ZERO);
    let (mut last_s0, mut last_s1) = (f64::INFINITY, f64::INFINITY);
    for i in 0..MAX_SERIES_TERMS {
        let fi = i as f64;
        // C(α, i) = Γ(α+1) / (Γ(i+1)·Γ(α−i+1)); only Γ(α−i+1) can be negative.
        let (ln_abs_gamma, sign_gamma) = libm::lgamma_r(alpha - fi + 1.0);
        let ln_coef = ln_gamma_alpha_1 - ln_gamma(fi + 1.0) - ln_abs_gamma;
        let positive = sign_gamma >= 0;
        let j = alpha - fi;

        let ln_t0 = ln_coef + fi * ln_q + j * ln_1mq;
        let ln_t1 = ln_coef + j * ln_q + fi * ln_1mq;
        let ln_e0 = -LN_2 + ln_erfc((fi - z0) / (SQRT_2 * sigma));
        let ln_e1 = -LN_2 + ln_erfc((z0 - j) / (SQRT_2 * sigma));
        let s0 = ln_t0 + (fi * fi - fi) / (2.0 * s2) + ln_e0;
        let s1 = ln_t1 + (j * j - j) / (2.0 * s2) + ln_e1;
        a0.add(positive, s0);
        a1.add(positive, s1);

        let total = a0.clone().plus(&a1);
        // Stop once both term sequences are falling and negligible (e^-30) against the sum.
        if s0 < last_s0 && s1 < last_s1 && s0.max(s1) < total.ln_magnitude() - 30.0 {
            return if total.positive { total.ln_magnitude() } else { f64::INFINITY };
        }
        last_s0 = s0;
        last_s1 = s1;
    }
    f64::INFINITY
}

/// A real number kept as sign and ln|x|, for sums whose terms alternate in sign.
#[derive(Clone, Debug)]
struct SignedLog {
    positive: bool,
    ln_abs: f64,
}

impl SignedLog {
    const ZERO: SignedLog = SignedLog { positive: true, ln_abs: f64::NEG_INFINITY };

    fn add(&mut self, positive: bool, ln_abs: f64) {
        if ln_abs == f64::NEG_INFINITY {
            return;
        }
        if self.ln_abs == f64::NEG_INFINITY {
            *self = SignedLog { positive, ln_abs };
            return;
        }
        if self.positive == positive {
            self.ln_abs = log_add_exp(self.ln_abs, ln_abs);
            return;
        }
        // Opposite signs: the larger magnitude wins.
        let (big, small, big_positive) = if self.ln_abs >= ln_abs {
            (self.ln_abs, ln_abs, self.positive)
        } else {
            (ln_abs, self.ln_abs, positive)
        };
        self.ln_abs = crate::special::log_sub_exp(big, small);
        self.positive = big_positive;
    }

    fn plus(mut self, other: &SignedLog) -> SignedLog {
        self.add(other.positive, other.ln_abs);
        self
    }

    fn ln_magnitude(&self) -> f64 {
        self.ln_abs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_log_sums() {
        let mut s = SignedLog::ZERO;
        s.add(true, 3f64.ln());
        s.add(false, 5f64.ln());
        assert!(!s.positive && (s.ln_abs - 2f64.ln()).abs() < 1e-15);
        s.add(true, 2f64.ln());
        // 3 − 5 + 2 = 0 up to rounding.
        assert!(s.ln_abs < -30.0, "{s:?}");
    }

    #[test]
    fn fractional_series_equals_binomial_sum_at_integer_orders() {
        for &(q, sigma) in &[(0.01, 1.0), (0.2, 0.8), (100.0 / 30162.0, 2.042)] {
            for alpha in [2u32, 3, 7, 32] {
                let int = ln_a_integer(q, sigma, alpha);
                let frac = ln_a_fractional(q, sigma, alpha as f64);
                assert!(
                    (int - frac).abs() <= 1e-10 * int.abs().max(1e-6),
                    "q {q} σ {sigma} α {alpha}"
                );
            }
        }
    }
}
