//! The coefficient arrays against the losses they stand for (spec cape-fm §2.2, §2.3).

use capelab_core::data::{Dataset, synthetic};
use capelab_core::fm::coefficients::{
    Block, Coefficients, logistic_taylor_error_bound, pack_upper, unpack_upper,
};
use capelab_core::fm::model::{Model, softplus};
use capelab_core::rng::derive;
use nalgebra::{DMatrix, DVector};
use rand::RngExt;

fn random_w(d: usize, scale: f64, seed: u64) -> DVector<f64> {
    let mut rng = derive(seed, "test/w");
    DVector::from_fn(d, |_, _| scale * rng.random_range(-1.0..1.0))
}

#[test]
fn linear_arrays_reproduce_the_exact_loss() {
    let (data, _) = synthetic::regression(300, 6, 0.3, 11);
    let c = Coefficients::of(Model::Linear, &data);
    for seed in 0..20 {
        let w = random_w(6, 3.0, seed);
        // Direct: (1/N)Σ(y − xᵀw)², computed record by record.
        let direct: f64 = (0..data.len())
            .map(|n| (data.y[n] - data.x.row(n).dot(&w.transpose())).powi(2))
            .sum::<f64>()
            / data.len() as f64;
        let poly = c.objective(&w);
        assert!((poly - direct).abs() <= 1e-12 * direct.max(1.0), "{poly} vs {direct}");
        assert!((Model::Linear.loss(&w, &data) - direct).abs() <= 1e-12 * direct.max(1.0));
    }
    assert!((c.lambda2.clone() - c.lambda2.transpose()).amax() == 0.0, "Λ₂ symmetric");
}

#[test]
fn logistic_taylor_error_is_within_the_proven_bound() {
    let raw = synthetic::two_gaussians(400, 5, 0.5, 3);
    let data = Dataset { x: raw.x.map(|v| v / 5.0), y: raw.y.clone() };
    let data = Dataset {
        x: DMatrix::from_fn(data.len(), 5, |i, j| {
            let n = data.x.row(i).norm();
            data.x[(i, j)] / n.max(1.0)
        }),
        y: data.y,
    };
    assert!(data.max_row_norm() <= 1.0 + 1e-12);
    let c = Coefficients::of(Model::Logistic, &data);
    let mut tight = 0.0f64;
    for (seed, scale) in (0..60).map(|s| (s, [0.1, 0.5, 1.0, 2.0, 4.0, 8.0][s as usize % 6])) {
        let w = random_w(5, scale, seed);
        let exact = Model::Logistic.loss(&w, &data);
        let approx = c.objective(&w);
        let gap = approx - exact;
        let bound = logistic_taylor_error_bound(&w, &data);
        assert!(gap >= -1e-13, "the quadratic is an upper bound: gap {gap}");
        assert!(gap <= bound * (1.0 + 1e-9) + 1e-15, "gap {gap} > bound {bound}");
        assert!(bound <= w.norm().powi(4) / 192.0 * (1.0 + 1e-12));
        if bound > 1e-8 {
            tight = tight.max(gap / bound);
        }
    }
    // Near z = 0 the remainder is z⁴·g⁗(0)/24 = z⁴/192: the bound is attained asymptotically.
    assert!(tight > 0.9, "the bound should be nearly tight for small ‖w‖: {tight}");

    // Pointwise check of the scalar inequality on a grid, independent of the arrays.
    for i in -400..=400 {
        let z = i as f64 / 40.0;
        let quad = std::f64::consts::LN_2 + z / 2.0 + z * z / 8.0;
        let gap = quad - softplus(z);
        assert!(gap >= -1e-15 && gap <= z.powi(4) / 192.0 + 1e-15, "z = {z}: {gap}");
    }
}

#[test]
fn logistic_arrays_match_their_definition() {
    let data = Dataset {
        x: DMatrix::from_row_slice(3, 2, &[0.6, 0.0, 0.0, -0.8, 0.3, 0.4]),
        y: DVector::from_column_slice(&[1.0, 0.0, 1.0]),
    };
    let c = Coefficients::of(Model::Logistic, &data);
    assert_eq!(c.lambda0, std::f64::consts::LN_2);
    // Λ₁ = (1/3)[(−½)(0.6, 0) + (½)(0, −0.8) + (−½)(0.3, 0.4)]
    let expect = DVector::from_column_slice(&[-0.15, -0.2]);
    assert!((&c.lambda1 - expect).amax() < 1e-15);
    assert!((c.lambda2[(0, 1)] - 0.3 * 0.4 / 24.0).abs() < 1e-15);
}

#[test]
fn packing_round_trips_and_counts_entries() {
    let m = DMatrix::from_fn(4, 4, |i, j| (i.min(j) * 10 + i.max(j)) as f64);
    let packed = pack_upper(&m);
    assert_eq!(packed.len(), Block::Quadratic.len(4));
    assert_eq!(&packed[..4], &[0.0, 1.0, 2.0, 3.0]);
    assert_eq!(unpack_upper(4, &packed), m);
    let (data, _) = synthetic::regression(10, 4, 0.0, 1);
    let mut c = Coefficients::of(Model::Linear, &data);
    let before = c.clone();
    for b in Block::ALL {
        let v = c.block(b);
        assert_eq!(v.len(), b.len(4));
        c.set_block(b, &v);
    }
    assert_eq!(c, before);
}
