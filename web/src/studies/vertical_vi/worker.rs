/*!
A site tab's role in the vertical synthetic-data study (DP-VI + MPC), as its worker runs it: a
[`Party`] on its block of the announced table, or the [`Dealer`]. Each step is a few MPC rounds
of ring arithmetic over B × D secret-shared values (and the dealer's triples for all of them),
too much for the page's thread. A party on its own columns gets their text with `vvi/start` and
reads it against the task ([`own_block`]); a file that does not fit makes it decline the run,
naming row, column and value here and only row and column to the others. Once the posterior is released, a party draws the synthetic twin
(every column, from the tab's twin seed) and compares its own columns' marginals with its real
ones, in the worker: the real block never leaves it. Plain Rust, tested natively.
*/

use std::collections::BTreeMap;

use capelab_core::accountant::Ledger;
use capelab_core::driver::{Machine, Outgoing};
use capelab_core::rng::Seed;
use capelab_core::wire::ParticipantId;
use capelab_vertical_vi::schema::PartyBlock;
use capelab_vertical_vi::study::{Body, Dealer, Party, Status, StudyError, VviMessage, VviTask};
use serde::{Deserialize, Serialize};

use crate::numbers::group;
use crate::studies::vertical_vi::own::{Refusal, own_block};
use crate::studies::vertical_vi::run::VviData;
use crate::studies::vertical_vi::view::{
    Marginal, marginals, named, party_letter, status_text, twin, twin_table,
};
use crate::worker::protocol::{FromWorker, LedgerWatch, VviStart};

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

/// What the site's panel shows of its part in the study: only what is true of this run, now.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VviSiteView {
    /// "party A (demographic): age, education, sex" or "the dealer"; empty before a run.
    pub role: String,
    /// The party's rows (private: they never leave the tab).
    pub rows: usize,
    /// The names of the columns this worker holds (only its own party's).
    pub columns: Vec<String>,
    /// Where this tab's role is, in one sentence, the run's members named as people named them.
    pub status: String,
    /// "fetching", "waiting", "running", "released", "declined" (this tab refused the run before
    /// anything was charged or sent) or "stopped".
    pub phase: String,
    pub progress: f64,
    pub released: bool,
    pub stopped: Option<String>,
    /// Why this tab declined the run, in full (a file's values included: shown on this tab
    /// only; the others hear it without the values), and what to do about it.
    pub declined: Option<String>,
    /// The ε at δ this party's ledger recorded for the run: only once it did.
    pub charged: Option<(f64, f64)>,
    /// The released posterior's ε at δ for the outside analyst, once released.
    pub released_epsilon: Option<(f64, f64)>,
    /// After the release, a party's columns: real against the synthetic twin.
    pub marginals: Vec<Marginal>,
    /// After the release, the twin (all columns, N rows) as CSV, and the seed it was drawn with.
    pub twin_csv: Option<String>,
    pub twin_seed: u64,
    pub refusals: Vec<String>,
}

/// A party's start while its table is being fetched, and the inputs that arrived meanwhile.
struct Pending {
    start: VviStart,
    queue: Vec<Queued>,
}

enum Queued {
    Message { from: ParticipantId, payload: Vec<u8> },
    Departure(ParticipantId),
}

#[derive(Default)]
pub struct VviEngine {
    role: Option<Role>,
    pending: Option<Pending>,
    task: Option<VviTask>,
    me: ParticipantId,
    aggregator: ParticipantId,
    names: BTreeMap<ParticipantId, String>,
    /// The run's ε at δ for the outside analyst (what a party's ledger records, once it does).
    epsilon: Option<(f64, f64)>,
    ledger: LedgerWatch,
    refusals: Vec<String>,
    twin_seed: u64,
    twin: Option<(Vec<Marginal>, String)>,
    /// Why this party could not use its own columns (the file's values included).
    declined: Option<String>,
}

impl VviEngine {
    /// A `vvi/start`. A party on a table it must fetch (CPS1988) waits for
    /// [`VviEngine::table`]: it asks the worker to fetch the file ([`FromWorker::Fetch`]) and
    /// keeps the run's messages, in order, until the file is here. Everything of an earlier run
    /// goes: this tab's view is of this run only.
    pub fn start(&mut self, start: VviStart, now_ms: u64) -> Vec<FromWorker> {
        let task = match VviMessage::decode(&start.payload) {
            Ok(VviMessage { body: Body::Start { task, .. }, .. }) => *task,
            Ok(_) => return self.refused("a study message before the task".into()),
            Err(e) => return self.refused(e.to_string()),
        };
        *self = VviEngine {
            me: start.me,
            aggregator: start.aggregator,
            names: start.names.clone(),
            twin_seed: start.twin_seed.unwrap_or_default(),
            ..VviEngine::default()
        };
        self.epsilon = task.epsilon().ok().map(|e| (e, task.delta));
        let index = task.parties.iter().position(|&p| p == start.me);
        let fetch = match (index, start.data.and_then(|d| d.file())) {
            (Some(_), Some(file)) => Some(start.file_url.clone().unwrap_or_else(|| file.into())),
            _ => None,
        };
        self.task = Some(task);
        match fetch {
            Some(url) => {
                self.pending = Some(Pending { start, queue: Vec::new() });
                vec![FromWorker::Fetch { url }, FromWorker::VviView(Box::new(self.view()))]
            }
            None => self.begin(Pending { start, queue: Vec::new() }, Ok(None), now_ms),
        }
    }

    /// The fetched table (or why it could not be fetched): the waiting party starts on its
    /// block of it, then handles the messages that arrived meanwhile.
    pub fn table(&mut self, joined: Result<String, String>, now_ms: u64) -> Vec<FromWorker> {
        let Some(pending) = self.pending.take() else { return Vec::new() };
        match joined {
            Ok(text) => self.begin(pending, Ok(Some(&text)), now_ms),
            Err(e) => self.begin(pending, Err(e), now_ms),
        }
    }

    /// The role on its block; `joined` is the fetched file, read here and dropped: only this
    /// party's columns are kept (the other party's columns never enter the worker's state).
    /// `joined`: `Err` when its fetch failed.
    fn begin(
        &mut self,
        pending: Pending,
        joined: Result<Option<&str>, String>,
        now_ms: u64,
    ) -> Vec<FromWorker> {
        let Pending { start, queue } = pending;
        let VviStart { me, aggregator, payload, ledger_json, data, own, .. } = start;
        let Some(task) = self.task.clone() else { return Vec::new() };
        let ledger = match Ledger::from_json(&ledger_json) {
            Ok(l) => l,
            Err(e) => return self.refused(format!("this tab's ledger could not be read: {e}")),
        };
        self.ledger.reset(&ledger);
        let role = if task.dealer == me {
            Role::Dealer(Box::new(Dealer::new(me, aggregator, Seed::Os)))
        } else if let Some(index) = task.parties.iter().position(|&p| p == me) {
            let schema = &task.schema.parties[index];
            let block = match data {
                Some(VviData::Own { rows }) => own_block(&task.schema, index, own.as_deref(), rows),
                Some(d) => match &joined {
                    Ok(joined) => d.block(index, *joined).map_err(Refusal::public),
                    Err(e) => Err(Refusal::public(format!(
                        "could not fetch {}: {e}",
                        d.file().unwrap_or("the table")
                    ))),
                },
                None => Err(Refusal::public("no data announcement reached this tab".into())),
            };
            let (real, refusal) = match block {
                Ok(block) => (block, None),
                // No table: an empty block, and the party declines with the reason.
                Err(r) => (
                    PartyBlock { rows: 0, features: schema.features.len(), cells: vec![] },
                    Some(r),
                ),
            };
            let mut role = Party::new(me, aggregator, real.clone(), ledger, Seed::Os);
            if let Some(Refusal { here, told }) = refusal {
                self.declined = Some(here);
                role = role.refusing(told);
            }
            Role::Party { index, real, role: Box::new(role) }
        } else {
            self.task = None;
            return vec![FromWorker::VviView(Box::new(self.view()))];
        };
        let role = self.role.insert(role);
        let result = role.machine().handle(now_ms, aggregator, &payload);
        let mut replies = self.after(result);
        for input in queue {
            replies.extend(match input {
                Queued::Message { from, payload } => self.message(from, &payload, now_ms),
                Queued::Departure(who) => self.departure(who, now_ms),
            });
        }
        replies
    }

    pub fn message(&mut self, from: ParticipantId, payload: &[u8], now_ms: u64) -> Vec<FromWorker> {
        if let Some(pending) = self.pending.as_mut() {
            pending.queue.push(Queued::Message { from, payload: payload.to_vec() });
            return Vec::new();
        }
        let Some(role) = self.role.as_mut() else { return Vec::new() };
        let result = role.machine().handle(now_ms, from, payload);
        self.after(result)
    }

    pub fn departure(&mut self, who: ParticipantId, now_ms: u64) -> Vec<FromWorker> {
        if let Some(pending) = self.pending.as_mut() {
            pending.queue.push(Queued::Departure(who));
            return Vec::new();
        }
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

    /// A message of the run's roles in the words of this tab's people.
    fn named(&self, text: &str) -> String {
        match &self.task {
            Some(task) => named(text, task, self.aggregator, &self.names),
            None => text.to_owned(),
        }
    }

    pub fn view(&self) -> VviSiteView {
        let mut view = VviSiteView {
            twin_seed: self.twin_seed,
            refusals: self.refusals.iter().rev().take(5).map(|r| self.named(r)).collect(),
            ..VviSiteView::default()
        };
        if let (Some(_), Some(task)) = (&self.pending, &self.task) {
            view.role = "a party (fetching the public table to keep its own columns)".into();
            view.status = format!("Fetching the table ({} rows)…", group(task.rows));
            view.phase = "fetching".into();
            return view;
        }
        let (Some(role), Some(task)) = (&self.role, &self.task) else {
            view.status = "Not in a vertical study".into();
            view.phase = "idle".into();
            return view;
        };
        view.role = match role {
            Role::Party { index, real, .. } => {
                view.rows = real.rows;
                let party = &task.schema.parties[*index];
                if real.rows > 0 {
                    view.columns = party.features.iter().map(|f| f.name.clone()).collect();
                }
                let columns: Vec<&str> = party.features.iter().map(|f| f.name.as_str()).collect();
                format!("party {} ({}): {}", party_letter(*index), party.name, columns.join(", "))
            }
            Role::Dealer(_) => "the dealer".into(),
        };
        let status = role.status();
        let (text, progress) = status_text(status, task.steps);
        view.progress = progress;
        view.released = matches!(status, Status::Released(_));
        if let Role::Party { role, .. } = role
            && role.charged()
        {
            view.charged = self.epsilon;
        }
        let me = task.who(self.me, self.aggregator);
        (view.phase, view.status) = match status {
            Status::Waiting => ("waiting".into(), text),
            Status::Running { .. } => ("running".into(), text),
            Status::Released(r) => {
                view.released_epsilon = Some((r.epsilon, r.delta));
                ("released".into(), text)
            }
            // This tab's own refusal: before anything was charged or sent.
            Status::Stopped(reason) if reason.starts_with(&me) && view.charged.is_none() => {
                view.declined = Some(self.declined_text(role, reason));
                (
                    "declined".into(),
                    "Declined this run: nothing was charged to this tab's ledger, nothing of its \
                     columns was sent"
                        .into(),
                )
            }
            Status::Stopped(reason) => {
                view.stopped = Some(self.named(reason));
                ("stopped".into(), self.named(&text))
            }
        };
        if let Some((m, csv)) = &self.twin {
            view.marginals = m.clone();
            view.twin_csv = Some(csv.clone());
        }
        view
    }

    /// Why this tab declined, in full, with what to do.
    fn declined_text(&self, role: &Role, reason: &str) -> String {
        if let Some(why) = &self.declined {
            return why.clone();
        }
        if let Role::Party { role, .. } = role
            && let Some(s) = role.shortfall()
        {
            return crate::frame::budget::own_decline(&s);
        }
        self.named(reason)
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
    use crate::studies::vertical_vi::run::{VviFields, VviSource};
    use crate::worker::protocol::ToWorker;
    use crate::worker::state::WorkerState;

    const AGG: ParticipantId = 1;
    const SITES: [ParticipantId; 3] = [2, 3, 4];
    const BUDGET: f64 = 100.0;

    type Outcome = (Aggregator, Vec<Option<VviSiteView>>, Vec<String>);

    fn names() -> BTreeMap<ParticipantId, String> {
        [(1, "Teacher"), (2, "Lab A"), (3, "Lab B"), (4, "Lab C")]
            .into_iter()
            .map(|(id, n)| (id, n.to_owned()))
            .collect()
    }

    /// Runs the study on the generated table; `leave` makes that site vanish after that many of
    /// its inputs.
    fn run(leave: Option<(usize, usize)>) -> Outcome {
        let fields =
            VviFields { rows: 300, batch: 20, steps: 4, components: 3, ..VviFields::default() };
        run_on(&fields, VviData::Generated { rows: 300, seed: 11 }, None, &[], leave)
    }

    fn run_on(
        fields: &VviFields,
        data: VviData,
        joined: Option<&str>,
        own: &[Option<String>],
        leave: Option<(usize, usize)>,
    ) -> Outcome {
        run_with(fields, data, joined, own, leave, [BUDGET; 3])
    }

    /// Runs the study on `data`; a party that asks for its table's file gets `joined` once the
    /// wire is quiet (so the run's first messages wait for it in its queue); site i's tab holds
    /// `own[i]` as its own columns and a ledger of budget ε = `budgets[i]`.
    fn run_with(
        fields: &VviFields,
        data: VviData,
        joined: Option<&str>,
        own: &[Option<String>],
        leave: Option<(usize, usize)>,
        budgets: [f64; 3],
    ) -> Outcome {
        let task = fields.task(&data, vec![2, 3], 4, AGG, 5).unwrap();
        let mut fetching: VecDeque<usize> = VecDeque::new();
        let (mut agg, out) =
            Aggregator::start(AGG, StudyId([3; 16]), task, Seed::Fixed(1)).unwrap();
        let mut workers: Vec<WorkerState> = SITES.iter().map(|_| WorkerState::default()).collect();
        let mut ledgers: Vec<String> = SITES
            .iter()
            .zip(budgets)
            .map(|(s, b)| {
                Ledger::new(format!("s{s}"), Budget::new(b, 1e-5).unwrap()).unwrap().to_json()
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
        loop {
            let Some((to, from, k, payload)) = wire.pop_front() else {
                let Some(i) = fetching.pop_front() else { break };
                let joined = joined.map(str::to_owned).ok_or_else(|| "offline".to_string());
                for reply in workers[i].handle(ToWorker::VviTable { joined }, 0) {
                    match reply {
                        FromWorker::Send { to: To::One(dest), kind, payload } => {
                            wire.push_back((dest, SITES[i], kind, payload))
                        }
                        FromWorker::Ledger { json } => ledgers[i] = json,
                        FromWorker::VviView(v) => views[i] = Some(*v),
                        other => panic!("unexpected {other:?}"),
                    }
                }
                continue;
            };
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
                ToWorker::VviStart(Box::new(VviStart {
                    me: to,
                    aggregator: AGG,
                    payload,
                    ledger_json: ledgers[i].clone(),
                    data: Some(data),
                    file_url: None,
                    own: own.get(i).cloned().flatten(),
                    twin_seed: Some(9),
                    names: names(),
                }))
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
                    FromWorker::Fetch { url } => {
                        assert_eq!(url, "cps1988.csv");
                        fetching.push_back(i);
                    }
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
            assert!(v.released_epsilon.is_some_and(|(e, _)| e > 0.0));
            assert_eq!(v.phase, "released");
            assert!(v.status.starts_with("Done: released after 4 steps, ε = "), "{}", v.status);
        }
        // The parties' ledgers recorded the run; the dealer has none to record in.
        assert!(views[0].charged.is_some() && views[1].charged.is_some());
        assert_eq!(views[2].charged, None);
        // The same twin on every tab: the seed the dashboard announced.
        let Status::Released(release) = agg.status() else { unreachable!() };
        let dashboard = twin_table(&agg.task().schema, &twin(agg.task(), release, 300, 9)).to_csv();
        assert_eq!(views[0].twin_csv.as_deref(), Some(dashboard.as_str()));
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
            assert!(stopped.contains("the dealer (Lab C) left"), "named as people named it: {v:?}");
            assert!(v.status.starts_with("Stopped: the dealer (Lab C) left"), "{}", v.status);
            assert_eq!(v.phase, "stopped");
            assert!(v.twin_csv.is_none());
        }
    }

    #[test]
    fn cps1988_parties_fetch_the_file_and_keep_only_their_own_columns() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/cps1988.csv");
        let joined = std::fs::read_to_string(path).expect("data/cps1988.csv (scripts/setup.sh)");
        let fields = VviFields {
            source: VviSource::Cps1988,
            batch: 20,
            steps: 2,
            components: 2,
            ..VviFields::default()
        };
        let (agg, views, _) = run_on(&fields, VviData::Cps1988, Some(&joined), &[], None);
        assert!(matches!(agg.status(), Status::Released(_)), "{:?}", agg.status());
        let views: Vec<VviSiteView> = views.into_iter().map(Option::unwrap).collect();
        assert_eq!(views[0].columns, ["education", "experience", "ethnicity", "smsa", "region"]);
        assert_eq!(views[1].columns, ["wage", "parttime"]);
        assert!(views[2].columns.is_empty(), "the dealer holds no columns");
        for (i, v) in views[..2].iter().enumerate() {
            assert!(v.released && v.refusals.is_empty(), "{v:?}");
            assert_eq!(v.rows, 28_155);
            assert_eq!(v.marginals.len(), [5, 2][i]);
            let csv = v.twin_csv.as_ref().unwrap();
            let header = csv.lines().next().unwrap();
            assert_eq!(header, "education,experience,ethnicity,smsa,region,wage,parttime");
        }
    }

    #[test]
    fn a_party_whose_fetch_failed_says_so_and_the_run_stops() {
        let fields = VviFields {
            source: VviSource::Cps1988,
            batch: 20,
            steps: 2,
            components: 2,
            ..VviFields::default()
        };
        let (agg, views, _) = run_on(&fields, VviData::Cps1988, None, &[], None);
        assert!(!matches!(agg.status(), Status::Released(_)), "{:?}", agg.status());
        for v in &views[..2] {
            let v = v.as_ref().unwrap();
            let declined = v.declined.as_deref().unwrap_or_default();
            assert!(declined.contains("could not fetch cps1988.csv: offline"), "{v:?}");
            assert_eq!(v.phase, "declined");
            assert!(v.columns.is_empty() && !v.released);
        }
        let dealer = views[2].as_ref().unwrap();
        let told = dealer.stopped.as_deref().unwrap_or_default();
        assert!(told.contains("offline"), "told to all: {dealer:?}");
    }

    /// Each party's own column block: the first `rows` rows of CPS1988 cut as a party would
    /// hold them (its columns under their public labels).
    fn own_blocks(rows: usize) -> [String; 2] {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/cps1988.csv");
        let joined = std::fs::read_to_string(path).expect("data/cps1988.csv (scripts/setup.sh)");
        let (texts, _) = capelab_vertical_vi::cps1988::split_joined(&joined).unwrap();
        texts.map(|t| t.lines().take(rows + 1).map(|l| format!("{l}\n")).collect())
    }

    fn own_fields() -> VviFields {
        VviFields {
            source: VviSource::Own,
            rows: 300,
            batch: 20,
            steps: 2,
            components: 2,
            ..VviFields::default()
        }
    }

    #[test]
    fn parties_on_their_own_columns_release_a_twin_of_the_announced_shape() {
        let [a, b] = own_blocks(300);
        let own = [Some(a), Some(b), None];
        let (agg, views, ledgers) =
            run_on(&own_fields(), VviData::Own { rows: 300 }, None, &own, None);
        assert!(matches!(agg.status(), Status::Released(_)), "{:?}", agg.status());
        let views: Vec<VviSiteView> = views.into_iter().map(Option::unwrap).collect();
        assert_eq!(views[0].columns, ["education", "experience", "ethnicity", "smsa", "region"]);
        assert_eq!(views[1].columns, ["wage", "parttime"]);
        for (i, v) in views[..2].iter().enumerate() {
            assert!(v.released && v.declined.is_none() && v.refusals.is_empty(), "{v:?}");
            assert_eq!(v.rows, 300);
            assert_eq!(v.twin_csv.as_ref().unwrap().lines().count(), 301);
            assert_eq!(Ledger::from_json(&ledgers[i]).unwrap().entries().len(), 1);
        }
    }

    #[test]
    fn a_party_whose_file_does_not_fit_declines_and_nothing_is_released() {
        let [a, b] = own_blocks(300);
        // Row 4 of party A's file (line 5: the header is line 1) names an unknown ethnicity.
        let mut lines: Vec<&str> = a.lines().collect();
        let bad_row = lines[4].replacen("cauc", "martian", 1).replacen("afam", "martian", 1);
        lines[4] = &bad_row;
        let bad = lines.join("\n");
        let own = [Some(bad), Some(b.clone()), None];
        let (agg, views, ledgers) =
            run_on(&own_fields(), VviData::Own { rows: 300 }, None, &own, None);
        let Status::Stopped(reason) = agg.status() else { panic!("{:?}", agg.status()) };
        assert!(reason.contains("party 0 (participant 2) refused the run"), "{reason}");
        assert!(reason.contains("column 'ethnicity', row 4 (line 5 of the file)"), "{reason}");
        assert!(!reason.contains("martian"), "the value stays on party A's tab: {reason}");
        let a = views[0].as_ref().unwrap();
        let here = a.declined.as_deref().unwrap_or_default();
        assert!(here.contains("row 4 (line 5 of the file)") && here.contains("'martian'"), "{a:?}");
        assert_eq!((a.phase.as_str(), a.charged), ("declined", None));
        for (i, v) in views[..2].iter().enumerate() {
            let v = v.as_ref().unwrap();
            let over = v.stopped.is_some() || v.declined.is_some();
            assert!(!v.released && over && v.twin_csv.is_none(), "{v:?}");
            assert!(Ledger::from_json(&ledgers[i]).unwrap().entries().is_empty());
        }

        // Another row count than the announced N: named on every tab, with the way out.
        let [a, _] = own_blocks(300);
        let short: String = b.lines().take(300).map(|l| format!("{l}\n")).collect();
        let own = [Some(a), Some(short), None];
        let (agg, views, _) = run_on(&own_fields(), VviData::Own { rows: 300 }, None, &own, None);
        let Status::Stopped(reason) = agg.status() else { panic!("{:?}", agg.status()) };
        assert!(
            reason.contains("its file has 299 rows, the dashboard announced N = 300"),
            "{reason}"
        );
        assert!(
            views[1].as_ref().unwrap().declined.as_deref().unwrap_or_default().contains("299 rows")
        );
    }

    #[test]
    fn a_party_whose_budget_cannot_cover_the_run_declines_before_anything_is_charged() {
        let fields =
            VviFields { rows: 300, batch: 20, steps: 4, components: 3, ..VviFields::default() };
        let data = VviData::Generated { rows: 300, seed: 11 };
        let task = fields.task(&data, vec![2, 3], 4, AGG, 5).unwrap();
        let needed = task.epsilon().unwrap();
        let (agg, views, ledgers) =
            run_with(&fields, data, None, &[], None, [BUDGET, needed / 2.0, BUDGET]);
        assert!(matches!(agg.status(), Status::Stopped(_)), "{:?}", agg.status());
        // The dashboard hears which party and by how much: the least budget that admits the run.
        let (who, shortfall) = agg.budget_refusal().expect("a budget refusal");
        assert_eq!((who, shortfall.budget), (3, needed / 2.0));
        assert!((shortfall.needed.unwrap() - needed).abs() < 1e-3 * needed, "{shortfall:?}");
        let b = views[1].as_ref().unwrap();
        assert_eq!((b.phase.as_str(), b.charged), ("declined", None), "{b:?}");
        let why = b.declined.as_deref().unwrap_or_default();
        assert!(
            why.starts_with("This site declined before releasing anything")
                && why.contains("raise it to at least ε = "),
            "{why}"
        );
        // Nothing charged anywhere, and no ε of a run that did not happen on any tab.
        for (i, v) in views.iter().enumerate() {
            let v = v.as_ref().unwrap();
            assert!(v.charged.is_none() && v.released_epsilon.is_none(), "{v:?}");
            assert!(Ledger::from_json(&ledgers[i]).unwrap().entries().is_empty());
        }
        let dealer = views[2].as_ref().unwrap();
        assert!(
            dealer.status.starts_with("Stopped: party B (Lab B) refused the run"),
            "{dealer:?}"
        );
    }
}
