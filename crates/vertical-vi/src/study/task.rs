//! The public task the dashboard (aggregator) announces in `vvi/start`, checked identically on
//! every tab before anything else is sent; every refusal names the problem.

use capelab_core::rng::Seed;
use capelab_core::wire::ParticipantId;
use serde::{Deserialize, Serialize};

use super::StudyError;
use crate::model::{Sampling, TrainConfig};
use crate::mpc::GradientConfig;
use crate::mpc::noise::{check_party_noise, max_noise_std};
use crate::privacy::{self, Adjacency, NoiseSource, Run, Viewer};
use crate::schema::{Cell, FeatureKind, PartyBlock, Schema, UNIT_CLAMP};
use crate::table::{Split, train_test_split};

/// How the aggregator draws each step's batch out of the N_train training rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchSampling {
    /// Each training row independently with rate q = B/N_train (what the accountant matches).
    Poisson,
    /// Exactly B distinct rows (the paper's runs; accounted as Poisson with q = B/N_train, spec D5).
    Fixed,
}

/// The whole run as the dashboard announces it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VviTask {
    /// Party p holds the columns `schema.parties[p]`.
    pub schema: Schema,
    /// The parties' participant ids, in schema order.
    pub parties: Vec<ParticipantId>,
    /// The dealer (the TTP of spec B1 for Beaver triples and truncation pairs): a separate tab.
    pub dealer: ParticipantId,
    /// K, the mixture components.
    pub components: usize,
    /// σ: the noise std on the opened sum is C·σ (each party adds its share, spec B3 "Noise").
    pub noise_multiplier: f64,
    /// C, the joint clip bound (spec D11).
    pub clip: f64,
    pub sampling: BatchSampling,
    /// B: the fixed batch size, or the expected one under Poisson sampling (q = B/N_train).
    pub batch: usize,
    /// T.
    pub steps: u32,
    /// Adam's learning rate.
    pub learning_rate: f64,
    /// μ starts at N(0, init_scale²), log σ at `init_log_sigma` (the aggregator's choice, public).
    pub init_scale: f64,
    pub init_log_sigma: f64,
    /// The public seed of the train/test split ([`train_test_split`]).
    pub split_seed: u64,
    /// The share of the N rows held out as test rows.
    pub test_fraction: f64,
    /// N: the rows every party must hold, aligned (record linkage is out of scope, spec B1).
    pub rows: usize,
    /// δ of the guarantee the parties record.
    pub delta: f64,
}

fn bad(what: impl Into<String>) -> StudyError {
    StudyError::Task(what.into())
}

impl VviTask {
    /// The most rows N a tab takes: every party holds N rows of its columns and draws an N-row
    /// twin, the dashboard a whole table of N rows (a browser tab's memory, not the protocol's).
    pub const MAX_ROWS: usize = 100_000;
    /// The fewest mixture components K: the gradient circuit's π block has K − 1 values, and
    /// its sums over that block need one.
    pub const MIN_COMPONENTS: usize = 2;
    /// The most mixture components K.
    pub const MAX_COMPONENTS: usize = 64;
    /// The most steps T.
    pub const MAX_STEPS: u32 = 20_000;
    /// The largest expected batch B.
    pub const MAX_BATCH: usize = 2_000;
    /// The most secret-shared gradient values one step computes, B·D: the dealer's material and
    /// the parties' round messages grow with it (B·D = 80 000, K = 20 on CPS1988, sends 1.8 MB
    /// per party per step).
    pub const MAX_STEP_VALUES: usize = 250_000;

    /// D, the gradient values per record ([`Schema::zeta_gradient_len`]).
    pub fn gradient_len(&self) -> usize {
        self.schema.zeta_gradient_len(self.components)
    }

    /// Everything a tab checks before it takes part (`aggregator`: who announced the task).
    pub fn check(&self, aggregator: ParticipantId) -> Result<(), StudyError> {
        let p = self.schema.parties.len();
        if p < 2 {
            return Err(bad(format!("{p} parties: vertical partitioning needs at least 2")));
        }
        if self.parties.len() != p {
            return Err(bad(format!(
                "{} party ids for a schema of {p} parties",
                self.parties.len()
            )));
        }
        for (i, id) in self.parties.iter().enumerate() {
            if self.parties[..i].contains(id) {
                return Err(bad(format!("participant {id} is named as two parties")));
            }
        }
        if self.parties.contains(&self.dealer) {
            return Err(bad(format!(
                "the dealer (participant {}) is also a party: it must be a separate tab",
                self.dealer
            )));
        }
        if self.parties.contains(&aggregator) || aggregator == self.dealer {
            return Err(bad(format!(
                "the aggregator (participant {aggregator}) is also a party or the dealer"
            )));
        }
        for (pi, party) in self.schema.parties.iter().enumerate() {
            if party.features.is_empty() {
                return Err(bad(format!("party {pi} ({}) has no columns", party.name)));
            }
            for (j, f) in party.features.iter().enumerate() {
                if party.features[..j].iter().any(|g| g.name == f.name) {
                    return Err(bad(format!("party {pi} has two columns named '{}'", f.name)));
                }
                match &f.kind {
                    FeatureKind::Beta { lo, hi, log } => {
                        if !(lo.is_finite() && hi.is_finite() && lo < hi) || (*log && *lo <= 0.0) {
                            return Err(bad(format!(
                                "column '{}' of party {pi}: bounds [{lo}, {hi}] (log: {log}) are \
                                 not a valid public range",
                                f.name
                            )));
                        }
                    }
                    FeatureKind::Categorical { labels } => {
                        if labels.is_empty() {
                            return Err(bad(format!(
                                "column '{}' of party {pi} has no labels",
                                f.name
                            )));
                        }
                        for (l, label) in labels.iter().enumerate() {
                            if labels[..l].contains(label) {
                                return Err(bad(format!(
                                    "column '{}' of party {pi} lists label '{label}' twice",
                                    f.name
                                )));
                            }
                        }
                    }
                }
            }
        }
        if !(Self::MIN_COMPONENTS..=Self::MAX_COMPONENTS).contains(&self.components) {
            return Err(bad(format!(
                "K = {}: must be from {} to {}",
                self.components,
                Self::MIN_COMPONENTS,
                Self::MAX_COMPONENTS
            )));
        }
        if !(self.noise_multiplier.is_finite() && self.noise_multiplier > 0.0) {
            return Err(bad(format!(
                "noise multiplier σ = {}: a study must add noise (σ > 0)",
                self.noise_multiplier
            )));
        }
        if !(self.clip.is_finite() && self.clip > 0.0) {
            return Err(bad(format!("clip bound C = {}: must be positive", self.clip)));
        }
        // The sampler's own limit, checked before anything is charged, not at step 1.
        check_party_noise(self.clip, self.noise_multiplier, p).map_err(|_| {
            bad(format!(
                "the noise std C·σ = {} is more than the MPC's exact noise can carry (it must \
                 stay below {} with {p} parties)",
                self.clip * self.noise_multiplier,
                max_noise_std(p)
            ))
        })?;
        if self.steps == 0 || self.steps > Self::MAX_STEPS {
            return Err(bad(format!("T = {}: must be from 1 to {}", self.steps, Self::MAX_STEPS)));
        }
        if self.rows > Self::MAX_ROWS {
            return Err(bad(format!("N = {}: at most {} rows", self.rows, Self::MAX_ROWS)));
        }
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0) {
            return Err(bad(format!("learning rate {}: must be positive", self.learning_rate)));
        }
        if !(self.init_scale.is_finite()
            && self.init_scale >= 0.0
            && self.init_log_sigma.is_finite())
        {
            return Err(bad("the initial μ scale and log σ must be finite (scale ≥ 0)"));
        }
        if !(0.0..1.0).contains(&self.test_fraction) {
            return Err(bad(format!("test fraction {}: must be in [0, 1)", self.test_fraction)));
        }
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(bad(format!("δ = {}: must be in (0, 1)", self.delta)));
        }
        let n = self.train_rows();
        if self.rows < 2 || n == 0 {
            return Err(bad(format!("N = {} rows leave no training rows", self.rows)));
        }
        if self.batch == 0 || self.batch > n.min(Self::MAX_BATCH) {
            return Err(bad(format!(
                "batch B = {}: must be from 1 to {} (the {n} training rows, at most {})",
                self.batch,
                n.min(Self::MAX_BATCH),
                Self::MAX_BATCH
            )));
        }
        let values = self.batch.saturating_mul(self.gradient_len());
        if values > Self::MAX_STEP_VALUES {
            return Err(bad(format!(
                "B·D = {} · {} = {values} secret-shared values a step, at most {}",
                self.batch,
                self.gradient_len(),
                Self::MAX_STEP_VALUES
            )));
        }
        privacy::ledger_events(&self.privacy_run()).map_err(|e| bad(format!("privacy: {e}")))?;
        Ok(())
    }

    /// Checks party `p`'s table against the task: N rows, its columns, every cell of the right
    /// kind and a known category.
    pub fn check_block(&self, p: usize, block: &PartyBlock) -> Result<(), StudyError> {
        let schema = &self.schema.parties[p];
        if block.rows != self.rows {
            return Err(bad(format!(
                "party {p} ({}) holds {} rows, the task needs N = {} (the parties' rows must be \
                 aligned)",
                schema.name, block.rows, self.rows
            )));
        }
        if block.features != schema.features.len()
            || block.cells.len() != block.rows * block.features
        {
            return Err(bad(format!(
                "party {p} ({}) holds {} columns, its schema has {}",
                schema.name,
                block.features,
                schema.features.len()
            )));
        }
        for n in 0..block.rows {
            for (j, (cell, f)) in block.row(n).iter().zip(&schema.features).enumerate() {
                let ok = match (&f.kind, *cell) {
                    (FeatureKind::Beta { .. }, Cell::Unit(x)) => {
                        (UNIT_CLAMP..=1.0 - UNIT_CLAMP).contains(&x)
                    }
                    (FeatureKind::Categorical { labels }, Cell::Category(c)) => {
                        if (c as usize) >= labels.len() {
                            return Err(bad(format!(
                                "party {p}, column '{}' (#{j}), row {}: unknown category {c} \
                                 (the column has {} labels)",
                                f.name,
                                n + 1,
                                labels.len()
                            )));
                        }
                        true
                    }
                    _ => false,
                };
                if !ok {
                    return Err(bad(format!(
                        "party {p}, column '{}' (#{j}), row {}: {cell:?} does not fit {:?}",
                        f.name,
                        n + 1,
                        f.kind
                    )));
                }
            }
        }
        Ok(())
    }

    /// The public train/test split of the N rows.
    pub fn split(&self) -> Split {
        train_test_split(self.split_seed, self.rows, self.test_fraction)
    }

    /// N_train.
    pub fn train_rows(&self) -> usize {
        self.rows - ((self.rows as f64) * self.test_fraction.clamp(0.0, 1.0)).round() as usize
    }

    /// The aggregator's batch sampler over the training rows.
    pub fn model_sampling(&self) -> Sampling {
        match self.sampling {
            BatchSampling::Poisson => {
                Sampling::Poisson { rate: self.batch as f64 / self.train_rows() as f64 }
            }
            BatchSampling::Fixed => Sampling::Fixed { size: self.batch },
        }
    }

    /// The same run as `model::train` sees it (the aggregator's `seed` for init, batches and η).
    pub fn train_config(&self, seed: Seed) -> TrainConfig {
        TrainConfig {
            components: self.components,
            steps: self.steps as usize,
            sampling: self.model_sampling(),
            clip: self.clip,
            noise_multiplier: self.noise_multiplier,
            learning_rate: self.learning_rate,
            init_scale: self.init_scale,
            init_log_sigma: self.init_log_sigma,
            seed,
        }
    }

    /// The circuit's public parameters for a step with mixture weights π.
    pub fn gradient_config(&self, pi: Vec<f64>) -> GradientConfig {
        GradientConfig::new(pi, self.clip, self.noise_multiplier)
    }

    /// The run as the accountant sees it: the parties add the noise.
    pub fn privacy_run(&self) -> Run {
        Run {
            noise_multiplier: self.noise_multiplier,
            batch: self.batch,
            records: self.train_rows(),
            steps: u64::from(self.steps),
            parties: self.schema.parties.len(),
            noise: NoiseSource::Parties,
            sampling: match self.sampling {
                BatchSampling::Poisson => privacy::Sampling::Poisson,
                BatchSampling::Fixed => privacy::Sampling::FixedBatch,
            },
        }
    }

    /// The released posterior's ε at δ for the outside analyst (add/remove), what every party
    /// records.
    pub fn epsilon(&self) -> Result<f64, StudyError> {
        privacy::guarantee(&self.privacy_run(), Viewer::Analyst, Adjacency::AddRemove, self.delta)
            .map(|g| g.epsilon.best())
            .map_err(|e| bad(format!("privacy: {e}")))
    }

    /// How a participant of this run is named in errors and stop reasons.
    pub fn who(&self, id: ParticipantId, aggregator: ParticipantId) -> String {
        if let Some(p) = self.parties.iter().position(|&q| q == id) {
            format!("party {p} (participant {id})")
        } else if id == self.dealer {
            format!("the dealer (participant {id})")
        } else if id == aggregator {
            format!("the aggregator (participant {id})")
        } else {
            format!("participant {id}, who is not in this run,")
        }
    }
}
