//! Algorithms 1 and 2 end to end (spec cape-secagg-pca-djica §2, Remark 4): Monte Carlo checks of
//! the variances, the exact zero sum, dropouts and bad input.
//!
//! Coordinates of one round are independent draws, so one round with D coordinates gives D samples
//! of every quantity. Tolerances are chi-square bounds at 5 standard deviations (cape_support).

mod cape_support;

use cape_support::{Z, assert_variance, chi2_ratio_bounds, mean_product, mean_square, product_se};
use capelab_core::cape::simulation::{Dropouts, SimSite, run_cape_round, run_conventional_round};
use capelab_core::cape::{
    CapeEstimator, EstimateError, IdealSecureSum, NoiseSum, SiteError, SiteNoise, draw_noise,
    noise_format,
};
use capelab_core::rng::derive;
use capelab_core::wire::ParticipantId;

const D: usize = 40_000;
const TAU: f64 = 1.7;

/// f(x_s) for site s: arbitrary known values, different per site and coordinate.
fn local_value(site: ParticipantId, len: usize) -> Vec<f64> {
    (0..len).map(|j| 0.1 * site as f64 + (j as f64 * 0.37).sin()).collect()
}

fn symmetric_sites(ids: &[ParticipantId], tau: &[f64], len: usize) -> Vec<SimSite> {
    ids.iter()
        .zip(tau)
        .map(|(&id, &t)| SimSite {
            id,
            value: local_value(id, len),
            noise: SiteNoise::Symmetric { local_sd: t },
        })
        .collect()
}

fn true_mean(ids: &[ParticipantId], len: usize) -> Vec<f64> {
    let mut mean = vec![0.0; len];
    for &id in ids {
        for (m, v) in mean.iter_mut().zip(local_value(id, len)) {
            *m += v / ids.len() as f64;
        }
    }
    mean
}

fn minus(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}

#[test]
fn cape_matches_pooled_variance_and_beats_conventional_by_s() {
    let ids = [1, 2, 3, 4];
    let s = ids.len() as f64;
    let sites = symmetric_sites(&ids, &[TAU; 4], D);
    let format = noise_format(TAU, ids.len()).unwrap();
    let round = run_cape_round(
        &sites,
        &format,
        &mut IdealSecureSum::with_threshold(3),
        &CapeEstimator::Mean,
        &Dropouts::default(),
        11,
        0,
    )
    .unwrap();
    let estimate = round.estimate.as_ref().unwrap();
    let truth = true_mean(&ids, D);
    let cape_error = minus(estimate, &truth);
    let cape_var = mean_square(&cape_error);
    // Lemma 1: τ_cape² = τ²/S² = τ_pool².
    assert_variance("a_cape", cape_var, TAU * TAU / (s * s), D);

    // Each message has the full local variance τ² (Algorithm 2 step 2), e_s has (1 − 1/S)τ², and
    // two messages have covariance −τ²/S (cape-fm §1.4).
    let errors: Vec<Vec<f64>> = round
        .traces
        .iter()
        .map(|t| minus(&t.release.as_ref().unwrap().values, &local_value(t.site, D)))
        .collect();
    for (trace, error) in round.traces.iter().zip(&errors) {
        assert_variance(&format!("â_{}", trace.site), mean_square(error), TAU * TAU, D);
        assert_variance(
            &format!("e_{}", trace.site),
            mean_square(&trace.zero_sum_noise),
            (1.0 - 1.0 / s) * TAU * TAU,
            D,
        );
    }
    let covariance = -TAU * TAU / s;
    let se = product_se(TAU * TAU, TAU * TAU, covariance, D);
    let measured = mean_product(&errors[0], &errors[2]);
    assert!(
        (measured - covariance).abs() < Z * se,
        "Cov(â_1, â_3) = {measured}, want {covariance}"
    );

    // The conventional scheme with the same local noise: τ_conv² = τ²/S (Proposition 1).
    let conv_sites: Vec<_> = ids.iter().map(|&id| (id, local_value(id, D), TAU)).collect();
    let conventional = run_conventional_round(&conv_sites, 11, 0).unwrap();
    let conv_var = mean_square(&minus(&conventional.estimate, &truth));
    assert_variance("a_conv", conv_var, TAU * TAU / s, D);

    // The gain G = S: the ratio of two independent estimates, bounded by the product of bounds.
    let (lo, hi) = chi2_ratio_bounds(D, Z);
    let gain = conv_var / cape_var;
    println!(
        "CAPE var {cape_var:.5e} (τ²/S² = {:.5e}), conventional var {conv_var:.5e} (τ²/S = {:.5e}), gain {gain:.4}",
        TAU * TAU / (s * s),
        TAU * TAU / s
    );
    assert!((s * lo / hi..=s * hi / lo).contains(&gain), "gain {gain} not ≈ S = {s}");
}

#[test]
fn unequal_local_noise_keeps_the_gain_of_proposition_1() {
    // Proposition 1 holds for any τ_s: τ_cape² = (1/S³)Στ_s², τ_conv² = (1/S²)Στ_s².
    let ids = [3, 5, 8];
    let taus = [0.5, 1.0, 2.5];
    let s = ids.len() as f64;
    let total: f64 = taus.iter().map(|t| t * t).sum();
    let sites = symmetric_sites(&ids, &taus, D);
    let format = noise_format(2.5, ids.len()).unwrap();
    let round = run_cape_round(
        &sites,
        &format,
        &mut IdealSecureSum::new(),
        &CapeEstimator::Mean,
        &Dropouts::default(),
        12,
        0,
    )
    .unwrap();
    let truth = true_mean(&ids, D);
    let cape_var = mean_square(&minus(round.estimate.as_ref().unwrap(), &truth));
    assert_variance("a_cape, unequal τ", cape_var, total / (s * s * s), D);
    let conv_sites: Vec<_> =
        ids.iter().zip(taus).map(|(&id, t)| (id, local_value(id, D), t)).collect();
    let conventional = run_conventional_round(&conv_sites, 12, 0).unwrap();
    assert_variance(
        "a_conv, unequal τ",
        mean_square(&minus(&conventional.estimate, &truth)),
        total / (s * s),
        D,
    );
}

#[test]
fn the_zero_sum_is_exact_after_quantisation() {
    // With n = |U| contributors, Σ_s e_s is exactly 0.0 in every coordinate, and each e_s is
    // within one grid step 2^−l of the textbook q_s − (1/n)Σq (q = the quantised ê).
    let ids = [2, 4, 6, 9, 10];
    let sites = symmetric_sites(&ids, &[0.3, 3.0, 1.0, 1.0, 7.0], 5_000);
    let format = noise_format(7.0, ids.len()).unwrap();
    for (dropouts, contributors) in [
        (Dropouts::default(), ids.to_vec()),
        (Dropouts { before_noise: vec![6], ..Default::default() }, vec![2, 4, 9, 10]),
    ] {
        let round = run_cape_round(
            &sites,
            &format,
            &mut IdealSecureSum::new(),
            &CapeEstimator::Mean,
            &dropouts,
            13,
            1,
        )
        .unwrap();
        assert_eq!(round.noise_sum.contributors, contributors);
        let n = contributors.len() as f64;
        for j in 0..5_000 {
            let total: f64 = round.traces.iter().map(|t| t.zero_sum_noise[j]).sum();
            assert_eq!(total, 0.0, "coordinate {j}");
            let q_mean: f64 = round.traces.iter().map(|t| t.quantised_noise[j]).sum::<f64>() / n;
            for t in &round.traces {
                let textbook = t.quantised_noise[j] - q_mean;
                assert!((t.zero_sum_noise[j] - textbook).abs() < format.resolution());
            }
        }
        // The quantised noise is on the grid 2^−l.
        let scaled = round.traces[0].quantised_noise[7] / format.resolution();
        assert_eq!(scaled, scaled.round());
    }
}

#[test]
fn a_site_leaving_before_its_noise_is_summed_shrinks_s_to_u() {
    // Remark 4: with |U| = 3 of 4 sites, g_s ~ N(0, τ²/3) and the estimate has variance τ²/9.
    // Had the planned S = 4 been used, it would be 3·τ²/(4·9) = τ²/12, which the bound excludes.
    let ids = [1, 2, 3, 4];
    let sites = symmetric_sites(&ids, &[TAU; 4], D);
    let format = noise_format(TAU, ids.len()).unwrap();
    let dropouts = Dropouts { before_noise: vec![2], ..Default::default() };
    let round = run_cape_round(
        &sites,
        &format,
        &mut IdealSecureSum::with_threshold(3),
        &CapeEstimator::Mean,
        &dropouts,
        14,
        0,
    )
    .unwrap();
    assert_eq!(round.noise_sum.contributors, vec![1, 3, 4]);
    let truth = true_mean(&[1, 3, 4], D);
    let var = mean_square(&minus(round.estimate.as_ref().unwrap(), &truth));
    assert_variance("a_cape with |U| = 3", var, TAU * TAU / 9.0, D);
    let (_, hi) = chi2_ratio_bounds(D, Z);
    assert!(var / (TAU * TAU / 12.0) > hi);
    for t in &round.traces {
        let error = minus(&t.release.as_ref().unwrap().values, &local_value(t.site, D));
        assert_variance("â_s with |U| = 3", mean_square(&error), TAU * TAU, D);
    }
}

#[test]
fn a_site_leaving_after_its_noise_is_summed_makes_the_aggregator_refuse() {
    let ids = [1, 2, 3, 4];
    let sites = symmetric_sites(&ids, &[TAU; 4], 100);
    let format = noise_format(TAU, ids.len()).unwrap();
    let dropouts = Dropouts { after_noise: vec![3], ..Default::default() };
    let mut secure_sum = IdealSecureSum::with_threshold(3);
    let round =
        run_cape_round(&sites, &format, &mut secure_sum, &CapeEstimator::Mean, &dropouts, 15, 0)
            .unwrap();
    assert_eq!(round.noise_sum.contributors, vec![1, 2, 3, 4]);
    let err = round.estimate.unwrap_err();
    assert_eq!(err, EstimateError::ZeroSumBroken { missing: vec![3], survivors: vec![1, 2, 4] });
    assert!(err.to_string().contains("re-run the round"), "{err}");

    // Re-running among the survivors works.
    let survivors = symmetric_sites(&[1, 2, 4], &[TAU; 3], 100);
    let rerun = run_cape_round(
        &survivors,
        &format,
        &mut secure_sum,
        &CapeEstimator::Mean,
        &Dropouts::default(),
        15,
        1,
    )
    .unwrap();
    assert_eq!(rerun.estimate.unwrap().len(), 100);
}

fn one_site(site: ParticipantId, len: usize) -> (capelab_core::cape::PendingRelease, NoiseSum) {
    let format = noise_format(1.0, 3).unwrap();
    let mut rng = derive(16, "bad-input");
    let noise = SiteNoise::Symmetric { local_sd: 1.0 };
    let (share, pending) = draw_noise(site, &noise, &format, len, &mut rng).unwrap();
    let (other, _) = draw_noise(site + 1, &noise, &format, len, &mut rng).unwrap();
    let mut ring_sum = share.ring.clone();
    capelab_core::fixed::add_assign(&mut ring_sum, &other.ring);
    (pending, NoiseSum { contributors: vec![site, site + 1], ring_sum })
}

#[test]
fn bad_site_input_is_refused_and_leaves_the_site_able_to_release() {
    let mut rng = derive(17, "bad-input");
    let (mut pending, sum) = one_site(1, 3);
    assert!(matches!(
        pending.release(&sum, &[0.0, f64::NAN, 1.0], &mut rng),
        Err(SiteError::NotFinite { index: 1, .. })
    ));
    assert_eq!(
        pending.release(&sum, &[0.0, 1.0], &mut rng),
        Err(SiteError::LengthMismatch { what: "the local value", expected: 3, got: 2 })
    );
    let short = NoiseSum { contributors: sum.contributors.clone(), ring_sum: vec![0; 2] };
    assert!(matches!(
        pending.release(&short, &[0.0; 3], &mut rng),
        Err(SiteError::LengthMismatch { what: "the noise sum", .. })
    ));
    let without_me = NoiseSum { contributors: vec![2, 5], ring_sum: sum.ring_sum.clone() };
    assert!(matches!(
        pending.release(&without_me, &[0.0; 3], &mut rng),
        Err(SiteError::NotInNoiseSum { site: 1, .. })
    ));
    let unsorted = NoiseSum { contributors: vec![2, 1], ring_sum: sum.ring_sum.clone() };
    assert!(matches!(
        pending.release(&unsorted, &[0.0; 3], &mut rng),
        Err(SiteError::MalformedNoiseSum { .. })
    ));
    // After all these refusals the site can still release, once.
    assert!(pending.release(&sum, &[0.0; 3], &mut rng).is_ok());
    assert_eq!(
        pending.release(&sum, &[0.0; 3], &mut rng),
        Err(SiteError::AlreadyReleased { site: 1 })
    );
}

#[test]
fn bad_noise_configurations_are_refused() {
    let format = noise_format(1.0, 4).unwrap();
    let mut rng = derive(18, "bad-config");
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            draw_noise(1, &SiteNoise::Symmetric { local_sd: bad }, &format, 2, &mut rng),
            Err(SiteError::InvalidSd { .. })
        ));
    }
    // A format too small for the noise: the encoder refuses instead of wrapping (spec §3).
    let tiny = capelab_core::fixed::FixedPoint::new(32, 1e-3).unwrap();
    assert!(matches!(
        draw_noise(1, &SiteNoise::Symmetric { local_sd: 1.0 }, &tiny, 100, &mut rng),
        Err(SiteError::NoiseFormat(_))
    ));
    let weighted =
        SiteNoise::Weighted { noise_sd: 1.0, correction_sd: 0.5, weight: 0.5, planned: vec![2, 3] };
    assert!(matches!(
        draw_noise(1, &weighted, &format, 2, &mut rng),
        Err(SiteError::NotPlanned { site: 1, .. })
    ));
}
