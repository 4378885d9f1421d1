/*!
The synthetic data sets of the experiments, seeded (spec cape-fm §6.1 \[R\] and §5).

**Regression** ([`regression`]): the authors' recipe (spec §6.1 \[R\]) draws X uniform on [0, 1]^D,
w* uniform on [−1, 1]^D normalised to unit norm, and y = Xw* without noise, then normalises with
the data (column norms, then spec §2.4). Here the normalisation uses the public bound instead:
x = u/√D with u uniform on [0, 1]^D has ‖x‖ ≤ 1 by construction, and |y| = |xᵀw*| ≤ 1, so no
data-dependent step is needed and FM's domain holds exactly. An optional label noise N(0, σ²)
(clipped to [−1, 1]) is available; the papers use none.

**Two Gaussian classes** ([`two_gaussians`]): label y ~ Bernoulli(½), x ~ N(±μ·1, I_D) with +μ for
y = 1 (spec §5 \[R\]: μ = 0.25, D = 50; the paper's "means separated by 1" is ambiguous). The raw
features are unbounded: bring them into the unit ball with a public clipping radius
([`super::Normaliser::RowClip`], e.g. [`two_gaussians_radius`]).
*/

use nalgebra::{DMatrix, DVector};
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};

use crate::rng::derive;

use super::dataset::Dataset;

/// A regression set of `n` records in `d` dimensions and its true weights w* (‖w*‖ = 1).
pub fn regression(n: usize, d: usize, label_noise: f64, seed: u64) -> (Dataset, DVector<f64>) {
    let mut rng = derive(seed, "data/synthetic/regression");
    let raw: Vec<f64> = (0..d).map(|_| rng.random_range(-1.0..=1.0)).collect();
    let norm = raw.iter().map(|v| v * v).sum::<f64>().sqrt().max(f64::MIN_POSITIVE);
    let w_star = DVector::from_iterator(d, raw.iter().map(|v| v / norm));
    let scale = 1.0 / (d as f64).sqrt();
    let x = DMatrix::from_fn(n, d, |_, _| scale * rng.random::<f64>());
    let mut y = &x * &w_star;
    if label_noise > 0.0 {
        for v in y.iter_mut() {
            let z: f64 = StandardNormal.sample(&mut rng);
            *v = (*v + label_noise * z).clamp(-1.0, 1.0);
        }
    }
    (Dataset { x, y }, w_star)
}

/// Two Gaussian classes: `n` records, `d` features, class means ±`mean_offset` in every
/// coordinate, unit variance.
pub fn two_gaussians(n: usize, d: usize, mean_offset: f64, seed: u64) -> Dataset {
    let mut rng = derive(seed, "data/synthetic/two_gaussians");
    let mut x = DMatrix::zeros(n, d);
    let mut y = DVector::zeros(n);
    for i in 0..n {
        let label = rng.random_bool(0.5);
        let mean = if label { mean_offset } else { -mean_offset };
        y[i] = if label { 1.0 } else { 0.0 };
        for j in 0..d {
            let z: f64 = StandardNormal.sample(&mut rng);
            x[(i, j)] = mean + z;
        }
    }
    Dataset { x, y }
}

/// A public clipping radius for [`two_gaussians`]: the expected record norm
/// sqrt(D·(1 + μ²)), fixed by the generator's parameters, never by the data.
pub fn two_gaussians_radius(d: usize, mean_offset: f64) -> f64 {
    (d as f64 * (1.0 + mean_offset * mean_offset)).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regression_is_in_the_domain_and_noiseless() {
        let (data, w) = regression(500, 7, 0.0, 3);
        assert!((w.norm() - 1.0).abs() < 1e-12);
        assert!(data.max_row_norm() <= 1.0);
        assert!(data.y.amax() <= 1.0);
        assert!((&data.x * &w - &data.y).amax() < 1e-15);
        assert_eq!(regression(500, 7, 0.0, 3).0, data, "seeded");
    }

    #[test]
    fn two_gaussians_have_the_stated_means() {
        let data = two_gaussians(4000, 3, 0.25, 1);
        let ones: Vec<usize> = (0..data.len()).filter(|&i| data.y[i] == 1.0).collect();
        let frac = ones.len() as f64 / data.len() as f64;
        assert!((frac - 0.5).abs() < 4.0 * (0.25f64 / 4000.0).sqrt());
        let mean1: f64 = ones.iter().map(|&i| data.x[(i, 0)]).sum::<f64>() / ones.len() as f64;
        // Standard error of the class mean is about 1/sqrt(2000) = 0.022.
        assert!((mean1 - 0.25).abs() < 0.1, "{mean1}");
    }
}
