/*!
The aggregator role of an iterative study (the dashboard): invites the sites, runs the upfront
SecureAgg run (upfront mode), then per iteration broadcasts the state, collects one release per
contributing site, averages and steps ([`AggregatorStep::update`]).

A site of U that leaves (or declines, or goes silent past the deadline) after the upfront run
breaks the zero sum of every later iteration: the study stops there with
[`StopReason::ZeroSumBroken`], keeping the state reached. In conventional and non-private mode
the others go on while at least t remain.
*/

use std::collections::{BTreeMap, BTreeSet};

use rand_core::Rng;

use crate::accountant::{Budget, Ledger, Release};
use crate::cape::privacy::{Collusion, c_s_closed_form, c_s_full_view};
use crate::driver::{Machine, Outgoing};
use crate::nn::privacy::account;
use crate::rng::CapeRng;
use crate::secagg::{self, AggregatorConfig};
use crate::study::StudyId;
use crate::wire::{ParticipantId, To};

use super::error::IterativeError;
use super::messages::{IterBody, IterMessage, kind};
use super::outcome::{
    IterationRecord, IterativeOutcome, IterativePrivacy, SiteDecline, StopReason,
};
use super::params::{IterativeConfigError, IterativeParams, NoiseMode};
use super::site::wrap_secagg;
use super::step::{AggregatorStep, Update};

/// Where the study is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IterAggregatorPhase {
    Inviting,
    Summing(Option<secagg::Phase>),
    Iterating { iteration: u32 },
    Finished,
}

type Outcome<U> = IterativeOutcome<<U as AggregatorStep>::State, <U as AggregatorStep>::Report>;

/// The aggregator role. Call order as for [`crate::study::mean::MeanAggregator`]:
/// [`Self::start`] returns the `iter/start` broadcast; feed every message, departure and
/// timeout; stop when [`Self::outcome`] is `Some`.
pub struct IterativeAggregator<U: AggregatorStep> {
    study: StudyId,
    params: IterativeParams,
    step: U,
    round_timeout_ms: u64,
    rng: CapeRng,
    departed: BTreeSet<ParticipantId>,
    accepted: BTreeSet<ParticipantId>,
    declined: Vec<SiteDecline>,
    /// Who contributes each iteration (U in upfront mode).
    contributors: Vec<ParticipantId>,
    current: U::State,
    records: Vec<IterationRecord<U::Report>>,
    /// A site's ledger for this study alone, replayed here for the per-iteration ε.
    mirror: Option<Ledger>,
    /// Upfront mode: a site of U that left after releasing the running iteration (which can
    /// still complete), and how it left. The study stops after this iteration.
    broken: Option<(ParticipantId, String)>,
    state: State<U::Report, U::State>,
}

enum State<R, S> {
    Inviting {
        deadline: u64,
        waiting: BTreeSet<ParticipantId>,
    },
    Summing {
        secagg: Box<secagg::Aggregator>,
    },
    Iterating {
        iteration: u32,
        deadline: u64,
        waiting: BTreeSet<ParticipantId>,
        releases: BTreeMap<ParticipantId, Vec<f64>>,
    },
    Finished(Box<IterativeOutcome<S, R>>),
}

impl<U: AggregatorStep> IterativeAggregator<U> {
    /// Opens a study at `now_ms`: a random study id and the `iter/start` broadcast.
    /// `params.statistic_len` must be the step's.
    pub fn start(
        params: IterativeParams,
        mut step: U,
        round_timeout_ms: u64,
        mut rng: CapeRng,
        now_ms: u64,
    ) -> Result<(Self, Vec<Outgoing>), IterativeConfigError> {
        params.validate()?;
        if params.statistic_len != step.statistic_len() {
            return Err(IterativeConfigError::StepMismatch {
                announced: params.statistic_len,
                computed: step.statistic_len(),
            });
        }
        let mut id = [0u8; 16];
        rng.fill_bytes(&mut id);
        let study = StudyId(id);
        let body = IterBody::<U::Task, U::State>::Start {
            computation: U::NAME.into(),
            params: params.clone(),
            task: step.task(),
        };
        let start = Outgoing {
            to: To::All,
            kind: kind::START,
            payload: IterMessage { study, body }.encode(),
        };
        let mirror = params.mode.is_private().then(|| {
            let budget = Budget::new(1e300, params.delta).expect("a valid δ and a finite budget");
            Ledger::new("aggregator mirror", budget).expect("a non-empty name")
        });
        let current = step.initial_state();
        let waiting = params.sites.iter().copied().collect();
        let aggregator = Self {
            study,
            params,
            step,
            round_timeout_ms,
            rng,
            departed: BTreeSet::new(),
            accepted: BTreeSet::new(),
            declined: Vec::new(),
            contributors: Vec::new(),
            current,
            records: Vec::new(),
            mirror,
            broken: None,
            state: State::Inviting { deadline: now_ms.saturating_add(round_timeout_ms), waiting },
        };
        Ok((aggregator, vec![start]))
    }

    pub fn study(&self) -> StudyId {
        self.study
    }

    pub fn params(&self) -> &IterativeParams {
        &self.params
    }

    pub fn step(&self) -> &U {
        &self.step
    }

    /// The current public state.
    pub fn current_state(&self) -> &U::State {
        &self.current
    }

    pub fn records(&self) -> &[IterationRecord<U::Report>] {
        &self.records
    }

    pub fn phase(&self) -> IterAggregatorPhase {
        match &self.state {
            State::Inviting { .. } => IterAggregatorPhase::Inviting,
            State::Summing { secagg } => IterAggregatorPhase::Summing(secagg.phase()),
            State::Iterating { iteration, .. } => {
                IterAggregatorPhase::Iterating { iteration: *iteration }
            }
            State::Finished(_) => IterAggregatorPhase::Finished,
        }
    }

    pub fn outcome(&self) -> Option<&Outcome<U>> {
        match &self.state {
            State::Finished(o) => Some(o),
            _ => None,
        }
    }

    pub fn poll_timeout(&self) -> Option<u64> {
        match &self.state {
            State::Inviting { deadline, .. } | State::Iterating { deadline, .. } => Some(*deadline),
            State::Summing { secagg } => secagg.poll_timeout(),
            State::Finished(_) => None,
        }
    }

    pub fn handle(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, IterativeError> {
        let msg = IterMessage::<U::Task, U::State>::decode(payload)?;
        let got = msg.body.kind();
        if matches!(self.state, State::Finished(_)) {
            return Err(IterativeError::AlreadyOver { from, kind: got });
        }
        if msg.study != self.study {
            return Err(IterativeError::WrongStudy { expected: self.study, got: msg.study });
        }
        if !self.params.is_invited(from) {
            return Err(IterativeError::UnknownSender { from, kind: got });
        }
        let answered =
            self.accepted.contains(&from) || self.declined.iter().any(|d| d.site == from);
        match (&mut self.state, msg.body) {
            (State::Inviting { waiting, .. }, IterBody::Accept) if !answered => {
                waiting.remove(&from);
                self.accepted.insert(from);
                Ok(self.advance_invitation(now_ms, false))
            }
            (State::Inviting { waiting, .. }, IterBody::Decline { reason }) if !answered => {
                waiting.remove(&from);
                self.declined.push(SiteDecline { site: from, iteration: 0, reason });
                Ok(self.advance_invitation(now_ms, false))
            }
            (State::Inviting { .. }, IterBody::Accept | IterBody::Decline { .. }) => {
                Err(IterativeError::Duplicate { from, kind: got })
            }
            (State::Summing { secagg }, IterBody::SecAgg(message)) => {
                let out = secagg.handle(now_ms, from, &message)?;
                Ok(self.after_secagg(now_ms, out))
            }
            (State::Summing { secagg }, IterBody::Decline { reason }) => {
                let out = secagg.handle_departure(now_ms, from)?;
                self.declined.push(SiteDecline { site: from, iteration: 0, reason });
                Ok(self.after_secagg(now_ms, out))
            }
            (
                State::Iterating { iteration, waiting, releases, .. },
                IterBody::Release { iteration: j, values },
            ) => {
                if j != *iteration {
                    let expected = *iteration;
                    return Err(IterativeError::WrongIteration {
                        from,
                        kind: got,
                        expected,
                        got: j,
                    });
                }
                if releases.contains_key(&from) {
                    return Err(IterativeError::Duplicate { from, kind: got });
                }
                if !waiting.contains(&from) {
                    return Err(IterativeError::Inconsistent {
                        from,
                        kind: got,
                        detail: format!("site {from} does not contribute to iteration {j}"),
                    });
                }
                let len = self.params.statistic_len;
                if values.len() != len || values.iter().any(|v| !v.is_finite()) {
                    return Err(IterativeError::Inconsistent {
                        from,
                        kind: got,
                        detail: format!(
                            "a release needs {len} finite values, got {}",
                            values.len()
                        ),
                    });
                }
                waiting.remove(&from);
                releases.insert(from, values);
                Ok(self.close_iteration(now_ms, false))
            }
            (State::Iterating { iteration, .. }, IterBody::Decline { reason }) => {
                let iteration = *iteration;
                self.declined.push(SiteDecline { site: from, iteration, reason });
                Ok(self.lose_site(now_ms, from, "declined"))
            }
            (_, body) => {
                Err(IterativeError::WrongPhase { phase: self.phase_name(), got: body.kind(), from })
            }
        }
    }

    pub fn handle_departure(
        &mut self,
        now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, IterativeError> {
        if !self.departed.insert(who) || !self.params.is_invited(who) {
            return Ok(Vec::new());
        }
        match &mut self.state {
            State::Inviting { waiting, .. } => {
                waiting.remove(&who);
                Ok(self.advance_invitation(now_ms, false))
            }
            State::Summing { secagg } => {
                let out = secagg.handle_departure(now_ms, who)?;
                Ok(self.after_secagg(now_ms, out))
            }
            State::Iterating { .. } => Ok(self.lose_site(now_ms, who, "left the room")),
            State::Finished(_) => Ok(Vec::new()),
        }
    }

    pub fn handle_timeout(&mut self, now_ms: u64) -> Result<Vec<Outgoing>, IterativeError> {
        match &mut self.state {
            State::Inviting { deadline, .. } if now_ms >= *deadline => {
                Ok(self.advance_invitation(now_ms, true))
            }
            State::Summing { secagg } => {
                let out = secagg.handle_timeout(now_ms)?;
                Ok(self.after_secagg(now_ms, out))
            }
            State::Iterating { deadline, .. } if now_ms >= *deadline => {
                Ok(self.close_iteration(now_ms, true))
            }
            _ => Ok(Vec::new()),
        }
    }

    /// Ends the study now (a dashboard button), keeping the state reached.
    pub fn stop(&mut self, now_ms: u64, reason: impl Into<String>) -> Vec<Outgoing> {
        if matches!(self.state, State::Finished(_)) {
            return Vec::new();
        }
        self.finish(now_ms, StopReason::Stopped { reason: reason.into() })
    }

    // -- the invitation and the upfront run ------------------------------------------------------

    fn advance_invitation(&mut self, now_ms: u64, deadline_passed: bool) -> Vec<Outgoing> {
        let State::Inviting { waiting, .. } = &self.state else { return Vec::new() };
        let t = self.params.threshold;
        let live: Vec<ParticipantId> =
            self.accepted.iter().copied().filter(|s| !self.departed.contains(s)).collect();
        if live.len() + waiting.len() >= t && !waiting.is_empty() && !deadline_passed {
            return Vec::new();
        }
        if live.len() < t {
            return self
                .finish(now_ms, StopReason::TooFewAccepted { accepted: live.len(), need: t });
        }
        if self.params.mode != NoiseMode::Upfront {
            self.contributors = live;
            return self.begin_iteration(now_ms, 1);
        }
        let config = self
            .params
            .format()
            .and_then(|format| self.params.secagg_params(live, format))
            .and_then(|p| AggregatorConfig::new(p).map_err(IterativeConfigError::SecAgg));
        match config {
            Ok(config) => {
                let config = config
                    .with_round_timeout_ms(self.round_timeout_ms)
                    .with_retain_masked_inputs(false);
                let (secagg, begin) = secagg::Aggregator::start(config, &mut self.rng, now_ms);
                self.state = State::Summing { secagg: Box::new(secagg) };
                wrap_secagg::<U::Task, U::State>(self.study, begin)
            }
            Err(e) => self.finish(now_ms, StopReason::SecAgg { message: e.to_string() }),
        }
    }

    fn after_secagg(&mut self, now_ms: u64, out: Vec<Outgoing>) -> Vec<Outgoing> {
        let mut sends = wrap_secagg::<U::Task, U::State>(self.study, out);
        let State::Summing { secagg } = &self.state else { return sends };
        let Some(end) = secagg.outcome().map(|o| o.cloned().map_err(Clone::clone)) else {
            return sends;
        };
        match end {
            Ok(aggregate) => {
                self.contributors = aggregate.survivors;
                let gone = self.contributors.iter().copied().find(|s| self.departed.contains(s));
                match gone {
                    // Its ê is in the sum but it will never release: nothing can cancel.
                    Some(site) => sends.extend(self.finish(
                        now_ms,
                        StopReason::ZeroSumBroken {
                            site,
                            iteration: 1,
                            completed: 0,
                            cause: "left the room before iteration 1".into(),
                        },
                    )),
                    None => sends.extend(self.begin_iteration(now_ms, 1)),
                }
            }
            Err(error) => {
                sends.extend(self.finish(now_ms, StopReason::SecAgg { message: error.to_string() }))
            }
        }
        sends
    }

    // -- the iterations --------------------------------------------------------------------------

    fn begin_iteration(&mut self, now_ms: u64, iteration: u32) -> Vec<Outgoing> {
        self.state = State::Iterating {
            iteration,
            deadline: now_ms.saturating_add(self.round_timeout_ms),
            waiting: self.contributors.iter().copied().collect(),
            releases: BTreeMap::new(),
        };
        vec![self.broadcast(IterBody::State { iteration, state: self.current.clone() })]
    }

    /// A contributing site is gone (left, declined, or silent past the deadline).
    fn lose_site(&mut self, now_ms: u64, site: ParticipantId, cause: &str) -> Vec<Outgoing> {
        let State::Iterating { iteration, waiting, .. } = &mut self.state else {
            return Vec::new();
        };
        if !self.contributors.contains(&site) {
            return Vec::new();
        }
        let iteration = *iteration;
        let released = !waiting.remove(&site);
        if self.params.mode == NoiseMode::Upfront && released {
            // Its release of this iteration is in: the iteration can still complete, but no
            // later one can.
            if self.broken.is_none() {
                self.broken =
                    Some((site, format!("{cause} after releasing iteration {iteration}")));
            }
            return self.close_iteration(now_ms, false);
        }
        if self.params.mode == NoiseMode::Upfront {
            let reason = StopReason::ZeroSumBroken {
                site,
                iteration,
                completed: iteration - 1,
                cause: format!("{cause} in iteration {iteration}"),
            };
            return self.finish(now_ms, reason);
        }
        self.contributors.retain(|s| *s != site);
        let need = self.params.threshold;
        if self.contributors.len() < need {
            let reason = StopReason::TooFewSites {
                iteration,
                completed: iteration - 1,
                remaining: self.contributors.len(),
                need,
            };
            return self.finish(now_ms, reason);
        }
        self.close_iteration(now_ms, false)
    }

    fn close_iteration(&mut self, now_ms: u64, deadline_passed: bool) -> Vec<Outgoing> {
        let State::Iterating { iteration, waiting, releases, .. } = &mut self.state else {
            return Vec::new();
        };
        let iteration = *iteration;
        if !waiting.is_empty() {
            if !deadline_passed {
                return Vec::new();
            }
            let silent: Vec<ParticipantId> = waiting.iter().copied().collect();
            let mut out = Vec::new();
            for site in silent {
                out.extend(self.lose_site(now_ms, site, "went silent"));
                if matches!(self.state, State::Finished(_)) {
                    break;
                }
            }
            return out;
        }
        let releases = std::mem::take(releases);
        if releases.is_empty() {
            return self.finish(
                now_ms,
                StopReason::TooFewSites {
                    iteration,
                    completed: iteration - 1,
                    remaining: 0,
                    need: self.params.threshold,
                },
            );
        }
        // Σ_s â_s / n in ascending site order: the zero-sum parts cancel, leaving (1/n)Σ(f_s + g_s).
        let n = releases.len() as f64;
        let mut mean = vec![0.0; self.params.statistic_len];
        for values in releases.values() {
            mean.iter_mut().zip(values).for_each(|(m, v)| *m += v / n);
        }
        let contributors: Vec<ParticipantId> = releases.keys().copied().collect();
        let update = self.step.update(iteration, &self.current, &mean);
        let (next, converged) = match update {
            Update::Continue(next) => (next, None),
            Update::Stop { state, reason } => (state, Some(reason)),
        };
        self.current = next;
        let epsilon_spent = self.mirror_spend(iteration, contributors.len());
        let report = self.step.report(iteration, &self.current);
        self.records.push(IterationRecord { iteration, contributors, epsilon_spent, report });
        if let Some(reason) = converged {
            return self.finish(now_ms, StopReason::Converged { iteration, reason });
        }
        if iteration >= self.params.max_iterations {
            return self.finish(now_ms, StopReason::Completed { iterations: iteration });
        }
        if let Some((site, cause)) = self.broken.take() {
            let reason = StopReason::ZeroSumBroken {
                site,
                iteration: iteration + 1,
                completed: iteration,
                cause,
            };
            return self.finish(now_ms, reason);
        }
        self.begin_iteration(now_ms, iteration + 1)
    }

    /// Records one iteration's release in the mirror ledger; its ε after.
    fn mirror_spend(&mut self, iteration: u32, contributors: usize) -> Option<f64> {
        let u = match self.params.mode {
            NoiseMode::Upfront => self.contributors.len(),
            _ => contributors,
        };
        let c_s = self.params.collusion_factor(u);
        let event = self.params.event(format!("iter/{iteration}"), 1, c_s).ok()?;
        let mirror = self.mirror.as_mut()?;
        let release = Release::new("mirror", event, 0);
        mirror.try_spend(release).ok().map(|e| e.epsilon_after)
    }

    // -- the end ---------------------------------------------------------------------------------

    fn finish(&mut self, now_ms: u64, stop: StopReason) -> Vec<Outgoing> {
        let iterations = self.records.last().map_or(0, |r| r.iteration);
        let privacy = self.privacy(iterations);
        let end =
            IterBody::End { iterations, state: self.current.clone(), reason: stop.to_string() };
        let outcome = IterativeOutcome {
            study: self.study,
            params: self.params.clone(),
            accepted: self.accepted.iter().copied().collect(),
            declined: self.declined.clone(),
            contributors: self.contributors.clone(),
            records: self.records.clone(),
            iterations,
            final_state: self.current.clone(),
            stop,
            privacy,
            finished_at_ms: now_ms,
        };
        self.state = State::Finished(Box::new(outcome));
        vec![self.broadcast(end)]
    }

    /// ε of `iterations` releases per site under each view; `None` when non-private or none ran.
    fn privacy(&self, iterations: u32) -> Option<IterativePrivacy> {
        if iterations == 0 || !self.params.mode.is_private() {
            return None;
        }
        let (z, delta, j) = (self.params.noise_multiplier, self.params.delta, iterations as usize);
        let views = match self.params.mode {
            NoiseMode::Upfront => {
                let full = Collusion::default_for(self.contributors.len()).ok()?;
                let alone = Collusion::new(self.contributors.len(), 0).ok()?;
                vec![
                    account("aggregator alone (S_C = 0)", z, j, delta, c_s_closed_form(&alone)),
                    account(
                        &format!("full adversary view (S_C = {})", full.colluders()),
                        z,
                        j,
                        delta,
                        c_s_full_view(&full),
                    ),
                ]
            }
            _ => vec![account("aggregator (conventional releases)", z, j, delta, 1.0)],
        };
        let views: Vec<_> = views.into_iter().collect::<Result<_, _>>().ok()?;
        let worst = views.iter().max_by(|a, b| a.epsilon_exact.total_cmp(&b.epsilon_exact))?;
        Some(IterativePrivacy {
            iterations,
            delta,
            noise_multiplier: z,
            epsilon: worst.epsilon_exact,
            guarantee_view: worst.view.clone(),
            views,
        })
    }

    fn broadcast(&self, body: IterBody<U::Task, U::State>) -> Outgoing {
        let kind = body.kind();
        Outgoing { to: To::All, kind, payload: IterMessage { study: self.study, body }.encode() }
    }

    fn phase_name(&self) -> &'static str {
        match &self.state {
            State::Inviting { .. } => "the invitation",
            State::Summing { .. } => "the upfront SecureAgg run",
            State::Iterating { .. } => "an iteration",
            State::Finished(_) => "the end of the study",
        }
    }
}

impl<U: AggregatorStep> Machine for IterativeAggregator<U> {
    type Error = IterativeError;

    fn handle(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, IterativeError> {
        IterativeAggregator::handle(self, now_ms, from, payload)
    }

    fn handle_departure(
        &mut self,
        now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, IterativeError> {
        IterativeAggregator::handle_departure(self, now_ms, who)
    }

    fn handle_timeout(&mut self, now_ms: u64) -> Result<Vec<Outgoing>, IterativeError> {
        IterativeAggregator::handle_timeout(self, now_ms)
    }

    fn poll_timeout(&self) -> Option<u64> {
        IterativeAggregator::poll_timeout(self)
    }

    fn is_finished(&self) -> bool {
        self.outcome().is_some()
    }
}
