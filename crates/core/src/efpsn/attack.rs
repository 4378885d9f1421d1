//! "What a curious neighbour sees" (spec efpsn-vertical-dpvi §A4, the iDLG experiment): an
//! agent's released gradient on a single image, and the image read back from it.
//!
//! In Phase 2 a neighbour that knows W and agent i's iterates recovers
//! ∇f̂_i(x_i) = (Σ_j w_ij x_j − x_i⁺)/α exactly (DSGD). For softmax regression on one image a,
//! row c of the weight gradient is (p_c − y_c)·a + ∂Φ/∂W_c: without a perturbation on the weights,
//! any non-zero row is the image up to scale (the analytic core of iDLG, no optimisation needed).
//! The mask a single agent carries has the marginal law N(0, 2·d_i·σ_k²) per coefficient (spec
//! eq. 10, checked by Monte Carlo in [`super::mask`]), which is what is drawn here.

use serde::{Deserialize, Serialize};

use super::EfpsnError;
use super::basis::{Basis, BasisSpec};
use super::mask::NoiseLaw;
use super::models::{Examples, LocalCost, Model};
use super::optimizer::PerturbedCost;
use crate::rng::derive;

/// What is perturbed: the paper's 10 biases, or every parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Perturbed {
    Biases,
    All,
}

impl Perturbed {
    pub fn name(self) -> &'static str {
        match self {
            Perturbed::Biases => "biases",
            Perturbed::All => "all",
        }
    }

    pub fn variables(self, model: Model, features: usize) -> Vec<usize> {
        match self {
            Perturbed::Biases => model.bias_indices(features),
            Perturbed::All => (0..model.dim(features)).collect(),
        }
    }
}

/// One reconstruction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reconstruction {
    pub gamma: f64,
    pub perturbed: Perturbed,
    /// The image read from the gradient, scaled to the true image's range.
    pub image: Vec<f64>,
    /// Cosine between the reconstruction and the true image.
    pub cosine: f64,
    /// ‖∂Φ/∂W‖ / ‖∂ℓ/∂W‖: the mask's share of the weight gradient.
    pub mask_to_signal: f64,
}

/// Reconstructs `image` (label `label`) from the released gradient of an agent with `degree`
/// neighbours at x = 0, under a mask of scale `gamma` on `perturbed` (γ = 0: no mask). The basis
/// is (1, m, min(m + 1, 64)): affine, like the paper's.
pub fn reconstruct(
    image: &[f64],
    label: usize,
    classes: usize,
    perturbed: Perturbed,
    gamma: f64,
    degree: usize,
    seed: u64,
) -> Result<Reconstruction, EfpsnError> {
    let features = image.len();
    let model = Model::Softmax { classes };
    let data = Examples::new(features, image.to_vec(), vec![label as f64])?;
    let cost = LocalCost::new(model, data, 0.0)?;
    let variables = perturbed.variables(model, features);
    let m = variables.len() as u32;
    let spec = BasisSpec { max_degree: 1, variables: m, size: (m + 1).min(64), seed };
    let basis = Basis::build(&spec)?;
    let eta = if gamma > 0.0 {
        let law = NoiseLaw { gamma, decay: 1.0, precision: 6 };
        law.check()?;
        law.draw_independent(basis.len(), degree, &mut derive(seed, "efpsn/attack/mask"))
    } else {
        vec![0.0; basis.len()]
    };
    let released =
        PerturbedCost { cost: cost.clone(), variables, perturbation: basis.combine(&eta) };
    let x = vec![0.0; model.dim(features)];
    let mut g = vec![0.0; x.len()];
    released.gradient(&x, None, &mut g);
    let mut clean = vec![0.0; x.len()];
    cost.gradient(&x, None, &mut clean);
    let weights = classes * features;
    let noise: f64 = g[..weights]
        .iter()
        .zip(&clean[..weights])
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        .sqrt();
    let signal: f64 = clean[..weights].iter().map(|v| v * v).sum::<f64>().sqrt();
    // The row of the largest norm, signed so that it correlates positively with a non-negative
    // image (the attacker knows pixels are ≥ 0).
    let row = (0..classes)
        .max_by(|&a, &b| row_norm(&g, a, features).total_cmp(&row_norm(&g, b, features)))
        .unwrap_or(0);
    let mut guess: Vec<f64> = g[row * features..(row + 1) * features].to_vec();
    if guess.iter().sum::<f64>() < 0.0 {
        guess.iter_mut().for_each(|v| *v = -*v);
    }
    let cosine = cos(&guess, image);
    let (lo, hi) =
        guess.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| (l.min(v), h.max(v)));
    let top = image.iter().copied().fold(0.0, f64::max);
    let image_out =
        guess.iter().map(|v| if hi > lo { (v - lo) / (hi - lo) * top } else { 0.0 }).collect();
    Ok(Reconstruction {
        gamma,
        perturbed,
        image: image_out,
        cosine,
        mask_to_signal: noise / signal.max(f64::MIN_POSITIVE),
    })
}

fn row_norm(g: &[f64], row: usize, features: usize) -> f64 {
    g[row * features..(row + 1) * features].iter().map(|v| v * v).sum()
}

fn cos(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f64 = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na * nb) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digit() -> Vec<f64> {
        // A "1": a vertical bar in an 8×8 image, values in [0, 1].
        (0..64)
            .map(|i| if i % 8 == 3 || i % 8 == 4 { 1.0 } else { 0.05 * (i % 5) as f64 })
            .collect()
    }

    #[test]
    fn without_a_mask_the_image_is_read_back_exactly() {
        let r = reconstruct(&digit(), 1, 10, Perturbed::Biases, 0.0, 2, 0).unwrap();
        assert!(r.cosine > 0.999_999, "{}", r.cosine);
        assert_eq!(r.mask_to_signal, 0.0);
    }

    /// The paper's choice leaves the weight gradient untouched: the image is read back at every γ.
    #[test]
    fn perturbing_only_the_biases_never_hides_the_image() {
        for gamma in [1e1, 1e3, 1e4] {
            let r = reconstruct(&digit(), 1, 10, Perturbed::Biases, gamma, 2, 0).unwrap();
            assert!(r.cosine > 0.999_999, "γ = {gamma}: {}", r.cosine);
        }
    }

    /// Orthonormality on [−1, 1]^650 scales every basis function by 2^{−325}: a mask on all
    /// parameters is ~1e−97 of the gradient and hides nothing either.
    #[test]
    fn an_orthonormal_mask_on_all_parameters_vanishes_in_650_dimensions() {
        let r = reconstruct(&digit(), 1, 10, Perturbed::All, 1e4, 2, 0).unwrap();
        assert!(r.mask_to_signal < 1e-80, "{}", r.mask_to_signal);
        assert!(r.cosine > 0.999_999);
    }
}
