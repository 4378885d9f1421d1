/*!
A site tab's role in the vertical synthetic-data study (DP-VI + MPC), as its worker runs it: a
[`Party`] on its block of the announced table, or the [`Dealer`]. Each step is a few MPC rounds
of ring arithmetic over B × D secret-shared values (and the dealer's triples for all of them),
too much for the page's thread. Once the posterior is released, a party draws the synthetic twin
(every column, from the tab's twin seed) and compares its own columns' marginals with its real
ones, in the worker: the real block never leaves it. Plain Rust, tested natively.
*/

use capelab_core::accountant::Ledger;
use capelab_core::driver::{Machine, Outgoing};
use capelab_core::rng::Seed;
use capelab_core::wire::ParticipantId;
use capelab_vertical_vi::schema::PartyBlock;
use capelab_vertical_vi::study::{Body, Dealer, Party, Status, StudyError, VviMessage, VviTask};
use serde::{Deserialize, Serialize};

use super::protocol::{FromWorker, LedgerWatch};
use crate::study_driver::vvi_run::VviData;
use crate::study_view::vvi::{Marginal, marginals, status_text, twin, twin_table};

enum Role {
    Party { index: usize, real: PartyBlock, role: Box<Party<Ledger>> },
    Dealer(Box<Dealer>),
}

impl Role {
    fn machine(&mut self) -> &mut dyn Machine<Error = StudyError> {
        match self {
            Role::Party { role, .. } => role.as_mut(),
            Role::Dealer(role) => role.as_mut(),
        }
    }

    fn status(&self) -> &Status {
        match self {
            Role::Party { role, .. } => role.status(),
            Role::Dealer(role) => role.status(),
        }
    }
}

/// What the site's panel shows of its part in the study.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VviSiteView {
    /// "party A (demographic): age, education, sex" or "the dealer"; empty before a run.
    pub role: String,
    /// The party's rows (private: they never leave the tab).
    pub rows: usize,
    pub status: String,
    pub progress: f64,
    pub released: bool,
    pub stopped: Option<String>,
    /// The run's ε at δ for the outside analyst, what a party's ledger records.
    pub epsilon: Option<(f64, f64)>,
    /// After the release, a party's columns: real against the synthetic twin.
    pub marginals: Vec<Marginal>,
    /// After the release, the twin (all columns, N rows) as CSV, and the seed it was drawn with.
    pub twin_csv: Option<String>,
    pub twin_seed: u64,
    pub refusals: Vec<String>,
}

#[derive(Default)]
pub struct VviEngine {
    role: Option<Role>,
    task: Option<VviTask>,
    epsilon: Option<(f64, f64)>,
    ledger: LedgerWatch,
    refusals: Vec<String>,
    twin_seed: u64,
    twin: Option<(Vec<Marginal>, String)>,
}

impl VviEngine {
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        &mut self,
        me: ParticipantId,
        aggregator: ParticipantId,
        payload: &[u8],
        ledger_json: &str,
        data: Option<VviData>,
        twin_seed: u64,
        now_ms: u64,
    ) -> Vec<FromWorker> {
        let task = match VviMessage::decode(payload) {
            Ok(VviMessage { body: Body::Start { task, .. }, .. }) => *task,
            Ok(_) => return self.refused("a study message before the task".into()),
            Err(e) => return self.refused(e.to_string()),
        };
        let ledger = match Ledger::from_json(ledger_json) {
            Ok(l) => l,
            Err(e) => return self.refused(format!("the ledger: {e}")),
        };
        *self = VviEngine { twin_seed, ..VviEngine::default() };
        self.ledger.reset(&ledger);
        self.epsilon = task.epsilon().ok().map(|e| (e, task.delta));
        let role = if task.dealer == me {
            Role::Dealer(Box::new(Dealer::new(me, aggregator, Seed::Os)))
        } else if let Some(index) = task.parties.iter().position(|&p| p == me) {
            let columns = task.schema.parties[index].features.len();
            // No announcement: an empty block, which the party refuses, naming the row count.
            let real = data.and_then(|d| d.block(index)).unwrap_or(PartyBlock {
                rows: 0,
                features: columns,
                cells: Vec::new(),
            });
            let role = Party::new(me, aggregator, real.clone(), ledger, Seed::Os);
            Role::Party { index, real, role: Box::new(role) }
        } else {
            return vec![FromWorker::VviView(Box::new(self.view()))];
        };
        self.task = Some(task);
        let role = self.role.insert(role);
        let result = role.machine().handle(now_ms, aggregator, payload);
        self.after(result)
    }

    pub fn message(&mut self, from: ParticipantId, payload: &[u8], now_ms: u64) -> Vec<FromWorker> {
        let Some(role) = self.role.as_mut() else { return Vec::new() };
        let result = role.machine().handle(now_ms, from, payload);
        self.after(result)
    }

    pub fn departure(&mut self, who: ParticipantId, now_ms: u64) -> Vec<FromWorker> {
        let Some(role) = self.role.as_mut() else { return Vec::new() };
        let result = role.machine().handle_departure(now_ms, who);
        self.after(result)
    }

    fn refused(&mut self, reason: String) -> Vec<FromWorker> {
        self.refusals.push(reason);
        vec![FromWorker::VviView(Box::new(self.view()))]
    }

    fn after(&mut self, result: Result<Vec<Outgoing>, StudyError>) -> Vec<FromWorker> {
        let mut replies = Vec::new();
        match result {
            Ok(out) => replies.extend(FromWorker::sends(out)),
            Err(e) => self.refusals.push(e.to_string()),
        }
        if let Some(Role::Party { role, .. }) = self.role.as_mut()
            && let Some(saved) = self.ledger.changed(role.ledger())
        {
            // The ledger goes first: the tab saves it before the envelopes leave.
            replies.insert(0, saved);
        }
        self.draw_twin();
        replies.push(FromWorker::VviView(Box::new(self.view())));
        replies
    }

    /// Once, at the release: the twin and this party's marginals.
    fn draw_twin(&mut self) {
        let (Some(Role::Party { index, real, role }), Some(task), None) =
            (&self.role, &self.task, &self.twin)
        else {
            return;
        };
        let Status::Released(release) = role.status() else { return };
        let blocks = twin(task, release, task.rows, self.twin_seed);
        let m = marginals(&task.schema.parties[*index], real, &blocks[*index]);
        self.twin = Some((m, twin_table(&task.schema, &blocks).to_csv()));
    }

    pub fn view(&self) -> VviSiteView {
        let mut view = VviSiteView {
            twin_seed: self.twin_seed,
            epsilon: self.epsilon,
            refusals: self.refusals.iter().rev().take(5).cloned().collect(),
            ..VviSiteView::default()
        };
        let (Some(role), Some(task)) = (&self.role, &self.task) else {
            view.status = "Waiting for the dashboard".into();
            return view;
        };
        view.role = match role {
            Role::Party { index, real, .. } => {
                view.rows = real.rows;
                let party = &task.schema.parties[*index];
                let columns: Vec<&str> = party.features.iter().map(|f| f.name.as_str()).collect();
                let letter = ["A", "B", "C", "D"].get(*index).copied().unwrap_or("?");
                format!("party {letter} ({}): {}", party.name, columns.join(", "))
            }
            Role::Dealer(_) => "the dealer".into(),
        };
        let (status, progress) = status_text(role.status(), task.steps);
        view.status = status;
        view.progress = progress;
        view.released = matches!(role.status(), Status::Released(_));
        if let Status::Stopped(reason) = role.status() {
            view.stopped = Some(reason.clone());
        }
        if let Some((m, csv)) = &self.twin {
            view.marginals = m.clone();
            view.twin_csv = Some(csv.clone());
        }
        view
    }
}

#[cfg(test)]
mod tests {
    //! Two party workers and a dealer worker with the core's aggregator, wired as the page and
    //! the relay would: the whole study with nothing but worker messages.

    use std::collections::VecDeque;

    use capelab_core::accountant::{Budget, Ledger};
    use capelab_core::study::StudyId;
    use capelab_core::wire::To;
    use capelab_vertical_vi::study::{Aggregator, kind};

    use super::*;
    use crate::study_driver::vvi_run::VviFields;
    use crate::worker::protocol::ToWorker;
    use crate::worker::state::WorkerState;

    const AGG: ParticipantId = 1;
    const SITES: [ParticipantId; 3] = [2, 3, 4];

    /// Runs the study; `leave` makes that site vanish after that many of its inputs.
    fn run(leave: Option<(usize, usize)>) -> (Aggregator, Vec<Option<VviSiteView>>, Vec<String>) {
        let fields =
            VviFields { rows: 300, batch: 20, steps: 4, components: 3, ..VviFields::default() };
        let (parties, dealer) = fields.roles(&SITES).unwrap();
        let task = fields.task(parties, dealer, AGG, 5).unwrap();
        let data = VviData { rows: 300, seed: 11 };
        let (mut agg, out) =
            Aggregator::start(AGG, StudyId([3; 16]), task, Seed::Fixed(1)).unwrap();
        let mut workers: Vec<WorkerState> = SITES.iter().map(|_| WorkerState::default()).collect();
        let mut ledgers: Vec<String> = SITES
            .iter()
            .map(|s| {
                Ledger::new(format!("s{s}"), Budget::new(100.0, 1e-5).unwrap()).unwrap().to_json()
            })
            .collect();
        let mut views = vec![None; SITES.len()];
        let mut inputs = [0usize; 3];
        let mut gone: Option<ParticipantId> = None;
        let mut wire: VecDeque<(ParticipantId, ParticipantId, String, Vec<u8>)> = out
            .into_iter()
            .map(|o| match o.to {
                To::One(to) => (to, AGG, o.kind.to_owned(), o.payload),
                To::All => panic!("one by one"),
            })
            .collect();
        while let Some((to, from, k, payload)) = wire.pop_front() {
            if Some(to) == gone || Some(from) == gone {
                continue;
            }
            if to == AGG {
                for o in agg.handle(0, from, &payload).unwrap_or_default() {
                    let To::One(site) = o.to else { panic!("no broadcast") };
                    wire.push_back((site, AGG, o.kind.to_owned(), o.payload));
                }
                continue;
            }
            let i = SITES.iter().position(|&s| s == to).unwrap();
            let message = if k == kind::START {
                ToWorker::VviStart {
                    me: to,
                    aggregator: AGG,
                    payload,
                    ledger_json: ledgers[i].clone(),
                    data: Some(data),
                    twin_seed: 9,
                }
            } else {
                ToWorker::VviMessage { from, payload }
            };
            for reply in workers[i].handle(message, 0) {
                match reply {
                    FromWorker::Send { to: To::One(dest), kind, payload } => {
                        wire.push_back((dest, to, kind, payload))
                    }
                    FromWorker::Ledger { json } => ledgers[i] = json,
                    FromWorker::VviView(v) => views[i] = Some(*v),
                    other => panic!("unexpected {other:?}"),
                }
            }
            inputs[i] += 1;
            if let Some((who, after)) = leave
                && who == i
                && inputs[i] == after
            {
                gone = Some(SITES[i]);
                for o in agg.handle_departure(0, SITES[i]).unwrap() {
                    let To::One(site) = o.to else { panic!("no broadcast") };
                    wire.push_back((site, AGG, o.kind.to_owned(), o.payload));
                }
                for (j, w) in workers.iter_mut().enumerate().filter(|(j, _)| *j != i) {
                    for reply in w.handle(ToWorker::VviDeparture { who: SITES[i] }, 0) {
                        if let FromWorker::VviView(v) = reply {
                            views[j] = Some(*v);
                        }
                    }
                }
            }
        }
        (agg, views, ledgers)
    }

    #[test]
    fn two_party_workers_and_a_dealer_worker_release_a_twin() {
        let (agg, views, ledgers) = run(None);
        assert!(matches!(agg.status(), Status::Released(_)), "{:?}", agg.status());
        let views: Vec<VviSiteView> = views.into_iter().map(Option::unwrap).collect();
        assert!(views[0].role.starts_with("party A (demographic): age"), "{}", views[0].role);
        assert_eq!(views[2].role, "the dealer");
        for v in &views {
            assert!(v.released && v.progress == 1.0 && v.refusals.is_empty(), "{v:?}");
            assert!(v.epsilon.is_some_and(|(e, _)| e > 0.0));
        }
        for (i, v) in views[..2].iter().enumerate() {
            assert_eq!(v.marginals.len(), [3, 2][i]);
            let csv = v.twin_csv.as_ref().unwrap();
            assert!(csv.starts_with("age,education,sex,hours-per-week,income\n"));
            assert_eq!(csv.lines().count(), 301);
            assert_eq!(Ledger::from_json(&ledgers[i]).unwrap().entries().len(), 1);
        }
        assert_eq!(views[0].twin_csv, views[1].twin_csv, "same seed, same twin on both parties");
    }

    #[test]
    fn the_dealer_leaving_stops_every_role_naming_it() {
        let (agg, views, _) = run(Some((2, 3)));
        let Status::Stopped(reason) = agg.status() else { panic!("{:?}", agg.status()) };
        assert!(reason.contains("the dealer (participant 4) left"), "{reason}");
        for v in &views[..2] {
            let v = v.as_ref().unwrap();
            let stopped = v.stopped.as_deref().unwrap_or_default();
            assert!(stopped.contains("the dealer (participant 4)"), "{v:?}");
            assert!(v.twin_csv.is_none());
        }
    }
}
