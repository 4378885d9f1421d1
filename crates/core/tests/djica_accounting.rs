//! capeDJICA's overall ε (spec §5 "Accounting", "Collusion-aware accounting"), checked against the
//! spec's RDP test vectors and against direct computation of the closed forms.

use capelab_core::accountant::analytic_gaussian::epsilon_for_delta;
use capelab_core::accountant::conversion::{closed_form_epsilon, gaussian_epsilon_exact};
use capelab_core::accountant::{Budget, Conversion, Ledger};
use capelab_core::cape::privacy::{Collusion, c_s_closed_form, c_s_full_view};
use capelab_core::djica::accounting::{AccountingError, iteration_multiplier};
use capelab_core::djica::noise::NoiseScheme;
use capelab_core::djica::{
    DjicaPrivacy, GaussianLevel, Method, PrivacyUnit, REPORT_DELTA, account, ledger_releases,
};
use capelab_core::pca::{CovarianceSensitivity, PcaPrivacy};

fn privacy(method: Method, eps: f64, iterations: usize, max: usize, sites: usize) -> DjicaPrivacy {
    let level = GaussianLevel { epsilon: eps, delta: 1e-2 };
    DjicaPrivacy::planned(method, PrivacyUnit::Subject, level, iterations, max, sites).unwrap()
}

#[test]
fn output_view_matches_the_spec_rdp_table() {
    // spec §5 RDP test vectors: two releases per iteration with equal z, δ_r = 1e-5.
    let table = [
        (0.1, [0.7009, 1.5959, 2.2873, 7.9413]),
        (0.25, [1.7912, 4.1840, 6.1067, 23.737]),
        (0.5, [3.7118, 9.0153, 13.508, 60.418]),
        (1.0, [7.9413, 20.620, 32.193, 172.61]),
    ];
    for (eps, row) in table {
        for (j, expected) in [10, 50, 100, 1000].into_iter().zip(row) {
            let a = account(&privacy(Method::Cape, eps, j, 1000, 4), None, 1e-5).unwrap();
            let got = a.ica.as_ref().unwrap().at_realised.views[0].epsilon_rdp;
            assert_eq!(a.views[0].name, "output");
            assert!(
                (got / expected - 1.0).abs() < 2e-4,
                "ε_i = {eps}, J = {j}: {got} vs {expected}"
            );
        }
    }
}

#[test]
fn every_view_is_the_closed_form_with_its_collusion_factor() {
    let p = privacy(Method::Cape, 0.5, 137, 1000, 4);
    let a = account(&p, None, REPORT_DELTA).unwrap();
    let collusion = Collusion::default_for(4).unwrap();
    let factors = [
        ("output", 1.0),
        ("aggregator", c_s_closed_form(&Collusion::new(4, 0).unwrap())),
        ("theorem1", c_s_closed_form(&collusion)),
        ("full", c_s_full_view(&collusion)),
    ];
    let z = p.z_w.unwrap();
    let sigma = z / 2f64.sqrt(); // equal z_W and z_b
    assert!((iteration_multiplier(z, z) - sigma).abs() < 1e-12);
    let ica = a.ica.as_ref().unwrap();
    for (composition, j) in [(&ica.at_realised, 137usize), (&ica.at_max, 1000)] {
        assert_eq!(composition.iterations, j);
        for ((name, c), v) in factors.iter().zip(&composition.views) {
            assert_eq!(&v.view, name);
            assert!((v.collusion_factor - c).abs() < 1e-12);
            // C = c·J/(2σ_RDP²); ε = C + 2√(C ln(1/δ)).
            let big_c = c * j as f64 / (2.0 * sigma * sigma);
            let closed = closed_form_epsilon(big_c, REPORT_DELTA);
            assert!((v.epsilon_rdp - closed).abs() < 1e-9 * closed, "{name}");
            let improved =
                gaussian_epsilon_exact(big_c, REPORT_DELTA, Conversion::Improved).unwrap();
            assert!((v.epsilon_rdp_improved - improved.epsilon).abs() < 1e-9 * closed);
            // J iterations = one Gaussian release with multiplier σ/√(cJ).
            let exact = epsilon_for_delta(sigma / (c * j as f64).sqrt(), REPORT_DELTA).unwrap();
            assert!((v.epsilon_exact - exact).abs() < 1e-9 * exact);
            assert!(v.epsilon_exact <= v.epsilon_rdp_improved + 1e-9);
            assert!(v.epsilon_rdp_improved <= v.epsilon_rdp + 1e-9);
        }
    }
    assert_eq!(a.guarantee_view, "full");
    assert_eq!(a.ica_epsilon(), ica.at_realised.exact("full"));
    assert!(a.ica_epsilon().unwrap() < a.ica_epsilon_at_max().unwrap());
    // The full view is the weakest guarantee (largest c_S, largest ε).
    let eps: Vec<f64> = ica.at_realised.views.iter().map(|v| v.epsilon_exact).collect();
    assert!(eps.iter().all(|&e| e <= eps[3]));
}

#[test]
fn baselines_have_plain_views_and_nonprivate_has_none() {
    for method in [Method::Conventional, Method::Local] {
        let a = account(&privacy(method, 0.5, 50, 100, 4), None, REPORT_DELTA).unwrap();
        assert_eq!(a.guarantee_view, "aggregator");
        assert!(a.views.iter().all(|v| v.collusion_factor == 1.0));
    }
    let mut np = privacy(Method::NonPrivate, 0.5, 50, 100, 4);
    np.z_w = None;
    np.z_b = None;
    np.level = None;
    let a = account(&np, None, REPORT_DELTA).unwrap();
    assert!(a.ica.is_none() && a.ica_epsilon().is_none());
    let zero = privacy(Method::Cape, 0.5, 0, 100, 4);
    assert_eq!(account(&zero, None, REPORT_DELTA), Err(AccountingError::NoIterations));
}

fn pca_privacy(scheme: NoiseScheme) -> PcaPrivacy {
    let level = GaussianLevel { epsilon: 1.0, delta: 1e-5 };
    PcaPrivacy {
        scheme,
        level: Some(level),
        sensitivity: CovarianceSensitivity::default(),
        deltas: vec![1.0 / 64.0; 4],
        taus: vec![level.multiplier().unwrap() / 64.0; 4],
        multiplier: level.multiplier().ok(),
    }
}

#[test]
fn pca_is_one_release_on_its_own_budget() {
    let a = account(
        &privacy(Method::Cape, 0.5, 10, 10, 4),
        Some(&pca_privacy(NoiseScheme::Cape)),
        REPORT_DELTA,
    )
    .unwrap();
    let pca = a.pca.as_ref().unwrap();
    let z = 4.84481; // c(1e-5)/1
    assert!((pca.z - z).abs() < 1e-5);
    for v in &pca.release.views {
        let exact = epsilon_for_delta(pca.z / v.collusion_factor.sqrt(), REPORT_DELTA).unwrap();
        assert!((v.epsilon_exact - exact).abs() < 1e-12);
    }
    // A conventional PCA release has only plain views.
    let b = account(
        &privacy(Method::Conventional, 0.5, 10, 10, 4),
        Some(&pca_privacy(NoiseScheme::Conventional)),
        REPORT_DELTA,
    )
    .unwrap();
    assert!(b.pca.unwrap().release.views.iter().all(|v| v.collusion_factor == 1.0));
}

#[test]
fn ledger_records_what_the_account_says() {
    let a = account(
        &privacy(Method::Cape, 0.5, 300, 1000, 4),
        Some(&pca_privacy(NoiseScheme::Cape)),
        REPORT_DELTA,
    )
    .unwrap();
    let releases = ledger_releases(&a, "djica test", 5).unwrap();
    assert_eq!(releases.len(), 3, "PCA, then Ĝ and ĥ of all iterations");
    let mut ledger = Ledger::new("site 1", Budget::new(1e6, REPORT_DELTA).unwrap()).unwrap();
    for r in releases {
        ledger.try_spend(r).unwrap();
    }
    // Direct: ρ(α) = K·α with K = Σ c·count/(2z²) over the three events (full view).
    let c = c_s_full_view(&Collusion::default_for(4).unwrap());
    let z_ica = a.ica.as_ref().unwrap().z_w;
    let z_pca = a.pca.as_ref().unwrap().z;
    let k = c * (2.0 * 300.0 / (2.0 * z_ica * z_ica) + 1.0 / (2.0 * z_pca * z_pca));
    let direct = gaussian_epsilon_exact(k, REPORT_DELTA, Conversion::Improved).unwrap().epsilon;
    let spend = ledger.spend();
    assert!((spend.rdp - direct).abs() < 1e-6 * direct, "{} vs {direct}", spend.rdp);
    // The ledger charges the exact composition (PLD): one Gaussian with μ² = 2K.
    let exact = capelab_core::accountant::analytic_gaussian::epsilon_for_delta(
        (2.0 * k).sqrt().recip(),
        REPORT_DELTA,
    )
    .unwrap();
    assert!((ledger.spent() - exact).abs() < 1e-9 * exact, "{} vs {exact}", ledger.spent());
    assert!(exact < direct);
}
