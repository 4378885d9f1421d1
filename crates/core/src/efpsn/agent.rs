//! One EFPSN agent as a sans-IO role ([`Machine`]): Phase 1 (when its mask is built by the
//! encrypted exchange), then Phase 2 on its perturbed cost, exchanging iterates with its
//! neighbours (spec efpsn-vertical-dpvi §A2). The same role runs in the in-process simulation,
//! the CLI and a browser tab.

use std::collections::BTreeMap;

use capelab_paillier::Keypair;

use super::EfpsnError;
use super::basis::Basis;
use super::mask::Mask;
use super::messages::{Body, EfpsnMessage, Plan};
use super::models::LocalCost;
use super::optimizer::{Iterate, LocalOptimizer, PerturbedCost};
use super::phase1::{Phase1, Phase1Progress};
use crate::driver::{Machine, Outgoing};
use crate::rng::CapeRng;
use crate::wire::{ParticipantId, To};

/// Where an agent's mask comes from: the three methods of the paper's comparison share all
/// other code.
pub enum MaskSource {
    /// EFPSN: the Paillier exchange of Phase 1, zero-sum over the agents.
    Exchange(Box<Keypair>),
    /// The non-zero-sum baseline (Nozari et al.): coefficients drawn alone.
    Independent,
    /// No perturbation.
    NoiseFree,
}

/// Where an agent is.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentStatus {
    Phase1(Phase1Progress),
    Phase2 { iteration: u32 },
    Done,
    Failed(EfpsnError),
}

pub struct EfpsnAgent {
    me: usize,
    plan: Plan,
    basis: Basis,
    cost: Option<LocalCost>,
    phase1: Option<Phase1>,
    mask: Option<Vec<f64>>,
    exact_mask: Option<Mask>,
    optimizer: Option<LocalOptimizer>,
    inbox: BTreeMap<u32, BTreeMap<usize, Iterate>>,
    record_every: u32,
    trace: Vec<(u32, Vec<f64>)>,
    rng: CapeRng,
    failed: Option<EfpsnError>,
}

impl EfpsnAgent {
    /// Agent for participant `me` of `plan`, with its private cost; returns the role and its
    /// first messages. `record_every`: keep x every so many iterations (for the metrics).
    pub fn start(
        me: ParticipantId,
        plan: Plan,
        cost: LocalCost,
        source: MaskSource,
        record_every: u32,
        mut rng: CapeRng,
    ) -> Result<(Self, Vec<Outgoing>), EfpsnError> {
        plan.check()?;
        let index = plan.agent_of(me).ok_or_else(|| {
            EfpsnError::Parameter(format!("participant {me} has no place on the graph"))
        })?;
        if let Some(&v) = plan.variables.iter().find(|&&v| v >= cost.dim()) {
            return Err(EfpsnError::Parameter(format!(
                "perturbed variable {v} is beyond the model's {} parameters",
                cost.dim()
            )));
        }
        let basis = Basis::build(&plan.setup.basis)?;
        let n_b = basis.len();
        let neighbours = plan.graph.neighbours(index).to_vec();
        let (phase1, mask, exact) = match source {
            MaskSource::Exchange(keypair) => {
                let keypair = *keypair;
                let agents = plan.graph.len();
                let phase1 = Phase1::new(
                    index,
                    neighbours.clone(),
                    agents,
                    plan.setup,
                    keypair,
                    fork(&mut rng),
                )?;
                (Some(phase1), None, None)
            }
            MaskSource::Independent => {
                (None, Some(plan.setup.law.draw_independent(n_b, neighbours.len(), &mut rng)), None)
            }
            MaskSource::NoiseFree => {
                let zero = Mask::zero(n_b, plan.setup.law.precision);
                (None, Some(zero.coefficients()), Some(zero))
            }
        };
        let mut agent = EfpsnAgent {
            me: index,
            plan,
            basis,
            cost: Some(cost),
            phase1,
            mask,
            exact_mask: exact,
            optimizer: None,
            inbox: BTreeMap::new(),
            record_every: record_every.max(1),
            trace: Vec::new(),
            rng,
            failed: None,
        };
        let out = match &agent.phase1 {
            Some(p) => agent.address(p.start()),
            None => agent.begin_phase2()?,
        };
        Ok((agent, out))
    }

    pub fn index(&self) -> usize {
        self.me
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The mask coefficients η̄_i once known.
    pub fn mask(&self) -> Option<&[f64]> {
        self.mask.as_deref()
    }

    /// The exact integer mask (EFPSN and noise-free runs).
    pub fn exact_mask(&self) -> Option<&Mask> {
        self.exact_mask.as_ref()
    }

    /// (iteration, x_i) every `record_every` iterations and at the end.
    pub fn trace(&self) -> &[(u32, Vec<f64>)] {
        &self.trace
    }

    /// How many rows the agent's private cost is over.
    pub fn rows(&self) -> usize {
        match (&self.cost, &self.optimizer) {
            (Some(c), _) => c.data.rows(),
            (None, Some(o)) => o.cost().cost.data.rows(),
            (None, None) => 0,
        }
    }

    /// ∇f̂_i(0), once the perturbed cost is fixed (Phase 2): a function of f̂_i, which is what
    /// the guarantee protects, so the agent may show it.
    pub fn perturbed_gradient_at_zero(&self) -> Option<Vec<f64>> {
        let opt = self.optimizer.as_ref()?;
        let zero = vec![0.0; opt.x().len()];
        let mut g = vec![0.0; zero.len()];
        opt.cost().gradient(&zero, None, &mut g);
        Some(g)
    }

    pub fn x(&self) -> Option<&[f64]> {
        self.optimizer.as_ref().map(|o| o.x())
    }

    /// The Phase-2 iteration reached, also after the run stopped (`None`: still in Phase 1).
    pub fn iteration(&self) -> Option<u32> {
        self.optimizer.as_ref().map(LocalOptimizer::iteration)
    }

    pub fn status(&self) -> AgentStatus {
        if let Some(e) = &self.failed {
            return AgentStatus::Failed(e.clone());
        }
        match (&self.optimizer, &self.phase1) {
            (Some(o), _) if o.is_done() => AgentStatus::Done,
            (Some(o), _) => AgentStatus::Phase2 { iteration: o.iteration() },
            (None, Some(p)) => AgentStatus::Phase1(p.progress()),
            (None, None) => AgentStatus::Phase2 { iteration: 0 },
        }
    }

    fn address(&self, out: Vec<(usize, Body)>) -> Vec<Outgoing> {
        out.into_iter()
            .map(|(j, body)| {
                let msg = EfpsnMessage { study: self.plan.study, body };
                Outgoing {
                    to: To::One(self.plan.agents[j]),
                    kind: msg.kind(),
                    payload: msg.encode(),
                }
            })
            .collect()
    }

    fn begin_phase2(&mut self) -> Result<Vec<Outgoing>, EfpsnError> {
        let coefficients = self.mask.clone().expect("the mask is known before Phase 2");
        let cost = self.cost.take().expect("Phase 2 starts once");
        let perturbed = PerturbedCost {
            cost,
            variables: self.plan.variables.clone(),
            perturbation: self.basis.combine(&coefficients),
        };
        let row = self.plan.graph.metropolis_weights(self.me);
        let opt = LocalOptimizer::new(self.plan.phase2, row, perturbed, fork(&mut self.rng));
        self.trace.push((0, opt.x().to_vec()));
        self.optimizer = Some(opt);
        let mut out = self.send_iterate();
        out.extend(self.advance()?);
        Ok(out)
    }

    fn send_iterate(&self) -> Vec<Outgoing> {
        let opt = self.optimizer.as_ref().expect("in Phase 2");
        if opt.is_done() {
            return Vec::new();
        }
        let iteration = opt.iteration();
        let bodies = self
            .plan
            .graph
            .neighbours(self.me)
            .iter()
            .map(|&j| (j, Body::Iterate { iteration, iterate: opt.iterate() }))
            .collect();
        self.address(bodies)
    }

    /// Steps while every neighbour's iterate of the current iteration is in.
    fn advance(&mut self) -> Result<Vec<Outgoing>, EfpsnError> {
        let mut out = Vec::new();
        let degree = self.plan.graph.degree(self.me);
        loop {
            let opt = self.optimizer.as_mut().expect("in Phase 2");
            let t = opt.iteration();
            if opt.is_done() || self.inbox.get(&t).is_none_or(|m| m.len() < degree) {
                return Ok(out);
            }
            let received = self.inbox.remove(&t).expect("checked above");
            let refs: Vec<(usize, &Iterate)> = received.iter().map(|(j, it)| (*j, it)).collect();
            opt.step(&refs)?;
            let t = opt.iteration();
            if t.is_multiple_of(self.record_every) || opt.is_done() {
                self.trace.push((t, opt.x().to_vec()));
            }
            out.extend(self.send_iterate());
        }
    }

    fn handle_body(&mut self, from: usize, body: Body) -> Result<Vec<Outgoing>, EfpsnError> {
        if let Body::Iterate { iteration, iterate } = body {
            if !self.plan.graph.neighbours(self.me).contains(&from) {
                return Err(EfpsnError::Protocol(format!(
                    "agent {from} is not a neighbour of agent {}",
                    self.me
                )));
            }
            // A neighbour is at most one iteration ahead: it needs ours to move on.
            let current = self.optimizer.as_ref().map_or(0, |o| o.iteration());
            if iteration < current
                || iteration > current + 1
                || iteration >= self.plan.phase2.iterations
            {
                return Err(EfpsnError::Protocol(format!(
                    "agent {from} sent the iterate of iteration {iteration} while this agent is at {current}"
                )));
            }
            let slot = self.inbox.entry(iteration).or_default();
            if slot.contains_key(&from) {
                return Err(EfpsnError::Protocol(format!(
                    "agent {from} sent iteration {iteration} twice"
                )));
            }
            slot.insert(from, iterate);
            return if self.optimizer.is_some() { self.advance() } else { Ok(Vec::new()) };
        }
        let phase1 = self.phase1.as_mut().ok_or_else(|| {
            EfpsnError::Protocol(format!(
                "agent {from} sent a Phase-1 message to an agent without Phase 1"
            ))
        })?;
        if phase1.mask().is_some() {
            return Err(EfpsnError::Protocol(format!(
                "agent {from} sent a Phase-1 message after Phase 1 ended"
            )));
        }
        let out = phase1.handle(from, body)?;
        let mut out = self.address(out);
        if let Some(mask) = self.phase1.as_ref().and_then(|p| p.mask()).cloned() {
            self.mask = Some(mask.coefficients());
            self.exact_mask = Some(mask);
            out.extend(self.begin_phase2()?);
        }
        Ok(out)
    }
}

/// An independent generator keyed from `rng` (ChaCha keys are not `Clone`, on purpose).
fn fork(rng: &mut CapeRng) -> CapeRng {
    use rand_core::SeedableRng;
    CapeRng::from_seed(rand::RngExt::random(rng))
}

impl Machine for EfpsnAgent {
    type Error = EfpsnError;

    fn handle(
        &mut self,
        _now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, EfpsnError> {
        if self.is_finished() {
            return Ok(Vec::new());
        }
        let msg = EfpsnMessage::decode(payload)?;
        if msg.study != self.plan.study {
            return Err(EfpsnError::Protocol(format!(
                "a message of study {} in study {}",
                msg.study, self.plan.study
            )));
        }
        let from = self.plan.agent_of(from).ok_or_else(|| {
            EfpsnError::Protocol(format!("participant {from} is not an agent of this study"))
        })?;
        self.handle_body(from, msg.body)
    }

    fn handle_departure(
        &mut self,
        _now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, EfpsnError> {
        let Some(j) = self.plan.agent_of(who) else { return Ok(Vec::new()) };
        if self.is_finished() || !self.plan.graph.neighbours(self.me).contains(&j) {
            return Ok(Vec::new());
        }
        let when = match self.status() {
            AgentStatus::Phase1(_) => {
                "Phase 1: its part of this agent's mask never arrived, so the masks \
                                       cannot cancel; nothing was released"
                    .to_string()
            }
            AgentStatus::Phase2 { iteration } => format!(
                "Phase 2 at iteration {iteration}: without its iterates the optimisation cannot go on; \
                 the iterates so far are kept"
            ),
            _ => return Ok(Vec::new()),
        };
        let err = EfpsnError::Protocol(format!(
            "neighbour agent {j} (participant {who}) left during {when}"
        ));
        self.failed = Some(err.clone());
        Err(err)
    }

    fn is_finished(&self) -> bool {
        self.failed.is_some() || self.optimizer.as_ref().is_some_and(|o| o.is_done())
    }
}
