/*!
A site tab's EFPSN agent, as its worker runs it: the core's [`EfpsnStudySite`] (Paillier key
generation, encryption per neighbour and decryption are seconds of work at 2048 bits, which would
freeze the page). Fed by the tab's messages, it answers with envelopes, the ledger after the run's
(ε, δ) was recorded, and the panel's view. Plain Rust, tested natively.
*/

use std::collections::BTreeMap;

use capelab_core::accountant::Ledger;
use capelab_core::driver::{Machine, Outgoing};
use capelab_core::efpsn::EfpsnError;
use capelab_core::efpsn::sim::Method;
use capelab_core::rng::os_rng;
use capelab_core::study::efpsn::{AgentData, Decline, EfpsnStudySite, RunStatus};
use capelab_core::study::iterative::SiteSettings;
use capelab_core::wire::ParticipantId;
use serde::{Deserialize, Serialize};

use crate::worker::protocol::{FromWorker, LedgerWatch};

/// One run on this agent, for the site's panel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentRunView {
    pub method: Method,
    pub status: RunStatus,
    /// The Phase-2 iteration this agent reached, also once the run stopped.
    pub iteration: Option<u32>,
    pub iterations: u32,
}

/// What the site's EFPSN panel shows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EfpsnSiteView {
    /// This tab's participant id, and every agent's, in graph order.
    pub me: ParticipantId,
    pub agents: Vec<ParticipantId>,
    /// The site names of the room (the page fills them in from its roster).
    #[serde(default)]
    pub names: BTreeMap<ParticipantId, String>,
    /// This tab's place on the graph and its neighbours' places.
    pub agent: Option<usize>,
    pub neighbours: Vec<usize>,
    /// Rows of its part of the split, or of its own table (private: they never leave the tab).
    pub rows: usize,
    /// Whether the agent optimises on its own table rather than its part of the shared one.
    pub own_data: bool,
    /// The EFPSN run's (ε, δ) by Theorem IV.1, once recorded in the ledger (never when the
    /// site declined).
    pub epsilon: Option<(f64, f64)>,
    pub key_bits: u32,
    pub runs: Vec<AgentRunView>,
    /// Why this site refused the whole study (then nothing was recorded or sent).
    pub declined: Option<Decline>,
    pub refusals: Vec<String>,
}

impl EfpsnSiteView {
    /// A participant's site name, as its user typed it.
    pub fn name_of(&self, id: ParticipantId) -> String {
        self.names.get(&id).cloned().unwrap_or_else(|| format!("Site {id}"))
    }
}

#[derive(Default)]
pub struct EfpsnEngine {
    role: Option<EfpsnStudySite<Ledger>>,
    own_data: bool,
    ledger: LedgerWatch,
    refusals: Vec<String>,
    me: ParticipantId,
}

impl EfpsnEngine {
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        &mut self,
        me: ParticipantId,
        dashboard: ParticipantId,
        payload: &[u8],
        ledger_json: &str,
        data: AgentData,
        allow_nonprivate: bool,
        now_ms: u64,
    ) -> Vec<FromWorker> {
        let ledger = match Ledger::from_json(ledger_json) {
            Ok(l) => l,
            Err(e) => {
                self.refusals
                    .push(format!("the EFPSN study could not start here: the ledger: {e}"));
                return vec![FromWorker::EfpsnView(Box::new(self.view()))];
            }
        };
        self.ledger.reset(&ledger);
        self.refusals.clear();
        self.me = me;
        self.own_data = matches!(data, AgentData::Own(_));
        let settings = SiteSettings { allow_nonprivate };
        let mut role = EfpsnStudySite::new(me, dashboard, data, ledger, settings, os_rng());
        let result = role.handle(now_ms, dashboard, payload);
        self.role = Some(role);
        self.after(result)
    }

    pub fn message(&mut self, from: ParticipantId, payload: &[u8], now_ms: u64) -> Vec<FromWorker> {
        let Some(role) = self.role.as_mut() else { return Vec::new() };
        let result = role.handle(now_ms, from, payload);
        self.after(result)
    }

    pub fn departure(&mut self, who: ParticipantId, now_ms: u64) -> Vec<FromWorker> {
        let Some(role) = self.role.as_mut() else { return Vec::new() };
        let result = role.handle_departure(now_ms, who);
        self.after(result)
    }

    fn after(&mut self, result: Result<Vec<Outgoing>, EfpsnError>) -> Vec<FromWorker> {
        let mut replies = Vec::new();
        match result {
            Ok(out) => replies.extend(FromWorker::sends(out)),
            Err(e) => self.refusals.push(e.words()),
        }
        if let Some(saved) = self.role.as_mut().and_then(|r| self.ledger.changed(r.ledger())) {
            // The ledger goes first: the tab saves it before the envelopes leave.
            replies.insert(0, saved);
        }
        replies.push(FromWorker::EfpsnView(Box::new(self.view())));
        replies
    }

    pub fn view(&self) -> EfpsnSiteView {
        let mut view = EfpsnSiteView {
            me: self.me,
            agents: Vec::new(),
            names: BTreeMap::new(),
            agent: None,
            neighbours: Vec::new(),
            rows: 0,
            own_data: self.own_data,
            epsilon: None,
            key_bits: 0,
            runs: Vec::new(),
            declined: None,
            refusals: self.refusals.iter().rev().take(5).cloned().collect(),
        };
        let Some(role) = &self.role else { return view };
        view.declined = role.declined().cloned();
        if let Some(task) = role.task() {
            view.key_bits = task.key_bits;
            view.agents = task.agents().to_vec();
            // Recorded exactly when the EFPSN run got an agent: the ledger admitted it first.
            let charged =
                role.runs().iter().any(|r| r.method == Method::Efpsn && r.agent().is_some());
            view.epsilon = task
                .run_of(Method::Efpsn)
                .filter(|_| charged)
                .and_then(|run| task.epsilon_of(run).ok())
                .map(|e| (e.epsilon, e.delta));
        }
        for run in role.runs() {
            if let Some(agent) = run.agent() {
                view.agent = Some(agent.index());
                view.neighbours = agent.plan().graph.neighbours(agent.index()).to_vec();
                view.rows = agent.rows();
            }
            view.runs.push(AgentRunView {
                method: run.method,
                status: run.status(),
                iteration: run.iteration(),
                iterations: role.task().map_or(0, |t| t.runs[0].plan.phase2.iterations),
            });
        }
        view
    }
}

#[cfg(test)]
mod tests {
    //! Three site workers and the dashboard's observer, wired as the page and the relay would:
    //! the whole EFPSN study (real 1024-bit Paillier) with nothing but worker messages.

    use std::collections::VecDeque;

    use capelab_core::accountant::{Budget, Ledger};
    use capelab_core::driver::Machine;
    use capelab_core::efpsn::problem::labelled_csv;
    use capelab_core::rng::derive;
    use capelab_core::study::StudyId;
    use capelab_core::study::efpsn::{EfpsnObserver, RunStatus, kind};
    use capelab_core::wire::{ParticipantId, To};

    use super::*;
    use crate::studies::efpsn::form::{EfpsnFields, Room};
    use crate::worker::protocol::ToWorker;
    use crate::worker::state::WorkerState;

    const DASHBOARD: ParticipantId = 1;
    const SITES: [ParticipantId; 3] = [2, 3, 4];

    /// 3 classes of 4 "pixels" in 0..16: the class's pixel is bright.
    fn csv() -> String {
        let mut out = String::from("p0,p1,p2,p3,target\n");
        for r in 0..240 {
            let class = r % 3;
            let px: Vec<String> = (0..4)
                .map(|j| if j == class { 12 + (r * 7 % 5) } else { r * 3 % 6 }.to_string())
                .collect();
            out.push_str(&format!("{},{class}\n", px.join(",")));
        }
        out
    }

    #[test]
    fn three_site_workers_and_the_observer_run_efpsn_to_a_zero_residual() {
        let csv = csv();
        let (data, classes) = labelled_csv(&csv).unwrap();
        let fields = EfpsnFields {
            iterations: "60".into(),
            key_bits: 1024,
            baseline: false,
            ..EfpsnFields::default()
        };
        let form = fields.read(SITES.to_vec(), &Room::default(), 3).unwrap();
        let task = form.task(classes, data.features()).unwrap();
        let problem = task.split.problem(&data, SITES.len()).unwrap();
        let (mut observer, out) =
            EfpsnObserver::start(DASHBOARD, StudyId([9; 16]), task, problem, derive(1, "obs"))
                .unwrap();
        let mut workers: Vec<WorkerState> = SITES.iter().map(|_| WorkerState::default()).collect();
        let mut ledgers: Vec<String> = SITES
            .iter()
            .map(|s| {
                Ledger::new(format!("Lab {s}"), Budget::new(10.0, 1e-5).unwrap()).unwrap().to_json()
            })
            .collect();
        let mut views: Vec<Option<EfpsnSiteView>> = vec![None; SITES.len()];
        // (to, from, kind, payload) in flight.
        let mut wire: VecDeque<(ParticipantId, ParticipantId, String, Vec<u8>)> = out
            .into_iter()
            .map(|o| match o.to {
                To::One(to) => (to, DASHBOARD, o.kind.to_owned(), o.payload),
                To::All => panic!("the observer addresses agents one by one"),
            })
            .collect();
        while let Some((to, from, k, payload)) = wire.pop_front() {
            if to == DASHBOARD {
                for o in observer.handle(0, from, &payload).unwrap() {
                    let To::One(site) = o.to else { panic!("no broadcast") };
                    wire.push_back((site, DASHBOARD, o.kind.to_owned(), o.payload));
                }
                continue;
            }
            let i = SITES.iter().position(|&s| s == to).unwrap();
            let message = if k == kind::START {
                ToWorker::EfpsnStart {
                    me: to,
                    dashboard: DASHBOARD,
                    payload,
                    ledger_json: ledgers[i].clone(),
                    csv: csv.clone(),
                    own: None,
                    allow_nonprivate: true,
                }
            } else {
                ToWorker::EfpsnMessage { from, payload }
            };
            for reply in workers[i].handle(message, 0) {
                match reply {
                    FromWorker::Send { to: To::One(dest), kind, payload } => {
                        wire.push_back((dest, to, kind, payload));
                    }
                    FromWorker::Send { to: To::All, .. } => {
                        panic!("agents address peers one by one")
                    }
                    FromWorker::Ledger { json } => ledgers[i] = json,
                    FromWorker::EfpsnView(v) => views[i] = Some(*v),
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
        assert!(observer.is_finished());
        assert!(observer.residual().is_exactly_zero(), "{:?}", observer.residual());
        for run in observer.runs() {
            assert!(run.status.iter().all(|s| *s == RunStatus::Done), "{:?}", run.status);
            assert_eq!(run.trace.last().unwrap().iteration, 60);
        }
        let (efpsn, exact) = (&observer.runs()[0], &observer.runs()[1]);
        let gap = (efpsn.trace.last().unwrap().score - exact.trace.last().unwrap().score).abs();
        assert!(gap <= 0.02, "EFPSN and noise-free accuracy differ by {gap}");
        for (i, view) in views.iter().enumerate() {
            let view = view.as_ref().unwrap();
            assert_eq!(view.agent, Some(i));
            assert_eq!(view.neighbours.len(), 2, "a ring");
            assert!(
                view.epsilon.is_some() && view.runs.iter().all(|r| r.status == RunStatus::Done)
            );
            let ledger = Ledger::from_json(&ledgers[i]).unwrap();
            assert_eq!(ledger.entries().len(), 1, "the EFPSN run's (ε, δ), recorded once");
        }
    }
}
