/*!
A privacy loss distribution on a grid: probabilities of the losses `(lower + i)·h` and a mass at
+∞. One direction (add or remove) of a mechanism; [`super::Pld`] holds both.

The hockey-stick divergence of a PLD ω is δ(ε) = ω(∞) + Σ_i p_i·(1 − e^{ε − ℓ_i})₊, which is
what every query here evaluates. Composition of mechanisms is convolution of their PLDs (losses
add): [`LossPmf::compose`] by FFT, [`LossPmf::self_compose`] by raising the transform to the T-th
power. Every truncation is **pessimistic**: mass cut from the top goes to +∞, mass cut from the
bottom is moved up to the lowest kept loss, so δ(ε) never decreases and the reported ε stays an
upper bound (dp-accounting's `DensePLDPmf` does the same).
*/

use super::{MAX_GRID_POINTS, PldError, fft};

/// Probability mass a composition may drop from each tail (then counted at +∞): dp-accounting's
/// default, far below any δ a study asks for.
pub const TAIL_MASS_TRUNCATION: f64 = 1e-15;

/// One direction of a discretised PLD.
#[derive(Clone, Debug, PartialEq)]
pub struct LossPmf {
    /// The grid step h (nats).
    pub(crate) interval: f64,
    /// The loss of `probs[0]` is `lower · h`.
    pub(crate) lower: i64,
    pub(crate) probs: Vec<f64>,
    pub(crate) infinity_mass: f64,
}

impl LossPmf {
    /// The PLD of a mechanism that reveals nothing: all mass at loss 0.
    pub fn identity(interval: f64) -> Self {
        LossPmf { interval, lower: 0, probs: vec![1.0], infinity_mass: 0.0 }
    }

    pub fn interval(&self) -> f64 {
        self.interval
    }
    /// Number of finite grid points held.
    pub fn len(&self) -> usize {
        self.probs.len()
    }
    pub fn is_empty(&self) -> bool {
        self.probs.is_empty()
    }
    pub fn infinity_mass(&self) -> f64 {
        self.infinity_mass
    }
    /// The finite losses and their probabilities, in increasing order of loss.
    pub fn points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.probs
            .iter()
            .enumerate()
            .map(|(i, &p)| ((self.lower + i as i64) as f64 * self.interval, p))
    }

    /// δ(ε): the hockey-stick divergence at ε (any real ε).
    pub fn delta_for_epsilon(&self, epsilon: f64) -> f64 {
        let mut delta = self.infinity_mass;
        for (loss, p) in self.points().filter(|&(loss, _)| loss > epsilon) {
            delta += -(epsilon - loss).exp_m1() * p;
        }
        delta.clamp(0.0, 1.0)
    }

    /// The smallest ε ≥ 0 with δ(ε) ≤ δ, or +∞ when the mass at +∞ alone exceeds δ.
    ///
    /// Walks the losses from the top keeping A = ω(∞) + Σ_{ℓ_i > ε} p_i and B = Σ_{ℓ_i > ε}
    /// p_i·e^{−ℓ_i}, so δ(ε) = A − e^ε·B between grid points and the crossing is ln((A − δ)/B)
    /// (dp-accounting's `_get_epsilon_for_delta`).
    pub fn epsilon_for_delta(&self, delta: f64) -> f64 {
        if self.infinity_mass > delta {
            return f64::INFINITY;
        }
        let (mut upper, mut lower) = (self.infinity_mass, 0.0_f64);
        for (loss, p) in self.points().collect::<Vec<_>>().into_iter().rev() {
            if upper > delta && lower > 0.0 && ((upper - delta) / lower).ln() >= loss {
                break;
            }
            upper += p;
            lower += (-loss).exp() * p;
            if upper >= delta && lower == 0.0 {
                return loss.max(0.0);
            }
        }
        if upper <= lower + delta { 0.0 } else { ((upper - delta) / lower).ln().max(0.0) }
    }

    /// The PLD of running both mechanisms (losses add): FFT convolution, then pessimistic
    /// truncation of at most [`TAIL_MASS_TRUNCATION`] from the tails.
    pub fn compose(&self, other: &LossPmf) -> LossPmf {
        debug_assert_eq!(self.interval, other.interval, "compose PLDs on one grid");
        let probs = fft::convolve(&self.probs, &other.probs);
        let infinity_mass =
            self.infinity_mass + other.infinity_mass - self.infinity_mass * other.infinity_mass;
        LossPmf { interval: self.interval, lower: self.lower + other.lower, probs, infinity_mass }
            .truncated(TAIL_MASS_TRUNCATION)
    }

    /// The PLD of `times` runs of this mechanism.
    ///
    /// One forward transform, each coefficient raised to the `times`-th power by repeated
    /// squaring, one inverse transform; the window [lo, hi] of the result is chosen with a
    /// Chernoff bound so that at most [`TAIL_MASS_TRUNCATION`] falls outside it, and that mass is
    /// counted at +∞ (dp-accounting's `common.self_convolve`).
    /// Refuses (before allocating) a result wider than [`MAX_GRID_POINTS`].
    pub fn self_compose(&self, times: u64) -> Result<LossPmf, PldError> {
        assert!(times >= 1, "self_compose needs at least one composition");
        if times == 1 {
            return Ok(self.clone());
        }
        let (lo, hi) = chernoff_window(&self.probs, times, TAIL_MASS_TRUNCATION);
        let window = (hi - lo + 1) as u64;
        if window > MAX_GRID_POINTS as u64 {
            return Err(PldError::GridTooLarge {
                points: window,
                interval: self.interval,
                max: MAX_GRID_POINTS,
            });
        }
        let window = window as usize;
        let mut probs = fft::self_convolve_window(&self.probs, times, lo, window);
        for p in &mut probs {
            *p = p.max(0.0);
        }
        let infinity_mass =
            TAIL_MASS_TRUNCATION - ((times as f64) * (-self.infinity_mass).ln_1p()).exp_m1();
        Ok(LossPmf {
            interval: self.interval,
            lower: self.lower * times as i64 + lo,
            probs,
            infinity_mass: infinity_mass.min(1.0),
        })
    }

    /// Drops at most `tail / 2` from each end: the bottom's mass is added to the lowest kept
    /// loss, the top's to +∞ (both raise δ(ε) for every ε).
    pub(crate) fn truncated(mut self, tail: f64) -> LossPmf {
        let n = self.probs.len();
        let (mut left, mut left_mass) = (0, 0.0);
        while left + 1 < n && left_mass + self.probs[left] <= tail / 2.0 {
            left_mass += self.probs[left];
            left += 1;
        }
        let (mut right, mut right_mass) = (n, 0.0);
        while right > left + 1 && right_mass + self.probs[right - 1] <= tail / 2.0 {
            right_mass += self.probs[right - 1];
            right -= 1;
        }
        self.probs.truncate(right);
        self.probs.drain(..left);
        self.probs[0] += left_mass;
        self.lower += left as i64;
        self.infinity_mass = (self.infinity_mass + right_mass).min(1.0);
        self
    }
}

/// Indices [lo, hi] of the `times`-fold self-convolution of `probs` outside of which at most
/// `tail` mass lies: Chernoff's P(S ≥ a) ≤ e^{−ta}·M(t)^T on each side, at a few orders t
/// scaled to the input's length, each side given `tail / 2`.
fn chernoff_window(probs: &[f64], times: u64, tail: f64) -> (i64, i64) {
    let n = probs.len();
    let mut upper = (n as i64 - 1) * times as i64;
    let mut lower = 0_i64;
    let log_two_over_tail = (2.0 / tail).ln();
    for k in (-20..=20).filter(|&k| k != 0) {
        let t = k as f64 / n as f64;
        let log_mgf = log_sum_exp_weighted(probs, t);
        let bound = (times as f64 * log_mgf + log_two_over_tail) / t;
        if !bound.is_finite() {
            continue;
        }
        if t > 0.0 {
            upper = upper.min(bound.ceil() as i64);
        } else {
            lower = lower.max(bound.floor() as i64);
        }
    }
    (lower, upper.max(lower))
}

/// ln Σ_i p_i·e^{t·i} for |t|·len ≤ 20 (the orders above), so no term overflows: the powers
/// e^{t·i} come from one exponential and a running product, not one `exp` per point.
fn log_sum_exp_weighted(probs: &[f64], t: f64) -> f64 {
    let step = t.exp();
    let mut power = 1.0;
    let mut sum = 0.0;
    for &p in probs {
        sum += p * power;
        power *= step;
    }
    sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pmf(lower: i64, probs: &[f64], inf: f64) -> LossPmf {
        LossPmf { interval: 0.5, lower, probs: probs.to_vec(), infinity_mass: inf }
    }

    #[test]
    fn delta_and_epsilon_invert_each_other() {
        // Randomised response-like PLD: loss ±1 with probabilities 0.73, 0.27.
        let p = pmf(-2, &[0.27, 0.0, 0.0, 0.0, 0.73], 0.0);
        let direct = |eps: f64| {
            p.points()
                .filter(|&(l, _)| l > eps)
                .map(|(l, q)| q * (1.0 - (eps - l).exp()))
                .sum::<f64>()
        };
        for eps in [0.0, 0.2, 0.7, 0.99] {
            assert!((p.delta_for_epsilon(eps) - direct(eps)).abs() < 1e-15);
        }
        for delta in [0.01, 0.1, 0.3] {
            let eps = p.epsilon_for_delta(delta);
            assert!((p.delta_for_epsilon(eps) - delta).abs() < 1e-12, "δ = {delta}");
        }
        assert_eq!(p.epsilon_for_delta(0.9), 0.0);
        assert_eq!(pmf(0, &[0.5], 0.5).epsilon_for_delta(0.1), f64::INFINITY);
    }

    #[test]
    fn composition_is_convolution_and_self_composition_agrees() {
        let a = pmf(-1, &[0.2, 0.5, 0.3], 1e-3);
        let direct = {
            let mut out = vec![0.0; 5];
            for i in 0..3 {
                for j in 0..3 {
                    out[i + j] += a.probs[i] * a.probs[j];
                }
            }
            out
        };
        let c = a.compose(&a);
        assert_eq!(c.lower, -2);
        for (x, y) in c.probs.iter().zip(&direct) {
            assert!((x - y).abs() < 1e-15);
        }
        assert!((c.infinity_mass - (2e-3 - 1e-6)).abs() < 1e-18);

        let mut repeated = a.clone();
        for _ in 1..7 {
            repeated = repeated.compose(&a);
        }
        let powered = a.self_compose(7).unwrap();
        for eps in [0.0, 0.5, 1.0, 2.0] {
            let (x, y) = (repeated.delta_for_epsilon(eps), powered.delta_for_epsilon(eps));
            assert!((x - y).abs() < 1e-13, "ε = {eps}: {x} vs {y}");
        }
    }

    #[test]
    fn truncation_is_pessimistic() {
        let p = pmf(0, &[1e-17, 0.5, 0.5 - 2e-17, 1e-17], 0.0);
        let t = p.clone().truncated(1e-15);
        assert_eq!(t.probs.len(), 2);
        assert_eq!(t.lower, 1);
        assert!(t.infinity_mass > 0.0);
        for eps in [0.0, 0.25, 1.0, 1.4] {
            assert!(t.delta_for_epsilon(eps) >= p.delta_for_epsilon(eps) - 1e-18);
        }
    }
}
