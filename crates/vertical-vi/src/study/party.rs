//! A party tab's role: it holds its [`PartyBlock`] (all N rows; it trains on the public split's
//! training rows), records the run in its ledger, computes its local step (spec B3 step 2) and
//! runs an [`MpcParty`] per step with the other parties over sealed links; the final opening goes
//! to the aggregator only, as this party's share of G̃.

use std::collections::BTreeMap;
use std::sync::Arc;

use capelab_core::accountant::LedgerError;
use capelab_core::accountant::ledger::Shortfall;
use capelab_core::codec;
use capelab_core::driver::{Machine, Outgoing};
use capelab_core::rng::Seed;
use capelab_core::study::StudyId;
use capelab_core::study::gate::{self, LedgerAccess, release_time};
use capelab_core::wire::{ParticipantId, To};

use super::messages::{Body, VviMessage};
use super::seal::{Links, Purpose};
use super::task::VviTask;
use super::{
    Status, StudyError, heard_stop, ledger_study_name, others, ring_bytes, ring_values, step_seed,
    stop_member, to_each,
};
use crate::model::Model;
use crate::model::local::party_local;
use crate::mpc::circuit::{Shape, gradient_program, party_inputs};
use crate::mpc::dealer::PartyMaterial;
use crate::mpc::party::{Message, MpcParty, Step};
use crate::privacy::ledger_releases;
use crate::schema::PartyBlock;
use crate::table::select_rows;

/// Everything that exists once the task is accepted.
struct Run {
    study: StudyId,
    task: VviTask,
    index: usize,
    model: Model,
    /// This party's training rows, in the split's order (batch index i is row `train[i]`).
    train: PartyBlock,
    links: Links,
    /// The step being prepared or run (1-based).
    step: u32,
    theta: Option<(Vec<f64>, Vec<usize>)>,
    material: Option<PartyMaterial>,
    mpc: Option<(MpcParty, u32)>,
    /// Sealed round messages waiting for their round: (step, round, sender) → ciphertext.
    inbox: BTreeMap<(u32, u32, ParticipantId), Vec<u8>>,
    recorded: bool,
}

pub struct Party<L> {
    me: ParticipantId,
    aggregator: ParticipantId,
    block: PartyBlock,
    ledger: L,
    seed: Seed,
    run: Option<Run>,
    status: Status,
    transcript: Option<Vec<Message>>,
    /// Why this party has no usable block (see [`Party::refusing`]).
    unusable: Option<String>,
    /// How far its ledger was short, when it declined the run for its budget.
    shortfall: Option<Shortfall>,
}

impl<L: LedgerAccess> Party<L> {
    /// Participant `me`, holding `block`, for runs the dashboard `aggregator` announces.
    pub fn new(
        me: ParticipantId,
        aggregator: ParticipantId,
        block: PartyBlock,
        ledger: L,
        seed: Seed,
    ) -> Self {
        Party {
            me,
            aggregator,
            block,
            ledger,
            seed,
            run: None,
            status: Status::Waiting,
            transcript: None,
            unusable: None,
            shortfall: None,
        }
    }

    /// A party whose block could not be read (its file does not match the announced schema, or
    /// could not be had): it answers a task by declining with `reason`, telling every other
    /// member, and sends nothing else. `reason` travels to them: it must name the problem
    /// without quoting the party's values.
    pub fn refusing(mut self, reason: String) -> Self {
        self.unusable = Some(reason);
        self
    }

    /// Keeps every plaintext MPC message this party sends (tests: the eavesdropper check).
    pub fn keep_transcript(mut self) -> Self {
        self.transcript = Some(Vec::new());
        self
    }

    pub fn transcript(&self) -> &[Message] {
        self.transcript.as_deref().unwrap_or(&[])
    }

    pub fn status(&self) -> &Status {
        &self.status
    }

    pub fn ledger(&mut self) -> &mut L {
        &mut self.ledger
    }

    pub fn task(&self) -> Option<&VviTask> {
        self.run.as_ref().map(|r| &r.task)
    }

    /// This party's link public key, once the task is accepted.
    pub fn link_public(&self) -> Option<[u8; 32]> {
        self.run.as_ref().map(|r| r.links.public())
    }

    /// Whether this party's ledger recorded the run (it does before its first share leaves).
    pub fn charged(&self) -> bool {
        self.run.as_ref().is_some_and(|r| r.recorded)
    }

    /// Why this party's ledger could not cover the run, when it declined for its budget.
    pub fn shortfall(&self) -> Option<Shortfall> {
        self.shortfall
    }

    fn stop(&mut self, reason: String, tell: bool) -> Vec<Outgoing> {
        let run = self.run.as_ref().map(|r| (r.study, &r.task));
        let budget = self.shortfall;
        stop_member(&mut self.status, run, self.aggregator, self.me, reason, tell, budget)
    }

    fn on_start(
        &mut self,
        now_ms: u64,
        study: StudyId,
        task: VviTask,
        aggregator_key: [u8; 32],
    ) -> Result<Vec<Outgoing>, StudyError> {
        if let Some(run) = &self.run {
            return if run.study == study {
                Ok(Vec::new())
            } else {
                Err(StudyError::Protocol(format!(
                    "study {} opened while study {} runs on this tab",
                    study.to_hex(),
                    run.study.to_hex()
                )))
            };
        }
        let Some(index) = task.parties.iter().position(|&p| p == self.me) else {
            return Ok(Vec::new()); // not a party of this run
        };
        let me = format!("party {index} (participant {})", self.me);
        let unusable = self.unusable.clone().map_or(Ok(()), |r| Err(StudyError::Task(r)));
        let accepted = task
            .check(self.aggregator)
            .and(unusable)
            .and_then(|()| task.check_block(index, &self.block))
            .and_then(|()| {
                let releases =
                    ledger_releases(&task.privacy_run(), &ledger_study_name(study), now_ms)
                        .map_err(|e| StudyError::Task(format!("privacy: {e}")))?;
                self.ledger.with_ledger(|l| gate::preview(l, &releases).map(|_| ())).map_err(|e| {
                    self.shortfall = e.shortfall();
                    StudyError::Task(budget_words(&e))
                })
            });
        let mut links = Links::new(self.me, study, &mut self.seed.rng("vvi/party/link-key"));
        // Only a checked block is cut (a block of the wrong size has no training rows).
        let train = match &accepted {
            Ok(()) => select_rows(&self.block, &task.split().train),
            Err(_) => PartyBlock { rows: 0, features: self.block.features, cells: Vec::new() },
        };
        let model = Model::new(task.schema.clone(), task.components.max(1));
        let keyed = links.add(self.aggregator, &aggregator_key);
        self.run = Some(Run {
            study,
            model,
            train,
            links,
            index,
            step: 1,
            theta: None,
            material: None,
            mpc: None,
            inbox: BTreeMap::new(),
            recorded: false,
            task,
        });
        if let Err(e) = accepted.and(keyed) {
            return Ok(self.stop(format!("{me} refused the run: {e}"), true));
        }
        let run = self.run.as_ref().expect("set above");
        let msg = VviMessage { study, body: Body::Key { public: run.links.public() } };
        self.status = Status::Running { step: 1 };
        Ok(to_each(others(&run.task, self.aggregator, self.me), &msg))
    }

    /// Starts the step's MPC once θ, the material and every key are in, then feeds it every
    /// round whose messages have all arrived. A problem of this party's own (its ledger, an input
    /// out of the fixed-point range) stops the run and tells the other members.
    fn advance(&mut self, now_ms: u64) -> Result<Vec<Outgoing>, StudyError> {
        match self.advance_inner(now_ms) {
            Ok(out) => Ok(out),
            Err(Halt::Refuse(e)) => Err(e),
            Err(Halt::Stop(reason)) => Ok(self.stop(reason, true)),
        }
    }

    fn advance_inner(&mut self, now_ms: u64) -> Result<Vec<Outgoing>, Halt> {
        let mut out = Vec::new();
        let Party { me, aggregator, ledger, seed, run, status, transcript, shortfall, .. } = self;
        let (me, aggregator) = (*me, *aggregator);
        let Some(run) = run.as_mut() else { return Ok(out) };
        if status.is_over() {
            return Ok(out);
        }
        let mut members = run.task.parties.iter().chain([&run.task.dealer]);
        if members.any(|&m| m != me && !run.links.has(m)) {
            return Ok(out);
        }
        if run.mpc.is_none() && run.theta.is_some() && run.material.is_some() {
            if !run.recorded {
                let prun = run.task.privacy_run();
                let name = ledger_study_name(run.study);
                ledger
                    .with_ledger(|l| {
                        let t = release_time(l, now_ms);
                        let releases =
                            ledger_releases(&prun, &name, t).map_err(|e| (e.to_string(), None))?;
                        gate::spend(l, releases)
                            .map(|_| ())
                            .map_err(|e| (budget_words(&e), e.shortfall()))
                    })
                    .map_err(|(e, short)| {
                        *shortfall = short;
                        Halt::Stop(format!(
                            "party {} (participant {me}) refused the run at step 1: {e}",
                            run.index
                        ))
                    })?;
                run.recorded = true;
            }
            let (theta, batch) = run.theta.take().expect("checked");
            let material = run.material.take().expect("checked");
            let k = run.task.components;
            let local = party_local(&run.model, run.index, &theta, &run.train, &batch);
            let started = (|| {
                let widths = run.task.schema.parties.iter().map(|p| p.zeta_parameters()).collect();
                let shape = Shape { batch: batch.len(), components: k, widths };
                let cfg = run.task.gradient_config(theta[..k].to_vec());
                let prog = gradient_program(&shape, &cfg)?;
                let open_round = (prog.rounds() - 1) as u32;
                let rng = step_seed(*seed, run.step).rng(&format!("mpc/party/{}", run.index));
                let inputs = party_inputs(&local)?;
                let mut mpc = MpcParty::new(run.index, Arc::new(prog), material, inputs, rng)?;
                let first = mpc.start()?;
                Ok::<_, StudyError>((mpc, open_round, first))
            })();
            let (mpc, open_round, first) = started.map_err(|e| {
                Halt::Stop(format!("party {} could not run step {}: {e}", run.index, run.step))
            })?;
            run.mpc = Some((mpc, open_round));
            out.extend(send_round(run, me, first, transcript)?);
        }
        while let Some((mpc, open_round)) = run.mpc.as_mut() {
            let round = mpc.round();
            let peers: Vec<ParticipantId> =
                run.task.parties.iter().copied().filter(|&q| q != me).collect();
            if peers.iter().any(|q| !run.inbox.contains_key(&(run.step, round, *q))) {
                break;
            }
            let mut msgs = Vec::with_capacity(peers.len());
            for q in peers {
                let sealed = run.inbox.remove(&(run.step, round, q)).expect("checked");
                let plain = run.links.open(q, Purpose::Round, run.step, round, &sealed)?;
                let values = ring_values("MPC round values", &plain)?;
                let from = run.task.parties.iter().position(|&p| p == q).expect("a party");
                msgs.push(Message { round, from, to: run.index, values });
            }
            let step = run.step;
            let received = mpc.receive(msgs).map_err(|e| {
                Halt::Stop(format!("party {} failed in step {step}, round {round}: {e}", run.index))
            })?;
            match received {
                Step::Send(next) if next.first().is_some_and(|m| m.round == *open_round) => {
                    // The opening of G̃: this party's share goes to the aggregator only.
                    let share = next.into_iter().next().expect("checked").values;
                    let plain = ring_bytes(&share);
                    let sealed =
                        run.links.seal(aggregator, Purpose::Opened, run.step, 0, &plain)?;
                    if let Some(t) = transcript.as_mut() {
                        let round = *open_round;
                        t.push(Message { round, from: run.index, to: usize::MAX, values: share });
                    }
                    let body = Body::Opened { step: run.step, sealed };
                    let msg = VviMessage { study: run.study, body };
                    out.push(Outgoing {
                        to: To::One(aggregator),
                        kind: msg.kind(),
                        payload: msg.encode(),
                    });
                    run.mpc = None;
                    run.step += 1;
                    *status = Status::Running { step: run.step.min(run.task.steps) };
                }
                Step::Send(next) => out.extend(send_round(run, me, next, transcript)?),
                Step::Done(_) => {
                    return Err(Halt::Refuse(StudyError::Protocol(
                        "the MPC ended without the opening round".into(),
                    )));
                }
            }
        }
        Ok(out)
    }

    fn run_for(&self, study: StudyId) -> Result<&Run, StudyError> {
        match &self.run {
            Some(run) if run.study == study => Ok(run),
            Some(_) => Err(StudyError::Protocol("a message of another study".into())),
            None => Err(StudyError::Protocol("a study message before the task".into())),
        }
    }
}

fn send_round(
    run: &Run,
    me: ParticipantId,
    msgs: Vec<Message>,
    transcript: &mut Option<Vec<Message>>,
) -> Result<Vec<Outgoing>, StudyError> {
    let mut out = Vec::with_capacity(msgs.len());
    for m in msgs {
        let to = run.task.parties[m.to];
        debug_assert_ne!(to, me);
        let plain = ring_bytes(&m.values);
        let sealed = run.links.seal(to, Purpose::Round, run.step, m.round, &plain)?;
        let msg = VviMessage {
            study: run.study,
            body: Body::Round { step: run.step, round: m.round, sealed },
        };
        out.push(Outgoing { to: To::One(to), kind: msg.kind(), payload: msg.encode() });
        if let Some(t) = transcript.as_mut() {
            t.push(m);
        }
    }
    Ok(out)
}

impl<L: LedgerAccess> Machine for Party<L> {
    type Error = StudyError;

    fn handle(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, StudyError> {
        let msg = VviMessage::decode(payload)?;
        if from == self.aggregator
            && let Body::Start { task, aggregator_key } = msg.body
        {
            return self.on_start(now_ms, msg.study, *task, aggregator_key);
        }
        let run = self.run_for(msg.study)?;
        let who = run.task.who(from, self.aggregator);
        let is_party = run.task.parties.contains(&from) && from != self.me;
        let is_dealer = from == run.task.dealer;
        if !(is_party || is_dealer || from == self.aggregator) {
            return Err(StudyError::Protocol(format!("a message from {who}: refused")));
        }
        if self.status.is_over() {
            return Ok(Vec::new());
        }
        let step = run.step;
        let steps = run.task.steps;
        match msg.body {
            Body::Key { public } if is_party || is_dealer => {
                self.run.as_mut().expect("run").links.add(from, &public)?;
            }
            Body::Step { step: s, theta, batch } if from == self.aggregator => {
                let run = self.run.as_mut().expect("run");
                if s != step || run.theta.is_some() || run.mpc.is_some() {
                    return Err(StudyError::Protocol(format!(
                        "the aggregator sent step {s} while this party is at step {step}"
                    )));
                }
                if theta.len() != run.model.theta_len() || theta.iter().any(|v| !v.is_finite()) {
                    return Err(StudyError::Malformed(format!(
                        "θ of step {s} has {} values (want {}) or a non-finite one",
                        theta.len(),
                        run.model.theta_len()
                    )));
                }
                let n = run.train.rows;
                if batch.windows(2).any(|w| w[0] >= w[1])
                    || batch.last().is_some_and(|&b| b as usize >= n)
                {
                    return Err(StudyError::Malformed(format!(
                        "the batch of step {s} is not increasing indices below N_train = {n}"
                    )));
                }
                run.theta = Some((theta, batch.into_iter().map(|b| b as usize).collect()));
            }
            Body::Triples { step: s, sealed } if is_dealer => {
                let run = self.run.as_mut().expect("run");
                if s != step || run.material.is_some() || run.mpc.is_some() {
                    return Err(StudyError::Protocol(format!(
                        "the dealer sent material for step {s} while this party is at step {step}"
                    )));
                }
                let plain = run.links.open(from, Purpose::Triples, s, 0, &sealed)?;
                let material: PartyMaterial = codec::decode("dealer material", &plain)
                    .map_err(|e| StudyError::Malformed(e.to_string()))?;
                if material.party != run.index {
                    return Err(StudyError::Protocol(format!(
                        "the dealer sent party {}'s material to party {}",
                        material.party, run.index
                    )));
                }
                run.material = Some(material);
            }
            Body::Round { step: s, round, sealed } if is_party => {
                let run = self.run.as_mut().expect("run");
                let current = run.mpc.as_ref().map_or(0, |(m, _)| m.round());
                let in_step = s == step && run.mpc.as_ref().is_none_or(|(_, open)| round < *open);
                if !in_step || round < current || run.inbox.contains_key(&(s, round, from)) {
                    return Err(StudyError::Protocol(format!(
                        "{who} sent a round message of step {s} round {round} while this party \
                         is at step {step} round {current}"
                    )));
                }
                run.inbox.insert((s, round, from), sealed);
            }
            Body::Report(release) if from == self.aggregator => {
                if step <= steps || release.steps != steps {
                    return Err(StudyError::Protocol(format!(
                        "a release after {} steps while this party finished {} of {steps}",
                        release.steps,
                        step - 1
                    )));
                }
                self.status = Status::Released(release);
                return Ok(Vec::new());
            }
            Body::Stop { reason, .. } => {
                return Ok(self.stop(heard_stop(&who, &reason), false));
            }
            other => {
                return Err(StudyError::Protocol(format!(
                    "{who} may not send a {} message to a party",
                    VviMessage { study: msg.study, body: other }.kind()
                )));
            }
        }
        self.advance(now_ms)
    }

    fn handle_departure(
        &mut self,
        _now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, StudyError> {
        let Some(run) = &self.run else { return Ok(Vec::new()) };
        let member =
            run.task.parties.contains(&who) || who == run.task.dealer || who == self.aggregator;
        if !member || self.status.is_over() {
            return Ok(Vec::new());
        }
        let reason = format!(
            "{} left during step {} of {}: the run stopped and nothing of that step was opened",
            run.task.who(who, self.aggregator),
            run.step.min(run.task.steps),
            run.task.steps
        );
        Ok(self.stop(reason, false))
    }

    fn is_finished(&self) -> bool {
        self.status.is_over()
    }
}

/// Why a party's ledger refused the run, in plain words (the numbers a budget needs, no more).
fn budget_words(e: &LedgerError) -> String {
    match e.shortfall() {
        Some(Shortfall { budget, needed: Some(needed), .. }) => format!(
            "its privacy budget (ε = {budget:.2}) does not cover the run, which would bring its \
             total to ε = {needed:.2}"
        ),
        Some(Shortfall { delta, .. }) => {
            format!("its privacy budget's δ = {delta:e} is used up by its earlier (ε, δ) releases")
        }
        None => format!("its ledger cannot take the run: {e}"),
    }
}

/// Why [`Party::advance`] did not go on.
enum Halt {
    /// Refuse the message that led here (the state is as before it).
    Refuse(StudyError),
    /// This party cannot go on: stop the run and tell the others.
    Stop(String),
}

impl From<StudyError> for Halt {
    fn from(e: StudyError) -> Self {
        Halt::Refuse(e)
    }
}
