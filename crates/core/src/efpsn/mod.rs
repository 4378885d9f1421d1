/*!
EFPSN: encrypted functional perturbation with structured noise (seed 003, Zhou & Pu; spec
efpsn-vertical-dpvi Part A). Agents on a connected graph minimise F = (1/n) Σ_i f_i together;
each hides its f_i behind a polynomial mask Φ(η̄_i) whose coefficients sum to zero over the
agents, built pairwise with Paillier encryption, so Σ_i f̂_i = Σ_i f_i and the optimum is exact.

- [`basis`]: the orthonormal polynomial system on [−1, 1]^m, built identically on every agent from
  a public seed; the paper's worked example as a test vector.
- [`graph`]: topologies, Metropolis weights, the unweighted Laplacian and its spectrum.
- [`epsilon`]: Theorem IV.1's ε(γ, graph, δ).
- [`mask`]: Phase 1's numbers: the noise law, integer noise, exact zero-sum masks.
- [`phase1`]: Phase 1 as a sans-IO agent role (keys, encrypted noise, one decryption per k).
- [`models`]: the local costs (softmax regression, least squares) and the centralised x*.
- [`problem`]: a data set split over the agents, its test rows and x*.
- [`optimizer`]: Phase 2's DSGD and gradient tracking, one agent's side.
- [`messages`]: the messages and the public plan of a run.
- [`metrics`]: ‖x̄ − x*‖, the test score and the disagreement along a run.
- [`agent`]: one agent as a sans-IO role: Phase 1, then Phase 2 exchanging iterates.
- [`attack`]: what a curious neighbour reads from one agent's released gradient.
- [`bench`]: the workloads `cape bench paillier` times natively and in the browser.
- [`sim`]: a whole run in one process over the in-memory transport: EFPSN, the non-zero-sum
  baseline and the noise-free run with the same code.

Threat model (spec §A1): passive adversaries only, an eavesdropper on every link or
honest-but-curious agents; Phase-2 traffic is in clear; an agent's mask stays hidden unless all
its neighbours collude. Keys are not authenticated.
*/

pub mod agent;
pub mod attack;
pub mod basis;
pub mod bench;
pub mod epsilon;
pub mod graph;
pub mod mask;
pub mod messages;
pub mod metrics;
pub mod models;
pub mod optimizer;
pub mod phase1;
pub mod problem;
pub mod sim;

/// Everything EFPSN refuses, each naming the problem.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EfpsnError {
    #[error("basis: {0}")]
    Basis(String),
    #[error("graph: {0}")]
    Graph(String),
    #[error("parameter: {0}")]
    Parameter(String),
    #[error("data: {0}")]
    Data(String),
    #[error("protocol: {0}")]
    Protocol(String),
    #[error("a mask coefficient overflowed 64 bits")]
    Overflow,
}

impl EfpsnError {
    /// The message without its kind's prefix ("parameter: …"), for a page that shows it to a
    /// person in a sentence of its own.
    pub fn words(&self) -> String {
        match self {
            EfpsnError::Basis(w)
            | EfpsnError::Graph(w)
            | EfpsnError::Parameter(w)
            | EfpsnError::Data(w)
            | EfpsnError::Protocol(w) => w.clone(),
            EfpsnError::Overflow => self.to_string(),
        }
    }
}
