/*!
The first instance of an iterative study: CAPE gradient descent for the two-layer network of
[`crate::nn`] (seed 002 §5.1, spec cape-fm §5), over the sites' private records.

Each iteration a site releases (1/N_s)Σ_n clip_C(∇ℓ(θ; x_n, y_n)), the mean of its per-example
gradients clipped to norm C ([`Network::mean_gradient`]), whose L2 sensitivity under replace-one
neighbours is Δ = 2C/N_s; the aggregator takes one Adam step along the average of the releases
([`Adam`], post-processing). A non-private run sends the unclipped mean gradient, exactly as
[`crate::nn::train()`]'s non-private mechanism does, so the two give the same weights.
*/

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use crate::data::Dataset;
use crate::nn::Network;
use crate::nn::adam::Adam;
use crate::rng::CapeRng;

use super::step::{AggregatorStep, SiteStep, StepShape, Update};

/// The network's public description: the sites need it to compute gradients.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NnTask {
    /// D, the number of features per record.
    pub features: usize,
    /// H, the hidden units.
    pub hidden: usize,
    /// C, the per-example clipping norm.
    pub clip: f64,
}

impl NnTask {
    /// H·D + 2H + 1: the length of the state and of every gradient.
    pub fn num_params(&self) -> usize {
        self.hidden * self.features + 2 * self.hidden + 1
    }

    /// Δ = 2C/N_s for a site of `records` records.
    pub fn sensitivity(&self, records: usize) -> f64 {
        2.0 * self.clip / records as f64
    }

    fn network(&self) -> Network {
        let (h, d) = (self.hidden, self.features);
        Network { w1: DMatrix::zeros(h, d), b1: DVector::zeros(h), w2: DVector::zeros(h), b2: 0.0 }
    }
}

/// A site's side: its records (features and 0/1 labels), never sent.
pub struct NnSite {
    data: Dataset,
    net: Option<Network>,
    clip: Option<f64>,
}

impl NnSite {
    pub fn new(data: Dataset) -> Self {
        Self { data, net: None, clip: None }
    }

    pub fn records(&self) -> usize {
        self.data.len()
    }

    /// The site's records, for its own tab (never sent).
    pub fn data(&self) -> &Dataset {
        &self.data
    }
}

impl SiteStep for NnSite {
    const NAME: &'static str = "nn";
    type Task = NnTask;
    /// θ: the network's flat parameters ([`Network::params`]).
    type State = Vec<f64>;

    fn prepare(&mut self, task: &NnTask, private: bool) -> Result<StepShape, String> {
        if self.data.is_empty() {
            return Err("the site holds no records".into());
        }
        if self.data.features() != task.features {
            return Err(format!(
                "records have {} features, the network takes D = {}",
                self.data.features(),
                task.features
            ));
        }
        if task.hidden == 0 {
            return Err("the network has no hidden units (H = 0)".into());
        }
        if !(task.clip.is_finite() && task.clip > 0.0) {
            return Err(format!("clipping norm C = {} must be positive and finite", task.clip));
        }
        if let Some(row) =
            (0..self.data.len()).find(|&i| self.data.y[i] != 0.0 && self.data.y[i] != 1.0)
        {
            return Err(format!("labels must be 0 or 1: record {row} has {}", self.data.y[row]));
        }
        if let Some((index, _)) = self.data.x.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(format!("feature value {index} (column-major) is not finite"));
        }
        self.net = Some(task.network());
        self.clip = private.then_some(task.clip);
        Ok(StepShape { len: task.num_params(), sensitivity: task.sensitivity(self.data.len()) })
    }

    fn statistic(&mut self, state: &Vec<f64>, _iteration: u32) -> Result<Vec<f64>, String> {
        let net = self.net.as_mut().ok_or("the site was not prepared")?;
        if state.len() != net.num_params() {
            return Err(format!(
                "the state has {} parameters, the network {}",
                state.len(),
                net.num_params()
            ));
        }
        if state.iter().any(|v| !v.is_finite()) {
            return Err("the state has a non-finite parameter".into());
        }
        net.set_params(state);
        Ok(net.mean_gradient(&self.data, self.clip).0)
    }
}

/// What the dashboard shows after each iteration: the network on the aggregator's own held-out
/// data, if it has any.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NnIterationReport {
    pub loss: Option<f64>,
    pub accuracy: Option<f64>,
}

/// The aggregator's side: the initial network, Adam, and optional held-out data.
pub struct NnAggregator {
    task: NnTask,
    init: Vec<f64>,
    adam: Adam,
    eval: Option<Dataset>,
    net: Network,
}

impl NnAggregator {
    /// He initialisation from `init_rng` (use `rng::derive(seed, "nn/init")` to start where
    /// [`crate::nn::train()`] starts), Adam with `learning_rate`.
    pub fn new(
        task: NnTask,
        learning_rate: f64,
        init_rng: &mut CapeRng,
        eval: Option<Dataset>,
    ) -> Self {
        let net = Network::init(task.features, task.hidden, init_rng);
        let init = net.params();
        let adam = Adam::new(init.len(), learning_rate);
        Self { task, init, adam, eval, net }
    }

    /// The network with parameters θ.
    pub fn network(&self, state: &[f64]) -> Network {
        let mut net = self.net.clone();
        net.set_params(state);
        net
    }
}

impl AggregatorStep for NnAggregator {
    const NAME: &'static str = "nn";
    type Task = NnTask;
    type State = Vec<f64>;
    type Report = NnIterationReport;

    fn task(&self) -> NnTask {
        self.task.clone()
    }

    fn initial_state(&mut self) -> Vec<f64> {
        self.init.clone()
    }

    fn statistic_len(&self) -> usize {
        self.task.num_params()
    }

    fn update(&mut self, _iteration: u32, state: &Vec<f64>, mean: &[f64]) -> Update<Vec<f64>> {
        let mut next = state.clone();
        self.adam.step(&mut next, mean);
        Update::Continue(next)
    }

    fn report(&self, _iteration: u32, state: &Vec<f64>) -> NnIterationReport {
        match &self.eval {
            Some(data) if !data.is_empty() => {
                let net = self.network(state);
                NnIterationReport { loss: Some(net.loss(data)), accuracy: Some(net.accuracy(data)) }
            }
            _ => NnIterationReport { loss: None, accuracy: None },
        }
    }
}
