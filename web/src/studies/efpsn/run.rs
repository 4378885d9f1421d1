/*!
The dashboard's side of the EFPSN study (seed 003): it builds the task from the form for the sites
present, measures with its copy of the public data set (x* and the test rows), and runs the
core's [`EfpsnObserver`] in a [`Driver`] on the room's websocket. The agents do everything else
among themselves; the observer only reads their reports.

The data set is the app's bundled copy of scikit-learn's `digits` (`digits.csv`, written into
`data/` at set-up and copied next to the app by trunk), fetched from the relay that serves the
app; every agent tab fetches the same file and keeps only its own part of the public split.
*/

use std::collections::BTreeMap;

use capelab_core::data::Dataset;
use capelab_core::driver::Driver;
use capelab_core::efpsn::attack::Perturbed;
use capelab_core::efpsn::basis::BasisSpec;
use capelab_core::efpsn::epsilon::TheoremInputs;
use capelab_core::efpsn::graph::{Graph, Topology};
use capelab_core::efpsn::mask::NoiseLaw;
use capelab_core::efpsn::messages::{Phase1Setup, Plan};
use capelab_core::efpsn::models::Model;
use capelab_core::efpsn::optimizer::{Optimizer, Phase2Settings};
use capelab_core::efpsn::problem::{ClassificationSplit, Problem};
use capelab_core::efpsn::sim::Method;
use capelab_core::rng::os_rng;
use capelab_core::study::StudyId;
use capelab_core::study::efpsn::{EfpsnObserver, EfpsnTask, ObservedRun, Residual, RunPlan};
use capelab_core::wire::ParticipantId;
use rand_core::Rng;
use serde::Serialize;

use crate::frame::wire::StudyTransport;

/// Where the app serves the data set from (trunk copies it into `dist/`).
pub const DIGITS_URL: &str = "digits.csv";

/// What the teacher picks in the form.
#[derive(Clone, Debug, PartialEq)]
pub struct EfpsnFields {
    pub topology: Topology,
    pub gamma: f64,
    pub optimizer: Optimizer,
    pub iterations: u32,
    pub step: f64,
    pub key_bits: u32,
    pub perturbed: Perturbed,
    pub methods: Vec<Method>,
    pub delta: f64,
}

impl Default for EfpsnFields {
    fn default() -> Self {
        EfpsnFields {
            topology: Topology::Ring,
            gamma: 1e3,
            optimizer: Optimizer::Tracking,
            iterations: 200,
            step: 2.0,
            key_bits: 2048,
            perturbed: Perturbed::Biases,
            methods: Method::ALL.to_vec(),
            // A tenth of a site's default budget δ (1e-5): the run's δ must leave some of it.
            delta: 1e-6,
        }
    }
}

/// The public split every tab applies to digits: 16 bounds the pixel counts, 20% is held out.
pub fn digits_split(classes: usize, features: usize) -> ClassificationSplit {
    ClassificationSplit {
        classes,
        features,
        feature_bound: 16.0,
        ridge: 1e-3,
        test_fraction: 0.2,
        seed: 0,
    }
}

impl EfpsnFields {
    /// The task for the agents `sites` (in graph order), checked as every agent will check it.
    pub fn task(
        &self,
        sites: &[ParticipantId],
        classes: usize,
        features: usize,
    ) -> Result<EfpsnTask, String> {
        if sites.len() < 2 {
            return Err(format!(
                "only {} site(s) present: EFPSN needs at least 2 agents on a graph",
                sites.len()
            ));
        }
        if self.methods.is_empty() {
            return Err("pick at least one method to run".into());
        }
        let mut rng = os_rng();
        let graph =
            Graph::build(self.topology, sites.len(), rng.next_u64()).map_err(|e| e.to_string())?;
        let model = Model::Softmax { classes };
        let variables = self.perturbed.variables(model, features);
        let m = variables.len() as u32;
        // The paper's (K_deg, m, N_b) = (1, 10, 10) for the biases; for all 650 parameters an
        // affine basis of 64 functions (as `cape efpsn-attack`), packed into few ciphertexts.
        let size = match self.perturbed {
            Perturbed::Biases => m,
            Perturbed::All => (m + 1).min(64),
        };
        let basis = BasisSpec { max_degree: 1, variables: m, size, seed: rng.next_u64() };
        let law = NoiseLaw { gamma: self.gamma, decay: 1.0, precision: 6 };
        let phase2 = Phase2Settings {
            optimizer: self.optimizer,
            iterations: self.iterations,
            step: self.step,
            decay: 0.0,
            batch: None,
        };
        let mut methods = self.methods.clone();
        methods.sort_by_key(|m| Method::ALL.iter().position(|a| a == m));
        let runs = methods
            .into_iter()
            .map(|method| {
                let mut id = [0u8; 16];
                rng.fill_bytes(&mut id);
                RunPlan {
                    method,
                    plan: Plan {
                        study: StudyId(id),
                        graph: graph.clone(),
                        agents: sites.to_vec(),
                        setup: Phase1Setup { basis, law },
                        phase2,
                        variables: variables.clone(),
                    },
                }
            })
            .collect();
        let task = EfpsnTask {
            runs,
            split: digits_split(classes, features),
            key_bits: self.key_bits,
            record_every: (self.iterations / 40).max(1),
            theorem: TheoremInputs::spec_default(self.gamma, self.delta),
        };
        task.check().map_err(|e| e.to_string())?;
        Ok(task)
    }
}

/// One run as the dashboard shows it (the iterates stay in the observer).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EfpsnLive {
    pub number: usize,
    pub finished: bool,
    pub stopped: Option<String>,
    pub graph: Graph,
    pub agents: Vec<ParticipantId>,
    pub names: BTreeMap<ParticipantId, String>,
    pub task: EfpsnTask,
    /// The runs without their iterates.
    pub runs: Vec<ObservedRun>,
    pub x_star_score: f64,
    /// The zero-sum check over the EFPSN run's masks (SecureAgg).
    pub residual: Residual,
    /// The first held-out image (features in [0, 1]) and its label: the attack panel's probe.
    pub probe: (Vec<f64>, usize),
    pub refusals: Vec<String>,
}

impl EfpsnLive {
    pub fn name(&self, agent: usize) -> String {
        let id = self.agents[agent];
        self.names.get(&id).cloned().unwrap_or_else(|| format!("Site {id}"))
    }
}

pub struct EfpsnRun {
    pub number: usize,
    pub driver: Driver<StudyTransport, EfpsnObserver>,
    pub names: BTreeMap<ParticipantId, String>,
    x_star_score: f64,
    probe: (Vec<f64>, usize),
}

impl EfpsnRun {
    /// Opens the study: the problem from the dashboard's copy of the data, `efpsn/start` to
    /// every agent.
    pub fn start(
        number: usize,
        me: ParticipantId,
        task: EfpsnTask,
        data: &Dataset,
        transport: StudyTransport,
        names: BTreeMap<ParticipantId, String>,
        now_ms: u64,
    ) -> Result<Self, String> {
        let problem: Problem =
            task.split.problem(data, task.agents().len()).map_err(|e| e.to_string())?;
        let x_star_score = problem.score(&problem.x_star);
        let probe = (problem.test.row(0).to_vec(), problem.test.y[0] as usize);
        let mut id = [0u8; 16];
        os_rng().fill_bytes(&mut id);
        let (observer, out) = EfpsnObserver::start(me, StudyId(id), task, problem, os_rng())
            .map_err(|e| e.to_string())?;
        let mut driver = Driver::new(transport, observer);
        driver.send(now_ms, out);
        Ok(EfpsnRun { number, driver, names, x_star_score, probe })
    }

    pub fn is_finished(&self) -> bool {
        use capelab_core::driver::Machine;
        self.driver.machine.is_finished()
    }

    pub fn live(&self) -> EfpsnLive {
        let o = &self.driver.machine;
        let refusals = crate::frame::refusal_lines(self.driver.log());
        EfpsnLive {
            number: self.number,
            finished: self.is_finished(),
            stopped: o.stopped().map(str::to_owned),
            graph: o.task().runs[0].plan.graph.clone(),
            agents: o.task().agents().to_vec(),
            names: self.names.clone(),
            task: o.task().clone(),
            runs: o
                .runs()
                .iter()
                .map(|r| ObservedRun {
                    id: r.id,
                    method: r.method,
                    epsilon: r.epsilon,
                    status: r.status.clone(),
                    iterates: Vec::new(),
                    gradient_at_zero: r.gradient_at_zero.clone(),
                    trace: r.trace.clone(),
                    x_bar: r.x_bar.clone(),
                })
                .collect(),
            x_star_score: self.x_star_score,
            residual: o.residual().clone(),
            probe: self.probe.clone(),
            refusals,
        }
    }
}
