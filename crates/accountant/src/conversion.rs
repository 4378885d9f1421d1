/*!
From Rényi DP to (ε, δ)-DP.

Two conversions of an RDP guarantee ρ at order α > 1:
- **Standard** (Mironov 2017, Prop. 3; spec §7 "RDP facts"): ε = ρ + ln(1/δ)/(α − 1).
- **Improved** (Balle, Barthe, Gaboardi, Hsu & Sato 2020, "Hypothesis testing interpretations and
  Rényi differential privacy", Thm 21): ε = ρ + ln((α − 1)/α) − (ln δ + ln α)/(α − 1). This is what
  Google's dp-accounting and Opacus use. As in dp-accounting, it is combined with the total-variation
  bound δ ≤ sqrt(1 − e^{−ρ}) (Rényi divergence dominates KL, Bretagnolle–Huber), which gives ε = 0
  when δ is that large; the result is clamped at 0.

The order is optimised either over a finite grid (any curve), or, for a pure Gaussian curve
ρ(α) = K·α, over all real α > 1 ("exact"):
- standard: α* = 1 + sqrt(ln(1/δ)/K) and the closed form **ε = K + 2·sqrt(K·ln(1/δ))** (spec §5
  with K = C = J* / (2σ_RDP²); cape-fm §5 with K = TΔ²/(2τ²));
- improved: dε/dα = K + (ln δ + ln α)/(α − 1)², so α* is the unique root of
  K(α − 1)² + ln α = ln(1/δ) (its left side increases in α), found by bisection.
*/

use serde::{Deserialize, Serialize};

use super::solve::bisect;
use super::{AccountantError, EpsilonAt, check_delta, check_epsilon};

/// Which RDP → (ε, δ) conversion to apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Conversion {
    /// ε = ρ + ln(1/δ)/(α − 1).
    Standard,
    /// Balle et al. 2020, Thm 21 (dp-accounting, Opacus).
    #[default]
    Improved,
}

/// ε from one RDP point (α, ρ) by the standard conversion.
pub fn standard_epsilon(order: f64, rdp: f64, delta: f64) -> f64 {
    rdp + (1.0 / delta).ln() / (order - 1.0)
}

/// ε from one RDP point (α, ρ) by the improved conversion (Balle et al. 2020, Thm 21), with the
/// total-variation shortcut to 0 and clamped at 0.
pub fn improved_epsilon(order: f64, rdp: f64, delta: f64) -> f64 {
    if delta * delta + (-rdp).exp_m1() > 0.0 {
        return 0.0;
    }
    let a = order;
    (rdp + (-1.0 / a).ln_1p() - (delta.ln() + a.ln()) / (a - 1.0)).max(0.0)
}

fn point_epsilon(conversion: Conversion, order: f64, rdp: f64, delta: f64) -> f64 {
    if rdp.is_nan() || rdp == f64::INFINITY {
        return f64::INFINITY;
    }
    match conversion {
        Conversion::Standard => standard_epsilon(order, rdp, delta),
        Conversion::Improved => improved_epsilon(order, rdp, delta),
    }
}

/// ln δ at ε from one RDP point (α, ρ).
fn point_ln_delta(conversion: Conversion, order: f64, rdp: f64, epsilon: f64) -> f64 {
    if rdp.is_nan() || rdp == f64::INFINITY {
        return 0.0;
    }
    let a = order;
    match conversion {
        Conversion::Standard => ((a - 1.0) * (rdp - epsilon)).min(0.0),
        Conversion::Improved => {
            let tv = if rdp <= 0.0 { f64::NEG_INFINITY } else { 0.5 * (-(-rdp).exp()).ln_1p() };
            let bound = (a - 1.0) * (rdp - epsilon + (-1.0 / a).ln_1p()) - a.ln();
            tv.min(bound).min(0.0)
        }
    }
}

/// The smallest ε over a grid of orders for the RDP curve `rdp` (same length as `orders`).
/// Orders whose RDP is +∞ are skipped; if all are, ε is +∞.
pub fn epsilon_on_grid(
    orders: &[f64],
    rdp: &[f64],
    delta: f64,
    conversion: Conversion,
) -> Result<EpsilonAt, AccountantError> {
    check_delta(delta)?;
    check_curve(orders, rdp)?;
    let mut best = EpsilonAt { epsilon: f64::INFINITY, order: orders[0], exact: false };
    for (&a, &r) in orders.iter().zip(rdp) {
        let eps = point_epsilon(conversion, a, r, delta);
        if eps < best.epsilon {
            best = EpsilonAt { epsilon: eps, order: a, exact: false };
        }
    }
    Ok(best)
}

/// The smallest δ over a grid of orders at `epsilon`, with its order.
pub fn delta_on_grid(
    orders: &[f64],
    rdp: &[f64],
    epsilon: f64,
    conversion: Conversion,
) -> Result<(f64, f64), AccountantError> {
    check_epsilon(epsilon)?;
    check_curve(orders, rdp)?;
    let mut best = (0.0_f64, orders[0]);
    for (&a, &r) in orders.iter().zip(rdp) {
        let ln_d = point_ln_delta(conversion, a, r, epsilon);
        if ln_d < best.0 {
            best = (ln_d, a);
        }
    }
    Ok((best.0.exp(), best.1))
}

/// C + 2·sqrt(C·ln(1/δ)): the standard conversion at the optimal real order for ρ(α) = C·α
/// (spec cape-secagg §5, cape-fm §5).
pub fn closed_form_epsilon(c: f64, delta: f64) -> f64 {
    c + 2.0 * (c * (1.0 / delta).ln()).sqrt()
}

/// ε at the exact optimal order for the pure Gaussian curve ρ(α) = K·α (K > 0).
pub fn gaussian_epsilon_exact(
    k: f64,
    delta: f64,
    conversion: Conversion,
) -> Result<EpsilonAt, AccountantError> {
    check_delta(delta)?;
    let ln_inv_delta = (1.0 / delta).ln();
    let exact = |epsilon, order| Ok(EpsilonAt { epsilon, order, exact: true });
    match conversion {
        Conversion::Standard => {
            exact(closed_form_epsilon(k, delta), 1.0 + (ln_inv_delta / k).sqrt())
        }
        Conversion::Improved => {
            if delta * delta + (-k).exp_m1() > 0.0 {
                // The total-variation bound already holds as α → 1.
                return exact(0.0, 1.0);
            }
            let hi = 1.0 + (ln_inv_delta / k).sqrt();
            let order = bisect(|a| k * (a - 1.0).powi(2) + a.ln() - ln_inv_delta, 1.0, hi, 1e-15);
            exact(improved_epsilon(order, k * order, delta), order)
        }
    }
}

/// δ at `epsilon` at the exact optimal order for ρ(α) = K·α, with that order.
pub fn gaussian_delta_exact(
    k: f64,
    epsilon: f64,
    conversion: Conversion,
) -> Result<(f64, f64), AccountantError> {
    check_epsilon(epsilon)?;
    match conversion {
        Conversion::Standard => {
            // min over α > 1 of (α−1)(Kα − ε): at α* = (ε + K)/(2K) when ε > K, else α → 1.
            if epsilon <= k {
                Ok((1.0, 1.0))
            } else {
                Ok(((-(epsilon - k).powi(2) / (4.0 * k)).exp(), (epsilon + k) / (2.0 * k)))
            }
        }
        Conversion::Improved => {
            // h(α) = (α−1)(Kα − ε + ln(1 − 1/α)) − ln α is convex with
            // h'(α) = K(2α − 1) − ε + ln(1 − 1/α), which rises from −∞ at α = 1.
            let slope = |a: f64| k * (2.0 * a - 1.0) - epsilon + (-1.0 / a).ln_1p();
            let mut hi = 2.0;
            while slope(hi) < 0.0 {
                hi *= 2.0;
            }
            let order = bisect(slope, 1.0, hi, 1e-15);
            let ln_d = point_ln_delta(Conversion::Improved, order, k * order, epsilon);
            let tv_at_one = 0.5 * (-(-k).exp()).ln_1p();
            Ok((ln_d.min(tv_at_one).exp(), order))
        }
    }
}

fn check_curve(orders: &[f64], rdp: &[f64]) -> Result<(), AccountantError> {
    check_orders(orders)?;
    if orders.len() != rdp.len() {
        return Err(AccountantError::CurveLength { orders: orders.len(), rdp: rdp.len() });
    }
    Ok(())
}

pub(crate) fn check_orders(orders: &[f64]) -> Result<(), AccountantError> {
    if orders.is_empty() {
        return Err(AccountantError::NoOrders);
    }
    match orders.iter().find(|a| !(**a > 1.0 && a.is_finite())) {
        Some(&bad) => Err(AccountantError::Order(bad)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fine grid over α ∈ (1, 1 + 10⁴]: the exact optimum must match the grid's best point.
    fn fine_grid() -> Vec<f64> {
        (0..40_000).map(|i| 1.0 + 10f64.powf(-4.0 + 8.0 * i as f64 / 40_000.0)).collect()
    }

    #[test]
    fn exact_gaussian_optimum_matches_a_fine_grid() {
        let orders = fine_grid();
        for &k in &[1e-4, 0.01, 0.5, 5.0, 300.0] {
            let rdp: Vec<f64> = orders.iter().map(|a| k * a).collect();
            for &delta in &[1e-3, 1e-5, 1e-10] {
                for conv in [Conversion::Standard, Conversion::Improved] {
                    let exact = gaussian_epsilon_exact(k, delta, conv).unwrap();
                    let grid = epsilon_on_grid(&orders, &rdp, delta, conv).unwrap();
                    assert!(exact.epsilon <= grid.epsilon + 1e-12, "{conv:?} k {k} δ {delta}");
                    assert!(grid.epsilon - exact.epsilon <= 1e-6 * grid.epsilon.max(1e-3));
                    let eps = exact.epsilon.max(1e-3);
                    let (d_exact, _) = gaussian_delta_exact(k, eps, conv).unwrap();
                    let (d_grid, _) = delta_on_grid(&orders, &rdp, eps, conv).unwrap();
                    assert!(d_exact <= d_grid * (1.0 + 1e-9), "{conv:?} k {k} ε {eps}");
                    assert!(d_grid <= d_exact * (1.0 + 1e-5) + 1e-300, "{conv:?} k {k} ε {eps}");
                }
            }
        }
    }

    #[test]
    fn improved_is_never_worse_than_standard() {
        for &a in &[1.5, 2.0, 8.0, 64.0] {
            for &r in &[0.01, 1.0, 30.0] {
                assert!(improved_epsilon(a, r, 1e-5) <= standard_epsilon(a, r, 1e-5));
            }
        }
    }

    #[test]
    fn bad_orders_are_named() {
        assert_eq!(
            epsilon_on_grid(&[], &[], 1e-5, Conversion::Standard),
            Err(AccountantError::NoOrders)
        );
        assert_eq!(
            epsilon_on_grid(&[2.0, 1.0], &[0.1, 0.1], 1e-5, Conversion::Standard),
            Err(AccountantError::Order(1.0))
        );
    }
}
