/*!
Basic and strong composition of (ε₀, δ₀)-DP releases, for comparison with RDP (spec cape-secagg §5,
Theorem 2 and Fig. 6).

- Basic: k releases, each (ε₀, δ₀)-DP, are (k·ε₀, k·δ₀)-DP.
- Strong (Dwork, Rothblum & Vadhan 2010; Dwork & Roth 2014, Thm 3.20): for any δ' > 0 they are
  (ε₀·sqrt(2k·ln(1/δ')) + k·ε₀·(e^{ε₀} − 1), k·δ₀ + δ')-DP.

**What these mean for a Gaussian release (our choice, documented).** A Gaussian release is
(ε₀, δ₀)-DP for a whole curve of pairs, so a pair must be picked. We spend the target δ as follows
and take ε₀ from the *exact* Gaussian privacy profile ([`super::analytic_gaussian`]) at that δ₀:
- basic: δ₀ = δ/J, so the total is (J·ε₀, δ);
- strong: δ₀ = δ/(2J) and δ' = δ/2, so the total is (strong ε, δ).

For a Poisson-subsampled release we first take the Gaussian's ε at δ₀/q and amplify it
(Balle, Barthe & Gaboardi 2018, Thm 8; add/remove neighbours): a (ε, δ)-DP mechanism on a
q-subsample is (ln(1 + q(e^ε − 1)), q·δ)-DP. The collusion factor enters through z/√c_S.
Neither split is optimised; both are reported as the classical baselines, not as tight numbers.
*/

use serde::{Deserialize, Serialize};

use super::analytic_gaussian::epsilon_for_delta_unchecked;
use super::event::Event;
use super::{AccountantError, check_delta};

/// k-fold basic composition of (ε₀, δ₀): (k·ε₀, k·δ₀).
pub fn basic_composition(epsilon0: f64, delta0: f64, k: u64) -> (f64, f64) {
    (k as f64 * epsilon0, k as f64 * delta0)
}

/// k-fold strong composition (DRV'10) of (ε₀, δ₀) with slack δ':
/// (ε₀·sqrt(2k ln(1/δ')) + k·ε₀(e^{ε₀} − 1), k·δ₀ + δ').
pub fn strong_composition(epsilon0: f64, delta0: f64, k: u64, delta_slack: f64) -> (f64, f64) {
    let k = k as f64;
    (
        epsilon0 * (2.0 * k * (1.0 / delta_slack).ln()).sqrt() + k * epsilon0 * epsilon0.exp_m1(),
        k * delta0 + delta_slack,
    )
}

/// A per-release (ε₀, δ₀) and the composed (ε, δ) it leads to.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompositionBound {
    pub epsilon: f64,
    pub delta: f64,
    pub per_release_epsilon: f64,
    pub per_release_delta: f64,
}

/// The smallest ε₀ at which one release of `event` is (ε₀, δ₀)-DP under its view, from the exact
/// Gaussian profile (and amplification by subsampling).
pub fn per_release_epsilon(event: &Event, delta0: f64) -> Result<f64, AccountantError> {
    check_delta(delta0)?;
    let q = event.mechanism().sampling_rate();
    let z = event.effective_noise_multiplier();
    let inner_delta = delta0 / q;
    if inner_delta >= 1.0 {
        return Ok(0.0);
    }
    let eps = epsilon_for_delta_unchecked(z, inner_delta);
    Ok(if q == 1.0 { eps } else { (q * eps.exp_m1()).ln_1p() })
}

/// Basic composition over `event.count()` releases at total δ, with δ₀ = δ/J.
pub fn basic_for_event(event: &Event, delta: f64) -> Result<CompositionBound, AccountantError> {
    check_delta(delta)?;
    let k = event.count();
    let delta0 = delta / k as f64;
    let eps0 = per_release_epsilon(event, delta0)?;
    let (epsilon, total_delta) = basic_composition(eps0, delta0, k);
    Ok(CompositionBound {
        epsilon,
        delta: total_delta,
        per_release_epsilon: eps0,
        per_release_delta: delta0,
    })
}

/// Strong composition over `event.count()` releases at total δ, with δ₀ = δ/(2J), δ' = δ/2.
pub fn strong_for_event(event: &Event, delta: f64) -> Result<CompositionBound, AccountantError> {
    check_delta(delta)?;
    let k = event.count();
    let delta0 = delta / (2.0 * k as f64);
    let eps0 = per_release_epsilon(event, delta0)?;
    let (epsilon, total_delta) = strong_composition(eps0, delta0, k, delta / 2.0);
    Ok(CompositionBound {
        epsilon,
        delta: total_delta,
        per_release_epsilon: eps0,
        per_release_delta: delta0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas() {
        let (e, d) = basic_composition(0.5, 1e-6, 10);
        assert_eq!(e, 5.0);
        assert!((d - 1e-5).abs() < 1e-20);
        let (e, d) = strong_composition(0.1, 1e-7, 100, 1e-5);
        let expected = 0.1 * (200.0 * 1e5f64.ln()).sqrt() + 100.0 * 0.1 * 0.1f64.exp_m1();
        assert!((e - expected).abs() < 1e-12);
        assert!((d - (1e-5 + 1e-5)).abs() < 1e-18);
    }

    #[test]
    fn totals_spend_exactly_the_target_delta() {
        let ev = Event::gaussian("g", 30.0, 10_000).unwrap();
        let b = basic_for_event(&ev, 1e-5).unwrap();
        let s = strong_for_event(&ev, 1e-5).unwrap();
        assert!((b.delta - 1e-5).abs() < 1e-18 && (s.delta - 1e-5).abs() < 1e-18);
        // For many releases strong composition must beat basic.
        assert!(s.epsilon < b.epsilon);
    }
}
