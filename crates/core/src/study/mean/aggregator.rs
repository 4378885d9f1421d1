/*!
The aggregator role of the private-mean study (the dashboard): invites the sites, runs one
SecureAgg [`secagg::Aggregator`] per attempt over the sites' ê_s, collects the releases of U,
forms the CAPE estimate ([`CapeEstimator`]) and the conventional one, and re-runs among the
survivors with fresh noise when a site of U never released (spec Remark 4).
*/

use std::collections::{BTreeMap, BTreeSet};

use rand_core::Rng;

use crate::cape::conventional::conventional_estimate;
use crate::cape::{CapeEstimator, EstimateError, SiteRelease};
use crate::driver::{Machine, Outgoing};
use crate::rng::CapeRng;
use crate::secagg::{self, AggregatorConfig, DropReason, Phase, RoundError};
use crate::study::StudyId;
use crate::wire::{ParticipantId, To};

use super::error::{StudyConfigError, StudyError};
use super::messages::{MeanBody, MeanMessage, PublicResult, ReleaseMessage, kind};
use super::outcome::{
    AbortReason, AttemptReport, Declined, Estimates, MaskedInput, StudyDropout, StudyOutcome,
    StudyPhase, StudyResult, Theory, TooFewAccepted,
};
use super::params::{Masking, NoisePlan, StudyParams};
use super::site::wrap_secagg;

/// The aggregator's local settings (not announced to the sites).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AggregatorSettings {
    /// How long each round (the invitation, each SecureAgg round, the release collection) waits
    /// before it goes on with whoever answered. Virtual milliseconds: the driver supplies now_ms.
    pub round_timeout_ms: u64,
    /// Keep every masked SecureAgg vector for the outcome (S·d·8 bytes per attempt).
    pub retain_masked_inputs: bool,
}

impl Default for AggregatorSettings {
    fn default() -> Self {
        Self { round_timeout_ms: 30_000, retain_masked_inputs: true }
    }
}

/// Where the study is, for the dashboard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggregatorPhase {
    /// Waiting for the sites to accept or decline `mean/start`.
    Inviting,
    /// Attempt `attempt`'s SecureAgg is in round `round`.
    Summing {
        attempt: u32,
        round: Option<Phase>,
    },
    /// Waiting for the releases of U of attempt `attempt`.
    Collecting {
        attempt: u32,
    },
    Finished,
}

/// The aggregator role of the private-mean study.
///
/// Call order (quinn style; [`Machine`] is the same contract):
/// 1. [`MeanAggregator::start`] validates the parameters and returns the `mean/start` broadcast:
///    send it.
/// 2. For each transport event: a message → [`MeanAggregator::handle`]; a peer left →
///    [`MeanAggregator::handle_departure`]. Send whatever they return, in order.
/// 3. When the clock reaches [`MeanAggregator::poll_timeout`], call
///    [`MeanAggregator::handle_timeout`]; re-read `poll_timeout` after every call.
/// 4. Stop when [`MeanAggregator::outcome`] is `Some`; its last output was `mean/result` or
///    `mean/abort`. [`MeanAggregator::stop`] ends the study early (a dashboard button).
///
/// `Err` from `handle` refuses one message and changes nothing. Running out of sites is not an
/// error of a call: the study ends and `outcome()` says why.
pub struct MeanAggregator {
    study: StudyId,
    params: StudyParams,
    plan: NoisePlan,
    settings: AggregatorSettings,
    rng: CapeRng,
    departed: BTreeSet<ParticipantId>,
    accepted: BTreeSet<ParticipantId>,
    declined: Vec<Declined>,
    dropouts: Vec<StudyDropout>,
    attempts: Vec<AttemptReport>,
    /// Each site's conventional message (sent once, with its first release).
    conventional: BTreeMap<ParticipantId, Vec<f64>>,
    state: State,
}

enum State {
    Inviting {
        deadline: u64,
        waiting: BTreeSet<ParticipantId>,
    },
    Summing {
        attempt: u32,
        secagg: Box<secagg::Aggregator>,
    },
    Collecting {
        attempt: u32,
        deadline: u64,
        survivors: Vec<ParticipantId>,
        waiting: BTreeSet<ParticipantId>,
        releases: BTreeMap<ParticipantId, Vec<f64>>,
        missing: BTreeSet<ParticipantId>,
    },
    Finished(Box<StudyOutcome>),
}

impl MeanAggregator {
    /// Opens a study at `now_ms`: a random study id from `rng`, and the `mean/start` broadcast.
    pub fn start(
        params: StudyParams,
        settings: AggregatorSettings,
        mut rng: CapeRng,
        now_ms: u64,
    ) -> Result<(Self, Vec<Outgoing>), StudyConfigError> {
        let plan = params.noise()?;
        let mut id = [0u8; 16];
        rng.fill_bytes(&mut id);
        let study = StudyId(id);
        let start = Outgoing {
            to: To::All,
            kind: kind::START,
            payload: MeanMessage { study, body: MeanBody::Start(params.clone()) }.encode(),
        };
        let waiting = params.sites.iter().copied().collect();
        let deadline = now_ms.saturating_add(settings.round_timeout_ms);
        let aggregator = Self {
            study,
            params,
            plan,
            settings,
            rng,
            departed: BTreeSet::new(),
            accepted: BTreeSet::new(),
            declined: Vec::new(),
            dropouts: Vec::new(),
            attempts: Vec::new(),
            conventional: BTreeMap::new(),
            state: State::Inviting { deadline, waiting },
        };
        Ok((aggregator, vec![start]))
    }

    pub fn study(&self) -> StudyId {
        self.study
    }

    pub fn params(&self) -> &StudyParams {
        &self.params
    }

    pub fn noise_plan(&self) -> &NoisePlan {
        &self.plan
    }

    pub fn phase(&self) -> AggregatorPhase {
        match &self.state {
            State::Inviting { .. } => AggregatorPhase::Inviting,
            State::Summing { attempt, secagg } => {
                AggregatorPhase::Summing { attempt: *attempt, round: secagg.phase() }
            }
            State::Collecting { attempt, .. } => AggregatorPhase::Collecting { attempt: *attempt },
            State::Finished(_) => AggregatorPhase::Finished,
        }
    }

    /// Who the current round still waits for.
    pub fn waiting_for(&self) -> Vec<ParticipantId> {
        match &self.state {
            State::Inviting { waiting, .. } | State::Collecting { waiting, .. } => {
                waiting.iter().copied().collect()
            }
            State::Summing { secagg, .. } => secagg.waiting_for(),
            State::Finished(_) => Vec::new(),
        }
    }

    pub fn accepted(&self) -> Vec<ParticipantId> {
        self.accepted.iter().copied().collect()
    }

    pub fn declined(&self) -> &[Declined] {
        &self.declined
    }

    /// Who has dropped so far, and where (SecureAgg's own drops are added when its round ends).
    pub fn dropouts(&self) -> &[StudyDropout] {
        &self.dropouts
    }

    /// The attempts so far; the last one may still be running.
    pub fn attempts(&self) -> &[AttemptReport] {
        &self.attempts
    }

    /// The running SecureAgg instance, for live views (its membership and masked inputs).
    pub fn secagg(&self) -> Option<&secagg::Aggregator> {
        match &self.state {
            State::Summing { secagg, .. } => Some(secagg),
            _ => None,
        }
    }

    /// `None` while the study runs.
    pub fn outcome(&self) -> Option<&StudyOutcome> {
        match &self.state {
            State::Finished(outcome) => Some(outcome),
            _ => None,
        }
    }

    /// When [`Self::handle_timeout`] should next be called.
    pub fn poll_timeout(&self) -> Option<u64> {
        match &self.state {
            State::Inviting { deadline, .. } | State::Collecting { deadline, .. } => {
                Some(*deadline)
            }
            State::Summing { secagg, .. } => secagg.poll_timeout(),
            State::Finished(_) => None,
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
        if matches!(self.state, State::Finished(_)) {
            return Err(StudyError::AlreadyOver { from, kind: got });
        }
        if msg.study != self.study {
            return Err(StudyError::WrongStudy { expected: self.study, got: msg.study });
        }
        if !self.params.is_invited(from) {
            return Err(StudyError::UnknownSender { from, kind: got });
        }
        let answered =
            self.accepted.contains(&from) || self.declined.iter().any(|d| d.site == from);
        match (&mut self.state, msg.body) {
            (State::Inviting { waiting, .. }, MeanBody::Accept) => {
                if answered {
                    return Err(StudyError::Duplicate { from, kind: got });
                }
                self.accepted.insert(from);
                waiting.remove(&from);
                Ok(self.advance_invitation(now_ms, false))
            }
            (State::Inviting { waiting, .. }, MeanBody::Decline(reason)) => {
                if answered {
                    return Err(StudyError::Duplicate { from, kind: got });
                }
                waiting.remove(&from);
                self.declined.push(Declined { site: from, attempt: 0, reason });
                Ok(self.advance_invitation(now_ms, false))
            }
            (State::Summing { attempt, secagg }, MeanBody::SecAgg { attempt: a, message }) => {
                if a != *attempt {
                    let expected = *attempt;
                    return Err(StudyError::WrongAttempt { from, kind: got, expected, got: a });
                }
                let attempt = *attempt;
                let out = secagg.handle(now_ms, from, &message)?;
                Ok(self.after_secagg(now_ms, attempt, out))
            }
            (State::Summing { attempt, secagg }, MeanBody::Decline(reason)) => {
                // Declined this attempt before joining its SecureAgg: for SecureAgg it has left.
                let attempt = *attempt;
                if self.declined.iter().any(|d| d.site == from && d.attempt == attempt) {
                    return Err(StudyError::Duplicate { from, kind: got });
                }
                let invited = self.attempts.last().is_some_and(|a| a.invited.contains(&from));
                if !invited {
                    return Err(StudyError::Inconsistent {
                        from,
                        kind: got,
                        detail: format!("site {from} is not part of attempt {attempt}"),
                    });
                }
                let out = secagg.handle_departure(now_ms, from)?;
                self.declined.push(Declined { site: from, attempt, reason });
                Ok(self.after_secagg(now_ms, attempt, out))
            }
            (State::Collecting { .. }, MeanBody::Release(release)) => {
                self.on_release(now_ms, from, release)
            }
            (State::Collecting { attempt, waiting, missing, .. }, MeanBody::Decline(reason)) => {
                // A site of U whose ledger refused at the last moment: it breaks the zero sum.
                if !waiting.remove(&from) {
                    return Err(StudyError::Inconsistent {
                        from,
                        kind: got,
                        detail: format!("site {from} is not awaited in this round"),
                    });
                }
                missing.insert(from);
                let attempt = *attempt;
                self.declined.push(Declined { site: from, attempt, reason });
                Ok(self.close_collection(now_ms, false))
            }
            (_, body) => Err(StudyError::WrongPhase {
                phase: self.phase_name(),
                expected: self.expected_kind(),
                got: body.kind(),
                from,
            }),
        }
    }

    /// Participant `who` left the room.
    pub fn handle_departure(
        &mut self,
        now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, StudyError> {
        if !self.departed.insert(who) || !self.params.is_invited(who) {
            return Ok(Vec::new());
        }
        match &mut self.state {
            State::Inviting { waiting, .. } => {
                let was_waiting = waiting.remove(&who);
                if was_waiting || self.accepted.contains(&who) {
                    self.drop_out(who, 0, StudyPhase::Invitation, DropReason::Left);
                }
                Ok(self.advance_invitation(now_ms, false))
            }
            State::Summing { attempt, secagg } => {
                let attempt = *attempt;
                let out = secagg.handle_departure(now_ms, who)?;
                Ok(self.after_secagg(now_ms, attempt, out))
            }
            State::Collecting { attempt, waiting, missing, .. } => {
                let attempt = *attempt;
                if waiting.remove(&who) {
                    missing.insert(who);
                    self.drop_out(who, attempt, StudyPhase::Release, DropReason::Left);
                    return Ok(self.close_collection(now_ms, false));
                }
                Ok(Vec::new())
            }
            State::Finished(_) => Ok(Vec::new()),
        }
    }

    /// The clock reached `now_ms`: close whatever round's deadline has passed.
    pub fn handle_timeout(&mut self, now_ms: u64) -> Result<Vec<Outgoing>, StudyError> {
        match &mut self.state {
            State::Inviting { deadline, .. } if now_ms >= *deadline => {
                Ok(self.advance_invitation(now_ms, true))
            }
            State::Summing { attempt, secagg } => {
                let attempt = *attempt;
                let out = secagg.handle_timeout(now_ms)?;
                Ok(self.after_secagg(now_ms, attempt, out))
            }
            State::Collecting { deadline, .. } if now_ms >= *deadline => {
                Ok(self.close_collection(now_ms, true))
            }
            _ => Ok(Vec::new()),
        }
    }

    /// Ends the study now (the dashboard's stop button): sends `mean/abort`.
    pub fn stop(&mut self, now_ms: u64, reason: impl Into<String>) -> Vec<Outgoing> {
        if matches!(self.state, State::Finished(_)) {
            return Vec::new();
        }
        self.finish_aborted(now_ms, AbortReason::Stopped { reason: reason.into() })
    }

    // -- the invitation --------------------------------------------------------------------------

    fn advance_invitation(&mut self, now_ms: u64, deadline_passed: bool) -> Vec<Outgoing> {
        let State::Inviting { waiting, .. } = &self.state else { return Vec::new() };
        let t = self.params.threshold;
        let live_accepted: Vec<ParticipantId> =
            self.accepted.iter().copied().filter(|s| !self.departed.contains(s)).collect();
        let possible = live_accepted.len() + waiting.len();
        if possible >= t && !waiting.is_empty() && !deadline_passed {
            return Vec::new();
        }
        let silent: Vec<ParticipantId> = waiting.iter().copied().collect();
        if deadline_passed {
            for site in silent {
                self.drop_out(site, 0, StudyPhase::Invitation, DropReason::TimedOut);
            }
        }
        if live_accepted.len() < t {
            let declined = self.declined.iter().filter(|d| d.attempt == 0).count();
            let invited = self.params.sites.len();
            let count = TooFewAccepted::of(invited, live_accepted.len(), declined, t);
            return self.finish_aborted(now_ms, AbortReason::TooFewAccepted(count));
        }
        self.start_attempt(now_ms, 1, live_accepted)
    }

    // -- SecureAgg (phase 1) ---------------------------------------------------------------------

    fn start_attempt(
        &mut self,
        now_ms: u64,
        attempt: u32,
        sites: Vec<ParticipantId>,
    ) -> Vec<Outgoing> {
        // SecAgg+'s permutation is drawn now that the attempt's sites are known (and only then:
        // the complete graph draws nothing, so its runs reproduce as before).
        let harary_seed = match self.params.masking {
            Masking::Complete => 0,
            Masking::SecAggPlus { .. } => self.rng.next_u64(),
        };
        let config = self
            .params
            .secagg_params(sites.clone(), self.plan.format, harary_seed)
            .and_then(|p| AggregatorConfig::new(p).map_err(StudyConfigError::SecAgg));
        let config = match config {
            Ok(c) => c
                .with_round_timeout_ms(self.settings.round_timeout_ms)
                .with_retain_masked_inputs(self.settings.retain_masked_inputs),
            Err(e) => {
                let reason = AbortReason::SecAgg {
                    attempt,
                    phase: Phase::AdvertiseKeys,
                    message: e.to_string(),
                };
                return self.finish_aborted(now_ms, reason);
            }
        };
        let (secagg, begin) = secagg::Aggregator::start(config, &mut self.rng, now_ms);
        self.attempts.push(AttemptReport {
            attempt,
            invited: sites,
            survivors: Vec::new(),
            secagg_dropouts: Vec::new(),
            noise_sum: None,
            masked_inputs: Vec::new(),
            releases: Vec::new(),
            conventional: Vec::new(),
            missing: Vec::new(),
        });
        self.state = State::Summing { attempt, secagg: Box::new(secagg) };
        wrap_secagg(self.study, attempt, begin)
    }

    /// Wraps SecureAgg's output and, if its instance has ended, moves on: to the release
    /// collection with U, or to an abort.
    fn after_secagg(&mut self, now_ms: u64, attempt: u32, out: Vec<Outgoing>) -> Vec<Outgoing> {
        let mut sends = wrap_secagg(self.study, attempt, out);
        let State::Summing { secagg, .. } = &self.state else { return sends };
        let Some(end) = secagg.outcome().map(|o| o.cloned().map_err(Clone::clone)) else {
            return sends;
        };
        let format = self.plan.format;
        let masked: Vec<MaskedInput> = secagg
            .masked_inputs()
            .iter()
            .map(|(&site, ring)| MaskedInput {
                site,
                ring: ring.clone(),
                decoded: format.decode_vec(ring),
            })
            .collect();
        let secagg_dropouts = secagg.dropouts().to_vec();
        let round_now = secagg.phase();
        for d in &secagg_dropouts {
            self.drop_out(d.site, attempt, StudyPhase::SecAgg { round: d.phase }, d.reason);
        }
        let report = self.attempts.last_mut().expect("an attempt is running");
        report.secagg_dropouts = secagg_dropouts;
        report.masked_inputs = masked;
        match end {
            Ok(aggregate) => {
                report.survivors = aggregate.survivors.clone();
                report.noise_sum = aggregate.decoded.clone();
                let survivors = aggregate.survivors;
                let missing: BTreeSet<ParticipantId> =
                    survivors.iter().copied().filter(|s| self.departed.contains(s)).collect();
                for &site in &missing {
                    let listed =
                        self.dropouts.iter().any(|d| d.site == site && d.attempt == attempt);
                    if !listed {
                        self.drop_out(site, attempt, StudyPhase::Release, DropReason::Left);
                    }
                }
                let waiting = survivors.iter().copied().filter(|s| !missing.contains(s)).collect();
                self.state = State::Collecting {
                    attempt,
                    deadline: now_ms.saturating_add(self.settings.round_timeout_ms),
                    survivors,
                    waiting,
                    releases: BTreeMap::new(),
                    missing,
                };
                sends.extend(self.close_collection(now_ms, false));
                sends
            }
            Err(error) => {
                let phase = match &error {
                    RoundError::TooFewSites { phase, .. } => *phase,
                    _ => round_now.unwrap_or(Phase::Unmask),
                };
                let reason = AbortReason::SecAgg { attempt, phase, message: error.to_string() };
                sends.extend(self.finish_aborted(now_ms, reason));
                sends
            }
        }
    }

    // -- the releases (phase 2) ------------------------------------------------------------------

    fn on_release(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        release: ReleaseMessage,
    ) -> Result<Vec<Outgoing>, StudyError> {
        let d = self.params.vector_len();
        let conventional_due =
            self.params.also_conventional && !self.conventional.contains_key(&from);
        let State::Collecting { attempt, survivors, waiting, releases, .. } = &mut self.state
        else {
            unreachable!("dispatched while collecting")
        };
        let inconsistent =
            |detail: String| StudyError::Inconsistent { from, kind: kind::RELEASE, detail };
        if release.attempt != *attempt {
            return Err(StudyError::WrongAttempt {
                from,
                kind: kind::RELEASE,
                expected: *attempt,
                got: release.attempt,
            });
        }
        if releases.contains_key(&from) {
            return Err(StudyError::Duplicate { from, kind: kind::RELEASE });
        }
        if !waiting.contains(&from) {
            return Err(inconsistent(format!(
                "site {from} is not awaited: U = {survivors:?}, and a site that left or declined \
                 cannot release"
            )));
        }
        check_vector(&release.cape, d, "â_s").map_err(inconsistent)?;
        match (&release.conventional, conventional_due) {
            (Some(c), true) => {
                check_vector(c, d, "the conventional message").map_err(inconsistent)?
            }
            (None, false) => {}
            (Some(_), false) => {
                return Err(inconsistent(
                    "a conventional message the study did not ask for".into(),
                ));
            }
            (None, true) => {
                return Err(inconsistent("the conventional message is missing".into()));
            }
        }
        waiting.remove(&from);
        releases.insert(from, release.cape.clone());
        let report = self.attempts.last_mut().expect("an attempt is running");
        report.releases.push(SiteRelease { site: from, values: release.cape });
        if let Some(c) = release.conventional {
            report.conventional.push(SiteRelease { site: from, values: c.clone() });
            self.conventional.insert(from, c);
        }
        Ok(self.close_collection(now_ms, false))
    }

    /// Closes the release collection once every site of U has released or is missing (or the
    /// deadline passed): the estimate, a re-run among the survivors, or an abort.
    fn close_collection(&mut self, now_ms: u64, deadline_passed: bool) -> Vec<Outgoing> {
        let State::Collecting { attempt, survivors, waiting, releases, missing, .. } =
            &mut self.state
        else {
            return Vec::new();
        };
        if !waiting.is_empty() && !deadline_passed {
            return Vec::new();
        }
        let attempt = *attempt;
        let silent: Vec<ParticipantId> = std::mem::take(waiting).into_iter().collect();
        missing.extend(silent.iter().copied());
        let survivors = survivors.clone();
        let messages: Vec<SiteRelease> =
            releases.iter().map(|(&site, v)| SiteRelease { site, values: v.clone() }).collect();
        let missing: Vec<ParticipantId> = missing.iter().copied().collect();
        for site in silent {
            self.drop_out(site, attempt, StudyPhase::Release, DropReason::TimedOut);
        }
        self.attempts.last_mut().expect("an attempt is running").missing = missing.clone();

        // Remark 4: the zero sum cancels only if every site of U released.
        let estimate = if messages.is_empty() {
            Err(EstimateError::ZeroSumBroken { missing: missing.clone(), survivors: Vec::new() })
        } else {
            CapeEstimator::Mean.estimate(&survivors, &messages)
        };
        match estimate {
            Ok(cape) => self.finish_estimated(now_ms, attempt, survivors, cape, messages),
            Err(EstimateError::ZeroSumBroken { missing, survivors: released }) => {
                let next: Vec<ParticipantId> =
                    released.into_iter().filter(|s| !self.departed.contains(s)).collect();
                let t = self.params.threshold;
                if attempt >= self.params.max_attempts() {
                    let max = self.params.max_attempts();
                    self.finish_aborted(
                        now_ms,
                        AbortReason::RerunsExhausted { attempt, missing, max },
                    )
                } else if next.len() < t {
                    let reason = AbortReason::TooFewToRerun {
                        attempt,
                        missing,
                        survivors: next.len(),
                        need: t,
                    };
                    self.finish_aborted(now_ms, reason)
                } else {
                    // Fresh ê_s in a new SecureAgg instance among the sites that released.
                    self.start_attempt(now_ms, attempt + 1, next)
                }
            }
            // Every release was checked on receipt; anything else is a bug worth showing.
            Err(other) => {
                self.finish_aborted(now_ms, AbortReason::Stopped { reason: other.to_string() })
            }
        }
    }

    // -- the end ---------------------------------------------------------------------------------

    fn finish_estimated(
        &mut self,
        now_ms: u64,
        attempt: u32,
        survivors: Vec<ParticipantId>,
        cape: Vec<f64>,
        messages: Vec<SiteRelease>,
    ) -> Vec<Outgoing> {
        let conventional_messages: Vec<SiteRelease> = survivors
            .iter()
            .filter_map(|s| {
                self.conventional.get(s).map(|v| SiteRelease { site: *s, values: v.clone() })
            })
            .collect();
        let conventional = if self.params.also_conventional {
            conventional_estimate(&conventional_messages).ok()
        } else {
            None
        };
        let public = PublicResult {
            attempt,
            survivors: survivors.clone(),
            cape: cape.clone(),
            conventional: conventional.clone(),
        };
        let estimates =
            Estimates { attempt, survivors, cape, conventional, messages, conventional_messages };
        self.finish(now_ms, StudyResult::Estimated(estimates));
        vec![self.broadcast(MeanBody::Result(public))]
    }

    fn finish_aborted(&mut self, now_ms: u64, reason: AbortReason) -> Vec<Outgoing> {
        let body = MeanBody::Abort { reason: reason.to_string() };
        self.finish(now_ms, StudyResult::Aborted { reason });
        vec![self.broadcast(body)]
    }

    fn finish(&mut self, now_ms: u64, result: StudyResult) {
        let theory_sites = self.attempts.iter().rev().find(|a| !a.survivors.is_empty());
        let theory = theory_sites
            .and_then(|a| Theory::new(&self.plan, a.survivors.len(), self.params.epsilon));
        let outcome = StudyOutcome {
            study: self.study,
            params: self.params.clone(),
            noise: self.plan,
            calibration_note: self.plan.calibration_note(self.params.epsilon),
            accepted: self.accepted(),
            declined: self.declined.clone(),
            dropouts: self.dropouts.clone(),
            attempts: self.attempts.clone(),
            result,
            theory,
            finished_at_ms: now_ms,
        };
        self.state = State::Finished(Box::new(outcome));
    }

    // -- helpers ---------------------------------------------------------------------------------

    fn drop_out(
        &mut self,
        site: ParticipantId,
        attempt: u32,
        phase: StudyPhase,
        reason: DropReason,
    ) {
        self.dropouts.push(StudyDropout { site, attempt, phase, reason });
    }

    fn broadcast(&self, body: MeanBody) -> Outgoing {
        let kind = body.kind();
        Outgoing { to: To::All, kind, payload: MeanMessage { study: self.study, body }.encode() }
    }

    fn phase_name(&self) -> &'static str {
        match &self.state {
            State::Inviting { .. } => "the invitation",
            State::Summing { .. } => "SecureAgg",
            State::Collecting { .. } => "the release collection",
            State::Finished(_) => "the end of the study",
        }
    }

    fn expected_kind(&self) -> &'static str {
        match &self.state {
            State::Inviting { .. } => kind::ACCEPT,
            State::Summing { .. } => kind::SECAGG,
            State::Collecting { .. } => kind::RELEASE,
            State::Finished(_) => kind::RESULT,
        }
    }
}

/// A vector from the network: d finite values.
fn check_vector(values: &[f64], d: usize, what: &str) -> Result<(), String> {
    if values.len() != d {
        return Err(format!(
            "{what} has {} values, the study's released vector has d = {d}",
            values.len()
        ));
    }
    match values.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(format!("{what} has {} at index {index}", values[index])),
        None => Ok(()),
    }
}

impl Machine for MeanAggregator {
    type Error = StudyError;

    fn handle(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, StudyError> {
        MeanAggregator::handle(self, now_ms, from, payload)
    }

    fn handle_departure(
        &mut self,
        now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, StudyError> {
        MeanAggregator::handle_departure(self, now_ms, who)
    }

    fn handle_timeout(&mut self, now_ms: u64) -> Result<Vec<Outgoing>, StudyError> {
        MeanAggregator::handle_timeout(self, now_ms)
    }

    fn poll_timeout(&self) -> Option<u64> {
        MeanAggregator::poll_timeout(self)
    }

    fn is_finished(&self) -> bool {
        self.outcome().is_some()
    }
}
