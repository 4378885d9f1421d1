/*!
The site role of the private-mean study: one per tab, holding the site's rows and reaching its
ledger through [`LedgerAccess`].

Per attempt the site draws fresh ê_s (CAPE Algorithm 1 step 1, [`draw_noise`]), runs a SecureAgg
[`secagg::Site`] over its quantised encoding, and when the noise sum over U arrives releases
â_s = f(x_s) + e_s + g_s ([`PendingRelease::release`]) — but only after the ledger has recorded
the release ([`gate::spend`]), in the same call that returns the message.
*/

use rand_core::SeedableRng;

use crate::accountant::ledger::LedgerEntry;
use crate::accountant::{Event, Ledger, LedgerError, Mechanism, Release};
use crate::cape::conventional::conventional_release;
use crate::cape::{NoiseSum, PendingRelease, SiteNoise, draw_noise};
use crate::codec;
use crate::driver::{Machine, Outgoing};
use crate::rng::CapeRng;
use crate::secagg::messages::{Body, SecAggMessage, kind as secagg_kind};
use crate::secagg::{self, Encoding, RoundError, SiteInput, SumResult};
use crate::study::StudyId;
use crate::study::gate::{self, LedgerAccess};
use crate::wire::{ParticipantId, To};

use super::error::StudyError;
use super::messages::{DeclineReason, MeanBody, MeanMessage, PublicResult, ReleaseMessage, kind};
use super::params::{Masking, NoisePlan, StudyParams, collusion_factor};

/// Where a site is, for the tab's UI, drivers and scripted dropouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SitePhase {
    AwaitingStart,
    /// Accepted the study; waits for the first SecureAgg round.
    Accepted,
    /// Inside attempt `attempt`'s SecureAgg.
    Summing {
        attempt: u32,
        secagg: secagg::SitePhase,
    },
    /// Sent its release of `attempt`; waits for the result (or a re-run).
    Released {
        attempt: u32,
    },
    /// Not in U of `attempt` (it missed a SecureAgg round); waits for the result.
    Excluded {
        attempt: u32,
    },
    Done,
    Declined,
    NotInvited,
    Aborted,
}

/// Why a site stopped without a result.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SiteAbort {
    #[error("the aggregator aborted the study: {reason}")]
    ByAggregator { reason: String },
    #[error("the aggregator (participant {aggregator}) left the room")]
    AggregatorLeft { aggregator: ParticipantId },
    #[error("SecureAgg ended in attempt {attempt}: {error}")]
    SecAgg { attempt: u32, error: RoundError },
    #[error("the aggregator's SecureAgg round does not match the study: {detail}")]
    Inconsistent { detail: String },
}

/// How a site's study ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SiteOutcome<'a> {
    Done(&'a PublicResult),
    Declined(&'a DeclineReason),
    NotInvited,
    Aborted(&'a SiteAbort),
}

/// What the site did in one attempt. Kept locally for display and tests; none of it is sent
/// except `release` and `conventional`.
#[derive(Clone, Debug, PartialEq)]
pub struct SiteAttempt {
    pub attempt: u32,
    /// ê_s as it entered the sum (after stochastic rounding).
    pub quantised_noise: Vec<f64>,
    /// U of the noise sum, once known.
    pub survivors: Vec<ParticipantId>,
    /// e_s = ê_s − (1/|U|)Σê: Σ_{s∈U} e_s = 0 exactly (cape::zero_sum).
    pub zero_sum_noise: Option<Vec<f64>>,
    /// â_s as sent.
    pub release: Option<Vec<f64>>,
    /// The conventional message, if it went with this release.
    pub conventional: Option<Vec<f64>>,
}

/// The site role of the private-mean study.
///
/// One `MeanSite` runs one study: create it when a `mean/start` envelope arrives from the
/// dashboard (then feed it that envelope), and a new one for the next study.
///
/// Call order (quinn style; [`Machine`] is the same contract):
/// 1. [`MeanSite::new`] with the site's and the aggregator's ids, the rows, the ledger access and a
///    generator ([`crate::rng::Seed::Os`] in a browser).
/// 2. For each transport event: a message → [`MeanSite::handle`]; a peer left →
///    [`MeanSite::handle_departure`]. Send whatever they return, in order. The site has no
///    deadlines: the aggregator decides when rounds close.
/// 3. After any call, [`MeanSite::spent`] lists the ledger entries this study recorded so far:
///    persist the ledger when it grows. Stop when [`MeanSite::outcome`] is `Some`.
///
/// Privacy gate: on `mean/start` and at the start of each attempt the site previews the releases
/// it would make on its ledger and declines (sending only `mean/decline`) if they do not fit; the
/// release itself is recorded with `try_spend` in the call that returns `mean/release`, and not
/// returned if the ledger refuses.
pub struct MeanSite<L: LedgerAccess = Ledger> {
    me: ParticipantId,
    aggregator: ParticipantId,
    rows: Vec<Vec<f64>>,
    ledger: L,
    rng: CapeRng,
    study: Option<StudyId>,
    joined: Option<Joined>,
    /// The parameters the aggregator announced, kept even when the site declined them (its UI
    /// checks a table loaded later against them).
    announced: Option<StudyParams>,
    conventional_sent: bool,
    history: Vec<SiteAttempt>,
    spent: Vec<LedgerEntry>,
    state: State,
}

struct Joined {
    params: StudyParams,
    plan: NoisePlan,
    /// f(x_s): the mean of the rows.
    value: Vec<f64>,
}

enum State {
    AwaitingStart,
    Accepted,
    Summing { attempt: u32, inner: Box<secagg::Site>, pending: PendingRelease },
    Waiting { attempt: u32, released: bool },
    Done(PublicResult),
    Declined(DeclineReason),
    NotInvited,
    Aborted(SiteAbort),
}

impl<L: LedgerAccess> MeanSite<L> {
    /// A site `me` holding `rows` (checked against the study when it starts; bad rows make the
    /// site decline with the reason), answering `aggregator`.
    pub fn new(
        me: ParticipantId,
        aggregator: ParticipantId,
        rows: Vec<Vec<f64>>,
        ledger: L,
        rng: CapeRng,
    ) -> Self {
        Self {
            me,
            aggregator,
            rows,
            ledger,
            rng,
            study: None,
            joined: None,
            announced: None,
            conventional_sent: false,
            history: Vec::new(),
            spent: Vec::new(),
            state: State::AwaitingStart,
        }
    }

    pub fn id(&self) -> ParticipantId {
        self.me
    }

    pub fn aggregator(&self) -> ParticipantId {
        self.aggregator
    }

    pub fn study(&self) -> Option<StudyId> {
        self.study
    }

    pub fn params(&self) -> Option<&StudyParams> {
        self.joined.as_ref().map(|j| &j.params)
    }

    /// The study's parameters as announced, whether or not this site accepted them.
    pub fn announced_params(&self) -> Option<&StudyParams> {
        self.announced.as_ref()
    }

    pub fn noise_plan(&self) -> Option<&NoisePlan> {
        self.joined.as_ref().map(|j| &j.plan)
    }

    /// f(x_s), once the rows passed the study's checks.
    pub fn local_value(&self) -> Option<&[f64]> {
        self.joined.as_ref().map(|j| j.value.as_slice())
    }

    /// The attempts this site took part in, in order.
    pub fn attempts(&self) -> &[SiteAttempt] {
        &self.history
    }

    /// The current (or last) attempt, 0 before the first.
    pub fn attempt(&self) -> u32 {
        self.history.last().map_or(0, |a| a.attempt)
    }

    /// g_s of `attempt`: the fresh noise N(0, τ²/|U|) in its release, â_s − f(x_s) − e_s, for a
    /// tab to show beside e_s and â_s (spec §2 Algorithm 2). `None` before that attempt's
    /// release. Local only, like everything in [`SiteAttempt`].
    pub fn fresh_noise(&self, attempt: &SiteAttempt) -> Option<Vec<f64>> {
        let value = self.local_value()?;
        let (release, zero_sum) = (attempt.release.as_ref()?, attempt.zero_sum_noise.as_ref()?);
        Some(release.iter().zip(value).zip(zero_sum).map(|((a, f), e)| a - f - e).collect())
    }

    /// The ledger entries this study recorded, in order.
    pub fn spent(&self) -> &[LedgerEntry] {
        &self.spent
    }

    /// The ledger access the site was built with (e.g. to save the ledger).
    pub fn ledger_mut(&mut self) -> &mut L {
        &mut self.ledger
    }

    pub fn into_ledger(self) -> L {
        self.ledger
    }

    pub fn phase(&self) -> SitePhase {
        match &self.state {
            State::AwaitingStart => SitePhase::AwaitingStart,
            State::Accepted => SitePhase::Accepted,
            State::Summing { attempt, inner, .. } => {
                SitePhase::Summing { attempt: *attempt, secagg: inner.phase() }
            }
            State::Waiting { attempt, released: true } => SitePhase::Released { attempt: *attempt },
            State::Waiting { attempt, released: false } => {
                SitePhase::Excluded { attempt: *attempt }
            }
            State::Done(_) => SitePhase::Done,
            State::Declined(_) => SitePhase::Declined,
            State::NotInvited => SitePhase::NotInvited,
            State::Aborted(_) => SitePhase::Aborted,
        }
    }

    /// `None` while the study runs.
    pub fn outcome(&self) -> Option<SiteOutcome<'_>> {
        match &self.state {
            State::Done(r) => Some(SiteOutcome::Done(r)),
            State::Declined(r) => Some(SiteOutcome::Declined(r)),
            State::NotInvited => Some(SiteOutcome::NotInvited),
            State::Aborted(a) => Some(SiteOutcome::Aborted(a)),
            _ => None,
        }
    }

    /// A message `payload` from participant `from`.
    pub fn handle(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, StudyError> {
        let msg = MeanMessage::decode(payload)?;
        let got = msg.body.kind();
        if from != self.aggregator {
            return Err(StudyError::UnknownSender { from, kind: got });
        }
        if let Some(study) = self.study
            && study != msg.study
        {
            return Err(StudyError::WrongStudy { expected: study, got: msg.study });
        }
        if self.outcome().is_some() {
            // The aggregator's broadcasts keep reaching a site that is out: nobody's fault.
            return match msg.body {
                MeanBody::SecAgg { .. } | MeanBody::Result(_) | MeanBody::Abort { .. } => {
                    Ok(Vec::new())
                }
                _ => Err(StudyError::AlreadyOver { from, kind: got }),
            };
        }
        match msg.body {
            MeanBody::Start(params) => self.on_start(now_ms, msg.study, params, from),
            MeanBody::SecAgg { attempt, message } => self.on_secagg(now_ms, attempt, &message),
            MeanBody::Result(result) if !matches!(self.state, State::AwaitingStart) => {
                self.state = State::Done(result);
                Ok(Vec::new())
            }
            MeanBody::Abort { reason } => {
                self.state = State::Aborted(SiteAbort::ByAggregator { reason });
                Ok(Vec::new())
            }
            body => Err(self.wrong_phase(from, body.kind())),
        }
    }

    /// Participant `who` left. Only the aggregator's departure matters to a site.
    pub fn handle_departure(
        &mut self,
        now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, StudyError> {
        if let State::Summing { inner, .. } = &mut self.state {
            inner.handle_departure(now_ms, who)?;
        }
        if who == self.aggregator && self.outcome().is_none() {
            self.state = State::Aborted(SiteAbort::AggregatorLeft { aggregator: who });
        }
        Ok(Vec::new())
    }

    // -- mean/start ------------------------------------------------------------------------------

    fn on_start(
        &mut self,
        now_ms: u64,
        study: StudyId,
        params: StudyParams,
        from: ParticipantId,
    ) -> Result<Vec<Outgoing>, StudyError> {
        if !matches!(self.state, State::AwaitingStart) {
            return Err(StudyError::Duplicate { from, kind: kind::START });
        }
        self.study = Some(study);
        self.announced = Some(params.clone());
        if !params.is_invited(self.me) {
            self.state = State::NotInvited;
            return Err(StudyError::NotInvited { me: self.me, study });
        }
        let plan = match params.noise() {
            Ok(plan) => plan,
            Err(e) => return Ok(self.decline(DeclineReason::Params(e.to_string()))),
        };
        let query = params.query;
        if let Err(e) = query.check_rows(&self.rows, params.values_per_site, params.dimension) {
            return Ok(self.decline(DeclineReason::Data(e)));
        }
        let value = query.value(&self.rows, params.dimension);
        let worst = params.worst_case_collusion_factor();
        let conventional = params.also_conventional;
        self.joined = Some(Joined { params, plan, value });
        if let Err(e) = self.preview(now_ms, 1, worst, conventional) {
            return Ok(self.decline(DeclineReason::Budget {
                message: e.to_string(),
                shortfall: e.shortfall(),
            }));
        }
        self.state = State::Accepted;
        Ok(vec![self.to_aggregator(MeanBody::Accept)])
    }

    // -- SecureAgg (phase 1) -----------------------------------------------------------------------

    fn on_secagg(
        &mut self,
        now_ms: u64,
        attempt: u32,
        message: &[u8],
    ) -> Result<Vec<Outgoing>, StudyError> {
        let from = self.aggregator;
        let got = super::messages::secagg_kind(message);
        match &mut self.state {
            State::AwaitingStart => Err(self.wrong_phase(from, got)),
            State::Summing { attempt: current, inner, .. } if attempt == *current => {
                let result = inner.handle(now_ms, from, message);
                self.after_inner(now_ms, result)
            }
            State::Accepted => self.begin_attempt(now_ms, attempt, message),
            State::Summing { attempt: current, .. } | State::Waiting { attempt: current, .. } => {
                if attempt < *current {
                    let expected = *current;
                    return Err(StudyError::WrongAttempt {
                        from,
                        kind: got,
                        expected,
                        got: attempt,
                    });
                }
                // A new attempt: the aggregator gave up on the current one.
                self.begin_attempt(now_ms, attempt, message)
            }
            State::Done(_) | State::Declined(_) | State::NotInvited | State::Aborted(_) => {
                unreachable!("handled before dispatch")
            }
        }
    }

    /// The first SecureAgg message of attempt `attempt` (its `Begin`): check it, check the
    /// budget, draw fresh noise, start a SecureAgg site on it.
    fn begin_attempt(
        &mut self,
        now_ms: u64,
        attempt: u32,
        message: &[u8],
    ) -> Result<Vec<Outgoing>, StudyError> {
        let from = self.aggregator;
        let last = self.attempt();
        let got = super::messages::secagg_kind(message);
        if attempt <= last {
            return Err(StudyError::WrongAttempt {
                from,
                kind: got,
                expected: last + 1,
                got: attempt,
            });
        }
        let msg: SecAggMessage = codec::decode("secagg", message)?;
        let Body::Begin(secagg_params) = &msg.body else {
            return Err(StudyError::WrongPhase {
                phase: "waiting for a SecureAgg round",
                expected: secagg_kind::BEGIN,
                got,
                from,
            });
        };
        if !secagg_params.is_invited(self.me) {
            // This attempt runs without this site (it missed a round or declined).
            return Ok(Vec::new());
        }
        let joined = self.joined.as_ref().expect("accepted, so joined");
        let params = &joined.params;
        if attempt > params.max_attempts() {
            let detail = StudyError::RerunLimit { attempt, max: params.max_attempts() };
            return Ok(self.decline(DeclineReason::Params(detail.to_string())));
        }
        let detail = if !params.masking.matches(secagg_params, params.threshold) {
            Some(format!(
                "{:?} with threshold t = {} instead of the study's {}",
                secagg_params.graph,
                secagg_params.threshold,
                match params.masking {
                    Masking::Complete => format!("complete graph with t = {}", params.threshold),
                    plus => plus.to_string(),
                }
            ))
        } else if secagg_params.vector_len != params.vector_len() {
            Some(format!(
                "vectors of length {} instead of the study's {}",
                secagg_params.vector_len,
                params.vector_len()
            ))
        } else if secagg_params.encoding != Encoding::Fixed(joined.plan.format) {
            Some(format!(
                "encoding {:?} instead of the study's noise format",
                secagg_params.encoding
            ))
        } else {
            let stranger = secagg_params.sites.iter().find(|s| !params.is_invited(**s));
            stranger.map(|s| format!("site {s} is not invited to the study"))
        };
        if let Some(detail) = detail {
            self.state = State::Aborted(SiteAbort::Inconsistent { detail: detail.clone() });
            return Err(StudyError::Inconsistent { from, kind: got, detail });
        }
        // At most |U| ≤ the invited sites of this attempt, and at least t.
        let worst = (params.threshold.max(2)..=secagg_params.sites.len().max(2))
            .map(collusion_factor)
            .fold(1.0, f64::max);
        let conventional = params.also_conventional && !self.conventional_sent;
        if let Err(e) = self.preview(now_ms, attempt, worst, conventional) {
            return Ok(self.decline(DeclineReason::Budget {
                message: e.to_string(),
                shortfall: e.shortfall(),
            }));
        }

        let joined = self.joined.as_ref().expect("accepted, so joined");
        let noise = SiteNoise::Symmetric { local_sd: joined.plan.local_sd };
        let (share, pending) = draw_noise(
            self.me,
            &noise,
            &joined.plan.format,
            joined.params.vector_len(),
            &mut self.rng,
        )?;
        let inner_rng = CapeRng::from_rng(&mut self.rng);
        let inner = secagg::Site::new(self.me, from, SiteInput::Ring(share.ring), inner_rng)
            .map_err(RoundError::UnacceptableParams)?;
        self.history.push(SiteAttempt {
            attempt,
            quantised_noise: pending.quantised_noise(),
            survivors: Vec::new(),
            zero_sum_noise: None,
            release: None,
            conventional: None,
        });
        self.state = State::Summing { attempt, inner: Box::new(inner), pending };
        let State::Summing { inner, .. } = &mut self.state else { unreachable!("just set") };
        let result = inner.handle(now_ms, from, message);
        self.after_inner(now_ms, result)
    }

    /// Wraps what the SecureAgg site returned and acts on its end: the sum (release), an
    /// exclusion (wait), or an abort.
    fn after_inner(
        &mut self,
        now_ms: u64,
        result: Result<Vec<Outgoing>, RoundError>,
    ) -> Result<Vec<Outgoing>, StudyError> {
        let State::Summing { attempt, inner, .. } = &self.state else {
            unreachable!("called while summing")
        };
        let attempt = *attempt;
        let end = inner.outcome().map(|o| o.cloned().map_err(Clone::clone));
        let mut out = match result {
            Ok(out) => self.wrap(attempt, out),
            Err(error) => {
                if let Some(Err(e)) = end {
                    self.state = State::Aborted(SiteAbort::SecAgg { attempt, error: e });
                }
                return Err(error.into());
            }
        };
        match end {
            None => {}
            Some(Err(error)) => {
                self.state = State::Aborted(SiteAbort::SecAgg { attempt, error });
            }
            Some(Ok(sum)) if !sum.included => {
                self.state = State::Waiting { attempt, released: false };
            }
            Some(Ok(sum)) => out.extend(self.release(now_ms, attempt, sum)),
        }
        Ok(out)
    }

    // -- the release (phase 2) -------------------------------------------------------------------

    /// CAPE Algorithm 2 at this site, gated by the ledger: â_s (and the conventional message on
    /// the first release) is returned only if the ledger recorded it.
    fn release(&mut self, now_ms: u64, attempt: u32, sum: SumResult) -> Vec<Outgoing> {
        let State::Summing { mut pending, .. } =
            std::mem::replace(&mut self.state, State::Waiting { attempt, released: false })
        else {
            unreachable!("called while summing")
        };
        let joined = self.joined.as_ref().expect("accepted, so joined");
        let survivors = sum.survivors.clone();
        let noise_sum = NoiseSum { contributors: sum.survivors, ring_sum: sum.sum };
        let computed = pending.zero_sum_noise(&noise_sum).and_then(|e| {
            let cape = pending.release(&noise_sum, &joined.value, &mut self.rng)?;
            let conventional = if joined.params.also_conventional && !self.conventional_sent {
                let local_sd = joined.plan.local_sd;
                Some(conventional_release(self.me, &joined.value, local_sd, &mut self.rng)?)
            } else {
                None
            };
            Ok((e, cape.values, conventional.map(|c| c.values)))
        });
        let record = self.history.last_mut().expect("an attempt is running");
        record.survivors = survivors.clone();
        let (zero_sum, cape, conventional) = match computed {
            Ok(values) => values,
            Err(e) => return self.decline(DeclineReason::Protocol(e.to_string())),
        };
        record.zero_sum_noise = Some(zero_sum);

        // The gate: record first, send only what was recorded.
        let releases = self.releases(
            now_ms,
            attempt,
            collusion_factor(survivors.len()),
            conventional.is_some(),
        );
        let recorded = releases.and_then(|r| self.ledger.with_ledger(|l| gate::spend(l, r)));
        match recorded {
            Ok(entries) => self.spent.extend(entries),
            Err(e) => {
                return self.decline(DeclineReason::Budget {
                    message: e.to_string(),
                    shortfall: e.shortfall(),
                });
            }
        }
        let record = self.history.last_mut().expect("an attempt is running");
        record.release = Some(cape.clone());
        record.conventional = conventional.clone();
        self.conventional_sent |= conventional.is_some();
        self.state = State::Waiting { attempt, released: true };
        vec![self.to_aggregator(MeanBody::Release(ReleaseMessage { attempt, cape, conventional }))]
    }

    // -- the ledger ------------------------------------------------------------------------------

    /// The releases of one attempt: CAPE's â_s under the adversary's full view with collusion
    /// factor `collusion`, and the conventional message (a second, plain Gaussian release).
    fn releases(
        &mut self,
        now_ms: u64,
        attempt: u32,
        collusion: f64,
        conventional: bool,
    ) -> Result<Vec<Release>, LedgerError> {
        let joined = self.joined.as_ref().expect("accepted, so joined");
        let z = joined.plan.noise_multiplier;
        let query = joined.params.query;
        let study = query.ledger_study_name(self.study.expect("started"));
        let time_ms = self.ledger.with_ledger(|l| gate::release_time(l, now_ms));
        let mut events = vec![Event::with_collusion_factor(
            query.cape_label(attempt),
            Mechanism::Gaussian { noise_multiplier: z },
            1,
            collusion,
        )?];
        if conventional {
            events.push(Event::gaussian(query.conventional_label(), z, 1)?);
        }
        Ok(events.into_iter().map(|event| Release::new(study.clone(), event, time_ms)).collect())
    }

    /// Whether the ledger can afford the releases of `attempt`, without recording anything.
    fn preview(
        &mut self,
        now_ms: u64,
        attempt: u32,
        collusion: f64,
        conventional: bool,
    ) -> Result<f64, LedgerError> {
        let releases = self.releases(now_ms, attempt, collusion, conventional)?;
        self.ledger.with_ledger(|l| gate::preview(l, &releases))
    }

    // -- helpers ---------------------------------------------------------------------------------

    /// Ends the site's part: only the decline is sent.
    fn decline(&mut self, reason: DeclineReason) -> Vec<Outgoing> {
        let out = self.to_aggregator(MeanBody::Decline(reason.clone()));
        self.state = State::Declined(reason);
        vec![out]
    }

    fn to_aggregator(&self, body: MeanBody) -> Outgoing {
        let kind = body.kind();
        let study = self.study.expect("a study is bound before the site sends");
        Outgoing {
            to: To::One(self.aggregator),
            kind,
            payload: MeanMessage { study, body }.encode(),
        }
    }

    fn wrap(&self, attempt: u32, out: Vec<Outgoing>) -> Vec<Outgoing> {
        let study = self.study.expect("a study is bound before the site sends");
        wrap_secagg(study, attempt, out)
    }

    fn phase_name(&self) -> &'static str {
        match &self.state {
            State::AwaitingStart => "waiting for mean/start",
            State::Accepted => "waiting for the first SecureAgg round",
            State::Summing { .. } => "in SecureAgg",
            State::Waiting { .. } => "waiting for the result",
            _ => "the end of the study",
        }
    }

    fn wrong_phase(&self, from: ParticipantId, got: &'static str) -> StudyError {
        let expected = match &self.state {
            State::AwaitingStart => kind::START,
            State::Accepted => secagg_kind::BEGIN,
            State::Summing { .. } => kind::SECAGG,
            _ => kind::RESULT,
        };
        StudyError::WrongPhase { phase: self.phase_name(), expected, got, from }
    }
}

/// The study name under which a site's ledger records the releases of private-mean study
/// `study` ([`Release::study`]): a dashboard matches ledger reports to its rounds by it. For any
/// query, [`super::Query::ledger_study_name`].
pub fn ledger_study_name(study: StudyId) -> String {
    super::Query::Mean.ledger_study_name(study)
}

/// Wraps SecureAgg messages of `attempt` in the study's envelope, keeping their kinds.
pub(super) fn wrap_secagg(study: StudyId, attempt: u32, out: Vec<Outgoing>) -> Vec<Outgoing> {
    out.into_iter()
        .map(|o| Outgoing {
            to: o.to,
            kind: o.kind,
            payload: MeanMessage { study, body: MeanBody::SecAgg { attempt, message: o.payload } }
                .encode(),
        })
        .collect()
}

impl<L: LedgerAccess> Machine for MeanSite<L> {
    type Error = StudyError;

    fn handle(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, StudyError> {
        MeanSite::handle(self, now_ms, from, payload)
    }

    fn handle_departure(
        &mut self,
        now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, StudyError> {
        MeanSite::handle_departure(self, now_ms, who)
    }

    fn is_finished(&self) -> bool {
        self.outcome().is_some()
    }
}
