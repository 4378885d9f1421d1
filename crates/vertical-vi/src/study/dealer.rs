//! The dealer tab's role (spec C: a **separate** dealer tab, the TTP of spec B1): per step it
//! builds the public program shape from the task and the batch size the aggregator announces,
//! deals Beaver triples, truncation pairs and comparison masks ([`deal_program`]) and seals each
//! party's part to that party. It never sees θ, an input, a share of one or an opening.

use capelab_core::codec;
use capelab_core::driver::{Machine, Outgoing};
use capelab_core::rng::Seed;
use capelab_core::study::StudyId;
use capelab_core::wire::{ParticipantId, To};

use super::messages::{Body, VviMessage};
use super::seal::{Links, Purpose};
use super::task::{BatchSampling, VviTask};
use super::{Status, StudyError, heard_stop, others, step_seed, stop_member, to_each};
use crate::mpc::circuit::{Shape, gradient_program};
use crate::mpc::dealer::deal_program;

struct Run {
    study: StudyId,
    task: VviTask,
    links: Links,
    /// The next step to deal (1-based).
    step: u32,
}

pub struct Dealer {
    me: ParticipantId,
    aggregator: ParticipantId,
    seed: Seed,
    run: Option<Run>,
    status: Status,
}

impl Dealer {
    pub fn new(me: ParticipantId, aggregator: ParticipantId, seed: Seed) -> Self {
        Dealer { me, aggregator, seed, run: None, status: Status::Waiting }
    }

    pub fn status(&self) -> &Status {
        &self.status
    }

    /// Ring elements dealt so far would be large; this is the number of steps dealt.
    pub fn steps_dealt(&self) -> u32 {
        self.run.as_ref().map_or(0, |r| r.step - 1)
    }

    fn stop(&mut self, reason: String, tell: bool) -> Vec<Outgoing> {
        let run = self.run.as_ref().map(|r| (r.study, &r.task));
        stop_member(&mut self.status, run, self.aggregator, self.me, reason, tell, None)
    }

    fn on_start(&mut self, study: StudyId, task: VviTask) -> Vec<Outgoing> {
        if self.run.is_some() || task.dealer != self.me {
            return Vec::new();
        }
        let checked = task.check(self.aggregator);
        let links = Links::new(self.me, study, &mut self.seed.rng("vvi/dealer/link-key"));
        let public = links.public();
        self.run = Some(Run { study, task, links, step: 1 });
        if let Err(e) = checked {
            return self
                .stop(format!("the dealer (participant {}) refused the run: {e}", self.me), true);
        }
        self.status = Status::Running { step: 1 };
        let run = self.run.as_ref().expect("set above");
        to_each(
            others(&run.task, self.aggregator, self.me),
            &VviMessage { study, body: Body::Key { public } },
        )
    }

    fn deal(&mut self, step: u32, batch: u32) -> Result<Vec<Outgoing>, StudyError> {
        let run = self.run.as_mut().expect("checked by the caller");
        let task = &run.task;
        if step != run.step || step > task.steps {
            return Err(StudyError::Protocol(format!(
                "the aggregator asked for step {step}'s material while the dealer is at step {}",
                run.step
            )));
        }
        let b = batch as usize;
        if b > task.train_rows() || (task.sampling == BatchSampling::Fixed && b != task.batch) {
            return Err(StudyError::Malformed(format!(
                "a batch of {b} rows for step {step} does not fit the task"
            )));
        }
        if let Some(p) = task.parties.iter().find(|p| !run.links.has(**p)) {
            return Err(StudyError::Protocol(format!(
                "the aggregator asked for material before participant {p}'s link key"
            )));
        }
        let k = task.components;
        let widths = task.schema.parties.iter().map(|p| p.zeta_parameters()).collect();
        let shape = Shape { batch: b, components: k, widths };
        // The program's shape and its interactive ops do not depend on π: a uniform π stands in.
        let prog = gradient_program(&shape, &task.gradient_config(vec![1.0 / k as f64; k]))?;
        let material = deal_program(&prog, &mut step_seed(self.seed, step).rng("mpc/dealer"));
        let mut out = Vec::with_capacity(material.len());
        for (m, &party) in material.iter().zip(&task.parties) {
            let sealed = run.links.seal(party, Purpose::Triples, step, 0, &codec::encode(m))?;
            let msg = VviMessage { study: run.study, body: Body::Triples { step, sealed } };
            out.push(Outgoing { to: To::One(party), kind: msg.kind(), payload: msg.encode() });
        }
        run.step += 1;
        self.status = Status::Running { step: run.step.min(task.steps) };
        Ok(out)
    }
}

impl Machine for Dealer {
    type Error = StudyError;

    fn handle(
        &mut self,
        _now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, StudyError> {
        let msg = VviMessage::decode(payload)?;
        if from == self.aggregator
            && let Body::Start { task, .. } = msg.body
        {
            return Ok(self.on_start(msg.study, *task));
        }
        let run = match &self.run {
            Some(run) if run.study == msg.study => run,
            Some(_) => return Err(StudyError::Protocol("a message of another study".into())),
            None => return Err(StudyError::Protocol("a study message before the task".into())),
        };
        let who = run.task.who(from, self.aggregator);
        let is_party = run.task.parties.contains(&from);
        if !(is_party || from == self.aggregator) {
            return Err(StudyError::Protocol(format!("a message from {who}: refused")));
        }
        if self.status.is_over() {
            return Ok(Vec::new());
        }
        match msg.body {
            Body::Key { public } if is_party => {
                self.run.as_mut().expect("run").links.add(from, &public)?;
                Ok(Vec::new())
            }
            Body::Deal { step, batch } if from == self.aggregator => self.deal(step, batch),
            Body::Report(release) if from == self.aggregator => {
                self.status = Status::Released(release);
                Ok(Vec::new())
            }
            Body::Stop { reason, .. } => Ok(self.stop(heard_stop(&who, &reason), false)),
            other => Err(StudyError::Protocol(format!(
                "{who} may not send a {} message to the dealer",
                VviMessage { study: msg.study, body: other }.kind()
            ))),
        }
    }

    fn handle_departure(
        &mut self,
        _now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, StudyError> {
        let Some(run) = &self.run else { return Ok(Vec::new()) };
        if !(run.task.parties.contains(&who) || who == self.aggregator) || self.status.is_over() {
            return Ok(Vec::new());
        }
        let reason = format!(
            "{} left after the dealer dealt {} of {} steps: the run stopped",
            run.task.who(who, self.aggregator),
            run.step - 1,
            run.task.steps
        );
        Ok(self.stop(reason, false))
    }

    fn is_finished(&self) -> bool {
        self.status.is_over()
    }
}
