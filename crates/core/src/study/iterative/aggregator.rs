/*!
The aggregator role of an iterative study (the dashboard): invites the sites, runs the upfront
SecureAgg run (upfront mode), then per iteration broadcasts the state, collects one release per
contributing site, averages and steps ([`AggregatorStep::update`]).

# The repair path
A site of U that leaves (or declines, or goes silent past the deadline) after a SecureAgg run of
the zero-sum noise breaks Σ_{s∈U} e_s = 0 for every later iteration. The spec's answer (spec
cape-secagg-pca-djica §2, Remark 4: "the round must then be re-run among the survivors", with
S = |U| in e_s and τ_g²) is a **zero-sum repair**:
1. If the site's release of the running iteration j was in, j completes (its share is in) and
   the repair covers iterations j + 1 … J_max. If not, j cannot complete: the releases of j that
   arrived are discarded (not averaged; each stays on its site's ledger, once) and the repair
   covers j … J_max, so j is redone. Records and the state advance once per iteration.
2. With R sites left: if R < t (the study's SecureAgg threshold) the study stops with
   [`StopReason::ZeroSumBroken`], naming the site, the iteration and R. Otherwise the aggregator
   broadcasts `iter/repair` (the iterations it covers, the survivors, who left) and runs a fresh
   SecureAgg among the survivors, threshold t, over their fresh ê_s of (J_max − from + 1) × len
   values; each survivor splits its e_s exactly among the run's U′.
3. The study goes on with S′ = |U′|: a release carries f_s + e_s + g_s with Var(e_s) =
   (1 − 1/S′)τ² and g_s ~ N(0, τ²/S′), so each message still carries τ² and the average
   τ²/S′² (instead of τ²/S²); each release is accounted with the full-view c_S of S′
   (S_C = ⌈S′/3⌉ − 1) instead of that of S. A departure inside the repair run is handled by
   SecureAgg (U′ shrinks, at least t); one after it starts another repair.

What changes for privacy: the departed site's releases were made under the old U and keep their
guarantee (nothing it sent is used again, the fresh run is independent of its data); each
survivor's later releases are charged at c_S(S′) by its own ledger, plus any discarded release
at c_S(S). [`IterativePrivacy`] composes, per view, the releases of the site that made the most
(exactly: Gaussian releases compose through Σ c_S/z²). Every repair is in
[`IterativeOutcome::repairs`] (who left, at which iteration, the new S).

In conventional and non-private mode there is no zero sum: the others go on while at least t
remain.
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
    IterationRecord, IterativeOutcome, IterativePrivacy, Repair, SiteDecline, SiteDeparture,
    StopReason, TooFewAccepted,
};
use super::params::{IterativeConfigError, IterativeParams, NoiseMode};
use super::site::wrap_secagg;
use super::step::{AggregatorStep, Update};

/// Where the study is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IterAggregatorPhase {
    Inviting,
    Summing(Option<secagg::Phase>),
    /// A zero-sum repair run for the noise of iterations `from_iteration` on.
    Repairing {
        from_iteration: u32,
        round: Option<secagg::Phase>,
    },
    Iterating {
        iteration: u32,
    },
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
    /// Upfront mode: |U| of the SecureAgg run whose noise the iterations now carry.
    run_size: usize,
    /// Upfront mode: sites of U that left after releasing the running iteration (which can
    /// still complete); a repair starts after it.
    pending: Vec<SiteDeparture>,
    /// Every release received, per site: the |U| it was made under (for the accounting; a
    /// discarded release counts too, it was made).
    releases_by_site: BTreeMap<ParticipantId, Vec<usize>>,
    repairs: Vec<Repair>,
    /// The iteration whose releases the running repair discarded.
    discarding: Option<Discarding>,
    state: State<U::Report, U::State>,
}

/// An iteration whose releases a repair discarded: late ones are taken silently (their sites
/// recorded them) and the mirror ledger records one of them.
struct Discarding {
    iteration: u32,
    run_size: usize,
    mirrored: bool,
}

enum State<R, S> {
    Inviting {
        deadline: u64,
        waiting: BTreeSet<ParticipantId>,
    },
    Summing {
        secagg: Box<secagg::Aggregator>,
        /// The first iteration the run's noise covers (1 for the upfront run).
        from: u32,
        repair: bool,
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
            run_size: 0,
            pending: Vec::new(),
            releases_by_site: BTreeMap::new(),
            repairs: Vec::new(),
            discarding: None,
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

    /// The zero-sum repairs so far (the last one may be running: [`Repair::done`]).
    pub fn repairs(&self) -> &[Repair] {
        &self.repairs
    }

    /// The sites whose releases the next iteration averages (U of the last noise run).
    pub fn contributors(&self) -> &[ParticipantId] {
        &self.contributors
    }

    pub fn phase(&self) -> IterAggregatorPhase {
        match &self.state {
            State::Inviting { .. } => IterAggregatorPhase::Inviting,
            State::Summing { secagg, repair: false, .. } => {
                IterAggregatorPhase::Summing(secagg.phase())
            }
            State::Summing { secagg, from, repair: true } => {
                IterAggregatorPhase::Repairing { from_iteration: *from, round: secagg.phase() }
            }
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
            State::Summing { secagg, .. } => secagg.poll_timeout(),
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
            (State::Inviting { waiting, .. }, IterBody::Decline { reason, shortfall })
                if !answered =>
            {
                waiting.remove(&from);
                self.declined.push(SiteDecline { site: from, iteration: 0, reason, shortfall });
                Ok(self.advance_invitation(now_ms, false))
            }
            (State::Inviting { .. }, IterBody::Accept | IterBody::Decline { .. }) => {
                Err(IterativeError::Duplicate { from, kind: got })
            }
            (State::Summing { secagg, .. }, IterBody::SecAgg(message)) => {
                let out = secagg.handle(now_ms, from, &message)?;
                Ok(self.after_secagg(now_ms, out))
            }
            (
                State::Summing { secagg, from: first, repair },
                IterBody::Decline { reason, shortfall },
            ) => {
                let iteration = if *repair { *first } else { 0 };
                let out = secagg.handle_departure(now_ms, from)?;
                self.declined.push(SiteDecline { site: from, iteration, reason, shortfall });
                Ok(self.after_secagg(now_ms, out))
            }
            (State::Summing { .. }, IterBody::Release { iteration: j, .. }) => {
                self.late_release(from, j, got)
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
                self.releases_by_site.entry(from).or_default().push(self.run_size);
                Ok(self.close_iteration(now_ms, false))
            }
            (State::Iterating { iteration, .. }, IterBody::Decline { reason, shortfall }) => {
                let iteration = *iteration;
                self.declined.push(SiteDecline { site: from, iteration, reason, shortfall });
                Ok(self.lose_sites(now_ms, vec![(from, "declined".into())]))
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
            State::Summing { secagg, .. } => {
                let out = secagg.handle_departure(now_ms, who)?;
                Ok(self.after_secagg(now_ms, out))
            }
            State::Iterating { .. } => {
                Ok(self.lose_sites(now_ms, vec![(who, "left the room".into())]))
            }
            State::Finished(_) => Ok(Vec::new()),
        }
    }

    pub fn handle_timeout(&mut self, now_ms: u64) -> Result<Vec<Outgoing>, IterativeError> {
        match &mut self.state {
            State::Inviting { deadline, .. } if now_ms >= *deadline => {
                Ok(self.advance_invitation(now_ms, true))
            }
            State::Summing { secagg, .. } => {
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
            let declined = self.declined.iter().filter(|d| d.iteration == 0).count();
            let count = TooFewAccepted::of(self.params.sites.len(), live.len(), declined, t);
            return self.finish(now_ms, StopReason::TooFewAccepted(count));
        }
        if self.params.mode != NoiseMode::Upfront {
            self.contributors = live;
            return self.begin_iteration(now_ms, 1);
        }
        match self.start_noise_sum(now_ms, live, 1, false) {
            Ok(sends) => sends,
            Err(e) => self.finish(now_ms, StopReason::SecAgg { message: e.to_string() }),
        }
    }

    /// Starts the SecureAgg run among `sites` of the noise of iterations `from..=J_max`: the
    /// upfront run (`from` = 1) or a zero-sum repair. Masked inputs are not kept: the aggregate is
    /// all the study needs, and a kept input would outlive the run for nothing.
    fn start_noise_sum(
        &mut self,
        now_ms: u64,
        sites: Vec<ParticipantId>,
        from: u32,
        repair: bool,
    ) -> Result<Vec<Outgoing>, IterativeConfigError> {
        let format = self.params.format()?;
        let params = self.params.secagg_params_from(sites, format, from)?;
        let config = AggregatorConfig::new(params)
            .map_err(IterativeConfigError::SecAgg)?
            .with_round_timeout_ms(self.round_timeout_ms)
            .with_retain_masked_inputs(false);
        let (secagg, begin) = secagg::Aggregator::start(config, &mut self.rng, now_ms);
        self.state = State::Summing { secagg: Box::new(secagg), from, repair };
        Ok(wrap_secagg::<U::Task, U::State>(self.study, begin))
    }

    fn after_secagg(&mut self, now_ms: u64, out: Vec<Outgoing>) -> Vec<Outgoing> {
        let mut sends = wrap_secagg::<U::Task, U::State>(self.study, out);
        let State::Summing { secagg, from, repair } = &self.state else { return sends };
        let (from, repair) = (*from, *repair);
        let Some(end) = secagg.outcome().map(|o| o.cloned().map_err(Clone::clone)) else {
            return sends;
        };
        match end {
            Ok(aggregate) => {
                self.contributors = aggregate.survivors;
                self.run_size = self.contributors.len();
                self.discarding = None;
                if repair && let Some(last) = self.repairs.last_mut() {
                    // Sites the run dropped (SecureAgg: U′ shrinks, at least t) left too.
                    for site in last.contributors.clone() {
                        if !self.contributors.contains(&site) {
                            last.left.push(SiteDeparture {
                                site,
                                iteration: from,
                                cause: format!(
                                    "dropped out of the repair run before iteration {from}"
                                ),
                            });
                        }
                    }
                    last.contributors = self.contributors.clone();
                    last.sites_after = self.contributors.len();
                    last.done = true;
                }
                // Its ê is in the sum but it will never release: repair before iteration `from`.
                let gone: Vec<ParticipantId> = self
                    .contributors
                    .iter()
                    .copied()
                    .filter(|s| self.departed.contains(s))
                    .collect();
                if gone.is_empty() {
                    sends.extend(self.begin_iteration(now_ms, from));
                } else {
                    self.pending = gone
                        .into_iter()
                        .map(|site| SiteDeparture {
                            site,
                            iteration: from - 1,
                            cause: format!("left the room before iteration {from}"),
                        })
                        .collect();
                    sends.extend(self.start_repair(now_ms, from, Vec::new()));
                }
            }
            Err(error) if repair => {
                let completed = self.completed();
                let message = error.to_string();
                sends.extend(self.finish(
                    now_ms,
                    StopReason::RepairFailed { iteration: from, completed, message },
                ))
            }
            Err(error) => {
                sends.extend(self.finish(now_ms, StopReason::SecAgg { message: error.to_string() }))
            }
        }
        sends
    }

    // -- the repair ------------------------------------------------------------------------------

    /// The survivors run a fresh SecureAgg for the noise of iterations `from..=J_max`, or the
    /// study stops if fewer than t remain. The departures are in `self.pending`; `discarded`
    /// are the sites whose release of the iteration in flight will not be averaged.
    fn start_repair(
        &mut self,
        now_ms: u64,
        from: u32,
        discarded: Vec<ParticipantId>,
    ) -> Vec<Outgoing> {
        let left = std::mem::take(&mut self.pending);
        let gone: BTreeSet<ParticipantId> = left.iter().map(|d| d.site).collect();
        let survivors: Vec<ParticipantId> = self
            .contributors
            .iter()
            .copied()
            .filter(|s| !gone.contains(s) && !self.departed.contains(s))
            .collect();
        let before = self.run_size;
        let completed = self.completed();
        let need = self.params.threshold;
        if survivors.len() < need {
            let first = left.first().cloned().unwrap_or(SiteDeparture {
                site: 0,
                iteration: from,
                cause: "left".into(),
            });
            let reason = StopReason::ZeroSumBroken {
                site: first.site,
                iteration: from,
                completed,
                cause: first.cause,
                remaining: survivors.len(),
                need,
            };
            return self.finish(now_ms, reason);
        }
        self.contributors = survivors.clone();
        if discarded.iter().any(|s| survivors.contains(s)) {
            self.mirror_discarded();
        }
        let left_ids: Vec<ParticipantId> = left.iter().map(|d| d.site).collect();
        self.repairs.push(Repair {
            left,
            from_iteration: from,
            sites_before: before,
            sites_after: survivors.len(),
            contributors: survivors.clone(),
            discarded,
            done: false,
        });
        match self.start_noise_sum(now_ms, survivors.clone(), from, true) {
            Ok(begin) => {
                let announce =
                    IterBody::Repair { from_iteration: from, sites: survivors, left: left_ids };
                let mut out = vec![self.broadcast(announce)];
                out.extend(begin);
                out
            }
            Err(e) => self.finish(
                now_ms,
                StopReason::RepairFailed { iteration: from, completed, message: e.to_string() },
            ),
        }
    }

    /// A release that arrived during a repair run: of the discarded iteration from a survivor it
    /// is taken silently (the site recorded it; it is not averaged), anything else is refused.
    fn late_release(
        &mut self,
        from: ParticipantId,
        iteration: u32,
        got: &'static str,
    ) -> Result<Vec<Outgoing>, IterativeError> {
        let phase = self.phase_name();
        let Some(discarding) = self.discarding.as_ref().filter(|d| d.iteration == iteration) else {
            return Err(IterativeError::WrongPhase { phase, got, from });
        };
        let run_size = discarding.run_size;
        let Some(repair) = self.repairs.last_mut() else {
            return Err(IterativeError::WrongPhase { phase, got, from });
        };
        if repair.discarded.contains(&from) {
            return Err(IterativeError::Duplicate { from, kind: got });
        }
        if !repair.contributors.contains(&from) {
            return Err(IterativeError::WrongPhase { phase, got, from });
        }
        repair.discarded.push(from);
        self.releases_by_site.entry(from).or_default().push(run_size);
        self.mirror_discarded();
        Ok(Vec::new())
    }

    /// The mirror ledger records one discarded release (a survivor made it), once per repair.
    fn mirror_discarded(&mut self) {
        let Some(d) = self.discarding.as_mut().filter(|d| !d.mirrored) else { return };
        d.mirrored = true;
        let (iteration, run_size) = (d.iteration, d.run_size);
        let c_s = self.params.collusion_factor(run_size);
        let label = format!("iter/{iteration} (not averaged)");
        if let (Ok(event), Some(mirror)) = (self.params.event(label, 1, c_s), self.mirror.as_mut())
        {
            let _ = mirror.try_spend(Release::new("mirror", event, 0));
        }
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

    /// Contributing sites are gone (left, declined, or silent past the deadline), each with
    /// how.
    fn lose_sites(&mut self, now_ms: u64, lost: Vec<(ParticipantId, String)>) -> Vec<Outgoing> {
        let State::Iterating { iteration, waiting, releases, .. } = &mut self.state else {
            return Vec::new();
        };
        let iteration = *iteration;
        let lost: Vec<(ParticipantId, String)> = lost
            .into_iter()
            .filter(|(s, _)| {
                self.contributors.contains(s) && !self.pending.iter().any(|d| d.site == *s)
            })
            .collect();
        if lost.is_empty() {
            return Vec::new();
        }
        if self.params.mode != NoiseMode::Upfront {
            for (site, _) in &lost {
                waiting.remove(site);
            }
            self.contributors.retain(|s| !lost.iter().any(|(l, _)| l == s));
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
            return self.close_iteration(now_ms, false);
        }
        let mut all_released = true;
        for (site, cause) in lost {
            let released = !waiting.remove(&site);
            all_released &= released;
            let cause = if released {
                format!("{cause} after releasing iteration {iteration}")
            } else {
                format!("{cause} in iteration {iteration}")
            };
            self.pending.push(SiteDeparture { site, iteration, cause });
        }
        if all_released {
            // Their releases of this iteration are in: it can still complete; the repair
            // covers the next one on.
            return self.close_iteration(now_ms, false);
        }
        // This iteration cannot complete: the releases in are not averaged, it is redone.
        let discarded: Vec<ParticipantId> = std::mem::take(releases).into_keys().collect();
        self.discarding = Some(Discarding { iteration, run_size: self.run_size, mirrored: false });
        self.start_repair(now_ms, iteration, discarded)
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
            let silent = waiting.iter().map(|s| (*s, "went silent".to_string())).collect();
            return self.lose_sites(now_ms, silent);
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
        if !self.pending.is_empty() {
            return self.start_repair(now_ms, iteration + 1, Vec::new());
        }
        self.begin_iteration(now_ms, iteration + 1)
    }

    /// Records one iteration's release in the mirror ledger; its ε after.
    fn mirror_spend(&mut self, iteration: u32, contributors: usize) -> Option<f64> {
        let u = match self.params.mode {
            NoiseMode::Upfront => self.run_size,
            _ => contributors,
        };
        let c_s = self.params.collusion_factor(u);
        let label = match self.repairs.len() {
            0 => format!("iter/{iteration}"),
            r => format!("iter/{iteration} (repair {r})"),
        };
        let event = self.params.event(label, 1, c_s).ok()?;
        let mirror = self.mirror.as_mut()?;
        let release = Release::new("mirror", event, 0);
        mirror.try_spend(release).ok().map(|e| e.epsilon_after)
    }

    // -- the end ---------------------------------------------------------------------------------

    /// The last completed iteration (0 if none).
    fn completed(&self) -> u32 {
        self.records.last().map_or(0, |r| r.iteration)
    }

    fn finish(&mut self, now_ms: u64, stop: StopReason) -> Vec<Outgoing> {
        let iterations = self.completed();
        let privacy = self.privacy(iterations);
        let end =
            IterBody::End { iterations, state: self.current.clone(), reason: stop.to_string() };
        let outcome = IterativeOutcome {
            study: self.study,
            params: self.params.clone(),
            accepted: self.accepted.iter().copied().collect(),
            declined: self.declined.clone(),
            contributors: self.contributors.clone(),
            repairs: self.repairs.clone(),
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

    /// ε of the releases per site under each view; `None` when non-private or none was made.
    /// Upfront: per view, the site whose releases add up to the largest Σ c_S (each at the c_S
    /// of its own U: a departed site's at the old U, a survivor's after a repair at the new).
    fn privacy(&self, iterations: u32) -> Option<IterativePrivacy> {
        if !self.params.mode.is_private() {
            return None;
        }
        let (z, delta) = (self.params.noise_multiplier, self.params.delta);
        let views = match self.params.mode {
            NoiseMode::Upfront => {
                let alone = |u: usize| Collusion::new(u, 0).ok().map(|c| c_s_closed_form(&c));
                let full = |u: usize| Collusion::default_for(u).ok().map(|c| c_s_full_view(&c));
                let mut colluders: Vec<usize> = Vec::new();
                for u in self.releases_by_site.values().flatten() {
                    let c = Collusion::default_for(*u).ok()?.colluders();
                    if !colluders.contains(&c) {
                        colluders.push(c);
                    }
                }
                let s_c: Vec<String> = colluders.iter().map(usize::to_string).collect();
                let full_label = match s_c.len() {
                    0 | 1 => format!("full adversary view (S_C = {})", s_c.join("")),
                    _ => format!(
                        "full adversary view (S_C = {}: ⌈|U|/3⌉ − 1 of each noise run)",
                        s_c.join(", then ")
                    ),
                };
                vec![
                    self.worst_site_account("aggregator alone (S_C = 0)", &alone)?,
                    self.worst_site_account(&full_label, &full)?,
                ]
            }
            _ => {
                if iterations == 0 {
                    return None;
                }
                let j = iterations as usize;
                vec![account("aggregator (conventional releases)", z, j, delta, 1.0).ok()?]
            }
        };
        let worst = views.iter().max_by(|a, b| a.epsilon_exact.total_cmp(&b.epsilon_exact))?;
        let releases = match self.params.mode {
            NoiseMode::Upfront => {
                self.releases_by_site.values().map(Vec::len).max().unwrap_or(0) as u32
            }
            _ => iterations,
        };
        Some(IterativePrivacy {
            iterations,
            releases,
            delta,
            noise_multiplier: z,
            epsilon: worst.epsilon_exact,
            guarantee_view: worst.view.clone(),
            views,
        })
    }

    /// The view's account of the site whose releases add up to the largest Σ c_S: exact, since
    /// Gaussian releases at multiplier z compose through Σ c_S/z² (RDP and the exact Gaussian
    /// composition alike), so n releases at their mean c_S give the same ε.
    fn worst_site_account(
        &self,
        view: &str,
        c_s: &dyn Fn(usize) -> Option<f64>,
    ) -> Option<crate::nn::ViewAccount> {
        let mut worst: Option<(f64, usize, f64)> = None;
        for sizes in self.releases_by_site.values().filter(|v| !v.is_empty()) {
            let cs: Vec<f64> = sizes.iter().map(|u| c_s(*u)).collect::<Option<_>>()?;
            let sum: f64 = cs.iter().sum();
            let uniform = sizes.iter().all(|u| *u == sizes[0]);
            let mean = if uniform { cs[0] } else { sum / cs.len() as f64 };
            if worst.is_none_or(|(s, _, _)| sum > s) {
                worst = Some((sum, cs.len(), mean));
            }
        }
        let (_, n, mean) = worst?;
        account(view, self.params.noise_multiplier, n, self.params.delta, mean).ok()
    }

    fn broadcast(&self, body: IterBody<U::Task, U::State>) -> Outgoing {
        let kind = body.kind();
        Outgoing { to: To::All, kind, payload: IterMessage { study: self.study, body }.encode() }
    }

    fn phase_name(&self) -> &'static str {
        match &self.state {
            State::Inviting { .. } => "the invitation",
            State::Summing { repair: false, .. } => "the upfront SecureAgg run",
            State::Summing { repair: true, .. } => "a zero-sum repair run",
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
