//! The asymmetric extension (spec cape-secagg-pca-djica §2 "Asymmetric extension", §8 pitfall 2):
//! the variance plan, its worst-case privacy, the Σ_âê erratum shown by Monte Carlo, and
//! infeasible inputs.
//!
//! δ formula: the spec's "δ(0.5) = 3.0e-4" is the φ-bound at the worst-case μ_z (2Q gives 2.8e-4).

mod cape_support;

use cape_support::{Z, assert_variance, mean_product, mean_square, product_se};
use capelab_core::cape::adversary_view::{AdversaryView, NoiseSumView};
use capelab_core::cape::asymmetric::{
    AsymmetricError, AsymmetricPlan, AsymmetricView, CrossTerm, MeanTargets,
};
use capelab_core::cape::privacy::{Collusion, PrivacyError, c_s_closed_form, c_s_full_view};
use capelab_core::cape::simulation::{Dropouts, SimSite, run_cape_round};
use capelab_core::cape::{EstimateError, IdealSecureSum, noise_format};
use capelab_core::wire::ParticipantId;

const IDS: [ParticipantId; 4] = [1, 2, 3, 4];
const SIZES: [u64; 4] = [100, 200, 300, 400];
const EPSILON: f64 = 0.5;
const DELTA: f64 = 1e-5;

fn default_plan() -> AsymmetricPlan {
    AsymmetricPlan::from_sample_sizes(&IDS, &SIZES, EPSILON, DELTA).unwrap()
}

#[test]
fn default_weights_give_sigma_equal_tau_and_the_spec_worst_case() {
    let plan = default_plan();
    let targets = MeanTargets::new(&IDS, &SIZES, EPSILON, DELTA).unwrap();
    for (v, t) in plan.noise_var().iter().zip(&targets.local_sd) {
        assert!((v / (t * t) - 1.0).abs() < 1e-12, "σ_s² = {v}, τ_s² = {}", t * t);
    }
    let collusion = Collusion::default_for(4).unwrap();
    let worst = plan
        .worst_case(&targets.sensitivities, &collusion, AsymmetricView::PaperCorrected)
        .unwrap();
    println!("paper model, corrected Σ_âê: {worst:?}");
    assert!(worst.positive_definite);
    assert!((worst.loss.mu_z - 0.009136).abs() < 5e-7, "μ_z = {}", worst.loss.mu_z);
    assert_eq!((worst.worst.target, worst.worst.colluders.clone()), (1, vec![2]));
    let delta_phi = worst.loss.delta_phi_bound(EPSILON).unwrap();
    let delta_tail = worst.loss.delta_tail(EPSILON).unwrap();
    println!("δ(0.5): φ-bound {delta_phi:e}, 2Q {delta_tail:e}");
    assert!((delta_phi - 3.0e-4).abs() < 0.05e-4, "φ-bound δ = {delta_phi}");
    assert!((delta_tail - 3.0e-4).abs() > 0.1e-4, "the spec's 3.0e-4 is the φ-bound, not 2Q");
    // Each target's worst set is reported; site 1 (fewest samples) is the worst target.
    assert_eq!(worst.per_target.len(), 4);
    assert!(worst.per_target.iter().all(|t| t.mu_z <= worst.loss.mu_z));
}

#[test]
fn the_printed_cross_covariance_is_not_a_covariance() {
    // Spec: the typo (μ_i² for μ_i) makes μ_z "about 270× too small". With the printed term the
    // matrix is indefinite for every (target, colluder) pair; the largest ½Δ²[Σ⁻¹]₁₁ it gives
    // through a plain inverse is 3.39e-5, 1/270 of the corrected 0.009136.
    let plan = default_plan();
    let targets = MeanTargets::new(&IDS, &SIZES, EPSILON, DELTA).unwrap();
    let collusion = Collusion::default_for(4).unwrap();
    let printed = plan
        .worst_case(&targets.sensitivities, &collusion, AsymmetricView::PaperAsPrinted)
        .unwrap();
    let corrected = plan
        .worst_case(&targets.sensitivities, &collusion, AsymmetricView::PaperCorrected)
        .unwrap();
    let ratio = corrected.loss.mu_z / printed.loss.mu_z;
    println!("as printed: μ_z = {:e}, ratio {ratio:.1}", printed.loss.mu_z);
    assert!(!printed.positive_definite);
    assert!((ratio - 270.0).abs() < 5.0, "ratio {ratio}");
}

#[test]
fn the_paper_covariance_matches_the_mechanism_for_every_honest_set() {
    // Ψ and the corrected Σ_âê against A·diag(Var n)·Aᵀ built from the mechanism, for the default
    // plan and for a feasible plan with arbitrary weights.
    let custom = AsymmetricPlan::new(&IDS, &[0.2, 0.25, 0.25, 0.3], &[1.0, 0.8, 0.6, 0.5], 0.2)
        .expect("feasible");
    for plan in [default_plan(), custom] {
        for colluder in 0..4 {
            for target in (0..4).filter(|&t| t != colluder) {
                let mut honest = vec![target];
                honest.extend((0..4).filter(|&i| i != target && i != colluder));
                let paper = plan.paper_covariance(&honest, CrossTerm::Corrected);
                let mechanism = plan.round_noise().covariance(
                    &honest,
                    NoiseSumView::Unweighted,
                    AdversaryView::Theorem1,
                );
                let scale = paper.amax();
                assert!((&paper - &mechanism).amax() < 1e-12 * scale, "honest {honest:?}");
                let printed = plan.paper_covariance(&honest, CrossTerm::AsPrinted);
                assert!((&printed - &mechanism).amax() > 1e-3 * scale);
            }
        }
    }
}

#[test]
fn the_weighted_views_reduce_to_the_symmetric_case_with_default_weights() {
    // With μ_s = N_s/N and τ_s = z/N_s, multiplying â_s by μ_s·S gives a symmetric round with
    // multiplier z, so the view of the weighted secure sum has μ_z = c_S/(2z²) exactly.
    let plan = default_plan();
    let targets = MeanTargets::new(&IDS, &SIZES, EPSILON, DELTA).unwrap();
    let collusion = Collusion::default_for(4).unwrap();
    let z = targets.local_sd[0] / targets.sensitivities[0];
    for (view, c_s) in [
        (AsymmetricView::WeightedSum, c_s_closed_form(&collusion)),
        (AsymmetricView::WeightedSumFullView, c_s_full_view(&collusion)),
    ] {
        let worst = plan.worst_case(&targets.sensitivities, &collusion, view).unwrap();
        println!("{view:?}: {:?}", worst.worst);
        let symmetric = c_s / (2.0 * z * z);
        assert!((worst.loss.mu_z / symmetric - 1.0).abs() < 1e-9, "{view:?}");
        assert!(worst.per_target.iter().all(|t| (t.mu_z / symmetric - 1.0).abs() < 1e-9));
    }
}

/// Runs one weighted round with D coordinates and f(x_s) = s (constant), returning the plan's
/// round (traces and estimate).
fn weighted_round(
    plan: &AsymmetricPlan,
    d: usize,
    dropouts: &Dropouts,
    seed: u64,
) -> Result<capelab_core::cape::simulation::CapeRound, String> {
    let sites: Vec<SimSite> = plan
        .sites()
        .iter()
        .map(|&id| SimSite { id, value: vec![id as f64; d], noise: plan.site_noise(id).unwrap() })
        .collect();
    let format = noise_format(plan.max_encoded_sd(), sites.len()).unwrap();
    run_cape_round(
        &sites,
        &format,
        &mut IdealSecureSum::new(),
        &plan.estimator(),
        dropouts,
        seed,
        0,
    )
    .map_err(|e| e.to_string())
}

#[test]
fn monte_carlo_confirms_the_variances_psi_and_the_corrected_cross_term() {
    const D: usize = 100_000;
    let custom = AsymmetricPlan::new(&IDS, &[0.2, 0.25, 0.25, 0.3], &[1.0, 0.8, 0.6, 0.5], 0.2)
        .expect("feasible");
    for (name, plan) in [("default", default_plan()), ("custom", custom)] {
        let round = weighted_round(&plan, D, &Dropouts::default(), 21).unwrap();
        let weights = plan.weights();
        // Noise of each message â_s − f(x_s), and the effective ê_s.
        let errors: Vec<Vec<f64>> = round
            .traces
            .iter()
            .map(|t| t.release.as_ref().unwrap().values.iter().map(|v| v - t.site as f64).collect())
            .collect();
        let ehat: Vec<&Vec<f64>> = round.traces.iter().map(|t| &t.quantised_noise).collect();

        // Each message carries its local target τ_s², the weighted estimate τ_pool².
        for (s, error) in errors.iter().enumerate() {
            let tau2 = plan.local_sd()[s].powi(2);
            assert_variance(&format!("{name}: â_{}", s + 1), mean_square(error), tau2, D);
        }
        let truth: f64 = weights.iter().zip(&IDS).map(|(m, &id)| m * id as f64).sum();
        let estimate_error: Vec<f64> =
            round.estimate.as_ref().unwrap().iter().map(|a| a - truth).collect();
        let pooled = plan.pooled_sd().powi(2);
        let measured = mean_square(&estimate_error);
        println!("{name}: Var(Σμâ) = {measured:.5e}, τ_pool² = {pooled:.5e}");
        assert_variance(&format!("{name}: Σμ_s â_s"), measured, pooled, D);

        // Σ μ_s e_s = 0 up to rounding: each μ_s·e_s carries at most 4 roundings (c_s = μ_s·S,
        // 2^−l/c_s, d_s·that, μ_s·e_s) and the sum of S terms S − 1 more, so
        // |Σ μ_s e_s| ≤ (S + 4)·2^−53·Σ|μ_s e_s|.
        let unit = f64::EPSILON / 2.0;
        for j in 0..D {
            let terms: Vec<f64> =
                round.traces.iter().zip(weights).map(|(t, m)| m * t.zero_sum_noise[j]).collect();
            let total: f64 = terms.iter().sum();
            let size: f64 = terms.iter().map(|x| x.abs()).sum();
            assert!(total.abs() <= 8.0 * unit * size, "coordinate {j}: Σμe = {total:e}");
        }

        // Ψ(i, j) = Cov(â_i, â_j).
        for i in 0..4 {
            for j in (i + 1)..4 {
                let psi = plan.psi(i, j);
                let (vi, vj) = (plan.local_sd()[i].powi(2), plan.local_sd()[j].powi(2));
                let se = product_se(vi, vj, psi, D);
                let measured = mean_product(&errors[i], &errors[j]);
                assert!(
                    (measured - psi).abs() < Z * se,
                    "{name}: Ψ({}, {}) = {psi:e}, Monte Carlo {measured:e} ± {se:e}",
                    i + 1,
                    j + 1
                );
            }
        }

        // [Σ_âê]_s = Cov(â_s, Σ_{h∈H} ê_h) with H = {1, 2, 3}: μ_i (corrected) agrees, μ_i² (as
        // printed) is many standard errors away.
        let honest = [0, 1, 2];
        let t: Vec<f64> = (0..D).map(|k| honest.iter().map(|&h| ehat[h][k]).sum()).collect();
        let t_var: f64 = honest.iter().map(|&h| plan.noise_var()[h]).sum();
        for &s in &honest {
            let corrected = plan.cross_cov(s, &honest, CrossTerm::Corrected);
            let printed = plan.cross_cov(s, &honest, CrossTerm::AsPrinted);
            let se = product_se(plan.local_sd()[s].powi(2), t_var, corrected, D);
            let measured = mean_product(&errors[s], &t);
            println!(
                "{name}: [Σ_âê]_{} Monte Carlo {measured:.5e} ± {se:.1e}; μ_i: {corrected:.5e}; \
                 μ_i²: {printed:.5e} ({:.0} se away)",
                s + 1,
                (measured - printed).abs() / se
            );
            assert!((measured - corrected).abs() < Z * se);
            assert!((measured - printed).abs() > 10.0 * Z * se);
        }

        // What the weighted secure sum reveals, T_w = Σ_{h∈H} μ_h ê_h, against the mechanism.
        let mechanism =
            plan.round_noise().covariance(&honest, NoiseSumView::Weighted, AdversaryView::Theorem1);
        let tw: Vec<f64> =
            (0..D).map(|k| honest.iter().map(|&h| weights[h] * ehat[h][k]).sum()).collect();
        for (row, &s) in honest.iter().enumerate() {
            let want = mechanism[(row, 3)];
            let se = product_se(mechanism[(row, row)], mechanism[(3, 3)], want, D);
            assert!((mean_product(&errors[s], &tw) - want).abs() < Z * se);
        }
    }
}

#[test]
fn weighted_rounds_refuse_a_changed_site_set() {
    let plan = default_plan();
    // A site gone before its noise was summed: the plan no longer fits, the sites refuse.
    let early = Dropouts { before_noise: vec![2], ..Default::default() };
    let err = weighted_round(&plan, 10, &early, 22).unwrap_err();
    assert!(err.contains("plan again"), "{err}");
    // A site gone after: the aggregator refuses.
    let late = Dropouts { after_noise: vec![4], ..Default::default() };
    let round = weighted_round(&plan, 10, &late, 22).unwrap();
    assert_eq!(
        round.estimate,
        Err(EstimateError::ZeroSumBroken { missing: vec![4], survivors: vec![1, 2, 3] })
    );
}

#[test]
fn infeasible_and_invalid_plans_are_refused() {
    let targets = MeanTargets::new(&IDS, &SIZES, EPSILON, DELTA).unwrap();
    let (tau, pool) = (&targets.local_sd, targets.pooled_sd);
    // μ_s = 1/S with unequal N_s: σ_3² < 0 (spec §2).
    let err = AsymmetricPlan::new(&IDS, &[0.25; 4], tau, pool).unwrap_err();
    println!("{err}");
    assert!(
        matches!(err, AsymmetricError::SigmaNotPositive { site: 3, sigma2, .. } if sigma2 < 0.0)
    );
    assert!(err.to_string().contains("μ_s = N_s/N"));
    // A weight too small for its site: r_1 = τ_1² − τ_pool²/(μ_1²S) < 0.
    let err = AsymmetricPlan::new(&IDS, &[0.01, 0.33, 0.33, 0.33], tau, pool).unwrap_err();
    assert!(matches!(err, AsymmetricError::RNotPositive { site: 1, r, .. } if r < 0.0), "{err}");
    assert_eq!(
        AsymmetricPlan::new(&IDS, &[0.3, 0.3, 0.3, 0.3], tau, pool),
        Err(AsymmetricError::WeightsDoNotSumToOne { sum: 1.2 })
    );
    assert!(matches!(
        AsymmetricPlan::new(&IDS, &[0.0, 0.3, 0.3, 0.4], tau, pool),
        Err(AsymmetricError::WeightNotPositive { site: 1, .. })
    ));
    assert!(matches!(
        AsymmetricPlan::new(&IDS, &[f64::NAN, 0.3, 0.3, 0.4], tau, pool),
        Err(AsymmetricError::WeightNotPositive { site: 1, .. })
    ));
    assert_eq!(
        AsymmetricPlan::new(&[1, 2], &[0.5, 0.5], &[1.0, 1.0], 0.5),
        Err(AsymmetricError::TooFewSites { sites: 2 })
    );
    assert!(matches!(
        AsymmetricPlan::new(&IDS, &targets.default_weights, &[1.0, f64::NAN, 1.0, 1.0], pool),
        Err(AsymmetricError::LocalSd { site: 2, .. })
    ));
    assert_eq!(
        AsymmetricPlan::new(&IDS, &targets.default_weights, &tau[..3], pool),
        Err(AsymmetricError::LengthMismatch {
            what: "the local noise levels",
            expected: 4,
            got: 3
        })
    );
    assert_eq!(
        AsymmetricPlan::new(&[1, 3, 2, 4], &targets.default_weights, tau, pool),
        Err(AsymmetricError::SitesNotSorted { sites: vec![1, 3, 2, 4] })
    );
    assert!(matches!(
        AsymmetricPlan::from_sample_sizes(&IDS, &SIZES, EPSILON, 1.5),
        Err(AsymmetricError::Privacy(PrivacyError::Delta(_)))
    ));
    assert!(matches!(
        AsymmetricPlan::from_sample_sizes(&IDS, &SIZES, -0.5, DELTA),
        Err(AsymmetricError::Privacy(PrivacyError::Epsilon(_)))
    ));
    assert_eq!(
        AsymmetricPlan::from_sample_sizes(&IDS, &[100, 0, 300, 400], EPSILON, DELTA),
        Err(AsymmetricError::EmptySite { site: 2 })
    );
    // The worst case checks its inputs.
    let plan = default_plan();
    let four = Collusion::default_for(4).unwrap();
    assert_eq!(
        plan.worst_case(
            &targets.sensitivities,
            &Collusion::default_for(5).unwrap(),
            AsymmetricView::PaperCorrected
        ),
        Err(AsymmetricError::CollusionSites { plan: 4, collusion: 5 })
    );
    assert!(matches!(
        plan.worst_case(&[0.01, -1.0, 0.01, 0.01], &four, AsymmetricView::PaperCorrected),
        Err(AsymmetricError::Sensitivity { site: 2, .. })
    ));
    assert!(matches!(Collusion::new(4, 3), Err(PrivacyError::TooManyColluders { .. })));
}
