//! One tab's side of an EFPSN study: an [`EfpsnAgent`] per run (EFPSN, and the comparison runs
//! its user allows), fed the neighbours' messages, reporting to the dashboard what it released.
//!
//! Before anything of a run is sent, the site checks and records the run's (ε, δ) in its ledger
//! (EFPSN: Theorem IV.1 for the announced γ and graph). The baseline and the noise-free run are
//! comparisons whose iterates no guarantee capelab can state covers (the baseline's Gaussian
//! functional perturbation is not the mechanism Nozari et al. prove ε-DP; the noise-free run
//! releases exact iterates): a site takes part in them only when its user allowed non-private
//! comparison runs, and declines otherwise with nothing sent but the refusal.

use capelab_paillier::Keypair;

use super::messages::{Decline, Report, RunStatus, Stop, StudyBody, StudyMessage};
use super::residual;
use super::task::{EfpsnTask, RunPlan};
use crate::data::Dataset;
use crate::driver::{Machine, Outgoing};
use crate::efpsn::EfpsnError;
use crate::efpsn::agent::{AgentStatus, EfpsnAgent, MaskSource};
use crate::efpsn::messages::EfpsnMessage;
use crate::efpsn::sim::Method;
use crate::rng::CapeRng;
use crate::secagg;
use crate::study::StudyId;
use crate::study::gate::{LedgerAccess, release_time};
use crate::study::iterative::SiteSettings;
use crate::wire::{ParticipantId, To};

/// One run on this agent.
pub struct SiteRun {
    pub id: StudyId,
    pub method: Method,
    agent: Option<EfpsnAgent>,
    /// Why the run ended here early (a refused message, a stop), or why it was declined.
    failure: Option<RunStatus>,
    last: Option<RunStatus>,
    reported: usize,
    gradient_sent: bool,
}

impl SiteRun {
    pub fn agent(&self) -> Option<&EfpsnAgent> {
        self.agent.as_ref()
    }

    pub fn status(&self) -> RunStatus {
        if let Some(f) = &self.failure {
            return f.clone();
        }
        match self.agent.as_ref().map(EfpsnAgent::status) {
            None => RunStatus::Stopped(Stop::Refused("not started".into())),
            Some(AgentStatus::Phase1(p)) => RunStatus::Phase1 {
                keys: p.keys_received,
                noise_sent: p.noise_sent,
                noise_received: p.noise_received,
                neighbours: p.neighbours,
            },
            Some(AgentStatus::Phase2 { iteration }) => RunStatus::Phase2 { iteration },
            Some(AgentStatus::Done) => RunStatus::Done,
            Some(AgentStatus::Failed(e)) => RunStatus::Stopped(Stop::Refused(e.words())),
        }
    }

    /// The Phase-2 iteration this agent reached in this run, also once it stopped (`None`: it
    /// never left Phase 1).
    pub fn iteration(&self) -> Option<u32> {
        self.agent.as_ref().and_then(EfpsnAgent::iteration)
    }

    /// Whether `status` is news compared with the last report (a Phase-2 step alone is not:
    /// iterates are reported every `record_every` iterations).
    fn changed(&self, status: &RunStatus) -> bool {
        match (&self.last, status) {
            (Some(RunStatus::Phase2 { .. }), RunStatus::Phase2 { .. }) => false,
            (last, now) => last.as_ref() != Some(now),
        }
    }
}

/// The rows an agent optimises on.
#[derive(Clone, Debug)]
pub enum AgentData {
    /// The labelled table every tab holds (e.g. digits): the agent keeps its part of the public
    /// split.
    Shared(Dataset),
    /// The agent's own labelled table, all of it its own; it must fit the study's public model
    /// ([`crate::efpsn::problem::ClassificationSplit::own_cost`]).
    Own(Dataset),
    /// The tab meant to bring its own table but could not read it: the study is refused with
    /// this reason, nothing sent.
    Unusable(String),
}

pub struct EfpsnStudySite<L> {
    me: ParticipantId,
    dashboard: ParticipantId,
    data: AgentData,
    ledger: L,
    settings: SiteSettings,
    rng: CapeRng,
    study: Option<StudyId>,
    task: Option<EfpsnTask>,
    runs: Vec<SiteRun>,
    /// Why the whole study was refused on this tab, if it was.
    declined: Option<Decline>,
    /// This agent's part in the dashboard's zero-sum check (SecureAgg over the masks).
    check: Option<Box<secagg::Site>>,
}

impl<L: LedgerAccess> EfpsnStudySite<L> {
    /// The role of participant `me` for studies opened by `dashboard`, on `data`: the shared
    /// labelled table (the tab's copy: it keeps only its own part of the split) or its own.
    pub fn new(
        me: ParticipantId,
        dashboard: ParticipantId,
        data: AgentData,
        ledger: L,
        settings: SiteSettings,
        rng: CapeRng,
    ) -> Self {
        EfpsnStudySite {
            me,
            dashboard,
            data,
            ledger,
            settings,
            rng,
            study: None,
            task: None,
            runs: Vec::new(),
            declined: None,
            check: None,
        }
    }

    pub fn study(&self) -> Option<StudyId> {
        self.study
    }

    pub fn task(&self) -> Option<&EfpsnTask> {
        self.task.as_ref()
    }

    pub fn runs(&self) -> &[SiteRun] {
        &self.runs
    }

    /// Why this tab refused the whole study (its data, the task, or its budget for the EFPSN
    /// run), if it did: then nothing was recorded or sent but the refusal.
    pub fn declined(&self) -> Option<&Decline> {
        self.declined.as_ref()
    }

    pub fn ledger(&mut self) -> &mut L {
        &mut self.ledger
    }

    fn on_start(
        &mut self,
        now_ms: u64,
        study: StudyId,
        task: EfpsnTask,
    ) -> Result<Vec<Outgoing>, EfpsnError> {
        if let Some(current) = self.study {
            return if current == study {
                Ok(Vec::new())
            } else {
                Err(EfpsnError::Protocol(format!(
                    "study {study} opened while study {current} runs on this tab"
                )))
            };
        }
        let Some(index) = task.agents().iter().position(|&p| p == self.me) else {
            // Not on the graph: nothing to do, nothing to say.
            return Ok(Vec::new());
        };
        self.study = Some(study);
        let ids: Vec<(StudyId, Method)> =
            task.runs.iter().map(|r| (r.plan.study, r.method)).collect();
        let prepared = task.check().and_then(|()| {
            let cost = match &self.data {
                AgentData::Shared(d) => task.split.local_cost(d, index, task.agents().len())?,
                AgentData::Own(d) => task.split.own_cost(d).map_err(|e| {
                    EfpsnError::Data(format!("this agent's own table: {}", e.words()))
                })?,
                AgentData::Unusable(why) => return Err(EfpsnError::Data(why.clone())),
            };
            Ok((cost, task.key_size()?))
        });
        // The EFPSN run's (ε, δ) goes into the ledger first: a site whose budget cannot cover it
        // refuses the whole study here, before any key is made or anything is sent.
        let prepared = prepared.map_err(|e| Decline::Refused(e.words())).and_then(|p| {
            match task.run_of(Method::Efpsn) {
                Some(run) => self.record(now_ms, &task, run).map(|()| p),
                None => Ok(p),
            }
        });
        let (cost, key_size) = match prepared {
            Ok(p) => p,
            Err(why) => {
                self.declined = Some(why.clone());
                self.runs =
                    ids.into_iter().map(|(id, method)| declined(id, method, why.clone())).collect();
                self.task = Some(task);
                return Ok(self.reports());
            }
        };
        let mut out = Vec::new();
        let runs = task.runs.clone();
        for run in &runs {
            let started = self.admit(run).and_then(|source| {
                let source = match source {
                    Admitted::Exchange => {
                        MaskSource::Exchange(Box::new(Keypair::generate(key_size, &mut self.rng)))
                    }
                    Admitted::Independent => MaskSource::Independent,
                    Admitted::NoiseFree => MaskSource::NoiseFree,
                };
                EfpsnAgent::start(
                    self.me,
                    run.plan.clone(),
                    cost.clone(),
                    source,
                    task.record_every,
                    fork(&mut self.rng),
                )
                .map_err(|e| Decline::Refused(e.words()))
            });
            match started {
                Ok((agent, first)) => {
                    out.extend(first);
                    self.runs.push(SiteRun {
                        id: run.plan.study,
                        method: run.method,
                        agent: Some(agent),
                        failure: None,
                        last: None,
                        reported: 0,
                        gradient_sent: false,
                    });
                }
                Err(why) => self.runs.push(declined(run.plan.study, run.method, why)),
            }
        }
        self.task = Some(task);
        out.extend(self.reports());
        Ok(out)
    }

    /// Records the EFPSN run's (ε, δ) in the ledger, before anything of it is sent; or says
    /// why not (for the budget: by how much it falls short).
    fn record(&mut self, now_ms: u64, task: &EfpsnTask, run: &RunPlan) -> Result<(), Decline> {
        let eps = task.epsilon_of(run).map_err(|e| Decline::Refused(e.words()))?;
        let study = EfpsnTask::ledger_study_name(run);
        self.ledger.with_ledger(|ledger| {
            let time_ms = release_time(ledger, now_ms);
            super::ledger::record_run(ledger, study, &eps, time_ms)
        })
    }

    /// Whether this site takes part in `run` (the EFPSN run's guarantee is already recorded),
    /// and with which mask. The comparison runs are ones no privacy guarantee covers: they need
    /// the user's consent.
    fn admit(&self, run: &RunPlan) -> Result<Admitted, Decline> {
        match run.method {
            Method::Efpsn => Ok(Admitted::Exchange),
            Method::Baseline | Method::NoiseFree if !self.settings.allow_nonprivate => {
                Err(Decline::NoConsent)
            }
            Method::Baseline => Ok(Admitted::Independent),
            Method::NoiseFree => Ok(Admitted::NoiseFree),
        }
    }

    fn on_agent_message(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, EfpsnError> {
        let id = EfpsnMessage::decode(payload)?.study;
        let run = self.runs.iter_mut().find(|r| r.id == id).ok_or_else(|| {
            EfpsnError::Protocol(format!("participant {from} sent a message of unknown run {id}"))
        })?;
        if run.failure.is_some() {
            return Ok(Vec::new());
        }
        let Some(agent) = run.agent.as_mut() else { return Ok(Vec::new()) };
        let mut out = match agent.handle(now_ms, from, payload) {
            Ok(out) => out,
            Err(e) => {
                // A run cannot skip a message: it stops here, and the dashboard is told why.
                run.failure = Some(RunStatus::Stopped(Stop::Refused(format!(
                    "a message from another agent could not be used: {}",
                    e.words()
                ))));
                Vec::new()
            }
        };
        out.extend(self.reports());
        Ok(out)
    }

    /// A report to the dashboard for every run with news.
    fn reports(&mut self) -> Vec<Outgoing> {
        let Some(study) = self.study else { return Vec::new() };
        let mut out = Vec::new();
        for run in &mut self.runs {
            let status = run.status();
            let (iterates, gradient) = match &run.agent {
                Some(agent) if run.failure.is_none() || run.reported < agent.trace().len() => {
                    let new = agent.trace()[run.reported..].to_vec();
                    let gradient =
                        (!run.gradient_sent).then(|| agent.perturbed_gradient_at_zero()).flatten();
                    (new, gradient)
                }
                _ => (Vec::new(), None),
            };
            if !run.changed(&status) && iterates.is_empty() && gradient.is_none() {
                continue;
            }
            run.reported += iterates.len();
            run.gradient_sent |= gradient.is_some();
            run.last = Some(status.clone());
            let msg = StudyMessage {
                study,
                body: StudyBody::Report(Report {
                    run: run.id,
                    status,
                    iterates,
                    gradient_at_zero: gradient,
                }),
            };
            out.push(Outgoing {
                to: To::One(self.dashboard),
                kind: msg.kind(),
                payload: msg.encode(),
            });
        }
        out
    }

    /// A SecureAgg message of the zero-sum check: this agent's input is its EFPSN mask, which
    /// leaves only masked (SecureAgg's own pairwise and self masks).
    fn on_check(&mut self, now_ms: u64, message: &[u8]) -> Result<Vec<Outgoing>, EfpsnError> {
        let study = self.study.ok_or_else(|| {
            EfpsnError::Protocol("a zero-sum check before any study started".into())
        })?;
        if self.check.is_none() {
            let mask = self
                .runs
                .iter()
                .find(|r| r.method == Method::Efpsn)
                .and_then(|r| r.agent())
                .and_then(EfpsnAgent::exact_mask)
                .ok_or_else(|| {
                    EfpsnError::Protocol(
                        "a zero-sum check before this agent's mask is built".into(),
                    )
                })?;
            let site = secagg::Site::new(
                self.me,
                self.dashboard,
                residual::ring_input(mask),
                fork(&mut self.rng),
            )
            .map_err(|e| EfpsnError::Protocol(format!("the zero-sum check: {e}")))?;
            self.check = Some(Box::new(site));
        }
        let site = self.check.as_mut().expect("set above");
        let out = site
            .handle(now_ms, self.dashboard, message)
            .map_err(|e| EfpsnError::Protocol(format!("the zero-sum check: {e}")))?;
        Ok(residual::wrap(study, out, &[self.dashboard]))
    }

    /// Ends `which` run (all when `None`) here, keeping what it reached.
    fn stop_runs(&mut self, which: Option<StudyId>, why: &Stop) {
        for run in &mut self.runs {
            if which.is_none_or(|id| id == run.id) && !run.status().is_over() {
                run.failure = Some(RunStatus::Stopped(why.clone()));
            }
        }
    }
}

enum Admitted {
    Exchange,
    Independent,
    NoiseFree,
}

fn declined(id: StudyId, method: Method, why: Decline) -> SiteRun {
    SiteRun {
        id,
        method,
        agent: None,
        failure: Some(RunStatus::Declined(why)),
        last: None,
        reported: 0,
        gradient_sent: false,
    }
}

/// An independent generator keyed from `rng`.
fn fork(rng: &mut CapeRng) -> CapeRng {
    use rand_core::SeedableRng;
    CapeRng::from_seed(rand::RngExt::random(rng))
}

impl<L: LedgerAccess> Machine for EfpsnStudySite<L> {
    type Error = EfpsnError;

    fn handle(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, EfpsnError> {
        if from != self.dashboard {
            return self.on_agent_message(now_ms, from, payload);
        }
        let msg = StudyMessage::decode(payload)?;
        match msg.body {
            StudyBody::Start(task) => self.on_start(now_ms, msg.study, *task),
            StudyBody::Stop { run, why } if Some(msg.study) == self.study => {
                self.stop_runs(run, &why);
                Ok(self.reports())
            }
            StudyBody::Stop { .. } => Ok(Vec::new()),
            StudyBody::SecAgg(message) => self.on_check(now_ms, &message),
            StudyBody::Report(_) => Err(EfpsnError::Protocol("a report sent to an agent".into())),
        }
    }

    fn handle_departure(
        &mut self,
        now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, EfpsnError> {
        if let Some(check) = self.check.as_mut() {
            // Only the dashboard's departure matters to it (it then stops waiting).
            let _ = check.handle_departure(now_ms, who);
        }
        for run in &mut self.runs {
            if run.failure.is_some() {
                continue;
            }
            let Some(agent) = run.agent.as_mut() else { continue };
            let on_graph = agent.plan().agent_of(who).is_some();
            let running = !matches!(agent.status(), AgentStatus::Done | AgentStatus::Failed(_));
            // A neighbour's departure ends the agent; any other agent's ends the run too (its
            // neighbours stop, so no agent can finish). Either way the dashboard hears who left,
            // and the iterates so far are kept.
            let _ = agent.handle_departure(now_ms, who);
            if on_graph && running {
                run.failure = Some(RunStatus::Stopped(Stop::Left(who)));
            }
        }
        Ok(self.reports())
    }

    fn is_finished(&self) -> bool {
        self.study.is_some() && self.runs.iter().all(|r| r.status().is_over())
    }
}
