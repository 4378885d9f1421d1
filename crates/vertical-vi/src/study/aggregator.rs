//! The dashboard's role, the aggregator of spec B3 steps 1 and 4: it announces the task, draws
//! each step's batch and η, broadcasts θ and the batch indices, asks the dealer for the step's
//! material, collects one share of G̃ from every party (and nothing else of the MPC), updates
//! (μ, log σ) with Adam and, after T steps, releases the posterior and its ε to every member.
//! It holds no data.

use std::collections::BTreeMap;

use capelab_core::accountant::ledger::Shortfall;
use capelab_core::driver::{Machine, Outgoing};
use capelab_core::rng::Seed;
use capelab_core::study::StudyId;
use capelab_core::wire::ParticipantId;

use super::messages::{Body, Release, VviMessage};
use super::seal::{Links, Purpose};
use super::task::VviTask;
use super::{Status, StudyError, heard_stop, others, ring_values, to_each};
use crate::model::gradient::{self, StepDraw};
use crate::model::train::{initial_q, labels};
use crate::model::{Model, Variational};
use crate::mpc::ring::decode;

pub struct Aggregator {
    me: ParticipantId,
    study: StudyId,
    task: VviTask,
    links: Links,
    /// Who sent its key (parties and the dealer): the run starts when all did.
    ready: Vec<ParticipantId>,
    state: gradient::Aggregator,
    epsilon: f64,
    step: u32,
    draw: Option<StepDraw>,
    shares: BTreeMap<usize, Vec<u128>>,
    status: Status,
    /// The party that declined the run for its budget, and by how much it was short.
    budget_refusal: Option<(ParticipantId, Shortfall)>,
}

impl Aggregator {
    /// Checks `task` and returns the role with the `vvi/start` for every party and the dealer.
    /// `seed` drives the initial q, the batches, η and the link key (`Seed::Os` in a tab).
    pub fn start(
        me: ParticipantId,
        study: StudyId,
        task: VviTask,
        seed: Seed,
    ) -> Result<(Self, Vec<Outgoing>), StudyError> {
        task.check(me)?;
        let epsilon = task.epsilon()?;
        let model = Model::new(task.schema.clone(), task.components);
        let config = task.train_config(seed);
        let q = initial_q(&model, &config);
        let state = gradient::Aggregator::new(
            model,
            q,
            task.train_rows(),
            task.model_sampling(),
            task.learning_rate,
            seed.rng(labels::BATCH),
            seed.rng(labels::ETA),
        );
        let links = Links::new(me, study, &mut seed.rng("vvi/aggregator/link-key"));
        let msg = VviMessage {
            study,
            body: Body::Start { task: Box::new(task.clone()), aggregator_key: links.public() },
        };
        let out = to_each(others(&task, me, me), &msg);
        let agg = Aggregator {
            me,
            study,
            task,
            links,
            ready: Vec::new(),
            state,
            epsilon,
            step: 0,
            draw: None,
            shares: BTreeMap::new(),
            status: Status::Waiting,
            budget_refusal: None,
        };
        Ok((agg, out))
    }

    pub fn status(&self) -> &Status {
        &self.status
    }

    pub fn task(&self) -> &VviTask {
        &self.task
    }

    pub fn study(&self) -> StudyId {
        self.study
    }

    /// The current q (the released one once the run is over).
    pub fn q(&self) -> &Variational {
        &self.state.q
    }

    pub fn model(&self) -> &Model {
        &self.state.model
    }

    /// The party whose ledger could not cover the run (it declined before anything was charged
    /// or released), with its shortfall: which budget to raise, and to what.
    pub fn budget_refusal(&self) -> Option<(ParticipantId, Shortfall)> {
        self.budget_refusal
    }

    /// The analyst's ε at the task's δ for the whole run.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// Steps whose update is done.
    pub fn steps_done(&self) -> u32 {
        match &self.status {
            Status::Released(r) => r.steps,
            _ => self.step.saturating_sub(1),
        }
    }

    /// The teacher ends the run now: every member gets `vvi/stop` with `reason`, nothing of the
    /// step in progress is opened (the dashboard's Stop button).
    pub fn abort(&mut self, reason: &str) -> Vec<Outgoing> {
        self.stop(format!("the aggregator (participant {}) stopped the run: {reason}", self.me))
    }

    fn stop(&mut self, reason: String) -> Vec<Outgoing> {
        if self.status.is_over() {
            return Vec::new();
        }
        self.status = Status::Stopped(reason.clone());
        self.draw = None;
        self.shares.clear();
        let msg = VviMessage { study: self.study, body: Body::Stop { reason, budget: None } };
        to_each(others(&self.task, self.me, self.me), &msg)
    }

    /// Step 1 of spec B3: draw, then θ and the indices to the parties, |batch| to the dealer.
    fn begin_step(&mut self) -> Vec<Outgoing> {
        self.step += 1;
        self.status = Status::Running { step: self.step };
        let draw = self.state.draw();
        let batch: Vec<u32> = draw.batch.iter().map(|&b| b as u32).collect();
        let mut out = to_each(
            [self.task.dealer],
            &VviMessage {
                study: self.study,
                body: Body::Deal { step: self.step, batch: batch.len() as u32 },
            },
        );
        out.extend(to_each(
            self.task.parties.clone(),
            &VviMessage {
                study: self.study,
                body: Body::Step { step: self.step, theta: draw.theta.clone(), batch },
            },
        ));
        self.draw = Some(draw);
        out
    }

    fn on_opened(
        &mut self,
        p: usize,
        from: ParticipantId,
        step: u32,
        sealed: &[u8],
    ) -> Result<Vec<Outgoing>, StudyError> {
        if step != self.step || self.draw.is_none() || self.shares.contains_key(&p) {
            return Err(StudyError::Protocol(format!(
                "party {p} (participant {from}) sent a share of step {step}'s G̃ while the \
                 aggregator is at step {} (or sent it twice)",
                self.step
            )));
        }
        let plain = self.links.open(from, Purpose::Opened, step, 0, sealed)?;
        let share = ring_values("share of G̃", &plain)?;
        // The opened sum has ζ's layout (parties send ζ-gradients, batch.rs).
        let d = self.state.model.zeta_len();
        if share.len() != d {
            return Err(StudyError::Malformed(format!(
                "party {p}'s share of G̃ has {} values, D = {d}",
                share.len()
            )));
        }
        self.shares.insert(p, share);
        if self.shares.len() < self.task.parties.len() {
            return Ok(Vec::new());
        }
        // Step 4: G̃ = Σ_p share_p (mod 2^128), decoded; the ADVI update.
        let mut sum = vec![0u128; d];
        for share in std::mem::take(&mut self.shares).into_values() {
            for (s, v) in sum.iter_mut().zip(share) {
                *s = s.wrapping_add(v);
            }
        }
        let noisy: Vec<f64> = sum.into_iter().map(decode).collect();
        let draw = self.draw.take().expect("checked");
        self.state.update(&draw, &noisy);
        if self.step < self.task.steps {
            return Ok(self.begin_step());
        }
        let release = Release {
            steps: self.step,
            epsilon: self.epsilon,
            delta: self.task.delta,
            posterior: self.state.q.clone(),
        };
        self.status = Status::Released(release.clone());
        let msg = VviMessage { study: self.study, body: Body::Report(release) };
        Ok(to_each(others(&self.task, self.me, self.me), &msg))
    }
}

impl Machine for Aggregator {
    type Error = StudyError;

    fn handle(
        &mut self,
        _now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, StudyError> {
        let msg = VviMessage::decode(payload)?;
        let who = self.task.who(from, self.me);
        let party = self.task.parties.iter().position(|&p| p == from);
        if party.is_none() && from != self.task.dealer {
            return Err(StudyError::Protocol(format!("a message from {who}: refused")));
        }
        if msg.study != self.study {
            return Err(StudyError::Protocol(format!("{who} sent a message of another study")));
        }
        if self.status.is_over() {
            return Ok(Vec::new());
        }
        match msg.body {
            Body::Key { public } => {
                if self.ready.contains(&from) {
                    return Err(StudyError::Protocol(format!("{who} sent a second link key")));
                }
                if party.is_some() {
                    self.links.add(from, &public)?;
                }
                self.ready.push(from);
                if self.ready.len() == self.task.parties.len() + 1 {
                    return Ok(self.begin_step());
                }
                Ok(Vec::new())
            }
            Body::Opened { step, sealed } if party.is_some() => {
                self.on_opened(party.expect("checked"), from, step, &sealed)
            }
            Body::Stop { reason, budget } => {
                if let (Some(shortfall), Some(_)) = (budget, party) {
                    self.budget_refusal = Some((from, shortfall));
                }
                Ok(self.stop(heard_stop(&who, &reason)))
            }
            other => Err(StudyError::Protocol(format!(
                "{who} may not send a {} message to the aggregator",
                VviMessage { study: msg.study, body: other }.kind()
            ))),
        }
    }

    fn handle_departure(
        &mut self,
        _now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, StudyError> {
        if !(self.task.parties.contains(&who) || who == self.task.dealer) {
            return Ok(Vec::new());
        }
        let reason = format!(
            "{} left during step {} of {}: the run stopped and nothing of that step was opened",
            self.task.who(who, self.me),
            self.step.max(1),
            self.task.steps
        );
        Ok(self.stop(reason))
    }

    fn is_finished(&self) -> bool {
        self.status.is_over()
    }
}
