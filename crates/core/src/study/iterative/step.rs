/*!
What an iterative study computes, as two traits: the site's local statistic and the aggregator's
update. The roles ([`super::IterativeSite`], [`super::IterativeAggregator`]) do everything else:
the invitation, the ledger, the noise, the messages.

One iteration j (spec cape-fm §5, spec cape-secagg-pca-djica §5 for capeDJICA):
1. the aggregator broadcasts the public state θ_{j−1} ([`AggregatorStep::State`]);
2. each site computes its statistic f_s(θ_{j−1}; x_s) ([`SiteStep::statistic`]), whose L2
   sensitivity is at most Δ, and releases it with noise;
3. the aggregator averages the releases and takes its step ([`AggregatorStep::update`]): a new
   state, or stop. The update sees released values only, so it is post-processing.
*/

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The shape of a site's statistic, checked against the study's parameters before it accepts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepShape {
    pub len: usize,
    /// The L2 sensitivity of the site's statistic under replace-one neighbours.
    pub sensitivity: f64,
}

/// The site side of one iterative computation.
pub trait SiteStep {
    /// The computation's name, announced in `iter/start` ([`IterBody::Start`]): a tab checks it
    /// before it decodes the task, and the site role declines a study of another computation.
    ///
    /// [`IterBody::Start`]: super::IterBody::Start
    const NAME: &'static str;

    /// The public description of the computation (e.g. the network's shape and the clipping
    /// norm), sent with `iter/start`.
    type Task: Serialize + DeserializeOwned + Clone + std::fmt::Debug + PartialEq;
    /// The public state the aggregator broadcasts each iteration.
    type State: Serialize + DeserializeOwned + Clone + std::fmt::Debug + PartialEq;

    /// Checks `task` against the local data; `Err` (a sentence for the dashboard) makes the site
    /// decline. `private` is false only in a non-private comparison run.
    fn prepare(&mut self, task: &Self::Task, private: bool) -> Result<StepShape, String>;

    /// The local statistic at `state` in iteration `iteration` (1-based): `len` finite values
    /// whose sensitivity is the one [`Self::prepare`] returned.
    fn statistic(&mut self, state: &Self::State, iteration: u32) -> Result<Vec<f64>, String>;
}

/// What the aggregator does after averaging one iteration's releases.
#[derive(Clone, Debug, PartialEq)]
pub enum Update<S> {
    Continue(S),
    /// Converged or otherwise done: the state reached and why.
    Stop {
        state: S,
        reason: String,
    },
}

/// The aggregator side of one iterative computation.
pub trait AggregatorStep {
    /// The name announced in `iter/start`; equal to the matching [`SiteStep::NAME`].
    const NAME: &'static str;

    type Task: Serialize + DeserializeOwned + Clone + std::fmt::Debug + PartialEq;
    type State: Serialize + DeserializeOwned + Clone + std::fmt::Debug + PartialEq;
    /// What the dashboard shows per iteration (e.g. loss and accuracy on held-out data).
    type Report: Serialize + Clone + std::fmt::Debug + PartialEq;

    fn task(&self) -> Self::Task;

    fn initial_state(&mut self) -> Self::State;

    /// The length of the statistic every site releases.
    fn statistic_len(&self) -> usize;

    /// One step from `state` along `mean`, the average of the iteration's releases.
    fn update(&mut self, iteration: u32, state: &Self::State, mean: &[f64]) -> Update<Self::State>;

    /// The dashboard's view of `state` after iteration `iteration`.
    fn report(&self, iteration: u32, state: &Self::State) -> Self::Report;
}
