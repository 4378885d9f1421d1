//! Phase 2 (spec efpsn-vertical-dpvi §A2): a decentralised optimiser on the perturbed local costs
//! f̂_i = f_i + Φ(η̄_i), one agent's side. Each iteration an agent sends its iterate (and, for
//! gradient tracking, its tracker) to its neighbours **in clear**: only the perturbation protects
//! it (spec §D pitfall 9).
//!
//! - DSGD: x_i ← Σ_j w_ij x_j − α_t ∇f̂_i(x_i; ξ_i). The masks cancel only at consensus: with a
//!   constant step the offsets ∇Φ(η̄_i) (∝ √γ) leave an O(α‖c‖) bias (spec §D pitfall 8).
//! - Gradient tracking: x_i⁺ = Σ_j w_ij (x_j − α y_j); y_i⁺ = Σ_j w_ij y_j + ∇f̂_i(x_i⁺) − ∇f̂_i(x_i).
//!   The trackers average to the average gradient, in which the masks cancel: no bias.

use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::EfpsnError;
use super::basis::Polynomial;
use super::graph::MixingRow;
use super::models::LocalCost;
use crate::rng::CapeRng;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Optimizer {
    Dsgd,
    Tracking,
}

impl Optimizer {
    pub fn name(self) -> &'static str {
        match self {
            Optimizer::Dsgd => "dsgd",
            Optimizer::Tracking => "tracking",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [Optimizer::Dsgd, Optimizer::Tracking].into_iter().find(|o| o.name() == name)
    }

    /// The constant step α below which the iterates stay finite for any number of iterations,
    /// on a graph whose mixing matrix W has the eigenvalues `mixing` (ascending, the largest 1:
    /// [`super::graph::Graph::mixing_spectrum`]), when each local gradient is `curvature`·x plus
    /// a part bounded for every x. That holds for softmax regression with a ridge λ
    /// (`curvature` = λ): the loss's gradient on a row a is (p − e_y) ⊗ (a, 1), of norm at most
    /// √2·‖(a, 1)‖ whatever x, and an affine mask (K_deg = 1) adds a constant. The iteration is
    /// then a linear system in the iterates driven by bounded inputs, finite for every T exactly
    /// when that linear system is stable; per eigenvalue μ of W, with s = α·curvature:
    ///
    /// - DSGD, x⁺ = Wx − αλx − α(bounded): |μ − s| < 1 for every μ, i.e. s < 1 + μ_min.
    /// - Gradient tracking: the average obeys x̄⁺ = (1 − s)x̄ − α(bounded) (the trackers average
    ///   to the average gradient), so s < 2; each other mode is z² − μ(2 − s)z + μ(μ − s), stable
    ///   (Jury) iff (1 + μ)² > 2μs and μ(μ − s) < 1: for μ > 0 the first holds whenever s < 2,
    ///   for μ < 0 the second asks s < (1 − μ²)/|μ|.
    ///
    /// Below the bound the run may still converge slowly or oscillate (the loss's curvature adds
    /// to λ); above it the iterates grow without bound and a run stops on non-finite values.
    pub fn finite_step_bound(self, mixing: &[f64], curvature: f64) -> f64 {
        if !(curvature > 0.0 && curvature.is_finite()) {
            return f64::INFINITY;
        }
        let mu_min = mixing.iter().copied().fold(1.0f64, f64::min);
        let s = match self {
            Optimizer::Dsgd => 1.0 + mu_min,
            Optimizer::Tracking if mu_min < 0.0 => 2f64.min((1.0 - mu_min * mu_min) / -mu_min),
            Optimizer::Tracking => 2.0,
        };
        s / curvature
    }
}

/// How every agent runs Phase 2; public and the same on every agent.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Phase2Settings {
    pub optimizer: Optimizer,
    pub iterations: u32,
    /// α_t = step / (1 + decay·t).
    pub step: f64,
    pub decay: f64,
    /// Rows per stochastic gradient; `None`: the full local gradient.
    pub batch: Option<u32>,
}

impl Phase2Settings {
    pub fn check(&self) -> Result<(), EfpsnError> {
        if !(self.step > 0.0
            && self.step.is_finite()
            && self.decay >= 0.0
            && self.decay.is_finite())
        {
            return Err(EfpsnError::Parameter(format!(
                "step {} and decay {}: the step must be positive and the decay ≥ 0",
                self.step, self.decay
            )));
        }
        if self.iterations == 0 {
            return Err(EfpsnError::Parameter("Phase 2 needs at least one iteration".into()));
        }
        if self.batch == Some(0) {
            return Err(EfpsnError::Parameter("a batch of 0 rows".into()));
        }
        Ok(())
    }

    pub fn step_at(&self, t: u32) -> f64 {
        self.step / (1.0 + self.decay * t as f64)
    }
}

/// f̂_i = f_i + Φ(η̄_i), Φ a polynomial in the perturbed entries `variables` of x.
#[derive(Clone, Debug)]
pub struct PerturbedCost {
    pub cost: LocalCost,
    pub variables: Vec<usize>,
    pub perturbation: Polynomial,
}

impl PerturbedCost {
    pub fn gradient(&self, x: &[f64], rows: Option<&[usize]>, out: &mut [f64]) {
        self.cost.gradient(x, rows, out);
        let point: Vec<f64> = self.variables.iter().map(|&v| x[v]).collect();
        self.perturbation.add_gradient(&point, |v, g| out[self.variables[v]] += g);
    }

    pub fn value(&self, x: &[f64]) -> f64 {
        let point: Vec<f64> = self.variables.iter().map(|&v| x[v]).collect();
        self.cost.loss(x) + self.perturbation.eval(&point)
    }
}

/// What an agent sends its neighbours each iteration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Iterate {
    pub x: Vec<f64>,
    /// The gradient tracker (empty for DSGD).
    pub y: Vec<f64>,
}

/// One agent's optimiser.
pub struct LocalOptimizer {
    settings: Phase2Settings,
    row: MixingRow,
    cost: PerturbedCost,
    rng: CapeRng,
    x: Vec<f64>,
    y: Vec<f64>,
    g: Vec<f64>,
    t: u32,
}

impl LocalOptimizer {
    /// Starts at x⁰ = 0 (the same on every agent); the tracker at y⁰ = ∇f̂_i(x⁰).
    pub fn new(
        settings: Phase2Settings,
        row: MixingRow,
        cost: PerturbedCost,
        rng: CapeRng,
    ) -> Self {
        let d = cost.cost.dim();
        let mut me = LocalOptimizer {
            settings,
            row,
            cost,
            rng,
            x: vec![0.0; d],
            y: Vec::new(),
            g: vec![0.0; d],
            t: 0,
        };
        if settings.optimizer == Optimizer::Tracking {
            let x = me.x.clone();
            me.g = me.stochastic_gradient(&x);
            me.y = me.g.clone();
        }
        me
    }

    pub fn iteration(&self) -> u32 {
        self.t
    }

    pub fn is_done(&self) -> bool {
        self.t >= self.settings.iterations
    }

    pub fn x(&self) -> &[f64] {
        &self.x
    }

    pub fn iterate(&self) -> Iterate {
        Iterate { x: self.x.clone(), y: self.y.clone() }
    }

    pub fn cost(&self) -> &PerturbedCost {
        &self.cost
    }

    /// One iteration from the neighbours' iterates of this iteration, given as (agent, iterate)
    /// for every neighbour in the mixing row.
    pub fn step(&mut self, neighbours: &[(usize, &Iterate)]) -> Result<(), EfpsnError> {
        let d = self.x.len();
        for (j, it) in neighbours {
            let tracking = self.settings.optimizer == Optimizer::Tracking;
            if it.x.len() != d || (tracking && it.y.len() != d) || (!tracking && !it.y.is_empty()) {
                return Err(EfpsnError::Protocol(format!(
                    "agent {j}'s iterate has {} + {} values, expected {d}{}",
                    it.x.len(),
                    it.y.len(),
                    if tracking { " + the tracker" } else { "" }
                )));
            }
            if it.x.iter().chain(&it.y).any(|v| !v.is_finite()) {
                return Err(EfpsnError::Protocol(format!("agent {j}'s iterate is not finite")));
            }
        }
        let weight = |j: usize| self.row.others.iter().find(|(k, _)| *k == j).map(|(_, w)| *w);
        let alpha = self.settings.step_at(self.t);
        let mut mixed_x: Vec<f64> = self.x.iter().map(|v| self.row.own * v).collect();
        let mut mixed_y: Vec<f64> = self.y.iter().map(|v| self.row.own * v).collect();
        for (j, it) in neighbours {
            let w = weight(*j)
                .ok_or_else(|| EfpsnError::Protocol(format!("agent {j} is not a neighbour")))?;
            mixed_x.iter_mut().zip(&it.x).for_each(|(m, v)| *m += w * v);
            mixed_y.iter_mut().zip(&it.y).for_each(|(m, v)| *m += w * v);
        }
        match self.settings.optimizer {
            Optimizer::Dsgd => {
                let x = self.x.clone();
                let g = self.stochastic_gradient(&x);
                self.x = mixed_x.iter().zip(&g).map(|(m, gi)| m - alpha * gi).collect();
            }
            Optimizer::Tracking => {
                // x⁺ = W(x − αy) = Wx − αWy.
                let next: Vec<f64> =
                    mixed_x.iter().zip(&mixed_y).map(|(m, y)| m - alpha * y).collect();
                let g_next = self.stochastic_gradient(&next);
                self.y = mixed_y
                    .iter()
                    .zip(g_next.iter().zip(&self.g))
                    .map(|(m, (a, b))| m + a - b)
                    .collect();
                self.g = g_next;
                self.x = next;
            }
        }
        self.t += 1;
        Ok(())
    }

    fn stochastic_gradient(&mut self, x: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; x.len()];
        let rows = self.cost.cost.data.rows();
        match self.settings.batch {
            Some(b) if (b as usize) < rows => {
                let batch: Vec<usize> = (0..b).map(|_| self.rng.random_range(0..rows)).collect();
                self.cost.gradient(x, Some(&batch), &mut out);
            }
            _ => self.cost.gradient(x, None, &mut out),
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::efpsn::basis::{Basis, BasisSpec};
    use crate::efpsn::graph::{Graph, Topology};
    use crate::efpsn::models::{Examples, Model};
    use crate::rng::derive;

    /// Four agents on a ring, each with a few rows of a 3-class softmax regression and a large
    /// affine mask, stepped in lockstep for `iterations`: the largest |x| any agent reaches.
    fn largest_iterate(optimizer: Optimizer, step: f64, iterations: u32) -> f64 {
        let graph = Graph::build(Topology::Ring, 4, 0).unwrap();
        let (classes, features) = (3, 2);
        let model = Model::Softmax { classes };
        let variables = model.bias_indices(features);
        let basis =
            Basis::build(&BasisSpec { max_degree: 1, variables: 3, size: 3, seed: 1 }).unwrap();
        let settings = Phase2Settings { optimizer, iterations, step, decay: 0.0, batch: None };
        let mut agents: Vec<LocalOptimizer> = (0..4)
            .map(|i| {
                let x: Vec<f64> = (0..6).map(|r| ((r * 7 + i * 3) % 5) as f64 / 4.0).collect();
                let y: Vec<f64> = (0..3).map(|r| ((r + i) % classes) as f64).collect();
                let cost =
                    LocalCost::new(model, Examples::new(features, x, y).unwrap(), 1e-3).unwrap();
                let mask = [300.0, -200.0, 100.0].map(|c| c * if i % 2 == 0 { 1.0 } else { -1.0 });
                let cost = PerturbedCost {
                    cost,
                    variables: variables.clone(),
                    perturbation: basis.combine(&mask),
                };
                let row = graph.metropolis_weights(i);
                LocalOptimizer::new(settings, row, cost, derive(i as u64, "agent"))
            })
            .collect();
        let mut largest = 0.0f64;
        for _ in 0..iterations {
            let sent: Vec<Iterate> = agents.iter().map(LocalOptimizer::iterate).collect();
            for (i, agent) in agents.iter_mut().enumerate() {
                let from: Vec<(usize, &Iterate)> =
                    graph.neighbours(i).iter().map(|&j| (j, &sent[j])).collect();
                if agent.step(&from).is_err() {
                    return f64::INFINITY;
                }
            }
            for agent in &agents {
                largest = agent.x().iter().fold(largest, |m, v| m.max(v.abs()));
            }
            if !largest.is_finite() {
                return f64::INFINITY;
            }
        }
        largest
    }

    #[test]
    fn iterates_stay_finite_below_the_step_bound_and_blow_up_above_it() {
        let mixing = Graph::build(Topology::Ring, 4, 0).unwrap().mixing_spectrum();
        // W's smallest eigenvalue on C4 is −1/3: DSGD s < 2/3, tracking s < min(2, 8/3).
        let dsgd = Optimizer::Dsgd.finite_step_bound(&mixing, 1e-3);
        let tracking = Optimizer::Tracking.finite_step_bound(&mixing, 1e-3);
        assert!((dsgd - 2.0 / 3.0 / 1e-3).abs() < 1e-6, "{dsgd}");
        assert!((tracking - 2.0 / 1e-3).abs() < 1e-6, "{tracking}");
        for (optimizer, bound) in [(Optimizer::Dsgd, dsgd), (Optimizer::Tracking, tracking)] {
            let below = largest_iterate(optimizer, 0.9 * bound, 3000);
            assert!(below.is_finite() && below < 1e9, "{optimizer:?} below: {below}");
            let above = largest_iterate(optimizer, 1.1 * bound, 3000);
            // past the bound the iterates blow up: huge, infinite or NaN
            assert!(above.is_nan() || above >= 1e30, "{optimizer:?} above: {above}");
        }
        // A step at the default scale stays small.
        assert!(largest_iterate(Optimizer::Tracking, 2.0, 500) < 1e6);
    }
}
