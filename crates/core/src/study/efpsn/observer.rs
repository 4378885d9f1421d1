//! The dashboard's side of an EFPSN study: it announces the task, then only listens. Agents
//! report where their runs are and the iterates they sent their neighbours (in clear, so nothing
//! the eavesdropper of the threat model does not see); the observer measures x̄ against x* and
//! the test rows with [`trace_metrics`], per run, as the reports arrive.

use super::messages::{Report, RunStatus, Stop, StudyBody, StudyMessage};
use super::residual::{self, Residual};
use super::task::EfpsnTask;
use crate::driver::{Machine, Outgoing};
use crate::efpsn::EfpsnError;
use crate::efpsn::epsilon::TheoremEpsilon;
use crate::efpsn::metrics::{TracePoint, trace_metrics};
use crate::efpsn::problem::Problem;
use crate::efpsn::sim::Method;
use crate::rng::CapeRng;
use crate::secagg;
use crate::study::StudyId;
use crate::wire::{ParticipantId, To};
use serde::Serialize;

/// One run as the dashboard sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ObservedRun {
    pub id: StudyId,
    pub method: Method,
    /// Theorem IV.1's (ε, δ) (EFPSN only).
    pub epsilon: Option<TheoremEpsilon>,
    /// Per agent (graph index), its last reported status.
    pub status: Vec<RunStatus>,
    /// Per agent, the last Phase-1 or Phase-2 status it reported or the iterates show: where it
    /// had got to when the run ended there.
    pub reached: Vec<RunStatus>,
    /// Per agent, the iterates reported so far.
    pub iterates: Vec<Vec<(u32, Vec<f64>)>>,
    /// Per agent, ∇f̂_i(0) once reported.
    pub gradient_at_zero: Vec<Option<Vec<f64>>>,
    /// The metrics of x̄ at every iteration all agents reported.
    pub trace: Vec<TracePoint>,
    pub x_bar: Vec<f64>,
}

impl ObservedRun {
    pub fn is_over(&self) -> bool {
        self.status.iter().all(RunStatus::is_over)
    }

    /// Σ_i ∇f̂_i(0), once every agent reported its own.
    pub fn gradient_sum(&self) -> Option<Vec<f64>> {
        let all: Option<Vec<&Vec<f64>>> =
            self.gradient_at_zero.iter().map(Option::as_ref).collect();
        let all = all?;
        let mut sum = vec![0.0; all.first()?.len()];
        for g in all {
            sum.iter_mut().zip(g).for_each(|(s, v)| *s += v);
        }
        Some(sum)
    }
}

pub struct EfpsnObserver {
    me: ParticipantId,
    study: StudyId,
    task: EfpsnTask,
    problem: Problem,
    runs: Vec<ObservedRun>,
    stopped: Option<Stop>,
    /// The runs the dashboard already told every agent to stop.
    runs_stopped: Vec<StudyId>,
    residual: Residual,
    secagg: Option<Box<secagg::Aggregator>>,
    rng: CapeRng,
}

impl EfpsnObserver {
    /// Checks `task` against `problem` (the dashboard's copy of the split: its x* and test rows)
    /// and returns the role with the `efpsn/start` for every agent.
    pub fn start(
        me: ParticipantId,
        study: StudyId,
        task: EfpsnTask,
        problem: Problem,
        rng: CapeRng,
    ) -> Result<(Self, Vec<Outgoing>), EfpsnError> {
        task.check()?;
        let n = task.agents().len();
        if problem.agents() != n {
            return Err(EfpsnError::Parameter(format!(
                "a problem split over {} agents for a graph of {n}",
                problem.agents()
            )));
        }
        let runs = task
            .runs
            .iter()
            .map(|run| {
                let start = match run.method {
                    Method::Efpsn => RunStatus::Phase1 {
                        keys: 0,
                        noise_sent: 0,
                        noise_received: 0,
                        neighbours: 0,
                    },
                    _ => RunStatus::Phase2 { iteration: 0 },
                };
                Ok(ObservedRun {
                    id: run.plan.study,
                    method: run.method,
                    epsilon: match run.method {
                        Method::Efpsn => Some(task.epsilon_of(run)?),
                        _ => None,
                    },
                    status: vec![start.clone(); n],
                    reached: vec![start; n],
                    iterates: vec![Vec::new(); n],
                    gradient_at_zero: vec![None; n],
                    trace: Vec::new(),
                    x_bar: Vec::new(),
                })
            })
            .collect::<Result<Vec<_>, EfpsnError>>()?;
        let msg = StudyMessage { study, body: StudyBody::Start(Box::new(task.clone())) };
        let payload = msg.encode();
        let out = task
            .agents()
            .iter()
            .map(|&a| Outgoing { to: To::One(a), kind: msg.kind(), payload: payload.clone() })
            .collect();
        let observer = EfpsnObserver {
            me,
            study,
            task,
            problem,
            runs,
            stopped: None,
            runs_stopped: Vec::new(),
            residual: Residual::Waiting,
            secagg: None,
            rng,
        };
        Ok((observer, out))
    }

    pub fn study(&self) -> StudyId {
        self.study
    }

    pub fn task(&self) -> &EfpsnTask {
        &self.task
    }

    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    pub fn runs(&self) -> &[ObservedRun] {
        &self.runs
    }

    /// Why the whole study ended early (the teacher, or an agent that declined the EFPSN run).
    pub fn stopped(&self) -> Option<&Stop> {
        self.stopped.as_ref()
    }

    /// The zero-sum check over the EFPSN run's masks.
    pub fn residual(&self) -> &Residual {
        &self.residual
    }

    /// Starts the zero-sum check once every agent of the EFPSN run has its mask.
    fn maybe_check(&mut self, now_ms: u64) -> Vec<Outgoing> {
        if self.residual != Residual::Waiting || self.stopped.is_some() {
            return Vec::new();
        }
        let Some(run) = self.runs.iter().find(|r| r.method == Method::Efpsn) else {
            return Vec::new();
        };
        let masked = |s: &RunStatus| matches!(s, RunStatus::Phase2 { .. } | RunStatus::Done);
        if !run.status.iter().all(masked) {
            if run.status.iter().any(RunStatus::is_over) && !run.status.iter().all(masked) {
                self.residual =
                    Residual::Failed("an agent never built its mask: nothing to check".into());
            }
            return Vec::new();
        }
        let n_b = self.task.runs[0].plan.setup.basis.size as usize;
        let agents = self.task.agents().to_vec();
        match residual::start_aggregator(&agents, n_b, &mut self.rng, now_ms) {
            Ok((aggregator, begin)) => {
                self.secagg = Some(Box::new(aggregator));
                self.residual = Residual::Summing;
                residual::wrap(self.study, begin, &agents)
            }
            Err(e) => {
                self.residual = Residual::Failed(e);
                Vec::new()
            }
        }
    }

    /// Feeds the check's aggregator and notes its end.
    fn on_secagg(
        &mut self,
        step: impl FnOnce(&mut secagg::Aggregator) -> Result<Vec<Outgoing>, secagg::RoundError>,
    ) -> Result<Vec<Outgoing>, EfpsnError> {
        let Some(aggregator) = self.secagg.as_mut() else { return Ok(Vec::new()) };
        let out = step(aggregator)
            .map_err(|e| EfpsnError::Protocol(format!("the zero-sum check: {e}")))?;
        match aggregator.outcome() {
            Some(Ok(aggregate)) => {
                self.residual = residual::result(aggregate, self.task.agents().len());
            }
            Some(Err(e)) => self.residual = Residual::Failed(e.to_string()),
            None => {}
        }
        Ok(residual::wrap(self.study, out, self.task.agents()))
    }

    /// Ends the study for every agent (the teacher's stop).
    pub fn stop(&mut self, reason: &str) -> Vec<Outgoing> {
        let why = Stop::ByDashboard(reason.to_owned());
        self.stopped = Some(why.clone());
        self.stop_message(None, why)
    }

    fn stop_message(&self, run: Option<StudyId>, why: Stop) -> Vec<Outgoing> {
        let body = StudyBody::Stop { run, why };
        let msg = StudyMessage { study: self.study, body };
        let payload = msg.encode();
        self.task
            .agents()
            .iter()
            .map(|&a| Outgoing { to: To::One(a), kind: msg.kind(), payload: payload.clone() })
            .collect()
    }

    /// Takes `report`; when it declines a run, the others on that run are told to stop it (they
    /// would wait for this agent forever). A declined EFPSN run ends the whole study: the
    /// comparison runs have nothing left to compare.
    fn on_report(&mut self, agent: usize, report: Report) -> Result<Vec<Outgoing>, EfpsnError> {
        let declined = match &report.status {
            RunStatus::Declined(why) => Some((report.run, why.clone())),
            _ => None,
        };
        self.take_report(agent, report)?;
        let Some((run, why)) = declined else { return Ok(Vec::new()) };
        if self.stopped.is_some() || self.runs_stopped.contains(&run) {
            return Ok(Vec::new());
        }
        let why = Stop::Declined { who: self.task.agents()[agent], why };
        let efpsn = self.task.run_by_id(run).is_some_and(|r| r.method == Method::Efpsn);
        Ok(if efpsn {
            self.stopped = Some(why.clone());
            self.stop_message(None, why)
        } else {
            self.runs_stopped.push(run);
            self.stop_message(Some(run), why)
        })
    }

    fn take_report(&mut self, agent: usize, report: Report) -> Result<(), EfpsnError> {
        let d = self.problem.dim();
        let iterations = self.task.runs[0].plan.phase2.iterations;
        let run = self.runs.iter_mut().find(|r| r.id == report.run).ok_or_else(|| {
            EfpsnError::Protocol(format!("agent {agent} reports on unknown run {}", report.run))
        })?;
        let last = run.iterates[agent].last().map(|(t, _)| *t);
        let mut previous = last;
        for (t, x) in &report.iterates {
            if previous.is_some_and(|p| *t <= p) || *t > iterations {
                return Err(EfpsnError::Protocol(format!(
                    "agent {agent} reports iteration {t} after {previous:?} (of {iterations})"
                )));
            }
            if x.len() != d || x.iter().any(|v| !v.is_finite()) {
                return Err(EfpsnError::Protocol(format!(
                    "agent {agent} reports an iterate of {} values (expected {d} finite ones)",
                    x.len()
                )));
            }
            previous = Some(*t);
        }
        if let Some(g) = &report.gradient_at_zero
            && (g.len() != d || g.iter().any(|v| !v.is_finite()))
        {
            return Err(EfpsnError::Protocol(format!(
                "agent {agent} reports a gradient of {} values (expected {d} finite ones)",
                g.len()
            )));
        }
        if report.status.is_running() {
            run.reached[agent] = report.status.clone();
        }
        if let Some((t, _)) = report.iterates.last()
            && !matches!(run.reached[agent], RunStatus::Phase2 { iteration } if iteration >= *t)
        {
            run.reached[agent] = RunStatus::Phase2 { iteration: *t };
        }
        run.status[agent] = report.status;
        if report.gradient_at_zero.is_some() {
            run.gradient_at_zero[agent] = report.gradient_at_zero;
        }
        run.iterates[agent].extend(report.iterates);
        let traces: Vec<&[(u32, Vec<f64>)]> = run.iterates.iter().map(Vec::as_slice).collect();
        let (new, x_bar) = trace_metrics(&self.problem, &traces, run.trace.len());
        if !new.is_empty() {
            run.trace.extend(new);
            run.x_bar = x_bar;
        }
        Ok(())
    }
}

impl Machine for EfpsnObserver {
    type Error = EfpsnError;

    fn handle(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, EfpsnError> {
        let agent = self.task.agents().iter().position(|&a| a == from).ok_or_else(|| {
            EfpsnError::Protocol(format!("participant {from} is not an agent of this study"))
        })?;
        let msg = StudyMessage::decode(payload)?;
        if msg.study != self.study {
            return Err(EfpsnError::Protocol(format!(
                "a report of study {} in study {}",
                msg.study, self.study
            )));
        }
        match msg.body {
            StudyBody::Report(report) => {
                let mut out = self.on_report(agent, report)?;
                out.extend(self.maybe_check(now_ms));
                Ok(out)
            }
            StudyBody::SecAgg(message) => self.on_secagg(|a| a.handle(now_ms, from, &message)),
            _ => Err(EfpsnError::Protocol(format!("agent {agent} sent a dashboard's message"))),
        }
    }

    fn handle_timeout(&mut self, now_ms: u64) -> Result<Vec<Outgoing>, EfpsnError> {
        self.on_secagg(|a| a.handle_timeout(now_ms))
    }

    fn poll_timeout(&self) -> Option<u64> {
        self.secagg.as_ref().filter(|a| a.outcome().is_none()).and_then(|a| a.poll_timeout())
    }

    fn handle_departure(
        &mut self,
        now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, EfpsnError> {
        let Some(agent) = self.task.agents().iter().position(|&a| a == who) else {
            return Ok(Vec::new());
        };
        let out = self.on_secagg(|a| a.handle_departure(now_ms, who))?;
        for run in &mut self.runs {
            let status = &mut run.status[agent];
            if !status.is_over() {
                *status = RunStatus::Stopped(Stop::Left(who));
            }
        }
        let mut out = out;
        out.extend(self.maybe_check(now_ms));
        Ok(out)
    }

    fn is_finished(&self) -> bool {
        let checking = self.residual == Residual::Summing;
        self.stopped.is_some() || (self.runs.iter().all(ObservedRun::is_over) && !checking)
    }
}

impl EfpsnObserver {
    /// The dashboard's own participant id.
    pub fn id(&self) -> ParticipantId {
        self.me
    }
}
