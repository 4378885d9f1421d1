/*!
The four ways to run DP-VI on a vertically partitioned table (spec B3, B7), behind one entry point
[`run`]:

| [`Mode`] | the noisy clipped sum G̃ | noise |
|---|---|---|
| `Mpc` | [`mpc_clipped_sum`]: real additive shares over Z_{2^128}, the trusted dealer's correlated randomness, every party a round state machine, all in this process | each party's exact discrete Gaussian share N_Z(0, (2^f·C·σ)²/P), CSPRNG |
| `Fixed` | [`fixed_clipped_sum`]: the same circuit in plaintext fixed point (the paper's main mode) | the same law: the sum of P per-party discrete Gaussians |
| `Plain` | [`PlainSum`]: f64 clipped sum | one continuous N(0, (Cσ)²) (the TTP row of spec B5) |
| `NonPartitioned` | `Plain` on [`merge_parties`]'s one-party table: the non-partitioned DPVI baseline | as `Plain` |

Every mode drives the same [`crate::model::train`] loop, so with the same seed the aggregator's
batches and η are the same streams (labels of [`crate::model::train::labels`]); only G̃ differs.
The MPC seeds each step's dealer and parties from `derive(seed, "vvi/mpc/step/t")` (or the OS with
[`Seed::Os`]).

**Measured per step** ([`StepCost`]): wall time of the whole step (the parties' local work, the
noisy sum and the aggregator's update; test-NLL evaluations are not counted) and, in `Mpc`, the
rounds and the bytes each party sent.

**Privacy** ([`RunResult::privacy`]): spec B5's table from [`crate::privacy::table`] for the run
as configured: noise by the parties in `Mpc` and `Fixed`, by a TTP in `Plain` and
`NonPartitioned` (one data holder there, so the outside analyst is the only viewer). Poisson sampling is accounted exactly; fixed batches as Poisson
with q = B/N (flagged `approximate`). σ = 0 (a test-only setting) has no table.

**Measured** (release `cape`, CPS1988: 22 524 train / 5 631 test rows, P = 2, K = 20 so D = 799,
C = 1, B = 100, Adam 0.01; a shared 2-core machine at load ≈ 5):
- one `mpc` step (`cape bench vertical-vi --steps 20`, fixed batches of 100, σ = 2.042): median
  22.3 ms (min 18.5 ms), 56 rounds, 1.82 MB and 0.76 MB sent by the two parties; from the dealer
  the first party receives only its 32-byte seed and the second 0.37 MB (23 153 ring values);
  `fixed` mode 4.5 ms per step; mpc and fixed agree to 3.9·10⁻⁹ (relative) with the noise off.
  `cape vertical-vi --mode mpc --sampling fixed --steps 20 --seed 1`: 22.3 ms per whole step;
- `fixed` at σ = 1.47 (ε = 0.911 PLD / 1.000 RDP for the analyst over T = 5000, Poisson
  q = 100/22 524, δ = 1e−5): all 5000 steps (seed 1), 4.7 ms each, final test NLL 6.021;
- `plain` vs `nonpartitioned`, T = 20 000, σ = 2.6485 (ε = 0.914 PLD / 1.000 RDP): final test NLL
  5.990 / 5.932 (seed 1), 5.957 / 5.939 (seed 2), 6.003 / 5.955 (seed 3); the NLL falls from 9.20
  to 6.58–6.68 after the first epoch and 6.29–6.33 after the second, and is lowest (5.93–5.98)
  after epoch 77–88 of the 89; 0.42–0.44 ms per step.
*/

use std::time::Instant;

use capelab_core::rng::{Seed, derive};
use rand_core::Rng;
use serde::{Deserialize, Serialize};

use crate::batch::PartyLocal;
use crate::model::gradient::Sampling;
use crate::model::train::{NoisyClippedSum, PlainSum, Posterior, StepProgress, TrainConfig};
use crate::model::train::{labels, merge_parties, train};
use crate::model::{Model, Variational};
use crate::mpc::MpcError;
use crate::mpc::circuit::{GradientConfig, fixed_clipped_sum, mpc_clipped_sum};
use crate::privacy::{self, Guarantee, NoiseSource, PrivacyError};
use crate::schema::{PartyBlock, Schema};

/// How the noisy clipped sum is computed (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Mpc,
    Fixed,
    Plain,
    NonPartitioned,
}

impl Mode {
    pub const ALL: [Mode; 4] = [Mode::Mpc, Mode::Fixed, Mode::Plain, Mode::NonPartitioned];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Mpc => "mpc",
            Mode::Fixed => "fixed",
            Mode::Plain => "plain",
            Mode::NonPartitioned => "nonpartitioned",
        }
    }

    /// Who adds the noise, for the privacy table.
    pub fn noise_source(self) -> NoiseSource {
        match self {
            Mode::Mpc | Mode::Fixed => NoiseSource::Parties,
            Mode::Plain | Mode::NonPartitioned => NoiseSource::Ttp,
        }
    }
}

/// Everything a run needs besides the data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub mode: Mode,
    /// K ≥ 1.
    pub components: usize,
    /// σ ≥ 0, the noise multiplier (std C·σ). 0 switches the noise off: tests only.
    pub sigma: f64,
    /// C > 0, the joint clip bound.
    pub clip: f64,
    /// Poisson with rate q ∈ (0, 1], or fixed batches of 1 ≤ B ≤ N.
    pub sampling: Sampling,
    /// T ≥ 1.
    pub steps: usize,
    /// Adam's learning rate (> 0).
    pub learning_rate: f64,
    /// μ starts at N(0, init_scale²).
    pub init_scale: f64,
    /// log σ of q starts here.
    pub init_log_sigma: f64,
    /// Test NLL every this many steps (and at step 0 and T); 0 = once per epoch, ⌈N/B⌉ steps.
    pub eval_every: usize,
    /// δ of the privacy table.
    pub delta: f64,
    pub seed: Seed,
}

impl RunConfig {
    /// The paper's DP setting (spec B7: K = 20, C = 1, σ = 2.042, B = 100, Adam 0.01), Poisson
    /// sampling with q = 100/N for `records` training rows, in `mode`.
    pub fn paper(mode: Mode, records: usize, steps: usize, seed: Seed) -> Self {
        let t = TrainConfig::default();
        RunConfig {
            mode,
            components: t.components,
            sigma: t.noise_multiplier,
            clip: t.clip,
            sampling: Sampling::Poisson { rate: 100.0 / records.max(100) as f64 },
            steps,
            learning_rate: t.learning_rate,
            init_scale: t.init_scale,
            init_log_sigma: t.init_log_sigma,
            eval_every: 0,
            delta: 1e-5,
            seed,
        }
    }

    /// The expected batch size B (q·N for Poisson).
    pub fn expected_batch(&self, records: usize) -> f64 {
        match self.sampling {
            Sampling::Poisson { rate } => rate * records as f64,
            Sampling::Fixed { size } => size as f64,
        }
    }

    /// Steps per epoch, ⌈N/B⌉ (at least 1).
    pub fn steps_per_epoch(&self, records: usize) -> usize {
        let b = self.expected_batch(records);
        if b <= 0.0 { 1 } else { ((records as f64 / b).ceil() as usize).max(1) }
    }

    fn train_config(&self) -> TrainConfig {
        TrainConfig {
            components: self.components,
            steps: self.steps,
            sampling: self.sampling,
            clip: self.clip,
            noise_multiplier: self.sigma,
            learning_rate: self.learning_rate,
            init_scale: self.init_scale,
            init_log_sigma: self.init_log_sigma,
            seed: self.seed,
        }
    }
}

/// Why a run was refused or failed; each names the problem.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ModeError {
    #[error("components: K must be at least 1, got {0}")]
    Components(usize),
    #[error("sigma: the noise multiplier must be finite and ≥ 0, got {0}")]
    Sigma(f64),
    #[error("clip: C must be finite and > 0, got {0}")]
    Clip(f64),
    #[error("steps: T must be at least 1")]
    Steps,
    #[error("learning rate must be finite and > 0, got {0}")]
    LearningRate(f64),
    #[error("batch: B = {batch} must be between 1 and the {records} training rows")]
    Batch { batch: usize, records: usize },
    #[error("sampling rate q = {0} must be in (0, 1]")]
    Rate(f64),
    #[error("the schema has {schema} parties but {given} {which} blocks were given")]
    PartyCount { schema: usize, given: usize, which: &'static str },
    #[error(
        "{which} blocks: parties have different row counts {rows:?} (rows are aligned by position)"
    )]
    RowCounts { which: &'static str, rows: Vec<usize> },
    #[error("{which} block of party '{party}' has {got} columns, its schema {expected}")]
    Columns { which: &'static str, party: String, expected: usize, got: usize },
    #[error("{which} data has no rows")]
    NoRows { which: &'static str },
    #[error("mode mpc needs at least 2 parties to secret-share, the schema has {0}")]
    MpcParties(usize),
    #[error("δ must be in (0, 1), got {0}")]
    Delta(f64),
    #[error("step {step}: {source}")]
    Mpc { step: usize, source: MpcError },
    #[error("privacy accounting: {0}")]
    Privacy(#[from] PrivacyError),
}

/// One test-NLL evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalPoint {
    /// Steps done (0 = the initial q).
    pub step: usize,
    /// step · B / N.
    pub epoch: f64,
    /// Mean test NLL per record at the posterior median.
    pub test_nll: f64,
}

/// What one step cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepCost {
    /// Rows in this step's batch.
    pub batch: usize,
    /// Wall time of the step (local work, G̃, update).
    pub seconds: f64,
    /// Communication rounds (mpc only; 0 otherwise).
    pub rounds: u32,
    /// Bytes each party sent (mpc only; empty otherwise).
    pub bytes_sent: Vec<usize>,
    /// Ring elements the dealer sent to each party (mpc only).
    pub dealt_values: Vec<usize>,
}

/// Means over the steps of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostSummary {
    pub steps: usize,
    pub mean_batch: f64,
    pub mean_seconds: f64,
    pub max_seconds: f64,
    /// Mean over steps of the bytes party p sent (mpc).
    pub mean_bytes_sent: Vec<f64>,
    /// Rounds per step (constant for a shape; the maximum over steps).
    pub rounds: u32,
}

/// The outcome of [`run`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub mode: Mode,
    pub train_records: usize,
    pub test_records: usize,
    pub steps_per_epoch: usize,
    /// Test NLL at step 0, every `eval_every` steps (per epoch by default) and at T.
    pub evals: Vec<EvalPoint>,
    pub final_test_nll: f64,
    /// Per step, in order.
    pub costs: Vec<StepCost>,
    pub cost: CostSummary,
    /// Wall time of the training (evaluations excluded).
    pub train_seconds: f64,
    /// Spec B5's table for this run (None when σ = 0).
    pub privacy_run: Option<privacy::Run>,
    pub privacy: Option<Vec<Guarantee>>,
    pub posterior: Posterior,
}

/// What [`run`] reports to its caller while it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// 1-based, or 0 before the first step.
    pub step: usize,
    pub steps: usize,
    /// Set when this step was an evaluation point.
    pub eval: Option<EvalPoint>,
}

/// The `Mpc` engine: one full MPC per step, recording rounds and bytes.
pub struct MpcSum {
    pub sigma: f64,
    pub seed: Seed,
    /// Steps done (for the per-step seed).
    pub step: usize,
    /// Per step: (rounds, bytes each party sent, ring values dealt to each party).
    pub reports: Vec<(u32, Vec<usize>, Vec<usize>)>,
    /// The first error; later steps return zeros without computing.
    pub error: Option<(usize, MpcError)>,
}

impl MpcSum {
    pub fn new(sigma: f64, seed: Seed) -> Self {
        MpcSum { sigma, seed, step: 0, reports: Vec::new(), error: None }
    }

    /// G̃ for one batch, or the MPC's error.
    pub fn try_sum(
        &mut self,
        pi: &[f64],
        locals: &[PartyLocal],
        clip: f64,
    ) -> Result<Vec<f64>, MpcError> {
        self.step += 1;
        let seed = match self.seed {
            Seed::Os => Seed::Os,
            Seed::Fixed(s) => {
                Seed::Fixed(derive(s, &format!("vvi/mpc/step/{}", self.step)).next_u64())
            }
        };
        let cfg = GradientConfig::new(pi.to_vec(), clip, self.sigma);
        let (sum, report) = mpc_clipped_sum(locals, &cfg, seed)?;
        self.reports.push((report.rounds, report.bytes_sent, report.dealt_values));
        Ok(sum)
    }
}

impl NoisyClippedSum for MpcSum {
    fn noisy_sum(&mut self, pi: &[f64], locals: &[PartyLocal], clip: f64) -> Vec<f64> {
        let dim = dim_of(pi, locals);
        if self.error.is_some() {
            return vec![0.0; dim];
        }
        match self.try_sum(pi, locals, clip) {
            Ok(s) => s,
            Err(e) => {
                self.error = Some((self.step, e));
                vec![0.0; dim]
            }
        }
    }
}

/// The `Fixed` engine: the circuit in plaintext fixed point, noise the sum of P discrete Gaussians.
pub struct FixedSum<R: Rng> {
    pub sigma: f64,
    pub rng: R,
    pub step: usize,
    pub error: Option<(usize, MpcError)>,
}

impl<R: Rng> FixedSum<R> {
    pub fn new(sigma: f64, rng: R) -> Self {
        FixedSum { sigma, rng, step: 0, error: None }
    }

    pub fn try_sum(
        &mut self,
        pi: &[f64],
        locals: &[PartyLocal],
        clip: f64,
    ) -> Result<Vec<f64>, MpcError> {
        self.step += 1;
        let cfg = GradientConfig::new(pi.to_vec(), clip, self.sigma);
        fixed_clipped_sum(locals, &cfg, &mut self.rng)
    }
}

impl<R: Rng> NoisyClippedSum for FixedSum<R> {
    fn noisy_sum(&mut self, pi: &[f64], locals: &[PartyLocal], clip: f64) -> Vec<f64> {
        let dim = dim_of(pi, locals);
        if self.error.is_some() {
            return vec![0.0; dim];
        }
        match self.try_sum(pi, locals, clip) {
            Ok(s) => s,
            Err(e) => {
                self.error = Some((self.step, e));
                vec![0.0; dim]
            }
        }
    }
}

fn dim_of(pi: &[f64], locals: &[PartyLocal]) -> usize {
    pi.len() * (1 + locals.iter().map(|p| p.width).sum::<usize>())
}

fn check_blocks(
    schema: &Schema,
    blocks: &[PartyBlock],
    which: &'static str,
) -> Result<usize, ModeError> {
    if blocks.len() != schema.parties.len() {
        return Err(ModeError::PartyCount {
            schema: schema.parties.len(),
            given: blocks.len(),
            which,
        });
    }
    for (p, b) in schema.parties.iter().zip(blocks) {
        if b.features != p.features.len() || b.cells.len() != b.rows * b.features {
            return Err(ModeError::Columns {
                which,
                party: p.name.clone(),
                expected: p.features.len(),
                got: b.features,
            });
        }
    }
    let rows: Vec<usize> = blocks.iter().map(|b| b.rows).collect();
    if rows.iter().any(|&r| r != rows[0]) {
        return Err(ModeError::RowCounts { which, rows });
    }
    if rows[0] == 0 {
        return Err(ModeError::NoRows { which });
    }
    Ok(rows[0])
}

/// Checks `config` against the data: K ≥ 1, σ ≥ 0, C > 0, T ≥ 1, 1 ≤ B ≤ N (or 0 < q ≤ 1),
/// lr > 0, δ ∈ (0, 1), one block per party with equal rows (train and test), P ≥ 2 for `Mpc`.
/// Returns the training rows N.
pub fn check(
    schema: &Schema,
    blocks: &[PartyBlock],
    test_blocks: &[PartyBlock],
    config: &RunConfig,
) -> Result<usize, ModeError> {
    if config.components == 0 {
        return Err(ModeError::Components(0));
    }
    if !(config.sigma.is_finite() && config.sigma >= 0.0) {
        return Err(ModeError::Sigma(config.sigma));
    }
    if !(config.clip.is_finite() && config.clip > 0.0) {
        return Err(ModeError::Clip(config.clip));
    }
    if config.steps == 0 {
        return Err(ModeError::Steps);
    }
    if !(config.learning_rate.is_finite() && config.learning_rate > 0.0) {
        return Err(ModeError::LearningRate(config.learning_rate));
    }
    if !(config.delta > 0.0 && config.delta < 1.0) {
        return Err(ModeError::Delta(config.delta));
    }
    let records = check_blocks(schema, blocks, "training")?;
    check_blocks(schema, test_blocks, "test")?;
    match config.sampling {
        Sampling::Fixed { size } if size == 0 || size > records => {
            return Err(ModeError::Batch { batch: size, records });
        }
        Sampling::Poisson { rate } if !(rate > 0.0 && rate <= 1.0) => {
            return Err(ModeError::Rate(rate));
        }
        _ => {}
    }
    if config.mode == Mode::Mpc && schema.parties.len() < 2 {
        return Err(ModeError::MpcParties(schema.parties.len()));
    }
    Ok(records)
}

/// The privacy run of `config` on N = `records` rows (None when σ = 0).
pub fn privacy_run(schema: &Schema, records: usize, config: &RunConfig) -> Option<privacy::Run> {
    if config.sigma <= 0.0 {
        return None;
    }
    let (batch, sampling) = match config.sampling {
        Sampling::Poisson { rate } => (
            ((rate * records as f64).round() as usize).clamp(1, records),
            privacy::Sampling::Poisson,
        ),
        Sampling::Fixed { size } => (size, privacy::Sampling::FixedBatch),
    };
    let parties = if config.mode == Mode::NonPartitioned { 1 } else { schema.parties.len() };
    Some(privacy::Run {
        noise_multiplier: config.sigma,
        batch,
        records,
        steps: config.steps as u64,
        parties,
        noise: config.mode.noise_source(),
        sampling,
    })
}

/// Trains in `config.mode` on the parties' aligned `blocks`, evaluating the test NLL on
/// `test_blocks` (same schema) at step 0, every `eval_every` steps and at T.
pub fn run(
    schema: &Schema,
    blocks: &[PartyBlock],
    test_blocks: &[PartyBlock],
    config: &RunConfig,
    progress: &mut dyn FnMut(&Progress),
) -> Result<RunResult, ModeError> {
    let records = check(schema, blocks, test_blocks, config)?;
    let test_records = test_blocks[0].rows;
    let privacy_run = privacy_run(schema, records, config);
    let privacy = match &privacy_run {
        Some(r) => Some(privacy::table(r, config.delta)?),
        None => None,
    };
    let merged;
    let (schema, blocks, test_blocks) = if config.mode == Mode::NonPartitioned {
        let (s, b) = merge_parties(schema, blocks);
        let (_, t) = merge_parties(schema, test_blocks);
        merged = (s, b, t);
        (&merged.0, &merged.1[..], &merged.2[..])
    } else {
        (schema, blocks, test_blocks)
    };
    let train_config = config.train_config();
    let model = Model::new(schema.clone(), config.components);
    let per_epoch = config.steps_per_epoch(records);
    let every = if config.eval_every == 0 { per_epoch } else { config.eval_every };
    let b = config.expected_batch(records);
    let evaluate = |step: usize, q: &Variational| EvalPoint {
        step,
        epoch: step as f64 * b / records as f64,
        test_nll: crate::model::nll::mean_nll(&model, &model.transform(&q.mu), test_blocks),
    };
    let q0 = crate::model::train::initial_q(&model, &train_config);
    let first = evaluate(0, &q0);
    progress(&Progress { step: 0, steps: config.steps, eval: Some(first) });
    let mut evals = vec![first];
    let mut costs = Vec::with_capacity(config.steps);
    let mut eval_seconds = 0.0;
    let start = Instant::now();
    let mut last = Instant::now();

    let mut mpc_engine: Option<MpcSum> = None;
    let mut fixed_engine = None;
    let mut plain_engine = None;
    let engine: &mut dyn NoisyClippedSum = match config.mode {
        Mode::Mpc => mpc_engine.insert(MpcSum::new(config.sigma, config.seed)),
        Mode::Fixed => {
            fixed_engine.insert(FixedSum::new(config.sigma, config.seed.rng(labels::NOISE)))
        }
        Mode::Plain | Mode::NonPartitioned => plain_engine.insert(PlainSum {
            noise_multiplier: config.sigma,
            rng: config.seed.rng(labels::NOISE),
        }),
    };
    let mut on_step = |s: &StepProgress| {
        let now = Instant::now();
        costs.push(StepCost {
            batch: s.batch_size,
            seconds: now.duration_since(last).as_secs_f64(),
            rounds: 0,
            bytes_sent: Vec::new(),
            dealt_values: Vec::new(),
        });
        let eval = (s.step.is_multiple_of(every) || s.step == s.steps).then(|| {
            let t = Instant::now();
            let e = evaluate(s.step, s.q);
            eval_seconds += t.elapsed().as_secs_f64();
            e
        });
        if let Some(e) = eval {
            evals.push(e);
        }
        progress(&Progress { step: s.step, steps: s.steps, eval });
        last = Instant::now();
    };
    let posterior = train(schema, blocks, &train_config, engine, &mut on_step);
    let train_seconds = start.elapsed().as_secs_f64() - eval_seconds;
    if let Some(e) = &mpc_engine {
        if let Some((step, source)) = &e.error {
            return Err(ModeError::Mpc { step: *step, source: source.clone() });
        }
        for (c, (rounds, bytes, dealt)) in costs.iter_mut().zip(&e.reports) {
            c.rounds = *rounds;
            c.bytes_sent = bytes.clone();
            c.dealt_values = dealt.clone();
        }
    }
    if let Some(e) = &fixed_engine
        && let Some((step, source)) = &e.error
    {
        return Err(ModeError::Mpc { step: *step, source: source.clone() });
    }
    let cost = summarise(&costs);
    let final_test_nll = evals.last().map_or(f64::NAN, |e| e.test_nll);
    Ok(RunResult {
        mode: config.mode,
        train_records: records,
        test_records,
        steps_per_epoch: per_epoch,
        evals,
        final_test_nll,
        costs,
        cost,
        train_seconds,
        privacy_run,
        privacy,
        posterior,
    })
}

/// Means over the steps.
pub fn summarise(costs: &[StepCost]) -> CostSummary {
    let n = costs.len().max(1) as f64;
    let parties = costs.iter().map(|c| c.bytes_sent.len()).max().unwrap_or(0);
    CostSummary {
        steps: costs.len(),
        mean_batch: costs.iter().map(|c| c.batch as f64).sum::<f64>() / n,
        mean_seconds: costs.iter().map(|c| c.seconds).sum::<f64>() / n,
        max_seconds: costs.iter().map(|c| c.seconds).fold(0.0, f64::max),
        mean_bytes_sent: (0..parties)
            .map(|p| {
                costs.iter().map(|c| c.bytes_sent.get(p).copied().unwrap_or(0) as f64).sum::<f64>()
                    / n
            })
            .collect(),
        rounds: costs.iter().map(|c| c.rounds).max().unwrap_or(0),
    }
}
