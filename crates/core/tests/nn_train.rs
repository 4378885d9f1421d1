//! The network and its CAPE training: gradients against finite differences, the clipped
//! average's sensitivity by brute force, the accounting vector of spec §5, and accuracy.

use capelab_core::data::{Dataset, Normaliser, TargetKind, synthetic};
use capelab_core::nn::network::Network;
use capelab_core::nn::{NnConfig, NnError, NnMechanism, account, train};
use capelab_core::rng::derive;
use rand::RngExt;

fn classification(n: usize, d: usize, seed: u64) -> (Dataset, Dataset) {
    let raw = synthetic::two_gaussians(n, d, 0.25, seed);
    let (tr, te) = raw.split(0.3, seed).unwrap();
    let radius = synthetic::two_gaussians_radius(d, 0.25);
    let f = Normaliser::RowClip { radius, target: None }.fit(&tr, TargetKind::Binary).unwrap();
    (f.apply(&tr).unwrap(), f.apply(&te).unwrap())
}

fn one_record_loss(net: &Network, x: &[f64], y: f64) -> f64 {
    let d = Dataset::from_rows(&[x.to_vec()], &[y]).unwrap();
    net.loss(&d)
}

#[test]
fn gradients_match_finite_differences() {
    let mut rng = derive(1, "test/nn/grad");
    let mut net = Network::init(6, 4, &mut rng);
    net.b1.iter_mut().for_each(|b| *b = 0.3); // keep ReLUs away from their kink
    let x: Vec<f64> = (0..6).map(|_| rng.random_range(-1.0..1.0)).collect();
    for y in [0.0, 1.0] {
        let mut g = vec![0.0; net.num_params()];
        net.example_gradient(&x, y, &mut g);
        let p = net.params();
        let h = 1e-6;
        for k in 0..p.len() {
            let mut plus = net.clone();
            let mut q = p.clone();
            q[k] += h;
            plus.set_params(&q);
            let mut minus = net.clone();
            q[k] -= 2.0 * h;
            minus.set_params(&q);
            let fd = (one_record_loss(&plus, &x, y) - one_record_loss(&minus, &x, y)) / (2.0 * h);
            assert!((fd - g[k]).abs() < 1e-6, "parameter {k}: {fd} vs {}", g[k]);
        }
    }
}

#[test]
fn the_clipped_mean_moves_by_at_most_2c_over_n() {
    let (train, _) = classification(60, 5, 2);
    let data = train.head(20);
    let mut rng = derive(2, "test/nn/sens");
    let clip = 0.3;
    let mut worst = 0.0f64;
    for trial in 0..200 {
        let net = Network::init(5, 3, &mut derive(trial, "test/nn/net"));
        let (a, _) = net.mean_gradient(&data, Some(clip));
        let mut other = data.clone();
        let row = rng.random_range(0..data.len());
        // An adversarial replacement: a large record with the opposite label.
        for j in 0..5 {
            other.x[(row, j)] = rng.random_range(-3.0..3.0);
        }
        other.y[row] = 1.0 - other.y[row];
        let (b, _) = net.mean_gradient(&other, Some(clip));
        let dist = a.iter().zip(&b).map(|(u, v)| (u - v).powi(2)).sum::<f64>().sqrt();
        assert!(dist <= 2.0 * clip / data.len() as f64 * (1.0 + 1e-12), "{dist}");
        worst = worst.max(dist * data.len() as f64 / (2.0 * clip));
    }
    assert!(worst > 0.5, "the bound is approached: {worst}");
}

#[test]
fn accounting_reproduces_the_noisy_gd_vector() {
    // Spec §5: ε_iter = 0.5, δ = 1e-5 (z = 9.690), T = 1000 → α* = 2.470, ε* = 20.99.
    let z = (2.0 * (1.25f64 / 1e-5).ln()).sqrt() / 0.5;
    let v = account("noisy-gd", z, 1000, 1e-5, 1.0).unwrap();
    assert!((v.epsilon_rdp - 20.99).abs() < 5e-3, "{}", v.epsilon_rdp);
    assert!((v.alpha_rdp - 2.470).abs() < 5e-4);
    assert!(v.epsilon_exact < v.epsilon_rdp_improved && v.epsilon_rdp_improved < v.epsilon_rdp);
    // A collusion factor c_S acts as z/√c_S.
    let c = account("view", z, 1000, 1e-5, 1.3).unwrap();
    let same = account("same", z / 1.3f64.sqrt(), 1000, 1e-5, 1.0).unwrap();
    assert!((c.epsilon_exact - same.epsilon_exact).abs() < 1e-9);
}

#[test]
fn cape_network_reaches_non_private_accuracy_at_half_epsilon_per_iteration() {
    let (tr, te) = classification(4000, 20, 3);
    let run = |mechanism, eps| {
        let mut c = NnConfig::new(mechanism, eps);
        c.iterations = 120;
        train(&c, &tr, &te).unwrap()
    };
    let np = run(NnMechanism::NonPrivate, 0.5);
    let cape = run(NnMechanism::Cape, 0.5);
    assert!(np.test_accuracy > 0.85, "the task is learnable: {}", np.test_accuracy);
    assert!(
        cape.test_accuracy > np.test_accuracy - 0.03,
        "CAPE {} vs non-private {}",
        cape.test_accuracy,
        np.test_accuracy
    );
    let p = cape.privacy.as_ref().unwrap();
    assert_eq!(p.iterations, 120);
    assert_eq!(p.views.len(), 3);
    assert!(p.guarantee_view.starts_with("full adversary view"));
    assert!(p.epsilon > 0.5, "the whole run costs more than one iteration: {}", p.epsilon);
    // Aggregate noise: CAPE at the pooled level τ_s/S, conventional at τ_s/√S.
    let conv = run(NnMechanism::Conventional, 0.5);
    let (c_sd, v_sd) = (cape.aggregate_noise_sd.unwrap(), conv.aggregate_noise_sd.unwrap());
    assert!((v_sd / c_sd - 2.0).abs() < 1e-12, "√S = 2 at S = 4");
}

#[test]
fn cape_beats_conventional_when_noise_matters() {
    let (tr, te) = classification(4000, 20, 4);
    let (mut cape, mut conv) = (vec![], vec![]);
    for seed in 0..3 {
        for (mechanism, out) in
            [(NnMechanism::Cape, &mut cape), (NnMechanism::Conventional, &mut conv)]
        {
            let mut c = NnConfig::new(mechanism, 0.02);
            c.iterations = 80;
            c.seed = seed;
            out.push(train(&c, &tr, &te).unwrap().test_accuracy);
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    assert!(mean(&cape) > mean(&conv) + 0.05, "CAPE {cape:?} vs conventional {conv:?}");
}

#[test]
fn refusals() {
    let (tr, te) = classification(200, 3, 5);
    let mut c = NnConfig::new(NnMechanism::Cape, 0.5);
    c.sites = 1;
    assert!(matches!(train(&c, &tr, &te), Err(NnError::Sites(1))));
    let c = NnConfig { clip: 0.0, ..NnConfig::new(NnMechanism::Cape, 0.5) };
    assert!(matches!(train(&c, &tr, &te), Err(NnError::Clip(_))));
    let bad = Dataset { x: tr.x.clone(), y: tr.y.map(|y| 2.0 * y) };
    let c = NnConfig::new(NnMechanism::NonPrivate, 0.5);
    assert!(matches!(train(&c, &bad, &te), Err(NnError::Label { .. })));
}
