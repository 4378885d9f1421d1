//! The analytic Gaussian mechanism (Balle & Wang 2018) against its definition and the classical
//! calibration.

use capelab_accountant::analytic_gaussian::{
    analytic_multiplier, analytic_sigma, composed_epsilon, delta_for_epsilon, epsilon_for_delta,
};
use capelab_accountant::gaussian::classical_multiplier;
use capelab_accountant::special::normal_pdf;

#[test]
fn calibrate_then_evaluate_gives_back_delta() {
    for eps in [0.05, 0.1, 0.5, 0.99, 1.0, 3.0, 10.0, 50.0] {
        for delta in [1e-2, 1e-5, 1e-10, 1e-15] {
            let z = analytic_multiplier(eps, delta).unwrap();
            let back = delta_for_epsilon(z, eps).unwrap();
            assert!(((back - delta) / delta).abs() < 1e-9, "ε {eps} δ {delta}: z {z}, δ {back}");
            let eps_back = epsilon_for_delta(z, delta).unwrap();
            assert!((eps_back - eps).abs() < 1e-9 * eps, "ε {eps} δ {delta}: {eps_back}");
        }
    }
}

#[test]
fn analytic_noise_is_never_above_the_classical_noise() {
    for eps in [0.01, 0.1, 0.3, 0.5, 0.8, 0.999] {
        for delta in [1e-2, 1e-5, 1e-8] {
            let analytic = analytic_multiplier(eps, delta).unwrap();
            let classical = classical_multiplier(eps, delta).unwrap();
            assert!(analytic <= classical, "ε {eps} δ {delta}: {analytic} > {classical}");
            // And the classical noise is indeed (ε, δ)-DP by the exact curve.
            assert!(delta_for_epsilon(classical, eps).unwrap() <= delta);
        }
    }
}

#[test]
fn exact_delta_is_the_hockey_stick_divergence() {
    // δ(ε) = ∫ (p(x) − e^ε q(x))₊ dx with p = N(1, z²), q = N(0, z²), by the trapezoid rule.
    for (z, eps) in [(0.8, 0.5), (2.0, 0.3), (1.0, 2.0), (5.0, 0.05_f64)] {
        let (lo, hi) = (-20.0 * z, 1.0 + 20.0 * z);
        let n = 400_000;
        let h = (hi - lo) / n as f64;
        let mut integral = 0.0;
        for i in 0..=n {
            let x = lo + i as f64 * h;
            let p = normal_pdf((x - 1.0) / z) / z;
            let q = normal_pdf(x / z) / z;
            let w = if i == 0 || i == n { 0.5 } else { 1.0 };
            integral += w * (p - eps.exp() * q).max(0.0);
        }
        integral *= h;
        let exact = delta_for_epsilon(z, eps).unwrap();
        assert!((exact - integral).abs() < 1e-9, "z {z} ε {eps}: {exact} vs {integral}");
    }
}

#[test]
fn matches_dp_accounting_golden_values() {
    // dp_accounting 0.6.0 gaussian_mechanism.get_sigma_gaussian(ε, δ, tol=1e-15).
    for (eps, delta, sigma) in [
        (0.5, 1e-5, 7.031_826_675_582_486_5),
        (1.0, 1e-5, 3.730_631_634_815_941_4),
        (3.0, 1e-6, 1.543_861_417_775_642),
        (10.0, 1e-10, 0.683_043_967_227_481_3),
    ] {
        let z = analytic_sigma(1.0, eps, delta).unwrap();
        assert!((z - sigma).abs() < 1e-9 * sigma, "ε {eps} δ {delta}: {z} vs {sigma}");
    }
    // get_epsilon_gaussian(10/√1000, 1e-5): the exact ε of 1000 releases at z = 10.
    let eps = composed_epsilon(10.0, 1000, 1e-5).unwrap();
    assert!((eps - 17.856_586_830_107_616).abs() < 1e-8, "{eps}");
}
