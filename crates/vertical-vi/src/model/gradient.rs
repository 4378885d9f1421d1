//! The aggregator (spec B3 steps 1 and 4): it draws the batch and η, publishes θ = T(μ + σ⊙η),
//! and turns the opened noisy clipped sum G̃ (ζ-space, layout of `batch.rs`) into an ADVI update.
//!
//! Step 4, for one MC draw ζ = μ + σ⊙η (diagonal L = diag σ, spec B2 [choice]):
//! 1. s·G̃, with s = N/B for a fixed batch of B, or 1/q for Poisson sampling (spec D7: the batch
//!    sum estimates the full-data sum only after scaling). G̃ is already in ζ: the parties applied
//!    the chain rule through T to their own blocks, and the MPC formed the π block (`batch.rs`),
//!    so no pullback is needed for it;
//! 2. g_ζ = s·G̃ + J_Tᵀ ∇_θ log p(θ) + ∇_ζ log|det J_T| (the prior through the chain rule, and the
//!    Jacobian term, spec B2);
//! 3. ∇_μ ELBO = g_ζ, ∇_{log σ} ELBO = g_ζ⊙η⊙σ + 1 (the +1 is the entropy Σ log σ_i);
//! 4. Adam ascent on (μ, log σ).
//!
//! # Sampling and the accountant
//!
//! [`Sampling::Poisson`] (each record independently with rate q) is what the RDP accountant of
//! spec B4 matches (Poisson subsampled Gaussian, add/remove adjacency, ε = 0.9948 for the paper's
//! setting). [`Sampling::Fixed`] (B records without replacement, the paper's runs) is offered for
//! comparison; that accountant does **not** cover it (spec D5: it would need replace-one without
//! replacement, ε = 2.126 in the same setting).

use super::params::Model;
use capelab_core::nn::adam::Adam;
use capelab_core::rng::CapeRng;
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

/// How the aggregator draws a batch.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sampling {
    /// Each record independently with probability `rate` (what the accountant matches).
    Poisson { rate: f64 },
    /// Exactly `size` distinct records, uniformly (the paper's runs).
    Fixed { size: usize },
}

impl Sampling {
    /// Draw one batch of record indices (sorted) out of `records`.
    pub fn draw(&self, records: usize, rng: &mut CapeRng) -> Vec<usize> {
        match *self {
            Sampling::Poisson { rate } => {
                (0..records).filter(|_| rng.random::<f64>() < rate).collect()
            }
            Sampling::Fixed { size } => {
                let size = size.min(records);
                // Floyd's algorithm: `size` distinct indices in O(size) draws
                let mut chosen = std::collections::BTreeSet::new();
                for j in records - size..records {
                    let t = rng.random_range(0..=j);
                    if !chosen.insert(t) {
                        chosen.insert(j);
                    }
                }
                chosen.into_iter().collect()
            }
        }
    }

    /// s, the factor that makes the batch sum an unbiased estimate of the full-data sum: 1/q for
    /// Poisson (not 1/|batch|, which would depend on the private batch size), N/B for fixed.
    pub fn scale(&self, records: usize) -> f64 {
        match *self {
            Sampling::Poisson { rate } => 1.0 / rate,
            Sampling::Fixed { size } => records as f64 / size.min(records).max(1) as f64,
        }
    }

    /// The sampling rate q the accountant is given.
    pub fn rate(&self, records: usize) -> f64 {
        match *self {
            Sampling::Poisson { rate } => rate,
            Sampling::Fixed { size } => size.min(records) as f64 / records as f64,
        }
    }
}

/// The mean-field Gaussian q(ζ) = N(μ, diag σ²): what DP-VI releases.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Variational {
    pub mu: Vec<f64>,
    pub log_sigma: Vec<f64>,
}

impl Variational {
    /// ζ = μ + σ⊙η.
    pub fn zeta(&self, eta: &[f64]) -> Vec<f64> {
        self.mu.iter().zip(&self.log_sigma).zip(eta).map(|((m, s), e)| m + s.exp() * e).collect()
    }
}

/// η ~ N(0, I) over ζ, drawn in the model's canonical order (so the same seed gives the same η per
/// parameter however the columns are split among parties).
pub fn draw_eta(model: &Model, rng: &mut CapeRng) -> Vec<f64> {
    let mut eta = vec![0.0; model.zeta_len()];
    for &i in model.canonical_order() {
        eta[i] = StandardNormal.sample(rng);
    }
    eta
}

/// g_ζ = s·G + J_Tᵀ ∇_θ log p(θ) + ∇_ζ log|det J_T| (steps 1–2): the gradient at ζ of
/// s·Σ_batch log p(x_n|T(ζ)) + log p(T(ζ)) + log|det J_T(ζ)|, given the (noisy clipped) ζ-space
/// sum G.
pub fn zeta_gradient(model: &Model, theta: &[f64], sum: &[f64], scale: f64) -> Vec<f64> {
    assert_eq!(sum.len(), model.zeta_len(), "G̃ must have the ζ layout of batch.rs");
    let mut gz = model.pullback(theta, &model.grad_log_prior_theta());
    for ((a, b), s) in gz.iter_mut().zip(model.grad_log_det_jacobian(theta)).zip(sum) {
        *a += scale * s + b;
    }
    gz
}

/// Step 3: (∇_μ, ∇_{log σ}) of the one-draw ELBO estimate from g_ζ.
pub fn elbo_gradient(g_zeta: &[f64], eta: &[f64], log_sigma: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let g_log_sigma =
        g_zeta.iter().zip(eta).zip(log_sigma).map(|((g, e), s)| g * e * s.exp() + 1.0).collect();
    (g_zeta.to_vec(), g_log_sigma)
}

/// What the aggregator publishes for one step (spec B3 step 1).
#[derive(Clone, Debug, PartialEq)]
pub struct StepDraw {
    /// The batch indices, sent to every party.
    pub batch: Vec<usize>,
    /// η, kept by the aggregator.
    pub eta: Vec<f64>,
    /// θ = T(μ + σ⊙η), public.
    pub theta: Vec<f64>,
}

/// The aggregator's state: q's parameters, the optimiser, and its two CSPRNG streams.
#[derive(Debug)]
pub struct Aggregator {
    pub model: Model,
    pub q: Variational,
    pub adam: Adam,
    pub sampling: Sampling,
    pub records: usize,
    batch_rng: CapeRng,
    eta_rng: CapeRng,
}

impl Aggregator {
    /// An aggregator over `records` rows starting from `q`.
    pub fn new(
        model: Model,
        q: Variational,
        records: usize,
        sampling: Sampling,
        learning_rate: f64,
        batch_rng: CapeRng,
        eta_rng: CapeRng,
    ) -> Self {
        let adam = Adam::new(2 * model.zeta_len(), learning_rate);
        Aggregator { model, q, adam, sampling, records, batch_rng, eta_rng }
    }

    /// Step 1: the batch, η and the public θ.
    pub fn draw(&mut self) -> StepDraw {
        let batch = self.sampling.draw(self.records, &mut self.batch_rng);
        let eta = draw_eta(&self.model, &mut self.eta_rng);
        let theta = self.model.transform(&self.q.zeta(&eta));
        StepDraw { batch, eta, theta }
    }

    /// Step 4: update q from the opened noisy clipped sum G̃.
    pub fn update(&mut self, draw: &StepDraw, noisy_sum: &[f64]) {
        let s = self.sampling.scale(self.records);
        let gz = zeta_gradient(&self.model, &draw.theta, noisy_sum, s);
        let (g_mu, g_ls) = elbo_gradient(&gz, &draw.eta, &self.q.log_sigma);
        let z = self.model.zeta_len();
        let mut params: Vec<f64> = self.q.mu.iter().chain(&self.q.log_sigma).copied().collect();
        let grad: Vec<f64> = g_mu.into_iter().chain(g_ls).collect();
        self.adam.ascend(&mut params, &grad);
        self.q.mu.copy_from_slice(&params[..z]);
        self.q.log_sigma.copy_from_slice(&params[z..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capelab_core::rng::derive;

    #[test]
    fn fixed_batches_are_distinct_and_poisson_batches_have_rate_q() {
        let mut rng = derive(1, "test");
        for _ in 0..50 {
            let b = Sampling::Fixed { size: 100 }.draw(1000, &mut rng);
            assert_eq!(b.len(), 100);
            assert!(b.windows(2).all(|w| w[0] < w[1]) && *b.last().unwrap() < 1000);
        }
        assert_eq!(Sampling::Fixed { size: 10 }.draw(5, &mut rng), vec![0, 1, 2, 3, 4]);
        let total: usize =
            (0..200).map(|_| Sampling::Poisson { rate: 0.02 }.draw(5000, &mut rng).len()).sum();
        let mean = total as f64 / 200.0;
        // E = 100, sd of the mean ≈ √(98/200) ≈ 0.7
        assert!((mean - 100.0).abs() < 3.0, "mean batch {mean}");
        assert_eq!(Sampling::Poisson { rate: 0.02 }.scale(5000), 50.0);
        assert_eq!(Sampling::Fixed { size: 100 }.scale(5000), 50.0);
        assert_eq!(Sampling::Fixed { size: 100 }.rate(5000), 0.02);
    }

    #[test]
    fn adam_climbs_a_concave_quadratic() {
        let mut adam = Adam::new(2, 0.05);
        let mut x = vec![3.0, -2.0];
        for _ in 0..2000 {
            let g: Vec<f64> = x.iter().zip([1.0, 0.5]).map(|(v, c)| -(v - c)).collect();
            adam.ascend(&mut x, &g);
        }
        assert!((x[0] - 1.0).abs() < 1e-3 && (x[1] - 0.5).abs() < 1e-3, "{x:?}");
    }
}
