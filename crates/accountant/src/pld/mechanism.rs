/*!
Privacy profiles δ(ε) of the mechanisms capelab releases with, in closed form, and their
discretisation into a pessimistic PLD by **connect-the-dots** (Doroshenko, Ghazi, Kamath, Kumar &
Manurangsi 2022, Algorithm 1).

Conventions follow dp-accounting's `AdditiveNoisePrivacyLoss` (sensitivity 1, multiplier z = σ/Δ):
- **remove**: P = (1 − q)·N(0, z²) + q·N(−1, z²) against Q = N(0, z²);
- **add**: P = N(0, z²) against Q = (1 − q)·N(0, z²) + q·N(1, z²).

A Poisson-subsampled release is (ε, δ)-DP under add/remove neighbours when both directions are;
for q = 1 the two coincide.

Both directions reduce to the Gaussian's own profile δ_G(ε) = Φ(1/(2z) − εz) − e^ε·Φ(−1/(2z) −
εz) (valid for every real ε):
- remove: δ(ε) = q·δ_G(ln(1 + (e^ε − 1)/q)) for ε > ln(1 − q), and 1 − e^ε below;
- add: δ(ε) = c·δ_G(ε + ln q − ln c) with c = 1 − (1 − q)e^ε, for ε < −ln(1 − q), and 0 above.

(Substitute the mixtures into sup_S P(S) − e^ε·Q(S) and factor out the mixing weight.)

Connect-the-dots puts mass on the grid points ε_i = i·h between the losses at which the noise's
tails hold 0.5·e^{−50} (dp-accounting's `log_mass_truncation_bound`), such that the discrete PLD's
δ(ε) equals the mechanism's at every ε_i and lies above it in between (δ is convex in e^ε): an
upper bound, with error second order in h.
*/

use super::super::analytic_gaussian::ln_delta_for_epsilon;
use super::super::{AccountantError, check_noise_multiplier};
use super::pmf::LossPmf;
use super::{MAX_GRID_POINTS, PldError};

/// Φ⁻¹(0.5·e^{−50}): where dp-accounting truncates the Gaussian noise (tested below).
const GAUSSIAN_TAIL_QUANTILE: f64 = -9.745_474_864_965_937;

/// Which neighbouring pair a PLD describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Remove,
    Add,
}

/// A mechanism with a closed-form privacy profile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Profile {
    /// The Gaussian mechanism with multiplier z on a Poisson subsample of rate q (q = 1: none).
    Gaussian { noise_multiplier: f64, sampling_rate: f64 },
    /// The Laplace mechanism with scale b/Δ (per unit sensitivity).
    Laplace { scale: f64 },
}

impl Profile {
    pub(crate) fn validate(&self) -> Result<(), AccountantError> {
        match *self {
            Profile::Gaussian { noise_multiplier, sampling_rate } => {
                check_noise_multiplier(noise_multiplier)?;
                if !(sampling_rate > 0.0 && sampling_rate <= 1.0) {
                    return Err(AccountantError::SamplingRate(sampling_rate));
                }
                Ok(())
            }
            Profile::Laplace { scale } => {
                if scale > 0.0 && scale.is_finite() {
                    Ok(())
                } else {
                    Err(AccountantError::LaplaceScale(scale))
                }
            }
        }
    }

    /// Whether the add and remove directions differ (only under subsampling).
    pub fn is_asymmetric(&self) -> bool {
        matches!(*self, Profile::Gaussian { sampling_rate, .. } if sampling_rate < 1.0)
    }

    /// The mechanism's exact δ(ε) in `direction`, for any real ε.
    pub fn delta(&self, direction: Direction, epsilon: f64) -> f64 {
        let delta = match *self {
            Profile::Gaussian { noise_multiplier: z, sampling_rate: q } => {
                gaussian_delta(z, q, direction, epsilon)
            }
            Profile::Laplace { scale } => laplace_delta(1.0 / scale, epsilon),
        };
        delta.clamp(0.0, 1.0)
    }

    /// The losses between which connect-the-dots places its grid.
    fn epsilon_range(&self, direction: Direction) -> (f64, f64) {
        match *self {
            Profile::Gaussian { noise_multiplier: z, sampling_rate: q } => {
                let remove_loss = |x: f64| {
                    let l0 = (-0.5 - x) / (z * z);
                    if q == 1.0 {
                        l0
                    } else {
                        crate::special::log_add_exp((-q).ln_1p(), q.ln() + l0)
                    }
                };
                let (lo_x, hi_x) = (z * GAUSSIAN_TAIL_QUANTILE - 1.0, -z * GAUSSIAN_TAIL_QUANTILE);
                let (upper, lower) = (remove_loss(lo_x), remove_loss(hi_x));
                match direction {
                    Direction::Remove => (lower, upper),
                    Direction::Add => (-upper, -lower),
                }
            }
            Profile::Laplace { scale } => (-1.0 / scale, 1.0 / scale),
        }
    }

    /// The pessimistic connect-the-dots PLD of one release, on the grid of step `interval`.
    pub fn discretise(&self, direction: Direction, interval: f64) -> Result<LossPmf, PldError> {
        let (eps_lo, eps_hi) = self.epsilon_range(direction);
        let lo = (eps_lo / interval).floor();
        let hi = (eps_hi / interval).ceil();
        let points = hi - lo + 1.0;
        if points > MAX_GRID_POINTS as f64 {
            return Err(PldError::GridTooLarge {
                points: points as u64,
                interval,
                max: MAX_GRID_POINTS,
            });
        }
        let (lo, hi) = (lo as i64, hi as i64);
        let mut deltas: Vec<f64> =
            (lo..=hi).map(|i| self.delta(direction, i as f64 * interval)).collect();
        // δ is non-increasing in ε; evaluation noise must not make a probability negative.
        for i in 1..deltas.len() {
            deltas[i] = deltas[i].min(deltas[i - 1]);
        }
        Ok(connect_the_dots(interval, lo, &deltas))
    }
}

/// dp-accounting's `create_pmf_pessimistic_connect_dots_fixed_gap`: with d = h,
/// p_1 = 1 − δ_1 + (δ_2 − δ_1)/(e^d − 1), p_i = ((δ_{i+1} − δ_i) − e^d(δ_i − δ_{i−1}))/(e^d − 1),
/// p_n = (δ_n − δ_{n−1})/(e^{−d} − 1), and δ_n at +∞.
fn connect_the_dots(h: f64, lower: i64, deltas: &[f64]) -> LossPmf {
    let n = deltas.len();
    let infinity_mass = deltas[n - 1];
    if n == 1 {
        return LossPmf { interval: h, lower, probs: vec![1.0 - deltas[0]], infinity_mass };
    }
    let diffs: Vec<f64> = deltas.windows(2).map(|w| w[1] - w[0]).collect();
    let mut probs = vec![0.0; n];
    probs[0] = 1.0 - deltas[0] + diffs[0] / h.exp_m1();
    for i in 1..n - 1 {
        probs[i] = (diffs[i] - diffs[i - 1] * h.exp()) / h.exp_m1();
    }
    probs[n - 1] = diffs[n - 2] / (-h).exp_m1();
    for p in &mut probs {
        *p = p.max(0.0);
    }
    LossPmf { interval: h, lower, probs, infinity_mass }
}

fn gaussian_delta(z: f64, q: f64, direction: Direction, eps: f64) -> f64 {
    let delta_g = |e: f64| ln_delta_for_epsilon(z, e).exp();
    if q == 1.0 {
        return delta_g(eps);
    }
    match direction {
        Direction::Remove => {
            if eps <= (-q).ln_1p() {
                -eps.exp_m1()
            } else {
                q * delta_g((eps.exp_m1() / q).ln_1p())
            }
        }
        Direction::Add => {
            if eps >= -(-q).ln_1p() {
                0.0
            } else {
                let c = -(eps + (-q).ln_1p()).exp_m1();
                c * delta_g(eps + q.ln() - c.ln())
            }
        }
    }
}

/// Laplace with a = Δ/b: 1 − e^ε below −a, 1 − e^{(ε − a)/2} on [−a, a], 0 above.
fn laplace_delta(a: f64, eps: f64) -> f64 {
    if eps <= -a {
        -eps.exp_m1()
    } else if eps < a {
        -((eps - a) / 2.0).exp_m1()
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::special::normal_cdf;

    #[test]
    fn tail_quantile_is_where_dp_accounting_truncates() {
        let p = normal_cdf(GAUSSIAN_TAIL_QUANTILE);
        assert!((p / (0.5 * (-50f64).exp()) - 1.0).abs() < 1e-12, "{p}");
    }

    /// The closed forms against sup_S P(S) − e^ε·Q(S) computed by numeric integration of
    /// (p(x) − e^ε·q(x))₊ on a fine grid.
    #[test]
    fn subsampled_profiles_match_direct_integration() {
        let (z, q) = (0.8, 0.3);
        let pdf = |m: f64, x: f64| (-0.5 * ((x - m) / z).powi(2)).exp() / (z * 2.5066282746310002);
        let mix = |m: f64, x: f64| (1.0 - q) * pdf(0.0, x) + q * pdf(m, x);
        let integrate = |f: &dyn Fn(f64) -> f64| {
            let (a, b, n) = (-12.0, 12.0, 400_000);
            let h = (b - a) / n as f64;
            (0..=n)
                .map(|i| {
                    let w = if i == 0 || i == n { 0.5 } else { 1.0 };
                    w * f(a + i as f64 * h)
                })
                .sum::<f64>()
                * h
        };
        let profile = Profile::Gaussian { noise_multiplier: z, sampling_rate: q };
        for eps in [-0.5, -0.1, 0.0, 0.2, 0.5, 1.0, 2.0] {
            let e = f64::exp(eps);
            let remove = integrate(&|x| (mix(-1.0, x) - e * pdf(0.0, x)).max(0.0));
            let add = integrate(&|x| (pdf(0.0, x) - e * mix(1.0, x)).max(0.0));
            let (r, a) =
                (profile.delta(Direction::Remove, eps), profile.delta(Direction::Add, eps));
            assert!((r - remove).abs() < 1e-9, "remove ε = {eps}: {r} vs {remove}");
            assert!((a - add).abs() < 1e-9, "add ε = {eps}: {a} vs {add}");
        }
    }

    #[test]
    fn laplace_profile_matches_direct_integration() {
        let b = 0.7;
        let pdf = |m: f64, x: f64| (-(x - m).abs() / b).exp() / (2.0 * b);
        let profile = Profile::Laplace { scale: b };
        for eps in [-2.0, -0.3, 0.0, 0.5, 1.2, 1.5] {
            let e = f64::exp(eps);
            let (a, c, n) = (-30.0, 30.0, 600_000);
            let h = (c - a) / n as f64;
            let direct: f64 = (0..n)
                .map(|i| {
                    let x = a + (i as f64 + 0.5) * h;
                    (pdf(-1.0, x) - e * pdf(0.0, x)).max(0.0)
                })
                .sum::<f64>()
                * h;
            let d = profile.delta(Direction::Remove, eps);
            assert!((d - direct).abs() < 1e-7, "ε = {eps}: {d} vs {direct}");
        }
    }

    #[test]
    fn connect_the_dots_reproduces_the_profile_at_grid_points_and_bounds_it_between() {
        let profile = Profile::Gaussian { noise_multiplier: 1.3, sampling_rate: 0.05 };
        for direction in [Direction::Remove, Direction::Add] {
            let h = 1e-3;
            let pmf = profile.discretise(direction, h).unwrap();
            let total: f64 = pmf.probs.iter().sum::<f64>() + pmf.infinity_mass;
            assert!((total - 1.0).abs() < 1e-9, "{direction:?}: mass {total}");
            for eps in [0.0, 0.01, 0.05, 0.1, 0.2] {
                let on_grid = (eps / h).round() * h;
                let exact = profile.delta(direction, on_grid);
                let got = pmf.delta_for_epsilon(on_grid);
                assert!((got - exact).abs() <= 1e-9 + 1e-6 * exact, "{direction:?} {eps}");
                let between = on_grid + 0.37 * h;
                assert!(
                    pmf.delta_for_epsilon(between) >= profile.delta(direction, between) - 1e-15
                );
            }
        }
    }
}
