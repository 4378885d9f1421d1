/*!
The dashboard's side of the EFPSN study (seed 003): it builds the task from the form for the sites
present, measures with its copy of the public data set (x* and the test rows), and runs the
core's [`EfpsnObserver`] in a [`Driver`] on the room's websocket. The agents do everything else
among themselves; the observer only reads their reports.

The data set is the app's bundled copy of scikit-learn's `digits` (`digits.csv`, written into
`data/` at set-up and copied next to the app by trunk), fetched from the relay that serves the
app; every agent tab fetches the same file and keeps only its own part of the public split.
*/

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use capelab_core::data::Dataset;
use capelab_core::driver::Driver;
use capelab_core::efpsn::graph::Graph;
use capelab_core::efpsn::problem::{ClassificationSplit, Problem};
use capelab_core::rng::os_rng;
use capelab_core::study::StudyId;
use capelab_core::study::efpsn::{EfpsnObserver, EfpsnTask, ObservedRun, Residual, Stop};
use capelab_core::wire::ParticipantId;
use rand_core::Rng;
use serde::Serialize;

use crate::frame::wire::StudyTransport;
use crate::studies::efpsn::form::RIDGE;

/// Where the app serves the data set from (trunk copies it into `dist/`).
pub const DIGITS_URL: &str = "digits.csv";

/// The public split every tab applies to digits: 16 bounds the pixel counts, 20% is held out.
pub fn digits_split(classes: usize, features: usize) -> ClassificationSplit {
    ClassificationSplit {
        classes,
        features,
        feature_bound: 16.0,
        ridge: RIDGE,
        test_fraction: 0.2,
        seed: 0,
    }
}

thread_local! {
    /// The dashboard's copy of digits and its classes, once loaded (it does not change).
    static DIGITS: RefCell<Option<Rc<(Dataset, usize)>>> = const { RefCell::new(None) };
}

/// The app's copy of digits, fetched once per page.
pub async fn digits() -> Result<Rc<(Dataset, usize)>, String> {
    if let Some(d) = DIGITS.with_borrow(Clone::clone) {
        return Ok(d);
    }
    let loaded = Rc::new(crate::fetch::labelled_table(DIGITS_URL).await?);
    DIGITS.with_borrow_mut(|d| *d = Some(loaded.clone()));
    Ok(loaded)
}

/// One run as the dashboard shows it (the iterates stay in the observer).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EfpsnLive {
    pub number: usize,
    pub finished: bool,
    /// Why the whole study ended early (the teacher, a site that declined the EFPSN run).
    pub stopped: Option<Stop>,
    pub graph: Graph,
    pub agents: Vec<ParticipantId>,
    pub names: BTreeMap<ParticipantId, String>,
    pub task: EfpsnTask,
    /// The runs without their iterates.
    pub runs: Vec<ObservedRun>,
    pub x_star_score: f64,
    /// The zero-sum check over the EFPSN run's masks (SecureAgg).
    pub residual: Residual,
    /// The first held-out image (features in [0, 1]) and its label: the attack panel's probe.
    pub probe: (Vec<f64>, usize),
    pub refusals: Vec<String>,
}

impl EfpsnLive {
    /// Agent `agent`'s site name, as its user typed it.
    pub fn name(&self, agent: usize) -> String {
        self.name_of(self.agents[agent])
    }

    /// A participant's site name, as its user typed it.
    pub fn name_of(&self, id: ParticipantId) -> String {
        self.names.get(&id).cloned().unwrap_or_else(|| format!("Site {id}"))
    }
}

pub struct EfpsnRun {
    pub number: usize,
    pub driver: Driver<StudyTransport, EfpsnObserver>,
    pub names: BTreeMap<ParticipantId, String>,
    x_star_score: f64,
    probe: (Vec<f64>, usize),
}

impl EfpsnRun {
    /// Opens the study: the problem from the dashboard's copy of the data, `efpsn/start` to
    /// every agent.
    pub fn start(
        number: usize,
        me: ParticipantId,
        task: EfpsnTask,
        data: &Dataset,
        transport: StudyTransport,
        names: BTreeMap<ParticipantId, String>,
        now_ms: u64,
    ) -> Result<Self, String> {
        let problem: Problem =
            task.split.problem(data, task.agents().len()).map_err(|e| e.words())?;
        let x_star_score = problem.score(&problem.x_star);
        let probe = (problem.test.row(0).to_vec(), problem.test.y[0] as usize);
        let mut id = [0u8; 16];
        os_rng().fill_bytes(&mut id);
        let (observer, out) = EfpsnObserver::start(me, StudyId(id), task, problem, os_rng())
            .map_err(|e| e.words())?;
        let mut driver = Driver::new(transport, observer);
        driver.send(now_ms, out);
        Ok(EfpsnRun { number, driver, names, x_star_score, probe })
    }

    pub fn is_finished(&self) -> bool {
        use capelab_core::driver::Machine;
        self.driver.machine.is_finished()
    }

    pub fn live(&self) -> EfpsnLive {
        let o = &self.driver.machine;
        let refusals = crate::frame::refusal_lines(self.driver.log());
        EfpsnLive {
            number: self.number,
            finished: self.is_finished(),
            stopped: o.stopped().cloned(),
            graph: o.task().runs[0].plan.graph.clone(),
            agents: o.task().agents().to_vec(),
            names: self.names.clone(),
            task: o.task().clone(),
            runs: o
                .runs()
                .iter()
                .map(|r| ObservedRun {
                    id: r.id,
                    method: r.method,
                    epsilon: r.epsilon,
                    status: r.status.clone(),
                    reached: r.reached.clone(),
                    iterates: Vec::new(),
                    gradient_at_zero: r.gradient_at_zero.clone(),
                    trace: r.trace.clone(),
                    x_bar: r.x_bar.clone(),
                })
                .collect(),
            x_star_score: self.x_star_score,
            residual: o.residual().clone(),
            probe: self.probe.clone(),
            refusals,
        }
    }
}
