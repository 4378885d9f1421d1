//! Sensitivities by brute force over neighbouring data sets, and the joint multipliers m by
//! maximising over record pairs (spec cape-fm §2.2, §2.3, §7.1, §7.2).

use capelab_core::data::Dataset;
use capelab_core::fm::coefficients::{Block, Coefficients};
use capelab_core::fm::model::Model;
use capelab_core::fm::sensitivity::{
    gaussian_fm, joint_multiplier, laplace_fm_l1, relaxed_fm_l2, s1_printed_quadratic,
};
use capelab_core::rng::{CapeRng, derive};
use rand::RngExt;

const D: usize = 4;

/// A record in FM's domain: a random direction, a norm that is often exactly 1.
fn record(model: Model, rng: &mut CapeRng) -> (Vec<f64>, f64) {
    let mut x: Vec<f64> = (0..D).map(|_| rng.random_range(-1.0..1.0)).collect();
    if rng.random_bool(0.3) {
        // Sparse records reach the corners (e.g. e₁ against e₂).
        let keep = rng.random_range(0..D);
        for (i, v) in x.iter_mut().enumerate() {
            if i != keep {
                *v = 0.0;
            }
        }
    }
    let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-300);
    let target = if rng.random_bool(0.5) { 1.0 } else { rng.random_range(0.0..1.0) };
    x.iter_mut().for_each(|v| *v *= target / norm);
    let y = match model {
        Model::Linear => {
            if rng.random_bool(0.5) {
                [-1.0, 1.0, 0.0][rng.random_range(0..3)]
            } else {
                rng.random_range(-1.0..1.0)
            }
        }
        Model::Logistic => f64::from(rng.random_bool(0.5) as u8),
    };
    (x, y)
}

fn dataset(records: &[(Vec<f64>, f64)]) -> Dataset {
    let rows: Vec<Vec<f64>> = records.iter().map(|r| r.0.clone()).collect();
    let ys: Vec<f64> = records.iter().map(|r| r.1).collect();
    Dataset::from_rows(&rows, &ys).unwrap()
}

/// ‖ΔΛ_j‖₂ of each block (Λ₂ over its released upper triangle) between neighbours.
fn distances(model: Model, a: &Dataset, b: &Dataset) -> [f64; 3] {
    let (ca, cb) = (Coefficients::of(model, a), Coefficients::of(model, b));
    Block::ALL.map(|blk| {
        ca.block(blk).iter().zip(cb.block(blk)).map(|(u, v)| (u - v).powi(2)).sum::<f64>().sqrt()
    })
}

fn l1(model: Model, a: &Dataset, b: &Dataset) -> f64 {
    let (ca, cb) = (Coefficients::of(model, a), Coefficients::of(model, b));
    let full = |c: &Coefficients| {
        let mut v = vec![c.lambda0];
        v.extend(c.lambda1.iter());
        v.extend(c.lambda2.iter());
        v
    };
    full(&ca).iter().zip(full(&cb)).map(|(u, v)| (u - v).abs()).sum()
}

#[test]
fn no_random_neighbouring_pair_exceeds_any_sensitivity() {
    let n = 6;
    for model in [Model::Linear, Model::Logistic] {
        let mut rng = derive(7, &format!("test/sens/{}", model.name()));
        let s = gaussian_fm(model, n, true);
        let mut worst = [0.0f64; 3];
        for _ in 0..4000 {
            let mut records: Vec<_> = (0..n).map(|_| record(model, &mut rng)).collect();
            let a = dataset(&records);
            records[n - 1] = record(model, &mut rng);
            let b = dataset(&records);
            let dist = distances(model, &a, &b);
            for (k, blk) in Block::ALL.iter().enumerate() {
                if let Some(bound) = s.of(*blk) {
                    assert!(dist[k] <= bound * (1.0 + 1e-12), "{model:?} {blk:?}: {}", dist[k]);
                    worst[k] = worst[k].max(dist[k] / bound);
                } else {
                    assert_eq!(dist[k], 0.0, "logistic Λ₀ carries no data");
                }
            }
            assert!(l1(model, &a, &b) <= laplace_fm_l1(model, n, D) * (1.0 + 1e-12));
            let all = dist.iter().map(|v| v * v).sum::<f64>().sqrt();
            assert!(all <= relaxed_fm_l2(model, n, D) * (1.0 + 1e-12));
        }
        // The bounds are nearly reached: Λ₁ and Λ₂ within a few percent by random pairs.
        assert!(worst[1] > 0.95 && worst[2] > 0.95, "{model:?}: {worst:?}");
    }
}

#[test]
fn the_frobenius_case_e1_against_e2() {
    let n = 5;
    let mut base = vec![(vec![0.0, 0.6, 0.0, 0.0], 0.5); n];
    base[n - 1] = (vec![1.0, 0.0, 0.0, 0.0], 0.0);
    let a = dataset(&base);
    base[n - 1] = (vec![0.0, 1.0, 0.0, 0.0], 0.0);
    let b = dataset(&base);
    for model in [Model::Linear, Model::Logistic] {
        let d2 = distances(model, &a, &b)[2];
        let frob = gaussian_fm(model, n, true).quadratic;
        assert!(
            (d2 - frob).abs() < 1e-15,
            "{model:?}: ‖ΔΛ₂‖ = {d2} attains √2/N-type bound {frob}"
        );
        let printed = s1_printed_quadratic(model, n);
        assert!(d2 > 1.4 * printed, "S1's spectral bound {printed} is exceeded: {d2}");
    }
}

/// sqrt(Σ_j (‖ΔΛ_j‖/Δ_j)²) for two one-record data sets (N = 1).
fn joint_ratio(model: Model, with_constant: bool, r: &(Vec<f64>, f64), s: &(Vec<f64>, f64)) -> f64 {
    let dist =
        distances(model, &dataset(std::slice::from_ref(r)), &dataset(std::slice::from_ref(s)));
    let sens = gaussian_fm(model, 1, with_constant);
    Block::ALL
        .iter()
        .zip(dist)
        .filter_map(|(b, d)| sens.of(*b).map(|delta| (d / delta).powi(2)))
        .sum::<f64>()
        .sqrt()
}

/// Maps unconstrained parameters to a pair of records in the domain.
fn pair(model: Model, p: &[f64], labels: (f64, f64)) -> ((Vec<f64>, f64), (Vec<f64>, f64)) {
    let ball = |v: &[f64]| {
        let n = v.iter().map(|u| u * u).sum::<f64>().sqrt();
        v.iter().map(|u| u / n.max(1.0)).collect::<Vec<f64>>()
    };
    let (x, xp) = (ball(&p[..D]), ball(&p[D..2 * D]));
    match model {
        Model::Linear => ((x, p[2 * D].clamp(-1.0, 1.0)), (xp, p[2 * D + 1].clamp(-1.0, 1.0))),
        Model::Logistic => ((x, labels.0), (xp, labels.1)),
    }
}

/// Random restarts plus a shrinking-step hill climb over record pairs.
fn maximise(model: Model, with_constant: bool, seed: u64) -> f64 {
    let mut rng = derive(seed, "test/joint");
    let mut best = 0.0f64;
    let label_pairs = [(0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0)];
    for restart in 0..40 {
        let labels = label_pairs[restart % 4];
        let mut p: Vec<f64> = (0..2 * D + 2).map(|_| rng.random_range(-1.2..1.2)).collect();
        let value = |p: &[f64]| {
            let (r, s) = pair(model, p, labels);
            joint_ratio(model, with_constant, &r, &s)
        };
        let mut current = value(&p);
        let mut step = 0.5;
        while step > 1e-6 {
            let mut improved = false;
            for _ in 0..30 {
                let trial: Vec<f64> =
                    p.iter().map(|v| v + step * rng.random_range(-1.0..1.0)).collect();
                let v = value(&trial);
                if v > current {
                    (p, current, improved) = (trial, v, true);
                }
            }
            if !improved {
                step *= 0.5;
            }
        }
        best = best.max(current);
    }
    best
}

#[test]
fn joint_multipliers_are_the_maximum_over_record_pairs() {
    for (model, with_constant) in
        [(Model::Linear, true), (Model::Linear, false), (Model::Logistic, false)]
    {
        let m = joint_multiplier(model, with_constant);
        let found = maximise(model, with_constant, 3);
        assert!(found <= m * (1.0 + 1e-9), "{model:?}/{with_constant}: {found} exceeds m = {m}");
        assert!(
            found >= m - 2e-3,
            "{model:?}/{with_constant}: search reached only {found} < m = {m}"
        );
    }
    // The witness of m = 1.5: y = 1, x = e₁ against y′ = 0, x′ = e₂.
    let e = |i: usize| {
        let mut v = vec![0.0; D];
        v[i] = 1.0;
        v
    };
    let r = joint_ratio(Model::Linear, true, &(e(0), 1.0), &(e(1), 0.0));
    assert!((r - 1.5).abs() < 1e-15, "{r}");
    // The crude bound √k is never below m.
    assert!(joint_multiplier(Model::Linear, true) <= 3f64.sqrt());
    assert!(joint_multiplier(Model::Logistic, false) <= 2f64.sqrt());
}

#[test]
fn sensitivity_tables_match_the_spec() {
    // Spec §3, D = 20, N = 10⁴, δ = 1e-5, ε = 1: the per-entry std columns.
    let c = 4.84481;
    let n = 10_000;
    let lin = gaussian_fm(Model::Linear, n, true);
    assert!((lin.linear * c - 1.94e-3).abs() < 5e-6);
    assert!((lin.quadratic * c - 6.85e-4).abs() < 5e-7);
    assert!(
        (std::f64::consts::SQRT_2 * laplace_fm_l1(Model::Linear, n, 20) - 1.25e-1).abs() < 5e-4
    );
    assert!((relaxed_fm_l2(Model::Linear, n, 20) * c - 2.13e-2).abs() < 5e-5);
    let log = gaussian_fm(Model::Logistic, n, true);
    assert_eq!(log.constant, None);
    assert!((log.quadratic * c - 8.56e-5).abs() < 5e-8);
    assert!(
        (std::f64::consts::SQRT_2 * laplace_fm_l1(Model::Logistic, n, 20) - 2.26e-2).abs() < 5e-5
    );
    // D = 101 rows.
    assert!((std::f64::consts::SQRT_2 * laplace_fm_l1(Model::Linear, n, 101) - 2.94).abs() < 5e-3);
}
