//! The robust minimiser on noisy quadratics that are unbounded, singular or negative definite
//! (spec cape-fm §2.5, §7.7).

use capelab_core::fm::coefficients::Coefficients;
use capelab_core::fm::minimise::{Constraint, EigenFloor, MinimiserConfig, minimise};
use nalgebra::{DMatrix, DVector};

/// A quadratic with eigenvalues `lambdas` in a rotated basis and linear term `alpha`.
fn quadratic(lambdas: &[f64], alpha: &[f64]) -> (Coefficients, DMatrix<f64>) {
    let d = lambdas.len();
    // A fixed orthogonal basis: Householder reflection I − 2vvᵀ/‖v‖².
    let v = DVector::from_fn(d, |i, _| 1.0 + i as f64);
    let q = DMatrix::identity(d, d) - &v * v.transpose() * (2.0 / v.norm_squared());
    let m = &q * DMatrix::from_diagonal(&DVector::from_column_slice(lambdas)) * q.transpose();
    (Coefficients { lambda0: 0.3, lambda1: DVector::from_column_slice(alpha), lambda2: m }, q)
}

fn config(floor: f64) -> MinimiserConfig {
    MinimiserConfig { floor: EigenFloor::Absolute(floor), ridge: 0.0, constraint: Constraint::None }
}

#[test]
fn positive_definite_gives_the_exact_minimiser() {
    let (c, _) = quadratic(&[2.0, 0.5, 1.0], &[1.0, -2.0, 0.5]);
    let (w, report) = minimise(&c, 0.0, &config(1e-9));
    // Independent: the gradient 2Mw + α vanishes, and the inverse gives the same point.
    let exact = -(c.lambda2.clone().try_inverse().unwrap() * &c.lambda1) * 0.5;
    assert!((&w - &exact).amax() < 1e-12);
    assert!((&c.lambda2 * &w * 2.0 + &c.lambda1).amax() < 1e-12);
    assert_eq!(report.kept_eigenvalues, 3);
    assert!(report.trimmed_eigenvalues.is_empty() && !report.all_trimmed);
    assert!((report.noisy_objective - c.objective(&w)).abs() < 1e-15);
}

#[test]
fn all_negative_eigenvalues_give_zero_and_say_so() {
    let (c, _) = quadratic(&[-0.2, -1.0, -0.05], &[1.0, 1.0, 1.0]);
    let (w, report) = minimise(&c, 0.0, &config(0.0));
    assert_eq!(w, DVector::zeros(3));
    assert!(report.all_trimmed);
    assert_eq!(report.negative_eigenvalues, 3);
    assert_eq!(report.trimmed_eigenvalues.len(), 3);
    assert!((report.trimmed_eigenvalues[0] + 1.0).abs() < 1e-12, "ascending");
}

#[test]
fn indefinite_and_near_zero_directions_are_trimmed() {
    // λ = 1.5 (kept), 1e-9 (near zero, α has a component: f̂ is nearly linear there), −0.3.
    let (c, q) = quadratic(&[1.5, 1e-9, -0.3], &[0.0, 0.0, 0.0]);
    let alpha = q.column(0) * 0.6 + q.column(1) * 2.0 + q.column(2) * 1.0;
    let c = Coefficients { lambda1: alpha.clone(), ..c };
    let (w, report) = minimise(&c, 0.0, &config(1e-6));
    // Only the first eigen-direction remains: w = −½(q₀ᵀα/λ₀)q₀ = −0.2·q₀.
    let expect = q.column(0) * (-0.5 * 0.6 / 1.5);
    assert!((&w - expect).amax() < 1e-12, "{w}");
    assert_eq!(report.kept_eigenvalues, 1);
    assert_eq!(report.negative_eigenvalues, 1);
    // Without the floor, the near-zero eigenvalue would blow ŵ up to about 10⁹.
    let (blown, _) = minimise(&c, 0.0, &config(0.0));
    assert!(blown.norm() > 1e8);
}

#[test]
fn noise_scaled_floor_ridge_and_projections() {
    let (c, _) = quadratic(&[0.5, 0.02, 0.01], &[1.0, 1.0, 1.0]);
    // τ₂ = 0.01 and k = 1: floor 0.01·√3 = 0.0173 trims 0.01 only; τ₂ = 0.02 trims both.
    let cfg = MinimiserConfig { floor: EigenFloor::NoiseScaled(1.0), ..config(0.0) };
    let (_, report) = minimise(&c, 0.01, &cfg);
    assert!((report.floor - 0.01 * 3f64.sqrt()).abs() < 1e-15);
    assert_eq!(report.kept_eigenvalues, 2);
    assert_eq!(minimise(&c, 0.02, &cfg).1.kept_eigenvalues, 1);

    let ridged = MinimiserConfig { ridge: 0.1, ..config(0.0) };
    let (w, report) = minimise(&c, 0.0, &ridged);
    let m = &c.lambda2 + DMatrix::identity(3, 3) * 0.1;
    let exact = -(m.try_inverse().unwrap() * &c.lambda1) * 0.5;
    assert!((&w - exact).amax() < 1e-10);
    assert!(report.method.contains("ridge 0.1"));

    let ball = MinimiserConfig { constraint: Constraint::Ball { radius: 1.0 }, ..config(0.0) };
    let (w, report) = minimise(&c, 0.0, &ball);
    assert!((w.norm() - 1.0).abs() < 1e-12);
    assert!(report.projected_from_norm.unwrap() > 1.0);
    let cube = MinimiserConfig { constraint: Constraint::Box { half_width: 1.0 }, ..config(0.0) };
    let (w, report) = minimise(&c, 0.0, &cube);
    assert!(w.amax() <= 1.0 && report.projected_from_norm.is_some());
}
