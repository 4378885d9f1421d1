//! DP-VI training (spec B3, B4): per step the aggregator draws a batch and θ, every party runs its
//! local step, a [`NoisyClippedSum`] produces G̃ = Σ_n clip_C(g_n) + N(0, (Cσ)² I), and the
//! aggregator updates q.
//!
//! The sum is pluggable: [`PlainSum`] is the `plain` mode ([`clipped_sum_plain`] plus Gaussian
//! noise from the CSPRNG); the MPC engine plugs in through the same trait (or any closure
//! `FnMut(&[f64], &[PartyLocal], f64) -> Vec<f64>`).
//!
//! The non-partitioned DPVI baseline is the same code on [`merge_parties`]'s one-party table.

use super::gradient::{Aggregator, Sampling, Variational};
use super::local::all_parties_local;
use super::params::Model;
use crate::batch::{PartyLocal, clipped_sum_plain};
use crate::schema::{PartyBlock, PartySchema, Schema};
use capelab_core::rng::{CapeRng, Seed};
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

/// Everything a DP-VI run needs besides the data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    /// K.
    pub components: usize,
    /// T, the number of steps.
    pub steps: usize,
    pub sampling: Sampling,
    /// C, the joint clip bound on each example's whole gradient (spec D11).
    pub clip: f64,
    /// σ, the noise multiplier: the noise std is C·σ. 0 gives a non-private run.
    pub noise_multiplier: f64,
    /// Adam's learning rate.
    pub learning_rate: f64,
    /// μ starts at N(0, init_scale²) per coordinate (breaks the components' symmetry).
    pub init_scale: f64,
    /// log σ starts here.
    pub init_log_sigma: f64,
    pub seed: Seed,
}

impl Default for TrainConfig {
    /// The paper's DP setting (spec B7) with K = 20 and Poisson q = 100/30162.
    fn default() -> Self {
        TrainConfig {
            components: 20,
            steps: 20_000,
            sampling: Sampling::Poisson { rate: 100.0 / 30_162.0 },
            clip: 1.0,
            noise_multiplier: 2.042,
            learning_rate: 0.01,
            init_scale: 0.5,
            init_log_sigma: -3.0,
            seed: Seed::Os,
        }
    }
}

/// The released posterior q and the model it is over.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Posterior {
    pub model: Model,
    pub q: Variational,
}

impl Posterior {
    /// The posterior median θ = T(μ) (T is monotone per coordinate on positives, and maps the
    /// Gaussian's centre to the simplex point whose log-ratios are μ).
    pub fn median_theta(&self) -> Vec<f64> {
        self.model.transform(&self.q.mu)
    }
}

/// The per-step progress report.
#[derive(Clone, Debug, PartialEq)]
pub struct StepProgress<'a> {
    /// 1-based.
    pub step: usize,
    pub steps: usize,
    pub batch_size: usize,
    pub q: &'a Variational,
}

/// "Compute the noisy clipped sum" G̃ from the public π, the parties' local outputs and C.
pub trait NoisyClippedSum {
    fn noisy_sum(&mut self, pi: &[f64], locals: &[PartyLocal], clip: f64) -> Vec<f64>;
}

impl<F: FnMut(&[f64], &[PartyLocal], f64) -> Vec<f64>> NoisyClippedSum for F {
    fn noisy_sum(&mut self, pi: &[f64], locals: &[PartyLocal], clip: f64) -> Vec<f64> {
        self(pi, locals, clip)
    }
}

/// The `plain` mode: f64 clipped sum plus N(0, (Cσ)² I) from the CSPRNG (one trusted noise source,
/// the TTP row of spec B5).
pub struct PlainSum {
    pub noise_multiplier: f64,
    pub rng: CapeRng,
}

impl NoisyClippedSum for PlainSum {
    fn noisy_sum(&mut self, pi: &[f64], locals: &[PartyLocal], clip: f64) -> Vec<f64> {
        let mut sum = clipped_sum_plain(pi, locals, clip);
        if self.noise_multiplier > 0.0 {
            let std = clip * self.noise_multiplier;
            for v in &mut sum {
                let z: f64 = StandardNormal.sample(&mut self.rng);
                *v += std * z;
            }
        }
        sum
    }
}

/// The CSPRNG stream labels of a run (documented so other modes reuse them).
pub mod labels {
    pub const INIT: &str = "vvi/aggregator/init";
    pub const BATCH: &str = "vvi/aggregator/batch";
    pub const ETA: &str = "vvi/aggregator/eta";
    pub const NOISE: &str = "vvi/noise";
}

/// The starting q: μ ~ N(0, init_scale²) drawn in canonical order, log σ = init_log_sigma.
pub fn initial_q(model: &Model, config: &TrainConfig) -> Variational {
    let mut rng = config.seed.rng(labels::INIT);
    let mut mu = vec![0.0; model.zeta_len()];
    for &i in model.canonical_order() {
        let z: f64 = StandardNormal.sample(&mut rng);
        mu[i] = config.init_scale * z;
    }
    Variational { mu, log_sigma: vec![config.init_log_sigma; model.zeta_len()] }
}

/// Run DP-VI on the parties' `blocks` (rows aligned) with any noisy-sum engine.
pub fn train(
    schema: &Schema,
    blocks: &[PartyBlock],
    config: &TrainConfig,
    engine: &mut dyn NoisyClippedSum,
    progress: &mut dyn FnMut(&StepProgress),
) -> Posterior {
    assert_eq!(schema.parties.len(), blocks.len(), "one block per party");
    let records = blocks.first().map_or(0, |b| b.rows);
    assert!(blocks.iter().all(|b| b.rows == records), "the parties' rows must be aligned");
    let model = Model::new(schema.clone(), config.components);
    let q = initial_q(&model, config);
    let mut agg = Aggregator::new(
        model,
        q,
        records,
        config.sampling,
        config.learning_rate,
        config.seed.rng(labels::BATCH),
        config.seed.rng(labels::ETA),
    );
    let k = config.components;
    for step in 1..=config.steps {
        let draw = agg.draw();
        let locals = all_parties_local(&agg.model, &draw.theta, blocks, &draw.batch);
        let sum = engine.noisy_sum(&draw.theta[..k], &locals, config.clip);
        agg.update(&draw, &sum);
        progress(&StepProgress {
            step,
            steps: config.steps,
            batch_size: draw.batch.len(),
            q: &agg.q,
        });
    }
    Posterior { model: agg.model, q: agg.q }
}

/// [`train`] in `plain` mode.
pub fn train_plain(
    schema: &Schema,
    blocks: &[PartyBlock],
    config: &TrainConfig,
    progress: &mut dyn FnMut(&StepProgress),
) -> Posterior {
    let mut engine =
        PlainSum { noise_multiplier: config.noise_multiplier, rng: config.seed.rng(labels::NOISE) };
    train(schema, blocks, config, &mut engine, progress)
}

/// The non-partitioned table: one party ("all") holding every column, in party order.
pub fn merge_parties(schema: &Schema, blocks: &[PartyBlock]) -> (Schema, Vec<PartyBlock>) {
    let features: Vec<_> = schema.parties.iter().flat_map(|p| p.features.clone()).collect();
    let rows = blocks.first().map_or(0, |b| b.rows);
    let width = features.len();
    let mut cells = Vec::with_capacity(rows * width);
    for n in 0..rows {
        for b in blocks {
            cells.extend_from_slice(b.row(n));
        }
    }
    (
        Schema { parties: vec![PartySchema { name: "all".into(), features }] },
        vec![PartyBlock { rows, features: width, cells }],
    )
}

/// The inverse of [`merge_parties`]: the joined table's columns handed back to `schema`'s
/// parties (e.g. a twin sampled from the non-partitioned baseline, compared per party).
pub fn split_parties(schema: &Schema, merged: &PartyBlock) -> Vec<PartyBlock> {
    let mut offset = 0;
    schema
        .parties
        .iter()
        .map(|p| {
            let width = p.features.len();
            let cells = (0..merged.rows)
                .flat_map(|n| merged.row(n)[offset..offset + width].iter().cloned())
                .collect();
            offset += width;
            PartyBlock { rows: merged.rows, features: width, cells }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::generate::adult_like;

    #[test]
    fn splitting_a_merged_table_gives_back_every_party_block() {
        let g = adult_like(50, 7);
        let (merged_schema, merged) = merge_parties(&g.schema, &g.blocks);
        assert_eq!(merged_schema.parties.len(), 1);
        assert_eq!(merged[0].features, g.blocks.iter().map(|b| b.features).sum::<usize>());
        assert_eq!(split_parties(&g.schema, &merged[0]), g.blocks);
    }
}
