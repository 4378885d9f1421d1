/*!
The site role of an iterative study: one per tab, holding the site's private data inside its
[`SiteStep`] and reaching its ledger through [`LedgerAccess`].

Upfront mode (spec cape-secagg-pca-djica §5): after accepting, the site draws ê_s for all J_max
iterations at once ([`draw_noise`], J_max × len values), sums it with the others in one SecureAgg
run, and splits e_s = ê_s − (1/|U|)Σê exactly ([`PendingRelease::zero_sum_noise`]). Iteration j
then releases f_s(θ_{j−1}) + e_s(j) + g_s with fresh g_s ~ N(0, τ²/|U|). Every release is recorded
in the ledger ([`gate::spend`]) in the call that returns it, so a site pays for the iterations it
actually released, each accounted with the full-view c_S of |U|.

A zero-sum repair ([`super::aggregator`], "the repair path"; spec cape-secagg-pca-djica §2,
Remark 4): on `iter/repair` a survivor previews the iterations still to come on its ledger, draws
fresh ê_s for iterations `from..=J_max`, sums them with the other survivors in a new SecureAgg
run and splits them among its U′ ([`NoiseRun`]). Its next release is of iteration `from` (again,
if it had released it: that release stays recorded and the redo is another, labelled
`iter/j (repair r)`), with g_s ~ N(0, τ²/|U′|) and accounted at the c_S of |U′|.
*/

use rand_core::SeedableRng;
use rand_distr::{Distribution, StandardNormal};

use crate::accountant::ledger::{LedgerEntry, Shortfall};
use crate::accountant::{Ledger, LedgerError, Release};
use crate::cape::{NoiseSum, PendingRelease, SiteNoise, draw_noise};
use crate::codec;
use crate::driver::{Machine, Outgoing};
use crate::rng::CapeRng;
use crate::secagg::messages::{Body, SecAggMessage};
use crate::secagg::{self, Encoding, RoundError, SiteInput};
use crate::study::StudyId;
use crate::study::gate::{self, LedgerAccess};
use crate::wire::{ParticipantId, To};

use super::error::IterativeError;
use super::messages::{IterBody, IterMessage, kind};
use super::params::{IterativeParams, NoiseMode};
use super::step::{SiteStep, StepShape};

/// A site's local choices (not announced).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiteSettings {
    /// Whether the site takes part in [`NoiseMode::NonPrivate`] comparison runs, which release
    /// its exact statistic. Off by default: a site declines them.
    pub allow_nonprivate: bool,
}

/// Where a site is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IterSitePhase {
    AwaitingStart,
    /// Accepted; waits for the upfront SecureAgg run or the first state.
    Accepted,
    /// Inside the upfront SecureAgg run.
    Summing(secagg::SitePhase),
    /// In a zero-sum repair run for the noise of iterations `from_iteration` on (`round`: the
    /// SecureAgg phase, once the run began).
    Repairing {
        from_iteration: u32,
        round: Option<secagg::SitePhase>,
    },
    /// Released iteration `released` (0: none yet); waits for the next state.
    Iterating {
        released: u32,
    },
    /// Its noise is not in the last noise sum (it missed a SecureAgg round, or the aggregator
    /// counts it as gone): it waits for the end.
    Excluded,
    Done,
    Declined,
    NotInvited,
    Aborted,
}

/// What a site did in one iteration; kept locally (only `release` was sent).
#[derive(Clone, Debug, PartialEq)]
pub struct SiteIteration {
    pub iteration: u32,
    pub statistic: Vec<f64>,
    /// e_s of this iteration (upfront mode).
    pub zero_sum_noise: Option<Vec<f64>>,
    pub release: Vec<f64>,
    /// Which noise run e_s came from: 0 the upfront run, r the r-th repair (0 when not upfront).
    pub noise_run: usize,
}

/// The zero-sum noise of one SecureAgg run (the upfront run or a repair), kept by the site.
#[derive(Clone, Debug, PartialEq)]
pub struct NoiseRun {
    /// The first iteration it covers: block k of `noise` is iteration `from_iteration + k`.
    pub from_iteration: u32,
    /// U of the run.
    pub survivors: Vec<ParticipantId>,
    /// e_s of iterations `from_iteration..=J_max`: Σ_{s∈U} e_s = 0 exactly in every coordinate.
    pub noise: Vec<f64>,
}

/// The site role. Call order as for [`crate::study::mean::MeanSite`]: create it when `iter/start`
/// arrives, feed it every message and departure, send what it returns, persist the ledger when
/// [`Self::spent`] grows. The site has no deadlines.
pub struct IterativeSite<C: SiteStep, L: LedgerAccess = Ledger> {
    me: ParticipantId,
    aggregator: ParticipantId,
    step: C,
    ledger: L,
    rng: CapeRng,
    settings: SiteSettings,
    study: Option<StudyId>,
    params: Option<IterativeParams>,
    shape: Option<StepShape>,
    /// The noise runs, in order: the upfront run, then each repair it took part in.
    runs: Vec<NoiseRun>,
    /// The iteration whose state the site expects next.
    next: u32,
    history: Vec<SiteIteration>,
    spent: Vec<LedgerEntry>,
    final_state: Option<C::State>,
    state: State,
    /// Why the ledger refused, when the site declined for its budget: the least budget it needs.
    shortfall: Option<Shortfall>,
}

enum State {
    AwaitingStart,
    Accepted,
    Summing {
        inner: Box<secagg::Site>,
        pending: PendingRelease,
        from: u32,
    },
    /// Waits for the repair run's `secagg/begin`.
    Repairing {
        from: u32,
    },
    Iterating,
    Excluded,
    Done {
        reason: String,
    },
    Declined(String),
    NotInvited,
    Aborted(String),
}

impl<C: SiteStep, L: LedgerAccess> IterativeSite<C, L> {
    pub fn new(
        me: ParticipantId,
        aggregator: ParticipantId,
        step: C,
        ledger: L,
        rng: CapeRng,
        settings: SiteSettings,
    ) -> Self {
        Self {
            me,
            aggregator,
            step,
            ledger,
            rng,
            settings,
            study: None,
            params: None,
            shape: None,
            runs: Vec::new(),
            next: 1,
            history: Vec::new(),
            spent: Vec::new(),
            final_state: None,
            shortfall: None,
            state: State::AwaitingStart,
        }
    }

    pub fn id(&self) -> ParticipantId {
        self.me
    }

    pub fn study(&self) -> Option<StudyId> {
        self.study
    }

    pub fn params(&self) -> Option<&IterativeParams> {
        self.params.as_ref()
    }

    pub fn step(&self) -> &C {
        &self.step
    }

    /// U of the last SecureAgg run of the noise (the upfront run or a repair), once known.
    pub fn survivors(&self) -> Option<&[ParticipantId]> {
        self.runs.last().map(|r| r.survivors.as_slice())
    }

    /// e_s of the last noise run (without a repair: all J_max iterations, iteration j the j-th
    /// block of `len` values), once its sum came back: Σ_{s∈U} e_s = 0 exactly in every
    /// coordinate.
    pub fn zero_sum_noise(&self) -> Option<&[f64]> {
        self.runs.last().map(|r| r.noise.as_slice())
    }

    /// Every noise run the site took part in, the upfront one first.
    pub fn noise_runs(&self) -> &[NoiseRun] {
        &self.runs
    }

    /// The iterations this site released, in order.
    pub fn iterations(&self) -> &[SiteIteration] {
        &self.history
    }

    /// The ledger entries this study recorded, in order.
    pub fn spent(&self) -> &[LedgerEntry] {
        &self.spent
    }

    /// The state the study reached, from `iter/end`.
    pub fn final_state(&self) -> Option<&C::State> {
        self.final_state.as_ref()
    }

    pub fn ledger_mut(&mut self) -> &mut L {
        &mut self.ledger
    }

    pub fn phase(&self) -> IterSitePhase {
        match &self.state {
            State::AwaitingStart => IterSitePhase::AwaitingStart,
            State::Accepted => IterSitePhase::Accepted,
            State::Summing { inner, from, .. } if self.runs.is_empty() && *from == 1 => {
                IterSitePhase::Summing(inner.phase())
            }
            State::Summing { inner, from, .. } => {
                IterSitePhase::Repairing { from_iteration: *from, round: Some(inner.phase()) }
            }
            State::Repairing { from } => {
                IterSitePhase::Repairing { from_iteration: *from, round: None }
            }
            State::Iterating => IterSitePhase::Iterating { released: self.released() },
            State::Excluded => IterSitePhase::Excluded,
            State::Done { .. } => IterSitePhase::Done,
            State::Declined(_) => IterSitePhase::Declined,
            State::NotInvited => IterSitePhase::NotInvited,
            State::Aborted(_) => IterSitePhase::Aborted,
        }
    }

    /// Why the site's part ended (the end's reason, its decline, or the abort), once it has.
    pub fn end_reason(&self) -> Option<&str> {
        match &self.state {
            State::Done { reason } | State::Declined(reason) | State::Aborted(reason) => {
                Some(reason)
            }
            State::NotInvited => Some("not invited"),
            _ => None,
        }
    }

    /// When the site declined for its budget: the least budget that would have admitted the
    /// study (nothing was recorded or sent).
    pub fn shortfall(&self) -> Option<&Shortfall> {
        self.shortfall.as_ref()
    }

    pub fn is_finished(&self) -> bool {
        matches!(
            self.state,
            State::Done { .. } | State::Declined(_) | State::NotInvited | State::Aborted(_)
        )
    }

    fn released(&self) -> u32 {
        self.history.last().map_or(0, |h| h.iteration)
    }

    pub fn handle(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, IterativeError> {
        let msg = IterMessage::<C::Task, C::State>::decode(payload)?;
        let got = msg.body.kind();
        if from != self.aggregator {
            return Err(IterativeError::UnknownSender { from, kind: got });
        }
        if let Some(study) = self.study
            && study != msg.study
        {
            return Err(IterativeError::WrongStudy { expected: study, got: msg.study });
        }
        if self.is_finished() {
            // Broadcasts keep reaching a site that is out: nobody's fault.
            return match msg.body {
                IterBody::SecAgg(_)
                | IterBody::State { .. }
                | IterBody::End { .. }
                | IterBody::Repair { .. } => Ok(Vec::new()),
                _ => Err(IterativeError::AlreadyOver { from, kind: got }),
            };
        }
        match msg.body {
            IterBody::Start { computation, params, task } => {
                if computation != C::NAME {
                    self.study = Some(msg.study);
                    return Ok(self.decline(format!(
                        "this site computes {}, the study asks for {computation}",
                        C::NAME
                    )));
                }
                self.on_start(now_ms, msg.study, params, task)
            }
            IterBody::SecAgg(message) => self.on_secagg(now_ms, &message),
            IterBody::State { iteration, state } => self.on_state(now_ms, iteration, state),
            IterBody::Repair { from_iteration, sites, .. } => {
                self.on_repair(now_ms, from_iteration, &sites)
            }
            IterBody::End { state, reason, .. } if !matches!(self.state, State::AwaitingStart) => {
                self.final_state = Some(state);
                self.state = State::Done { reason };
                Ok(Vec::new())
            }
            body => {
                Err(IterativeError::WrongPhase { phase: self.phase_name(), got: body.kind(), from })
            }
        }
    }

    pub fn handle_departure(
        &mut self,
        now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, IterativeError> {
        if let State::Summing { inner, .. } = &mut self.state {
            inner.handle_departure(now_ms, who)?;
        }
        if who == self.aggregator && !self.is_finished() {
            self.state = State::Aborted(format!("the aggregator (participant {who}) left"));
        }
        Ok(Vec::new())
    }

    // -- iter/start ------------------------------------------------------------------------------

    fn on_start(
        &mut self,
        now_ms: u64,
        study: StudyId,
        params: IterativeParams,
        task: C::Task,
    ) -> Result<Vec<Outgoing>, IterativeError> {
        if !matches!(self.state, State::AwaitingStart) {
            return Err(IterativeError::Duplicate { from: self.aggregator, kind: kind::START });
        }
        self.study = Some(study);
        if !params.is_invited(self.me) {
            self.state = State::NotInvited;
            return Err(IterativeError::NotInvited { me: self.me, study });
        }
        if let Err(e) = params.validate() {
            return Ok(self.decline(format!("it cannot accept the study's parameters: {e}")));
        }
        if params.mode == NoiseMode::NonPrivate && !self.settings.allow_nonprivate {
            return Ok(self.decline(
                "it does not take part in non-private runs (they release the exact statistic)"
                    .into(),
            ));
        }
        let shape = match self.step.prepare(&task, params.mode.is_private()) {
            Ok(shape) => shape,
            Err(e) => return Ok(self.decline(format!("its data does not fit the study: {e}"))),
        };
        if shape.len != params.statistic_len {
            return Ok(self.decline(format!(
                "its statistic has {} values, the study announces {}",
                shape.len, params.statistic_len
            )));
        }
        // The noise is calibrated to the public Δ: a more sensitive statistic would be under-noised.
        let within = shape.sensitivity.is_finite() && shape.sensitivity <= params.sensitivity;
        if params.mode.is_private() && !within {
            return Ok(self.decline(format!(
                "its statistic's sensitivity {} exceeds the Δ = {} the noise is calibrated for",
                shape.sensitivity, params.sensitivity
            )));
        }
        self.shape = Some(shape);
        let worst = params.worst_case_collusion_factor();
        self.params = Some(params);
        if let Err(e) = self.preview(now_ms, worst) {
            return Ok(self.decline_for_budget(e));
        }
        self.state = State::Accepted;
        Ok(vec![self.to_aggregator(IterBody::Accept)])
    }

    /// Whether the ledger can afford all J_max releases under collusion factor `c_s`, and those
    /// of every later stage the study announced ([`IterativeParams::planned_events`]).
    fn preview(&mut self, now_ms: u64, c_s: f64) -> Result<(), LedgerError> {
        self.preview_from(now_ms, 1, c_s)
    }

    /// Whether the ledger can afford the releases of iterations `from..=J_max` under collusion
    /// factor `c_s`, and those of the later stages.
    fn preview_from(&mut self, now_ms: u64, from: u32, c_s: f64) -> Result<(), LedgerError> {
        let params = self.params.as_ref().expect("set before the preview");
        let events = params.planned_events(from, c_s)?;
        if events.is_empty() {
            return Ok(());
        }
        let study = ledger_study_name(self.study.expect("started"));
        let time_ms = self.ledger.with_ledger(|l| gate::release_time(l, now_ms));
        let releases: Vec<Release> =
            events.into_iter().map(|e| Release::new(study.clone(), e, time_ms)).collect();
        self.ledger.with_ledger(|l| gate::preview(l, &releases)).map(|_| ())
    }

    // -- the upfront SecureAgg run ---------------------------------------------------------------

    fn on_secagg(&mut self, now_ms: u64, message: &[u8]) -> Result<Vec<Outgoing>, IterativeError> {
        let from = self.aggregator;
        let got = super::messages::kind_of_secagg(message);
        match &mut self.state {
            State::Summing { inner, .. } => {
                let result = inner.handle(now_ms, from, message);
                self.after_inner(result)
            }
            State::Accepted
                if self.params.as_ref().is_some_and(|p| p.mode == NoiseMode::Upfront) =>
            {
                self.begin_noise_run(now_ms, message, 1)
            }
            State::Repairing { from } => {
                let from = *from;
                self.begin_noise_run(now_ms, message, from)
            }
            // A repair run among the others.
            State::Excluded => Ok(Vec::new()),
            _ => Err(IterativeError::WrongPhase { phase: self.phase_name(), got, from }),
        }
    }

    /// `iter/repair`: sites of U left; the survivors named in `sites` sum fresh noise for
    /// iterations `from..=J_max`.
    fn on_repair(
        &mut self,
        now_ms: u64,
        from: u32,
        sites: &[ParticipantId],
    ) -> Result<Vec<Outgoing>, IterativeError> {
        let aggregator = self.aggregator;
        let params = self.params.clone();
        let upfront = params.as_ref().is_some_and(|p| p.mode == NoiseMode::Upfront);
        match self.state {
            State::Excluded => return Ok(Vec::new()),
            State::Iterating if upfront => {}
            _ => {
                return Err(IterativeError::WrongPhase {
                    phase: self.phase_name(),
                    got: kind::REPAIR,
                    from: aggregator,
                });
            }
        }
        let params = params.expect("iterating, so joined");
        if !sites.contains(&self.me) {
            // The aggregator counts this site as gone (e.g. silent past a deadline).
            self.state = State::Excluded;
            return Ok(Vec::new());
        }
        // The next iteration, or the one just released (redone).
        let fits = from >= 1
            && from <= params.max_iterations
            && (from == self.next || from + 1 == self.next);
        let stranger = sites.iter().find(|s| !params.is_invited(**s));
        if !fits || stranger.is_some() || sites.len() < params.threshold {
            let detail = match stranger {
                Some(s) => format!("site {s} is not invited to the study"),
                None if !fits => format!(
                    "a repair from iteration {from}, but this site is at iteration {}",
                    self.next
                ),
                None => format!("{} sites, fewer than t = {}", sites.len(), params.threshold),
            };
            self.state = State::Aborted(format!("the zero-sum repair is inconsistent: {detail}"));
            return Err(IterativeError::Inconsistent {
                from: aggregator,
                kind: kind::REPAIR,
                detail,
            });
        }
        let worst = params.worst_collusion_factor_up_to(sites.len());
        if let Err(e) = self.preview_from(now_ms, from, worst) {
            return Ok(self.decline_for_budget(e));
        }
        self.state = State::Repairing { from };
        Ok(Vec::new())
    }

    /// The `secagg/begin` of a noise run for iterations `from..=J_max` (1: the upfront run).
    fn begin_noise_run(
        &mut self,
        now_ms: u64,
        message: &[u8],
        from: u32,
    ) -> Result<Vec<Outgoing>, IterativeError> {
        let sender = self.aggregator;
        let got = super::messages::kind_of_secagg(message);
        let msg: SecAggMessage = codec::decode("secagg", message)?;
        let Body::Begin(secagg_params) = &msg.body else {
            return Err(IterativeError::WrongPhase { phase: self.phase_name(), got, from: sender });
        };
        let params = self.params.as_ref().expect("accepted, so joined");
        if !secagg_params.is_invited(self.me) {
            self.state = State::Excluded;
            return Ok(Vec::new());
        }
        let format = params.format().expect("validated on start");
        let detail = if secagg_params.threshold != params.threshold {
            Some(format!("threshold {} instead of {}", secagg_params.threshold, params.threshold))
        } else if secagg_params.vector_len != params.noise_len_from(from) {
            Some(format!(
                "vectors of length {} instead of (J_max − {}) × len = {}",
                secagg_params.vector_len,
                from - 1,
                params.noise_len_from(from)
            ))
        } else if secagg_params.encoding != Encoding::Fixed(format) {
            Some(format!(
                "encoding {:?} instead of the study's noise format",
                secagg_params.encoding
            ))
        } else {
            let stranger = secagg_params.sites.iter().find(|s| !params.is_invited(**s));
            stranger.map(|s| format!("site {s} is not invited to the study"))
        };
        if let Some(detail) = detail {
            self.state = State::Aborted(format!("the SecureAgg run is inconsistent: {detail}"));
            return Err(IterativeError::Inconsistent { from: sender, kind: got, detail });
        }
        let noise = SiteNoise::Symmetric { local_sd: params.local_sd() };
        let len = params.noise_len_from(from);
        let drawn = draw_noise(self.me, &noise, &format, len, &mut self.rng);
        let (share, pending) = match drawn {
            Ok(drawn) => drawn,
            Err(e) => return Ok(self.decline(format!("it could not draw its noise: {e}"))),
        };
        let inner_rng = CapeRng::from_rng(&mut self.rng);
        let inner = secagg::Site::new(self.me, sender, SiteInput::Ring(share.ring), inner_rng)
            .map_err(RoundError::UnacceptableParams)?;
        self.state = State::Summing { inner: Box::new(inner), pending, from };
        let State::Summing { inner, .. } = &mut self.state else { unreachable!("just set") };
        let result = inner.handle(now_ms, sender, message);
        self.after_inner(result)
    }

    fn after_inner(
        &mut self,
        result: Result<Vec<Outgoing>, RoundError>,
    ) -> Result<Vec<Outgoing>, IterativeError> {
        let State::Summing { inner, pending, from } = &self.state else {
            unreachable!("called while summing")
        };
        let from = *from;
        let end = inner.outcome().map(|o| o.cloned().map_err(Clone::clone));
        let out = match result {
            Ok(out) => self.wrap(out),
            Err(error) => {
                if let Some(Err(e)) = end {
                    self.state =
                        State::Aborted(format!("the SecureAgg run of the noise ended: {e}"));
                }
                return Err(error.into());
            }
        };
        match end {
            None => Ok(out),
            Some(Err(error)) => {
                self.state =
                    State::Aborted(format!("the SecureAgg run of the noise ended: {error}"));
                Ok(out)
            }
            Some(Ok(sum)) if !sum.included => {
                self.state = State::Excluded;
                Ok(out)
            }
            Some(Ok(sum)) => {
                let noise_sum = NoiseSum { contributors: sum.survivors.clone(), ring_sum: sum.sum };
                match pending.zero_sum_noise(&noise_sum) {
                    Ok(noise) => {
                        self.runs.push(NoiseRun {
                            from_iteration: from,
                            survivors: sum.survivors,
                            noise,
                        });
                        self.next = from;
                        self.state = State::Iterating;
                        Ok(out)
                    }
                    Err(e) => {
                        let mut out = out;
                        out.extend(self.decline(format!("the noise sum is unusable: {e}")));
                        Ok(out)
                    }
                }
            }
        }
    }

    // -- the iterations --------------------------------------------------------------------------

    fn on_state(
        &mut self,
        now_ms: u64,
        iteration: u32,
        state: C::State,
    ) -> Result<Vec<Outgoing>, IterativeError> {
        let from = self.aggregator;
        let params = self.params.clone().expect("joined before any state");
        let ready = match self.state {
            State::Iterating => true,
            State::Accepted => params.mode != NoiseMode::Upfront,
            State::Excluded => return Ok(Vec::new()),
            _ => false,
        };
        if !ready {
            return Err(IterativeError::WrongPhase {
                phase: self.phase_name(),
                got: kind::STATE,
                from,
            });
        }
        let expected = self.next;
        if iteration != expected {
            return Err(IterativeError::WrongIteration {
                from,
                kind: kind::STATE,
                expected,
                got: iteration,
            });
        }
        if iteration > params.max_iterations {
            // An aggregator asking for more than the study announced (and the ledger previewed).
            return Ok(self.decline(format!(
                "the aggregator asked for iteration {iteration}, but the study announced at most \
                 J_max = {}",
                params.max_iterations
            )));
        }
        self.state = State::Iterating;
        let statistic = match self.step.statistic(&state, iteration) {
            Ok(s) if s.len() == params.statistic_len && s.iter().all(|v| v.is_finite()) => s,
            Ok(s) => {
                return Ok(self.decline(format!(
                    "its statistic of iteration {iteration} has {} values or a non-finite one \
                     (the study needs {} finite values)",
                    s.len(),
                    params.statistic_len
                )));
            }
            Err(e) => {
                return Ok(self.decline(format!("iteration {iteration} failed at the site: {e}")));
            }
        };
        let tau = params.local_sd();
        let (zero_sum, release) = match params.mode {
            NoiseMode::NonPrivate => (None, statistic.clone()),
            NoiseMode::Conventional => (None, self.add_gaussian(&statistic, tau)),
            NoiseMode::Upfront => {
                let run = self.runs.last().expect("iterating after the sum");
                let len = params.statistic_len;
                let start = (iteration - run.from_iteration) as usize * len;
                let e: Vec<f64> = run.noise[start..start + len].to_vec();
                let g_sd = tau / (run.survivors.len() as f64).sqrt();
                let with_e: Vec<f64> = statistic.iter().zip(&e).map(|(f, e)| f + e).collect();
                (Some(e), self.add_gaussian(&with_e, g_sd))
            }
        };
        // The gate: record first, send only what was recorded.
        if params.mode.is_private() {
            let u = self.runs.last().map_or(params.sites.len(), |r| r.survivors.len());
            let c_s = params.collusion_factor(u);
            let study = ledger_study_name(self.study.expect("started"));
            let time_ms = self.ledger.with_ledger(|l| gate::release_time(l, now_ms));
            let label = match self.runs.len() {
                0 | 1 => format!("iter/{iteration}"),
                n => format!("iter/{iteration} (repair {})", n - 1),
            };
            let recorded =
                params.event(label, 1, c_s).map_err(LedgerError::from).and_then(|event| {
                    let release = Release::new(study, event, time_ms);
                    self.ledger.with_ledger(|l| gate::spend(l, vec![release]))
                });
            match recorded {
                Ok(entries) => self.spent.extend(entries),
                Err(e) => return Ok(self.decline(e.to_string())),
            }
        }
        self.history.push(SiteIteration {
            iteration,
            statistic,
            zero_sum_noise: zero_sum,
            release: release.clone(),
            noise_run: self.runs.len().saturating_sub(1),
        });
        self.next = iteration + 1;
        Ok(vec![self.to_aggregator(IterBody::Release { iteration, values: release })])
    }

    fn add_gaussian(&mut self, values: &[f64], sd: f64) -> Vec<f64> {
        values
            .iter()
            .map(|v| {
                let z: f64 = StandardNormal.sample(&mut self.rng);
                v + sd * z
            })
            .collect()
    }

    // -- helpers ---------------------------------------------------------------------------------

    fn decline(&mut self, reason: String) -> Vec<Outgoing> {
        self.decline_with(reason, None)
    }

    /// Declines for the ledger's refusal, telling the aggregator the least budget that admits it.
    fn decline_for_budget(&mut self, e: LedgerError) -> Vec<Outgoing> {
        let shortfall = e.shortfall();
        self.decline_with(e.to_string(), shortfall)
    }

    fn decline_with(&mut self, reason: String, shortfall: Option<Shortfall>) -> Vec<Outgoing> {
        self.shortfall = shortfall;
        let out = self.to_aggregator(IterBody::Decline { reason: reason.clone(), shortfall });
        self.state = State::Declined(reason);
        vec![out]
    }

    fn to_aggregator(&self, body: IterBody<C::Task, C::State>) -> Outgoing {
        let kind = body.kind();
        let study = self.study.expect("a study is bound before the site sends");
        Outgoing {
            to: To::One(self.aggregator),
            kind,
            payload: IterMessage { study, body }.encode(),
        }
    }

    fn wrap(&self, out: Vec<Outgoing>) -> Vec<Outgoing> {
        let study = self.study.expect("a study is bound before the site sends");
        wrap_secagg::<C::Task, C::State>(study, out)
    }

    fn phase_name(&self) -> &'static str {
        match &self.state {
            State::AwaitingStart => "waiting for iter/start",
            State::Accepted => "waiting for the first round",
            State::Summing { .. } => "in a SecureAgg run of the noise",
            State::Repairing { .. } => "waiting for the zero-sum repair run",
            State::Iterating => "iterating",
            State::Excluded => "excluded, waiting for the end",
            _ => "after the end of the study",
        }
    }
}

/// The study name under which a site's ledger records the releases of iterative study `study`.
pub fn ledger_study_name(study: StudyId) -> String {
    format!("iterative/{}", study.to_hex())
}

/// Wraps SecureAgg messages in the study's envelope, keeping their kinds.
pub(super) fn wrap_secagg<T, S>(study: StudyId, out: Vec<Outgoing>) -> Vec<Outgoing>
where
    T: serde::Serialize + for<'de> serde::Deserialize<'de>,
    S: serde::Serialize + for<'de> serde::Deserialize<'de>,
{
    out.into_iter()
        .map(|o| Outgoing {
            to: o.to,
            kind: o.kind,
            payload: IterMessage::<T, S> { study, body: IterBody::SecAgg(o.payload) }.encode(),
        })
        .collect()
}

impl<C: SiteStep, L: LedgerAccess> Machine for IterativeSite<C, L> {
    type Error = IterativeError;

    fn handle(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, IterativeError> {
        IterativeSite::handle(self, now_ms, from, payload)
    }

    fn handle_departure(
        &mut self,
        now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, IterativeError> {
        IterativeSite::handle_departure(self, now_ms, who)
    }

    fn is_finished(&self) -> bool {
        IterativeSite::is_finished(self)
    }
}
