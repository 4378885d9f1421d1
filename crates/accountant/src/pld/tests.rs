//! The PLD accountant against exact curves, RDP, refinement of its own grid, and bad input.

use super::super::conversion::Conversion;
use super::super::rdp::RdpAccountant;
use super::super::{AccountantError, Event, Mechanism, PrivacyAccountant};
use super::*;

fn sampled(z: f64, q: f64, count: u64) -> Event {
    Event::new(
        "dp-sgd",
        Mechanism::PoissonSampledGaussian { noise_multiplier: z, sampling_rate: q },
        count,
    )
    .unwrap()
}

/// The test vector: DPVI's run (σ = 2.042, q = 100/30162, T = 20 000, δ = 1e−5).
/// dp-accounting 0.6.0's PLDAccountant at h = 1e−4 gives 0.9088; RDP 0.9948.
#[test]
fn dpvi_test_vector() {
    let mut pld = PldAccountant::default();
    pld.compose(&sampled(2.042, 100.0 / 30162.0, 20_000));
    let eps = pld.epsilon(1e-5).unwrap();
    assert_eq!(eps.interval, Some(DEFAULT_INTERVAL));
    assert!((eps.epsilon - 0.909).abs() < 1e-3, "PLD ε = {}", eps.epsilon);

    let mut rdp = RdpAccountant::new(Conversion::Improved);
    rdp.compose(&sampled(2.042, 100.0 / 30162.0, 20_000));
    let rdp_eps = rdp.epsilon(1e-5).unwrap().epsilon;
    assert!(eps.epsilon < rdp_eps, "PLD {} vs RDP {rdp_eps}", eps.epsilon);
}

/// A finer grid moves ε by under 1e−3 (the default's promise), and only downwards: the coarser
/// grid's answer is the more pessimistic upper bound.
#[test]
fn default_interval_is_within_1e3_of_a_ten_times_finer_grid() {
    let event = sampled(2.042, 100.0 / 30162.0, 20_000);
    let at = |h: f64| {
        let mut a = PldAccountant::with_interval(h).unwrap();
        a.compose(&event);
        a.epsilon(1e-5).unwrap().epsilon
    };
    let (coarse, fine) = (at(DEFAULT_INTERVAL), at(DEFAULT_INTERVAL / 10.0));
    assert!(coarse >= fine - 1e-9 && coarse - fine < 1e-3, "h = 1e-4: {coarse}, 1e-5: {fine}");
}

/// Unsampled Gaussians: the discretised composition is an upper bound on the exact curve and
/// within the grid's error of it; the accountant answers them exactly.
#[test]
fn discretised_gaussian_composition_bounds_the_exact_curve() {
    let (z, t, delta) = (5.0, 100, 1e-5);
    let grid = Pld::gaussian(z, 1e-4).unwrap().self_compose(t).unwrap();
    let exact = super::super::analytic_gaussian::composed_epsilon(z, t, delta).unwrap();
    let got = grid.epsilon_for_delta(delta).unwrap();
    assert!(got >= exact - 1e-12 && got - exact < 2e-3, "grid {got} vs exact {exact}");

    let mut a = PldAccountant::default();
    a.compose(&Event::gaussian("x", z, t).unwrap());
    let answer = a.epsilon(delta).unwrap();
    assert_eq!(answer.interval, None);
    assert!((answer.epsilon - exact).abs() < 1e-12);
    assert!((a.delta(answer.epsilon).unwrap() - delta).abs() < 1e-12);
}

/// Monte Carlo: the δ(ε) of 3 composed subsampled-Gaussian releases, estimated from the privacy
/// loss of sampled outputs (δ = E_P[(1 − e^{ε − L})₊]), lies below the PLD's bound and close to it.
#[test]
fn composed_delta_matches_monte_carlo() {
    use rand::SeedableRng;
    use rand_distr::{Distribution, Normal};
    let (z, q, t) = (0.9, 0.4, 3_u64);
    let pld = Pld::poisson_sampled_gaussian(z, q, 1e-4).unwrap().self_compose(t).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let noise = Normal::new(0.0, z).unwrap();
    let n = 400_000;
    let eps = 1.0;
    // Remove direction: P = (1−q)N(0) + qN(−1), Q = N(0); loss = ln(1 − q + q·e^{(−1/2 − x)/z²}).
    let mut acc = 0.0;
    for _ in 0..n {
        let mut loss = 0.0;
        for _ in 0..t {
            let shift = if rand::RngExt::random::<f64>(&mut rng) < q { -1.0 } else { 0.0 };
            let x: f64 = shift + noise.sample(&mut rng);
            loss += (1.0 - q + q * ((-0.5 - x) / (z * z)).exp()).ln();
        }
        acc += (-(eps - loss).exp_m1()).max(0.0);
    }
    let mc = acc / n as f64;
    let bound = pld.remove().delta_for_epsilon(eps);
    let se = 3e-3; // generous: the estimator's s.e. here is about 4e-4
    assert!(bound >= mc - se && bound - mc < se, "PLD {bound} vs Monte Carlo {mc}");
}

/// PLD ε ≤ RDP ε on the cross-check grid (a cheap subset in debug builds).
#[test]
fn pld_is_never_looser_than_rdp() {
    for &z in &[0.5, 1.0, 2.042, 5.0] {
        for &q in &[1.0, 0.01, 100.0 / 30162.0] {
            for &t in &[1_u64, 100] {
                for &delta in &[1e-5, 1e-7] {
                    let event = if q == 1.0 {
                        Event::gaussian("x", z, t).unwrap()
                    } else {
                        sampled(z, q, t)
                    };
                    let mut pld = PldAccountant::with_interval(1e-3).unwrap();
                    pld.compose(&event);
                    let mut rdp = RdpAccountant::new(Conversion::Improved);
                    rdp.compose(&event);
                    let (p, r) =
                        (pld.epsilon(delta).unwrap().epsilon, rdp.epsilon(delta).unwrap().epsilon);
                    assert!(p <= r + 1e-9, "z {z} q {q} T {t} δ {delta}: PLD {p} > RDP {r}");
                }
            }
        }
    }
}

#[test]
fn collusion_view_is_a_gaussian_with_the_effective_multiplier() {
    let event = Event::gaussian("cape", 4.0, 50).unwrap().viewed_with(1.6).unwrap();
    let mut a = PldAccountant::default();
    a.compose(&event);
    let direct = super::super::analytic_gaussian::composed_epsilon(4.0 / 1.6f64.sqrt(), 50, 1e-5);
    assert!((a.epsilon(1e-5).unwrap().epsilon - direct.unwrap()).abs() < 1e-12);
}

#[test]
fn laplace_composition_bounds_the_pure_dp_answer() {
    // 10 Laplace releases with b = 1: basic composition says ε = 10 at δ = 0; at δ = 1e−5 the PLD
    // must be tighter than that and not below the advanced-composition-free exact single release.
    let pld = Pld::laplace(1.0, 1e-4).unwrap().self_compose(10).unwrap();
    let eps = pld.epsilon_for_delta(1e-5).unwrap();
    assert!(eps < 10.0 && eps > 1.0, "ε = {eps}");
    assert!(pld.delta_for_epsilon(10.0).unwrap() < 1e-12);
}

#[test]
fn bad_input_is_named() {
    assert_eq!(Pld::gaussian(0.0, 1e-4).unwrap_err(), AccountantError::NoiseMultiplier(0.0).into());
    assert_eq!(
        Pld::poisson_sampled_gaussian(1.0, 1.5, 1e-4).unwrap_err(),
        AccountantError::SamplingRate(1.5).into()
    );
    assert_eq!(
        Pld::poisson_sampled_gaussian(1.0, 0.0, 1e-4).unwrap_err(),
        AccountantError::SamplingRate(0.0).into()
    );
    assert_eq!(
        Pld::gaussian(1.0, 1e-4).unwrap().self_compose(0).unwrap_err(),
        AccountantError::ZeroCount.into()
    );
    let err = PldAccountant::with_interval(0.5).unwrap_err();
    assert_eq!(err, PldError::Interval(0.5));
    assert!(err.to_string().contains("h = 0.5"), "{err}");
    assert!(matches!(PldAccountant::with_interval(-1.0), Err(PldError::Interval(_))));
    assert_eq!(
        PldAccountant::default().epsilon(1.0).unwrap_err(),
        AccountantError::Delta(1.0).into()
    );
    let huge = Pld::gaussian(1e-3, 1e-4).unwrap_err();
    assert!(matches!(huge, PldError::GridTooLarge { .. }), "{huge}");
    assert!(huge.to_string().contains("coarser interval"), "{huge}");
}

#[test]
fn calibration_meets_the_target_tightly() {
    let c = calibrate_noise_multiplier(1.0, 1e-5, 1000, 0.01, 1e-3).unwrap();
    assert!(c.epsilon <= 1.0);
    let mut a = PldAccountant::with_interval(1e-3).unwrap();
    a.compose(&sampled(c.noise_multiplier * (1.0 - 1e-3), 0.01, 1000));
    assert!(a.epsilon(1e-5).unwrap().epsilon > 1.0, "a 0.1% smaller z must miss the target");

    let exact = calibrate_noise_multiplier(2.0, 1e-5, 10, 1.0, DEFAULT_INTERVAL).unwrap();
    let z_analytic = super::super::analytic_gaussian::analytic_multiplier(2.0, 1e-5).unwrap();
    let rel = exact.noise_multiplier / (z_analytic * 10f64.sqrt()) - 1.0;
    assert!((0.0..2e-4).contains(&rel), "{rel}");
    // PLD needs less noise than RDP for the same target.
    let rdp = calibrate_noise_multiplier_rdp(1.0, 1e-5, 1000, 0.01).unwrap();
    assert!(rdp.epsilon <= 1.0 && rdp.noise_multiplier > c.noise_multiplier * 1.01, "{rdp:?}");
    assert!(matches!(
        calibrate_noise_multiplier(0.0, 1e-5, 10, 1.0, 1e-4),
        Err(PldError::Accountant(AccountantError::TargetEpsilon(_)))
    ));
}
