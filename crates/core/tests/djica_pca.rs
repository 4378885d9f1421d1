//! capePCA (spec §4, Algorithm 3): exact recovery without noise, the symmetric and zero-sum
//! structure of its noise, the aggregate variance of CAPE vs conventional noise, and Δ_C.

use capelab_core::djica::noise::{CapeZeroSumNoise, NoiseScheme, ZeroSumNoise};
use capelab_core::djica::{GaussianLevel, PrivacyUnit};
use capelab_core::fmri::{SiteData, SyntheticConfig, generate};
use capelab_core::ica_quality::principal_cosines;
use capelab_core::pca::{
    CovarianceSensitivity, PcaConfig, PrincipalSubspace, Whitening, add_symmetric, aggregate,
    cape_pca, project, site_covariance, site_release, upper_len,
};
use capelab_core::rng::Seed;
use nalgebra::DMatrix;

fn small_study() -> capelab_core::fmri::SyntheticStudy {
    let mut cfg = SyntheticConfig::well_conditioned(8, 4);
    cfg.grid = 8;
    cfg.components = 5;
    cfg.timepoints = 100;
    generate(&cfg, 3).unwrap()
}

#[test]
fn noiseless_pca_recovers_the_true_subspace() {
    let study = small_study();
    let cfg = PcaConfig {
        components: 5,
        scheme: NoiseScheme::None,
        level: GaussianLevel { epsilon: 1.0, delta: 1e-5 },
        sensitivity: CovarianceSensitivity::default(),
    };
    let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(1), 4);
    let result = cape_pca(&study.sites, &cfg, Seed::Fixed(1), &mut noise).unwrap();
    let cosines = principal_cosines(&result.subspace.v, &study.mixing);
    // X = A·S exactly (no voxel noise; clipping rescales whole time points, staying in span A).
    assert!(cosines.iter().all(|&c| c > 1.0 - 1e-9), "{cosines:?}");
    // V_R is orthonormal and its eigenvalues are sorted, largest first.
    let v = &result.subspace.v;
    assert!((v.transpose() * v - DMatrix::identity(5, 5)).norm() < 1e-10);
    assert!(result.subspace.eigenvalues.windows(2).all(|w| w[0] >= w[1]));
    assert!(result.privacy.level.is_none() && result.privacy.multiplier.is_none());
}

#[test]
fn site_covariance_is_the_mean_outer_product() {
    let site = |x: &DMatrix<f64>| SiteData::new(x.clone(), vec![x.ncols()]).unwrap();
    let x = DMatrix::from_fn(3, 7, |i, j| ((i * 5 + j * 3) % 7) as f64 - 3.0);
    let expected = &x * x.transpose() / 7.0;
    assert!((site_covariance(&site(&x)) - expected).norm() < 1e-12);
    // At a size where faer's blocked kernels run: every entry to 1e−12 relative of the direct
    // product, and exactly symmetric.
    let (d, n) = (97, 1003);
    let x = DMatrix::from_fn(d, n, |i, j| ((i * 7919 + j * 104_729) % 997) as f64 / 997.0 - 0.5);
    let (c, expected) = (site_covariance(&site(&x)), &x * x.transpose() / n as f64);
    assert_eq!(c, c.transpose());
    let scale = expected.amax();
    assert!((c - expected).amax() <= 1e-12 * scale);
}

#[test]
fn the_projection_is_the_direct_product() {
    // At the paper's R and a size where faer's blocked kernels run, against nalgebra's product
    // (the previous implementation): every entry within 1e−12 of the largest.
    let (r, d, n) = (20, 97, 1003);
    let k = DMatrix::from_fn(r, d, |i, j| ((i * 31 + j * 17) % 23) as f64 / 23.0 - 0.5);
    let x = DMatrix::from_fn(d, n, |i, j| ((i * 7919 + j * 104_729) % 997) as f64 / 997.0 - 0.5);
    let site = SiteData::new(x.clone(), vec![n]).unwrap();
    let (got, expected) = (project(&k, &site), &k * &x);
    assert_eq!(got.shape(), (r, n));
    assert!((got - &expected).amax() <= 1e-12 * expected.amax());
}

#[test]
#[should_panic(expected = "project: K is 2×3, the site has 4 voxels")]
fn a_projection_of_the_wrong_width_is_refused() {
    project(&DMatrix::zeros(2, 3), &SiteData::new(DMatrix::zeros(4, 5), vec![5]).unwrap());
}

#[test]
fn a_site_stores_its_data_transposed_and_views_it_as_voxels_by_time_points() {
    let x = DMatrix::from_fn(3, 5, |i, j| (10 * i + j) as f64);
    let site = SiteData::new(x.clone(), vec![2, 3]).unwrap();
    assert_eq!(site.xt, x.transpose());
    assert_eq!(site.x(), x);
    assert_eq!((site.voxels(), site.samples(), site.subjects()), (3, 5, 2));
    let again = SiteData::from_transposed(x.transpose(), vec![2, 3]).unwrap();
    assert_eq!(again, site);
    assert!(SiteData::from_transposed(x.transpose(), vec![2, 2]).is_err());
}

#[test]
fn zero_sum_noise_is_symmetric_and_cancels_across_sites() {
    let (d, sites, tau) = (6, 4, 0.7);
    let mut source = CapeZeroSumNoise::ideal(Seed::Fixed(9), sites);
    let shares = source.draw(&[tau; 4], upper_len(d)).unwrap();
    let mut total = DMatrix::zeros(d, d);
    for share in &shares {
        let mut e = DMatrix::zeros(d, d);
        add_symmetric(&mut e, share);
        assert_eq!(e, e.transpose(), "E_s is symmetric");
        assert!(e.iter().any(|&v| v != 0.0));
        total += e;
    }
    assert_eq!(total.amax(), 0.0, "Σ E_s = 0 exactly (fixed-point split, crate::cape)");
}

#[test]
fn releases_are_symmetric_and_cape_noise_averages_s_times_lower_than_conventional() {
    // Aggregate noise per entry: CAPE (1/S²)·S·τ²/S = τ²/S², conventional τ²/S (spec §2).
    let (d, sites, tau) = (40, 4, 1.0);
    let cov = DMatrix::<f64>::zeros(d, d);
    let entries = upper_len(d) as f64;
    let variance = |scheme: NoiseScheme| {
        let mut source = CapeZeroSumNoise::ideal(Seed::Fixed(5), sites);
        let shares = source.draw(&[tau; 4], upper_len(d)).unwrap();
        let releases: Vec<DMatrix<f64>> = (0..sites)
            .map(|s| {
                let mut rng = Seed::Fixed(6).rng(&format!("site/{s}"));
                let released = site_release(&cov, scheme, Some(&shares[s]), tau, sites, &mut rng);
                assert_eq!(released, released.transpose());
                released
            })
            .collect();
        let mean = aggregate(&releases);
        let mut sum_sq = 0.0;
        for i in 0..d {
            for j in i..d {
                sum_sq += mean[(i, j)] * mean[(i, j)];
            }
        }
        sum_sq / entries
    };
    let cape = variance(NoiseScheme::Cape);
    let conventional = variance(NoiseScheme::Conventional);
    // 820 entries: the sample variance has relative standard error sqrt(2/820) ≈ 5%; allow 25%.
    let s = sites as f64;
    assert!((cape / (tau * tau / (s * s)) - 1.0).abs() < 0.25, "CAPE {cape}");
    assert!((conventional / (tau * tau / s) - 1.0).abs() < 0.25, "conventional {conventional}");
}

#[test]
fn covariance_sensitivity_follows_the_spec() {
    // Subject 1/M_s = N_m/N_s (default), √2 rigorous, time point 1/N_s (spec §4).
    let subject = CovarianceSensitivity::default();
    assert!((subject.delta(16_000, 250) - 1.0 / 64.0).abs() < 1e-15);
    let rigorous = CovarianceSensitivity { unit: PrivacyUnit::Subject, rigorous: true };
    assert!((rigorous.delta(16_000, 250) - 2f64.sqrt() / 64.0).abs() < 1e-15);
    let point = CovarianceSensitivity { unit: PrivacyUnit::TimePoint, rigorous: false };
    assert!((point.delta(16_000, 250) - 1.0 / 16_000.0).abs() < 1e-18);

    // The recorded τ_s is Δ·c(δ)/ε with c(1e-5) = 4.84481.
    let study = small_study();
    let cfg = PcaConfig {
        components: 5,
        scheme: NoiseScheme::Cape,
        level: GaussianLevel { epsilon: 1.0, delta: 1e-5 },
        sensitivity: subject,
    };
    let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(2), 4);
    let result = cape_pca(&study.sites, &cfg, Seed::Fixed(2), &mut noise).unwrap();
    for (site, (&delta, &tau)) in
        study.sites.iter().zip(result.privacy.deltas.iter().zip(&result.privacy.taus))
    {
        assert!((delta - 1.0 / site.subjects() as f64).abs() < 1e-15);
        assert!((tau - delta * 4.84481).abs() < 1e-5 * delta);
    }
}

#[test]
fn top_eigenvectors_are_chosen_by_algebraic_value_and_whitening_is_guarded() {
    // eigenvalues 3, −5, 1, 0.5: the R = 2 largest algebraic are 3 and 1, not 3 and −5.
    let c = DMatrix::from_diagonal(&nalgebra::DVector::from_vec(vec![3.0, -5.0, 1.0, 0.5]));
    let sub = PrincipalSubspace::from_covariance(&c, 2).unwrap();
    // (to round-off: the solver reduces to tridiagonal form even when the input is diagonal)
    assert!((sub.eigenvalues[0] - 3.0).abs() < 1e-14 && (sub.eigenvalues[1] - 1.0).abs() < 1e-14);
    assert_eq!(sub.v.column(0).iamax(), 0);
    assert_eq!(sub.v.column(1).iamax(), 2);
    // runica whitening: K = 2·Λ^{-1/2}·V_Rᵀ.
    let k = sub.projection(Whitening::Runica).unwrap();
    assert!((k[(0, 0)] - 2.0 / 3f64.sqrt()).abs() < 1e-12);
    assert!((k[(1, 2)] - 2.0).abs() < 1e-12);
    // A non-positive kept eigenvalue is floored at 1e-3·λ_1 instead of dividing by ≤ 0.
    let c = DMatrix::from_diagonal(&nalgebra::DVector::from_vec(vec![2.0, -1.0, -3.0]));
    let sub = PrincipalSubspace::from_covariance(&c, 2).unwrap();
    let k = sub.projection(Whitening::Runica).unwrap();
    assert!(k.iter().all(|v| v.is_finite()));
    assert!((k.row(1).amax() - 2.0 / (2e-3f64).sqrt()).abs() < 1e-9);
    // All eigenvalues ≤ 0: whitening is refused with a message, not NaN.
    let neg = DMatrix::from_diagonal(&nalgebra::DVector::from_vec(vec![-1.0, -2.0]));
    let sub = PrincipalSubspace::from_covariance(&neg, 1).unwrap();
    assert!(sub.projection(Whitening::Runica).is_err());
    assert!(sub.projection(Whitening::None).is_ok());
}

#[test]
fn mismatched_sites_and_bad_levels_are_errors() {
    let a = SiteData::new(DMatrix::zeros(4, 10), vec![10]).unwrap();
    let b = SiteData::new(DMatrix::zeros(5, 10), vec![10]).unwrap();
    let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(1), 2);
    let mut cfg = PcaConfig {
        components: 2,
        scheme: NoiseScheme::None,
        level: GaussianLevel { epsilon: 1.0, delta: 1e-5 },
        sensitivity: CovarianceSensitivity::default(),
    };
    let err = cape_pca(&[a.clone(), b], &cfg, Seed::Fixed(1), &mut noise).unwrap_err();
    assert!(err.to_string().contains("site 1 has 5 voxels"), "{err}");
    cfg.scheme = NoiseScheme::Cape;
    cfg.level.epsilon = 0.0;
    let err = cape_pca(&[a.clone(), a], &cfg, Seed::Fixed(1), &mut noise).unwrap_err();
    assert!(err.to_string().contains("ε = 0"), "{err}");
}
