//! The accounting test vectors of the specs, recomputed through the public API.

use capelab_accountant::comparison::ComparisonRequest;
use capelab_accountant::conversion::{Conversion, closed_form_epsilon};
use capelab_accountant::gaussian::{c_delta, classical_multiplier};
use capelab_accountant::moments::{MomentsAccountant, MomentsQuadratic};
use capelab_accountant::{Event, Mechanism, PrivacyAccountant, RdpAccountant};

/// ε of J iterations with two Gaussian releases each (spec cape-secagg §5 table), standard
/// conversion at the exact optimal order.
fn djica_epsilon(z: f64, iterations: u64, delta: f64) -> f64 {
    let mut acc = RdpAccountant::new(Conversion::Standard);
    acc.compose(&Event::gaussian("W", z, iterations).unwrap());
    acc.compose(&Event::gaussian("b", z, iterations).unwrap());
    acc.epsilon(delta).unwrap().epsilon
}

#[test]
fn spec_rdp_table_every_cell() {
    // (ε_i, z as printed, [(J, ε as printed, printed decimals)])
    type Cell = (u64, f64, i32);
    let table: [(f64, f64, [Cell; 4]); 4] = [
        (0.1, 31.075, [(10, 0.7009, 4), (50, 1.5959, 4), (100, 2.2873, 4), (1000, 7.9413, 4)]),
        (0.25, 12.430, [(10, 1.7912, 4), (50, 4.1840, 4), (100, 6.1067, 4), (1000, 23.737, 3)]),
        (0.5, 6.2150, [(10, 3.7118, 4), (50, 9.0153, 4), (100, 13.508, 3), (1000, 60.418, 3)]),
        (1.0, 3.1075, [(10, 7.9413, 4), (50, 20.620, 3), (100, 32.193, 3), (1000, 172.61, 2)]),
    ];
    for (eps_i, z_printed, cells) in table {
        // The table's z rounds c(1e-2)/ε_i; check both the printed and the exact multiplier.
        let z_exact = c_delta(1e-2).unwrap() / eps_i;
        assert!((z_exact - z_printed).abs() < 5e-4, "z for ε_i = {eps_i}");
        for z in [z_printed, z_exact] {
            for (j, printed, decimals) in cells {
                let got = djica_epsilon(z, j, 1e-5);
                let tol = f64::max(1e-3, 0.5 * 10f64.powi(-decimals));
                assert!(
                    (got - printed).abs() <= tol,
                    "ε_i = {eps_i}, z = {z}, J = {j}: got {got}, table {printed}"
                );
                // 200 releases = 100 iterations: C = J·(2 releases)/(2z²) = J/z².
                let closed = closed_form_epsilon(j as f64 / (z * z), 1e-5);
                assert!((got - closed).abs() < 1e-9 * closed);
            }
        }
    }
    // The headline cell as a number: z = 6.215, 200 releases, δ = 1e-5 → 13.508.
    let headline = djica_epsilon(6.215, 100, 1e-5);
    assert!((headline - 13.508).abs() < 1e-3, "{headline}");
}

#[test]
fn spec_fm_noisy_gd_vector() {
    // cape-fm §5: ε_iter = 0.5, δ = 1e-5 → τ/Δ = 9.690; T = 1000 → α* = 2.470, ε* = 20.99.
    let z = classical_multiplier(0.5, 1e-5).unwrap();
    assert!((z - 9.690).abs() < 5e-4, "{z}");
    let mut acc = RdpAccountant::new(Conversion::Standard);
    acc.compose(&Event::gaussian("step", z, 1000).unwrap());
    let e = acc.epsilon(1e-5).unwrap();
    assert!(e.exact);
    assert!((e.epsilon - 20.99).abs() < 5e-3, "{e:?}");
    assert!((e.order - 2.470).abs() < 5e-4, "{e:?}");
    // The grid (dp-accounting's orders, which include 2.5) can only be worse, and barely.
    let grid = acc.epsilon_on_grid(1e-5, Conversion::Standard).unwrap();
    assert!(grid.epsilon >= e.epsilon && grid.epsilon - e.epsilon < 0.01, "{grid:?}");
}

#[test]
fn moments_accountant_corrected_and_printed_quadratic() {
    let event = Event::gaussian("release", 10.0, 1000).unwrap();
    let mut corrected = MomentsAccountant::new(MomentsQuadratic::Corrected);
    let mut printed = MomentsAccountant::new(MomentsQuadratic::AsPrinted);
    corrected.compose(&event);
    printed.compose(&event);
    let c = corrected.epsilon(1e-5).unwrap().epsilon;
    let p = printed.epsilon(1e-5).unwrap().epsilon;
    assert!((c - 20.17).abs() < 5e-3, "{c}");
    assert!((p - 27.47).abs() < 5e-3, "{p}");
    // The corrected quadratic is the RDP value, to rounding.
    let mut rdp = RdpAccountant::new(Conversion::Standard);
    rdp.compose(&event);
    assert!((rdp.epsilon(1e-5).unwrap().epsilon - c).abs() < 1e-9 * c);
    // Its δ(ε) inverts its ε(δ).
    assert!((corrected.delta(c).unwrap() - 1e-5).abs() < 1e-12);
}

fn dpvi_event() -> Event {
    Event::new(
        "dp-sgd step",
        Mechanism::PoissonSampledGaussian {
            noise_multiplier: 2.042,
            sampling_rate: 100.0 / 30162.0,
        },
        20_000,
    )
    .unwrap()
}

#[test]
fn poisson_subsampled_gaussian_dpvi_vector() {
    // efpsn-vertical-dpvi B4: integer orders 2..256 → 0.9948 (improved), 1.2125 (classic).
    let orders: Vec<f64> = (2..=256).map(f64::from).collect();
    let mut acc = RdpAccountant::with_orders(orders, Conversion::Improved).unwrap();
    acc.compose(&dpvi_event());
    let improved = acc.epsilon(1e-5).unwrap();
    let classic = acc.epsilon_with(1e-5, Conversion::Standard).unwrap();
    assert!(!improved.exact);
    assert!((improved.epsilon - 0.9948).abs() < 1e-4, "{improved:?}");
    assert!((classic.epsilon - 1.2125).abs() < 1e-4, "{classic:?}");
    // dp-accounting 0.6.0 on the same orders: 0.9948492955367962 at α = 18, classic
    // 1.2124955093618788.
    assert!((improved.epsilon - 0.994_849_295_536_796_2).abs() < 1e-9, "{improved:?}");
    assert_eq!(improved.order, 18.0);
    assert!((classic.epsilon - 1.212_495_509_361_878_8).abs() < 1e-9, "{classic:?}");

    // On dp-accounting's default grid (with fractional orders) the optimum is the same.
    let mut default = RdpAccountant::new(Conversion::Improved);
    default.compose(&dpvi_event());
    assert!((default.epsilon(1e-5).unwrap().epsilon - 0.994_849_295_536_796_2).abs() < 1e-9);

    // The moments accountant over integer moment orders 1..=255 is the classic conversion on
    // orders 2..=256.
    let mut moments = MomentsAccountant::new(MomentsQuadratic::Corrected);
    moments.compose(&dpvi_event());
    let m = moments.epsilon(1e-5).unwrap();
    assert!((m.epsilon - classic.epsilon).abs() < 1e-12, "{m:?}");
    assert_eq!(m.order + 1.0, classic.order);
}

#[test]
fn collusion_aware_view_scales_c_by_c_s() {
    // Spec §5: per release α·c_S/(2z²), so C_colluding = c_S·C (×1.295 for S = 4).
    let c_s = 1.295_238;
    let mut req = ComparisonRequest::gaussian(6.215, 200, 1e-5);
    req.collusion_factor = Some(c_s);
    let report = req.run().unwrap();
    let c = 200.0 / (2.0 * 6.215 * 6.215);
    assert!((report.aggregator.rdp_slope.unwrap() - c).abs() < 1e-12);
    let colluding = report.collusion_aware.as_ref().unwrap();
    assert!((colluding.rdp_slope.unwrap() - c_s * c).abs() < 1e-12);
    assert!((report.aggregator.epsilon_rdp - 13.508).abs() < 1e-3);
    let expected = closed_form_epsilon(c_s * c, 1e-5);
    assert!((colluding.epsilon_rdp - expected).abs() < 1e-9 * expected);
    assert!(colluding.epsilon_rdp > report.aggregator.epsilon_rdp);
    // Every analysis orders the same way: the colluding view is never cheaper.
    assert!(colluding.epsilon_rdp_improved > report.aggregator.epsilon_rdp_improved);
    assert!(colluding.epsilon_exact.unwrap() > report.aggregator.epsilon_exact.unwrap());
    assert!(colluding.epsilon_basic > report.aggregator.epsilon_basic);
}

#[test]
fn comparison_orders_the_analyses_as_theory_says() {
    for (z, j) in [(1.0, 10), (6.215, 200), (10.0, 1000), (31.075, 20)] {
        let r = ComparisonRequest::gaussian(z, j, 1e-5).run().unwrap().aggregator;
        // exact ≤ improved RDP ≤ standard RDP = closed form = moments (corrected) ≤ as printed
        let exact = r.epsilon_exact.unwrap();
        assert!(exact <= r.epsilon_rdp_improved + 1e-12, "z {z} J {j}: {r:?}");
        assert!(r.epsilon_rdp_improved <= r.epsilon_rdp, "z {z} J {j}");
        assert!(r.epsilon_rdp_improved <= r.epsilon_rdp_improved_grid + 1e-12);
        assert!(r.epsilon_rdp <= r.epsilon_rdp_grid + 1e-12);
        assert!((r.epsilon_rdp - r.epsilon_closed_form.unwrap()).abs() < 1e-9 * r.epsilon_rdp);
        assert!((r.epsilon_moments - r.epsilon_rdp).abs() < 1e-9 * r.epsilon_rdp);
        assert!(r.epsilon_moments_as_printed.unwrap() > r.epsilon_moments);
        // Basic and strong composition are valid but loose: never below the exact curve.
        assert!(r.epsilon_basic >= exact && r.epsilon_strong >= exact, "z {z} J {j}");
        assert!((r.basic.per_release_delta - 1e-5 / j as f64).abs() < 1e-20);
    }
}
