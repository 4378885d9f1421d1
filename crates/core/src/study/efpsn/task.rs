//! What the dashboard asks of the agents: the public description of an EFPSN study (spec
//! efpsn-vertical-dpvi Part A), checked identically on every tab before anything is sent.

use capelab_paillier::KeySize;
use serde::{Deserialize, Serialize};

use crate::efpsn::EfpsnError;
use crate::efpsn::epsilon::{TheoremEpsilon, TheoremInputs, theorem_epsilon};
use crate::efpsn::messages::Plan;
use crate::efpsn::problem::ClassificationSplit;
use crate::efpsn::sim::Method;
use crate::study::StudyId;
use crate::wire::ParticipantId;

/// One method's run: EFPSN, the non-zero-sum baseline or the noise-free run. Each has its own
/// study id (in its [`Plan`]), so the runs' messages never mix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunPlan {
    pub method: Method,
    pub plan: Plan,
}

/// The whole study as the dashboard announces it in `efpsn/start`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EfpsnTask {
    /// The runs side by side, on the same graph and agents (EFPSN first when present).
    pub runs: Vec<RunPlan>,
    /// How each agent finds its part of the labelled table every tab holds.
    pub split: ClassificationSplit,
    /// Paillier modulus size: 2048, or 1024 for a labelled demo.
    pub key_bits: u32,
    /// Agents report their iterate to the dashboard every so many iterations (and at the end).
    pub record_every: u32,
    /// Theorem IV.1's q, ‖Δf‖² and δ: γ and p are the plans' noise law's.
    pub theorem: TheoremInputs,
}

impl EfpsnTask {
    /// Everything a tab checks before it takes part; every refusal names the problem.
    pub fn check(&self) -> Result<(), EfpsnError> {
        let first = self
            .runs
            .first()
            .ok_or_else(|| EfpsnError::Parameter("a study without any run".into()))?;
        for (i, run) in self.runs.iter().enumerate() {
            run.plan.check()?;
            if self.runs[..i].iter().any(|r| r.method == run.method) {
                return Err(EfpsnError::Parameter(format!("method {} twice", run.method.name())));
            }
            if self.runs[..i].iter().any(|r| r.plan.study == run.plan.study) {
                return Err(EfpsnError::Parameter("two runs share a study id".into()));
            }
            if run.plan.graph != first.plan.graph || run.plan.agents != first.plan.agents {
                return Err(EfpsnError::Parameter(format!(
                    "the {} run is on another graph or other agents than the {} run",
                    run.method.name(),
                    first.method.name()
                )));
            }
        }
        self.key_size()?;
        if self.record_every == 0 {
            return Err(EfpsnError::Parameter("record_every must be at least 1".into()));
        }
        if let Some(run) = self.run_of(Method::Efpsn) {
            self.epsilon_of(run)?;
        }
        Ok(())
    }

    pub fn key_size(&self) -> Result<KeySize, EfpsnError> {
        match self.key_bits {
            1024 => Ok(KeySize::Demo1024),
            2048 => Ok(KeySize::Standard2048),
            bits => Err(EfpsnError::Parameter(format!(
                "a {bits}-bit Paillier key: capelab uses 2048 bits (1024 for demos)"
            ))),
        }
    }

    pub fn agents(&self) -> &[ParticipantId] {
        &self.runs[0].plan.agents
    }

    pub fn run_of(&self, method: Method) -> Option<&RunPlan> {
        self.runs.iter().find(|r| r.method == method)
    }

    pub fn run_by_id(&self, id: StudyId) -> Option<&RunPlan> {
        self.runs.iter().find(|r| r.plan.study == id)
    }

    /// Theorem IV.1's (ε, δ) for `run`'s graph and γ (the paper's claim; see
    /// [`crate::efpsn::epsilon`] for what it leaves out).
    pub fn epsilon_of(&self, run: &RunPlan) -> Result<TheoremEpsilon, EfpsnError> {
        let law = run.plan.setup.law;
        let inputs = TheoremInputs { gamma: law.gamma, p: law.decay, ..self.theorem };
        theorem_epsilon(&run.plan.graph, &inputs)
    }

    /// The ledger's name for a run of this study.
    pub fn ledger_study_name(run: &RunPlan) -> String {
        format!("efpsn/{}/{}", run.method.name(), run.plan.study)
    }
}
