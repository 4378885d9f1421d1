//! The private-regression study (capeFM, spec cape-fm §4) end to end on a MemoryRoom: the mean
//! study's roles with `Query::Regression`, through the real SecureAgg. Checks the aggregate noise
//! against Lemma 1 by Monte Carlo over the released entries, the model against the pooled
//! non-private fit at large ε, the ledger entries and the guarantee (§7.1 joint release, full
//! adversary view), a dropout's re-run and a site whose records leave FM's domain.

mod cape_support;
mod study_support;

use cape_support::{assert_variance, mean_square};
use capelab_core::data::{Dataset, synthetic};
use capelab_core::fm::{Model, nonprivate};
use capelab_core::gaussian;
use capelab_core::secagg::sim::DropMode;
use capelab_core::study::mean::sim::{StudyDropPoint, StudySim, StudySimConfig};
use capelab_core::study::mean::{Calibration, DataError, DeclineReason, Query, collusion_factor};
use capelab_core::study::regression::{RegressionQuery, fit_model, study_guarantee};
use study_support::ledger;

/// `sites` parts of one synthetic regression set (shared w*), each `n_s` records of D features
/// followed by the label.
fn parts(sites: usize, n_s: usize, d: usize, seed: u64) -> (Vec<Vec<Vec<f64>>>, Dataset) {
    let (pooled, _) = synthetic::regression(sites * n_s, d, 0.1, seed);
    let parts = pooled
        .partition(sites)
        .unwrap()
        .iter()
        .map(|p| {
            (0..p.len()).map(|i| p.x.row(i).iter().copied().chain([p.y[i]]).collect()).collect()
        })
        .collect();
    (parts, pooled)
}

fn minus(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}

const LINEAR: Query =
    Query::Regression(RegressionQuery { model: Model::Linear, release_constant: true });

#[test]
fn capefm_has_the_pooled_noise_and_beats_conventional_by_s() {
    let (s, n_s, d) = (4usize, 50, 30);
    let (parts, _) = parts(s, n_s, d, 11);
    let q = RegressionQuery::new(Model::Linear);
    let locals: Vec<Vec<f64>> = parts.iter().map(|p| q.site_vector(p, d)).collect();
    let len = q.vector_len(d);
    assert_eq!(len, 1 + d + d * (d + 1) / 2);
    let pooled: Vec<f64> =
        (0..len).map(|j| locals.iter().map(|l| l[j]).sum::<f64>() / s as f64).collect();

    let config = StudySimConfig::new(5, 0.5, 1e-5, n_s)
        .with_dimension(d)
        .with_conventional(true)
        .with_query(LINEAR);
    let data = parts.into_iter().enumerate().map(|(i, p)| (p, ledger(i, 100.0))).collect();
    let mut sim = StudySim::new(config, data).unwrap();
    let report = sim.run();
    let outcome = report.outcome.expect("finished");
    let est = outcome.estimates().unwrap_or_else(|| panic!("{:?}", outcome.result));
    assert_eq!(est.survivors.len(), s);

    // strict calibration: τ = m·c(δ)/ε in the released units, z = τ/m recorded
    let c = gaussian::classical_sigma_as_in_papers(1.0, 0.5, 1e-5).unwrap();
    let tau = outcome.noise.local_sd;
    assert!((tau - 1.5 * c).abs() < 1e-9, "{tau}");
    assert!((outcome.noise.noise_multiplier - c).abs() < 1e-9);
    let sf = s as f64;
    // Lemma 1: the CAPE mean is the pooled vector plus noise of variance τ²/S²; conventional τ²/S
    assert_variance("capeFM", mean_square(&minus(&est.cape, &pooled)), tau * tau / (sf * sf), len);
    let conv = est.conventional.as_ref().unwrap();
    assert_variance("conventional", mean_square(&minus(conv, &pooled)), tau * tau / sf, len);

    // the ledger: one joint release per attempt (+ the conventional one), full-view c_S
    for site in &report.sites {
        let labels: Vec<&str> = site.spent.iter().map(|e| e.event.label()).collect();
        assert_eq!(
            labels,
            [
                "capefm/cape attempt 1 (Λ₀, Λ₁, Λ₂ jointly, m = 1.5)",
                "capefm/conventional (Λ₀, Λ₁, Λ₂ jointly, m = 1.5)"
            ]
        );
        let cape = site.spent[0].event.gaussian().unwrap();
        assert!((cape.mechanism().noise_multiplier() - c).abs() < 1e-9);
        assert!((cape.collusion_factor() - collusion_factor(s)).abs() < 1e-12);
        assert!(site.spent[0].study.starts_with("capefm "));
    }
    // the guarantee fm::Guarantee computes has the ledger's multiplier and the target ε
    let g = study_guarantee(&outcome.params, s).unwrap();
    assert!((g.effective_noise_multiplier.unwrap() - c).abs() < 1e-9);
    assert_eq!(g.joint_multiplier, Some(1.5));
    let views = g.cape.as_ref().unwrap();
    assert!((views.full_view.c_s - collusion_factor(s)).abs() < 1e-12);
    assert!(g.epsilon > views.aggregator_only.epsilon_exact, "the full view is the weakest");

    // the fitted model's Λ̂₂ noise is Δ₂(N_s)·τ/S
    let fitted = fit_model(&outcome.params, &est.cape, tau / sf).unwrap();
    let delta2 = std::f64::consts::SQRT_2 / n_s as f64;
    assert!((fitted.quadratic_noise_sd - delta2 * tau / sf).abs() < 1e-12);
    assert_eq!(fitted.weights.len(), d);
    assert!(fitted.room_loss_estimate.is_some());
}

#[test]
fn at_large_epsilon_the_private_model_is_the_pooled_fit() {
    let (s, n_s, d) = (3usize, 200, 4);
    for (model, seed) in [(Model::Linear, 21u64), (Model::Logistic, 22)] {
        let (mut parts, mut pooled) = parts(s, n_s, d, seed);
        if model == Model::Logistic {
            let label = |y: f64| if y > 0.0 { 1.0 } else { 0.0 };
            pooled.y = pooled.y.map(label);
            for p in &mut parts {
                for r in p.iter_mut() {
                    r[d] = label(r[d]);
                }
            }
        }
        let query = Query::Regression(RegressionQuery::new(model));
        let mut config =
            StudySimConfig::new(seed, 1e4, 1e-5, n_s).with_dimension(d).with_query(query);
        config.calibration = Calibration::Analytic;
        let data = parts.into_iter().enumerate().map(|(i, p)| (p, ledger(i, 1e9))).collect();
        let report = StudySim::new(config, data).unwrap().run();
        let outcome = report.outcome.expect("finished");
        let est = outcome.estimates().unwrap();
        let tau = outcome.noise.local_sd;
        let fitted = fit_model(&outcome.params, &est.cape, tau / s as f64).unwrap();
        // the noise-free FM objective's minimiser on the pooled data: exact for linear (the
        // arrays are the loss), the Taylor objective's for logistic
        let exact = capelab_core::fm::Coefficients::of(model, &pooled);
        let reference = exact.lambda2.clone().try_inverse().unwrap() * &exact.lambda1 * -0.5;
        let gap: f64 =
            fitted.weights.iter().zip(reference.iter()).map(|(a, b)| (a - b).powi(2)).sum();
        // first-order perturbation of ŵ = −½Λ₂⁻¹Λ₁: ‖δŵ‖ ≤ ‖Λ₂⁻¹‖(½‖δΛ₁‖ + ‖δΛ₂‖‖ŵ‖), with
        // ‖δΛ₁‖ ≈ sd₁√D and ‖δΛ₂‖ ≈ 2·sd₂√D (Wigner); five times that, to be safe
        let q = RegressionQuery::new(model);
        let sd = |b| {
            q.block_sensitivities(n_s).into_iter().find(|x| x.0 == b).unwrap().1 * tau / s as f64
        };
        let inv_norm = 1.0 / exact.lambda2.symmetric_eigenvalues().min();
        let rd = (d as f64).sqrt();
        let bound = inv_norm
            * (0.5 * sd(capelab_core::fm::Block::Linear) * rd
                + 2.0 * sd(capelab_core::fm::Block::Quadratic) * rd * reference.norm());
        assert!(gap.sqrt() < 5.0 * bound, "{model:?}: ‖ŵ − w_FM‖ = {} > 5·{bound}", gap.sqrt());
        assert!(bound < 0.05, "{model:?}: ε = 10⁴ leaves little noise ({bound})");
        if model == Model::Linear {
            let w = nonprivate::fit(model, &pooled);
            let gap = (&reference - w).norm();
            assert!(gap < 1e-9, "linear FM is exact: {gap}");
            // Λ₀ is released: f̂(ŵ) is the pooled training MSE
            let mse = model.loss(&nalgebra::DVector::from_column_slice(&fitted.weights), &pooled);
            // …up to the noise on the arrays at ŵ
            let est = fitted.room_loss_estimate.unwrap();
            let wn = reference.norm();
            let noise = sd(capelab_core::fm::Block::Constant)
                + sd(capelab_core::fm::Block::Linear) * rd * wn
                + 2.0 * sd(capelab_core::fm::Block::Quadratic) * rd * wn * wn;
            assert!((est - mse).abs() < 5.0 * noise, "{est} vs {mse} (noise {noise})");
            assert!(noise < 0.1 * mse, "{noise} {mse}");
        }
    }
}

#[test]
fn a_site_that_never_releases_costs_a_rerun_in_every_ledger() {
    let (s, n_s, d) = (4usize, 30, 3);
    let (parts, _) = parts(s, n_s, d, 31);
    let config = StudySimConfig::new(31, 0.5, 1e-5, n_s)
        .with_dimension(d)
        .with_query(LINEAR)
        .with_dropout(2, StudyDropPoint::BeforeRelease { attempt: 1 }, DropMode::Disconnect);
    let data = parts.into_iter().enumerate().map(|(i, p)| (p, ledger(i, 100.0))).collect();
    let report = StudySim::new(config, data).unwrap().run();
    let outcome = report.outcome.expect("finished");
    let est = outcome.estimates().unwrap_or_else(|| panic!("{:?}", outcome.result));
    assert_eq!((est.attempt, est.survivors.len()), (2, 3));
    for (i, site) in report.sites.iter().enumerate() {
        let expected = if i == 2 { 0 } else { 2 };
        assert_eq!(site.spent.len(), expected, "site {i}: {:?}", site.spent);
    }
    let fitted = fit_model(&outcome.params, &est.cape, outcome.noise.local_sd / 3.0).unwrap();
    assert!(fitted.weights.iter().all(|w| w.is_finite()));
}

#[test]
fn a_record_outside_fms_domain_makes_its_site_decline() {
    let (s, n_s, d) = (4usize, 20, 2);
    let (mut parts, _) = parts(s, n_s, d, 41);
    parts[1][7] = vec![0.9, 0.9, 0.0];
    let config = StudySimConfig::new(41, 0.5, 1e-5, n_s).with_dimension(d).with_query(LINEAR);
    let data = parts.into_iter().enumerate().map(|(i, p)| (p, ledger(i, 100.0))).collect();
    let mut sim = StudySim::new(config, data).unwrap();
    let report = sim.run();
    let outcome = report.outcome.expect("finished");
    assert_eq!(outcome.declined.len(), 1);
    assert_eq!(outcome.declined[0].site, sim.site_id(1));
    assert!(matches!(
        outcome.declined[0].reason,
        DeclineReason::Data(DataError::RowNorm { row: 7, .. })
    ));
    assert_eq!(outcome.estimates().unwrap().survivors.len(), 3);
    assert!(report.sites[1].spent.is_empty(), "a site that declined spent nothing");
}
