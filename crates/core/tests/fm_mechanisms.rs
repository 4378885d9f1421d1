//! The mechanisms end to end: noise levels by Monte Carlo, the limits ε → ∞, the orderings the
//! papers claim, and the guarantees reported (spec cape-fm §3, §4, §6, §7).

use capelab_core::cape::IdealSecureSum;
use capelab_core::data::{Dataset, synthetic};
use capelab_core::fm::calibration::{Calibrated, Formula};
use capelab_core::fm::coefficients::{Block, Coefficients};
use capelab_core::fm::distributed::{cape_release, conventional_release};
use capelab_core::fm::mechanism::gaussian_release;
use capelab_core::fm::sensitivity::gaussian_fm;
use capelab_core::fm::{
    Calibration, FmConfig, FmError, Guarantee, GuaranteeKind, Mechanism, Model, evaluate, fit,
};
use capelab_core::rng::derive;

fn regression(n: usize, d: usize, seed: u64) -> (Dataset, Dataset, nalgebra::DVector<f64>) {
    let (data, w) = synthetic::regression(n + n / 4, d, 0.0, seed);
    let (train, test) = data.split(0.2, seed).unwrap();
    (train, test, w)
}

fn mse(config: &FmConfig, train: &Dataset, test: &Dataset) -> f64 {
    let f = fit(config, train).unwrap();
    evaluate(config.model, &f.w(), train, test, None).mse.unwrap()
}

fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// Per-entry noise of `released` − `exact`, pooled over trials, as (sample sd, entries).
fn noise_sd(samples: &[Vec<f64>], exact: &[f64]) -> (f64, usize) {
    let mut ss = 0.0;
    let mut count = 0;
    for s in samples {
        for (a, b) in s.iter().zip(exact) {
            ss += (a - b).powi(2);
            count += 1;
        }
    }
    ((ss / count as f64).sqrt(), count)
}

/// |sd/expected − 1| within 5 standard errors (the sd estimate's relative SE is 1/√(2n)).
fn assert_sd(what: &str, sd: f64, expected: f64, n: usize) {
    let tol = 5.0 / (2.0 * n as f64).sqrt();
    assert!((sd / expected - 1.0).abs() < tol, "{what}: sd {sd} vs {expected} (tol {tol})");
}

#[test]
fn pooled_cape_and_conventional_noise_levels() {
    let (d, sites, n_s, z) = (3, 4, 50, 2.0);
    let (data, _) = synthetic::regression(sites * n_s, d, 0.0, 5);
    let parts = data.partition(sites).unwrap();
    let exact = Coefficients::of(Model::Linear, &data);
    let trials = 150;
    let pooled_sens = gaussian_fm(Model::Linear, sites * n_s, true);
    let site_sens = gaussian_fm(Model::Linear, n_s, true);
    let mut pooled: Vec<Vec<Vec<f64>>> = vec![vec![]; 3];
    let mut cape: Vec<Vec<Vec<f64>>> = vec![vec![]; 3];
    let mut conv: Vec<Vec<Vec<f64>>> = vec![vec![]; 3];
    for t in 0..trials {
        let mut rng = derive(t, "test/pooled");
        let (p, _) = gaussian_release(Model::Linear, &data, z, true, &mut rng);
        let mut sum = IdealSecureSum::new();
        let (c, report) = cape_release(Model::Linear, &parts, z, true, &mut sum, t).unwrap();
        let (v, _) = conventional_release(Model::Linear, &parts, z, true, t).unwrap();
        assert_eq!(p.lambda2, p.lambda2.transpose(), "symmetric noise");
        assert_eq!(c.lambda2, c.lambda2.transpose(), "CAPE keeps Λ₂ symmetric");
        for (k, b) in Block::ALL.iter().enumerate() {
            pooled[k].push(p.block(*b));
            cape[k].push(c.block(*b));
            conv[k].push(v.block(*b));
        }
        assert_eq!(report.len(), 3);
    }
    for (k, b) in Block::ALL.iter().enumerate() {
        let target = exact.block(*b);
        let tau_pool = pooled_sens.of(*b).unwrap() * z;
        let tau_site = site_sens.of(*b).unwrap() * z;
        assert!((tau_site / sites as f64 - tau_pool).abs() < 1e-15, "Δ(N_s) = S·Δ(N)");
        let (sd, n) = noise_sd(&pooled[k], &target);
        assert_sd(&format!("pooled {b:?}"), sd, tau_pool, n);
        let (sd, n) = noise_sd(&cape[k], &target);
        assert_sd(&format!("CAPE {b:?} (Lemma 1: pooled level)"), sd, tau_pool, n);
        let (sd, n) = noise_sd(&conv[k], &target);
        assert_sd(
            &format!("conventional {b:?} (√S·τ_pool)"),
            sd,
            tau_site / (sites as f64).sqrt(),
            n,
        );
    }
}

#[test]
fn every_mechanism_approaches_non_private_as_epsilon_grows() {
    let (train, test, _) = regression(1500, 4, 1);
    let mut ok = vec![];
    for mech in Mechanism::ALL {
        let mut c = FmConfig::new(Model::Linear, mech, 1e6, 1e-5);
        c.calibration = Calibration::Analytic;
        let err = mse(&c, &train, &test);
        // The data are noiseless: the non-private MSE is 0 up to rounding.
        assert!(err < 1e-8, "{}: MSE {err}", mech.name());
        ok.push(mech.name());
    }
    let raw = synthetic::two_gaussians(3000, 4, 0.5, 2);
    let data = Dataset { x: raw.x.map(|v| v / 6.0), y: raw.y };
    let data = Dataset {
        x: nalgebra::DMatrix::from_fn(data.len(), 4, |i, j| {
            data.x[(i, j)] / data.x.row(i).norm().max(1.0)
        }),
        y: data.y,
    };
    let (train, test) = data.split(0.2, 3).unwrap();
    let base = FmConfig::new(Model::Logistic, Mechanism::NonPrivate, 1.0, 1e-5);
    let np = evaluate(Model::Logistic, &fit(&base, &train).unwrap().w(), &train, &test, None);
    let taylor = FmConfig::new(Model::Logistic, Mechanism::Gaussian, 1e6, 1e-5);
    for mech in Mechanism::ALL {
        let c = FmConfig { mechanism: mech, calibration: Calibration::Analytic, ..taylor.clone() };
        let acc = evaluate(Model::Logistic, &fit(&c, &train).unwrap().w(), &train, &test, None);
        let gap = np.accuracy.unwrap() - acc.accuracy.unwrap();
        // FM minimises the Taylor approximation, not the exact loss: allow two points.
        assert!(gap < 0.02, "{}: accuracy {:?} vs non-private {:?}", mech.name(), acc, np);
    }
}

#[test]
fn gaussian_fm_beats_laplace_fm_at_the_same_epsilon() {
    let (train, test, _) = regression(10_000, 5, 4);
    let (mut g, mut l) = (vec![], vec![]);
    for seed in 0..15 {
        let base =
            FmConfig { seed, ..FmConfig::new(Model::Linear, Mechanism::Gaussian, 1.0, 1e-5) };
        g.push(mse(&base, &train, &test));
        l.push(mse(&FmConfig { mechanism: Mechanism::Laplace, ..base }, &train, &test));
    }
    g.sort_by(f64::total_cmp);
    l.sort_by(f64::total_cmp);
    // At D = 5, N = 10⁴, ε = 1 the Laplace noise on Λ₂ (sd 0.01) swamps its small eigenvalues
    // (about 1/60); the Gaussian noise (sd 5e-4) does not.
    assert!(g[7] < 0.2 * l[7], "median Gaussian {} vs Laplace {}", g[7], l[7]);
}

#[test]
fn cape_matches_pooled_gaussian_and_beats_conventional() {
    let (train, test, _) = regression(10_000, 5, 6);
    let (mut gauss, mut cape, mut conv) = (vec![], vec![], vec![]);
    for seed in 0..30 {
        let base =
            FmConfig { seed, ..FmConfig::new(Model::Linear, Mechanism::Gaussian, 0.5, 1e-5) };
        gauss.push(mse(&base, &train, &test));
        cape.push(mse(&FmConfig { mechanism: Mechanism::Cape, ..base.clone() }, &train, &test));
        conv.push(mse(&FmConfig { mechanism: Mechanism::Conventional, ..base }, &train, &test));
    }
    let (g, g_se) = mean_se(&gauss);
    let (c, c_se) = mean_se(&cape);
    let (v, v_se) = mean_se(&conv);
    let diff_se = (g_se * g_se + c_se * c_se).sqrt();
    assert!((g - c).abs() < 3.0 * diff_se, "CAPE {c} ± {c_se} vs pooled {g} ± {g_se}");
    assert!(v - c > 3.0 * (v_se * v_se + c_se * c_se).sqrt(), "conv {v} ± {v_se} vs CAPE {c}");
}

#[test]
fn guarantees_state_m_strictness_and_the_cape_views() {
    let (train, _, _) = regression(2000, 3, 8);
    // Paper-faithful linear regression at ε = 0.5: three blocks, m = 1.5, joint ε above target.
    let paper = fit(&FmConfig::new(Model::Linear, Mechanism::Gaussian, 0.5, 1e-5), &train).unwrap();
    let g = &paper.guarantee;
    assert_eq!(
        (g.kind, g.joint_multiplier, g.strict),
        (GuaranteeKind::Approximate, Some(1.5), false)
    );
    assert!(g.epsilon > 0.5 && g.epsilon < 0.56, "{}", g.epsilon);
    assert!(g.warnings.iter().any(|w| w.contains("strict")), "{:?}", g.warnings);
    // Strict: z = m·z_target, so the joint release meets the target.
    let mut strict = FmConfig::new(Model::Linear, Mechanism::Gaussian, 0.5, 1e-5);
    strict.strict = true;
    let s = fit(&strict, &train).unwrap();
    assert!(s.guarantee.epsilon <= 0.5, "{}", s.guarantee.epsilon);
    assert!((s.noise[1].aggregate_sd / paper.noise[1].aggregate_sd - 1.5).abs() < 1e-12);
    // Laplace and output perturbation are pure ε-DP.
    let lap = fit(&FmConfig::new(Model::Linear, Mechanism::Laplace, 0.5, 1e-5), &train).unwrap();
    assert_eq!((lap.guarantee.kind, lap.guarantee.delta), (GuaranteeKind::Pure, 0.0));
    // CAPE: the views, with the full view as the guarantee.
    let cape = fit(&FmConfig::new(Model::Linear, Mechanism::Cape, 0.5, 1e-5), &train).unwrap();
    let views = cape.guarantee.cape.as_ref().unwrap();
    assert_eq!((views.sites, views.colluders), (5, 1));
    assert!(views.full_view.c_s > views.theorem1.c_s);
    assert_eq!(cape.guarantee.epsilon, views.full_view.epsilon_exact);
    assert!(views.full_view.epsilon_exact > views.theorem1.epsilon_exact);
}

#[test]
fn cape_guarantee_reproduces_the_spec_test_vector() {
    // Spec §1.5: S = 5, S_C = 1, τ calibrated with ε₀ = 1, δ₀ = 1e-5 (z = 4.84481), one block.
    let cal = Calibrated {
        multiplier: 4.844_805_262,
        formula: Formula::PaperExtrapolation,
        is_guarantee: false,
    };
    let collusion = capelab_core::cape::Collusion::new(5, 1).unwrap();
    let g = Guarantee::cape(1.0, 1e-5, cal, 1.0, false, &collusion).unwrap();
    let t1 = &g.cape.as_ref().unwrap().theorem1;
    assert!((t1.mu_z - 0.02811).abs() < 5e-6, "{}", t1.mu_z);
    assert!((t1.sigma_z - 0.2371).abs() < 5e-5);
    assert!((t1.delta_phi_bound.unwrap() - 4.37e-5).abs() < 5e-8);
    assert!((t1.delta_tail.unwrap() - 4.15e-5).abs() < 5e-8);
    assert!(g.warnings.iter().any(|w| w.contains("not the calibration δ")));
}

/// A secure sum that counts its rounds and the sites in each: the seam a real SecureAgg round
/// plugs into.
struct Counting {
    inner: IdealSecureSum,
    rounds: Vec<(usize, usize)>,
}

impl capelab_core::cape::SecureSum for Counting {
    type Error = <IdealSecureSum as capelab_core::cape::SecureSum>::Error;
    fn sum(
        &mut self,
        shares: &[capelab_core::cape::NoiseShare],
    ) -> Result<capelab_core::cape::NoiseSum, Self::Error> {
        self.rounds.push((shares.len(), shares[0].ring.len()));
        self.inner.sum(shares)
    }
}

#[test]
fn cape_fm_runs_one_secure_sum_per_noisy_block_through_the_seam() {
    let (train, _, _) = regression(600, 4, 10);
    let mut seam = Counting { inner: IdealSecureSum::new(), rounds: vec![] };
    let c = FmConfig::new(Model::Linear, Mechanism::Cape, 0.5, 1e-5);
    let via_seam = capelab_core::fm::fit_with(&c, &train, &mut seam).unwrap();
    // Λ₀ (1 entry), Λ₁ (D = 4), Λ₂ (upper triangle, 10), each summed over S = 5 sites.
    assert_eq!(seam.rounds, vec![(5, 1), (5, 4), (5, 10)]);
    assert_eq!(via_seam, fit(&c, &train).unwrap(), "same seed, same result as the ideal sum");
    let logistic = FmConfig::new(Model::Logistic, Mechanism::Cape, 0.5, 1e-5);
    let labels = Dataset { x: train.x.clone(), y: train.y.map(|y| f64::from(y > 0.0)) };
    let mut seam = Counting { inner: IdealSecureSum::new(), rounds: vec![] };
    capelab_core::fm::fit_with(&logistic, &labels, &mut seam).unwrap();
    assert_eq!(seam.rounds, vec![(5, 4), (5, 10)], "logistic Λ₀ carries no data: no round");
}

#[test]
fn refusals_name_the_problem() {
    let (train, _, _) = regression(200, 3, 9);
    let mut c = FmConfig::new(Model::Linear, Mechanism::Cape, 0.5, 1e-5);
    c.sites = 1;
    assert_eq!(
        fit(&c, &train).unwrap_err(),
        FmError::Sites { mechanism: "cape", sites: 1, min: 2 }
    );
    let bad = Dataset { x: train.x.map(|v| 3.0 * v), y: train.y.clone() };
    let c = FmConfig::new(Model::Linear, Mechanism::Gaussian, 0.5, 1e-5);
    assert!(matches!(fit(&c, &bad), Err(FmError::OutsideDomain { .. })));
    let c = FmConfig::new(Model::Linear, Mechanism::Gaussian, -1.0, 1e-5);
    assert_eq!(fit(&c, &train).unwrap_err(), FmError::Epsilon(-1.0));
    let c = FmConfig::new(Model::Logistic, Mechanism::Gaussian, 0.5, 1e-5);
    assert!(matches!(fit(&c, &train), Err(FmError::OutsideDomain { .. })), "labels not 0/1");
}
