//! A whole EFPSN run in one process: every agent an [`EfpsnAgent`] behind a [`Driver`] on a
//! [`MemoryRoom`], so the messages are the ones a browser tab would send through the relay.
//! EFPSN, the non-zero-sum baseline and the noise-free run differ only in [`Method`].

use capelab_paillier::{KeySize, Keypair};
use rand_core::Rng;
use serde::{Deserialize, Serialize};

use super::EfpsnError;
use super::agent::{AgentStatus, EfpsnAgent, MaskSource};
use super::graph::Graph;
use super::mask::Mask;
use super::messages::{Phase1Setup, Plan, kind};
pub use super::metrics::TracePoint;
use super::metrics::trace_metrics;
use super::optimizer::Phase2Settings;
use super::problem::Problem;
use crate::driver::{Driver, DriverEvent};
use crate::rng::derive;
use crate::study::StudyId;
use crate::transport::{MemoryRoom, MemoryTransport, Transport};
use crate::wire::Role;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Zero-sum masks from the Paillier exchange.
    Efpsn,
    /// Non-zero-sum functional perturbation (Nozari et al.), same per-agent variance.
    Baseline,
    NoiseFree,
}

impl Method {
    pub const ALL: [Method; 3] = [Method::Efpsn, Method::Baseline, Method::NoiseFree];

    pub fn name(self) -> &'static str {
        match self {
            Method::Efpsn => "efpsn",
            Method::Baseline => "baseline",
            Method::NoiseFree => "noise-free",
        }
    }
}

/// Everything public about one run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunConfig {
    pub method: Method,
    pub graph: Graph,
    pub setup: Phase1Setup,
    pub phase2: Phase2Settings,
    /// The perturbed entries of x.
    pub variables: Vec<usize>,
    pub key_size: KeySize,
    /// Keep each agent's x every so many iterations.
    pub record_every: u32,
    pub seed: u64,
}

/// Phase 1's traffic, as the relay would carry it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Phase1Traffic {
    pub messages: u64,
    pub bytes: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub method: Method,
    pub trace: Vec<TracePoint>,
    /// Σ_i 10^{P_prec}·η̄_ik for each k, exactly (EFPSN and noise-free; `None` for the baseline).
    pub zero_sum_residual: Option<Vec<i128>>,
    /// The largest |η̄_ik| over agents and k.
    pub largest_mask_coefficient: f64,
    pub phase1: Phase1Traffic,
    pub x_bar: Vec<f64>,
}

impl RunReport {
    pub fn last(&self) -> TracePoint {
        *self.trace.last().expect("a run records at least its start and end")
    }
}

pub struct EfpsnSim {
    method: Method,
    room: MemoryRoom,
    agents: Vec<Driver<MemoryTransport, EfpsnAgent>>,
    /// How much of each agent's driver log has been searched for refusals (logs only grow).
    checked: Vec<usize>,
}

impl EfpsnSim {
    /// Seats one agent per part of `problem` and starts them. EFPSN agents use `keys` when given
    /// (key generation is the slow part; a sweep may reuse them) or generate their own.
    pub fn new(
        problem: &Problem,
        config: &RunConfig,
        keys: Option<Vec<Keypair>>,
    ) -> Result<Self, EfpsnError> {
        let n = problem.agents();
        if config.graph.len() != n {
            return Err(EfpsnError::Parameter(format!(
                "a graph of {} agents for {n} data parts",
                config.graph.len()
            )));
        }
        let room = MemoryRoom::new();
        let mut transports: Vec<MemoryTransport> =
            (0..n).map(|i| room.join(Role::Site, &format!("agent {i}"))).collect();
        for t in &mut transports {
            while t.poll_event().is_some() {}
        }
        let mut study = [0u8; 16];
        derive(config.seed, "efpsn/study").fill_bytes(&mut study);
        let plan = Plan {
            study: StudyId(study),
            graph: config.graph.clone(),
            agents: transports.iter().map(|t| t.id()).collect(),
            setup: config.setup,
            phase2: config.phase2,
            variables: config.variables.clone(),
        };
        // Key pairs not given are generated per agent, in parallel (`crate::par`: each from its
        // own seeded RNG, so the keys do not depend on the thread count).
        let mut keys = match config.method {
            Method::Efpsn => {
                let given = keys.unwrap_or_default();
                let have = given.len().min(n);
                let mut keys: Vec<Keypair> = given.into_iter().take(n).collect();
                keys.extend(crate::par::map_indices(n - have, |j| {
                    let i = have + j;
                    Keypair::generate(
                        config.key_size,
                        &mut derive(config.seed, &format!("efpsn/key/{i}")),
                    )
                }));
                Some(keys.into_iter())
            }
            Method::Baseline | Method::NoiseFree => None,
        };
        let mut agents = Vec::with_capacity(n);
        for (i, transport) in transports.into_iter().enumerate() {
            let source = match config.method {
                Method::Efpsn => {
                    let key = keys
                        .as_mut()
                        .and_then(|k| k.next())
                        .expect("one key pair per agent, given or generated above");
                    MaskSource::Exchange(Box::new(key))
                }
                Method::Baseline => MaskSource::Independent,
                Method::NoiseFree => MaskSource::NoiseFree,
            };
            let rng = derive(config.seed, &format!("efpsn/agent/{i}"));
            let id = transport.id();
            let (agent, out) = EfpsnAgent::start(
                id,
                plan.clone(),
                problem.costs[i].clone(),
                source,
                config.record_every,
                rng,
            )?;
            let mut driver = Driver::new(transport, agent);
            driver.send(0, out);
            agents.push(driver);
        }
        let checked = vec![0; agents.len()];
        Ok(EfpsnSim { method: config.method, room, agents, checked })
    }

    pub fn agent(&self, i: usize) -> &EfpsnAgent {
        &self.agents[i].machine
    }

    /// Delivers messages until every agent's mask is known (Phase 2 may have begun).
    pub fn run_phase1(&mut self) -> Result<Phase1Traffic, EfpsnError> {
        while self.agents.iter().any(|a| a.machine.mask().is_none()) {
            if !self.pass()? {
                return Err(EfpsnError::Protocol("Phase 1 stalled with messages missing".into()));
            }
        }
        Ok(self.phase1_traffic())
    }

    /// Delivers messages until every agent has finished Phase 2; `progress(t)` gets the slowest
    /// agent's iteration after each pass.
    pub fn run_phase2(&mut self, mut progress: impl FnMut(u32)) -> Result<(), EfpsnError> {
        let mut last = u32::MAX;
        while !self.agents.iter().all(|a| a.machine.status() == AgentStatus::Done) {
            if !self.pass()? {
                return Err(EfpsnError::Protocol("Phase 2 stalled with messages missing".into()));
            }
            let slowest = self
                .agents
                .iter()
                .map(|a| match a.machine.status() {
                    AgentStatus::Phase2 { iteration } => iteration,
                    AgentStatus::Done => u32::MAX,
                    _ => 0,
                })
                .min()
                .unwrap_or(0);
            if slowest != last && slowest != u32::MAX {
                progress(slowest);
                last = slowest;
            }
        }
        Ok(())
    }

    /// One delivery pass; `false` when nothing moved. The first refusal ends the run.
    fn pass(&mut self) -> Result<bool, EfpsnError> {
        let mut moved = 0;
        for (a, checked) in self.agents.iter_mut().zip(&mut self.checked) {
            moved += a.pump(0);
            let new = &a.log()[*checked..];
            *checked = a.log().len();
            if let Some(DriverEvent::Refused { error, .. }) =
                new.iter().find(|e| matches!(e, DriverEvent::Refused { .. }))
            {
                return Err(error.clone());
            }
        }
        Ok(moved > 0 || self.room.pending() > 0)
    }

    fn phase1_traffic(&self) -> Phase1Traffic {
        let mut t = Phase1Traffic::default();
        for a in &self.agents {
            for e in a.log() {
                if let DriverEvent::Sent { kind: k, bytes, .. } = e
                    && (*k == kind::KEY || *k == kind::NOISE)
                {
                    t.messages += 1;
                    t.bytes += *bytes as u64;
                }
            }
        }
        t
    }

    /// The metrics of x̄ at every iteration all agents recorded.
    pub fn report(&self, problem: &Problem) -> RunReport {
        let traces: Vec<&[(u32, Vec<f64>)]> =
            self.agents.iter().map(|a| a.machine.trace()).collect();
        let (trace, x_bar) = trace_metrics(problem, &traces, 0);
        let masks: Option<Vec<Mask>> =
            self.agents.iter().map(|a| a.machine.exact_mask().cloned()).collect();
        let largest = self
            .agents
            .iter()
            .filter_map(|a| a.machine.mask())
            .flat_map(|m| m.iter().map(|v| v.abs()))
            .fold(0.0, f64::max);
        RunReport {
            method: self.method,
            trace,
            zero_sum_residual: masks.map(|m| Mask::residual(&m)),
            largest_mask_coefficient: largest,
            phase1: self.phase1_traffic(),
            x_bar,
        }
    }
}
