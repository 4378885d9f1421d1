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

use capelab_core::accountant::Ledger;
use capelab_core::driver::{Machine, Outgoing};
use capelab_core::rng::Seed;
use capelab_core::wire::ParticipantId;
use capelab_vertical_vi::schema::PartyBlock;
use capelab_vertical_vi::study::{Body, Dealer, Party, Status, StudyError, VviMessage, VviTask};
use serde::{Deserialize, Serialize};

use crate::studies::vertical_vi::own::{Refusal, own_block};
use crate::studies::vertical_vi::run::VviData;
use crate::studies::vertical_vi::view::{Marginal, marginals, status_text, twin, twin_table};
use crate::worker::protocol::{FromWorker, LedgerWatch};

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
    /// The names of the columns this worker holds (only its own party's).
    pub columns: Vec<String>,
    pub status: String,
    pub progress: f64,
    pub released: bool,
    pub stopped: Option<String>,
    /// Why this party declined the run with its own columns, in full (values included: shown
    /// on this tab only; the others hear it without the values).
    pub declined: Option<String>,
    /// The run's ε at δ for the outside analyst, what a party's ledger records.
    pub epsilon: Option<(f64, f64)>,
    /// After the release, a party's columns: real against the synthetic twin.
    pub marginals: Vec<Marginal>,
    /// After the release, the twin (all columns, N rows) as CSV, and the seed it was drawn with.
    pub twin_csv: Option<String>,
    pub twin_seed: u64,
    pub refusals: Vec<String>,
}

/// A party's start while its table is being fetched, and the inputs that arrived meanwhile.
struct Pending {
    me: ParticipantId,
    aggregator: ParticipantId,
    payload: Vec<u8>,
    ledger: Ledger,
    data: Option<VviData>,
    /// The party's own columns as text, when the run is on them.
    own: Option<String>,
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
    epsilon: Option<(f64, f64)>,
    ledger: LedgerWatch,
    refusals: Vec<String>,
    twin_seed: u64,
    twin: Option<(Vec<Marginal>, String)>,
    declined: Option<String>,
}

impl VviEngine {
    /// A `vvi/start`. A party on a table it must fetch (CPS1988) waits for
    /// [`VviEngine::table`]: it asks the worker to fetch `file_url` ([`FromWorker::Fetch`]) and
    /// keeps the run's messages, in order, until the file is here. `own`: the tab's own columns,
    /// sent along only for a run on them.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        &mut self,
        me: ParticipantId,
        aggregator: ParticipantId,
        payload: &[u8],
        ledger_json: &str,
        data: Option<VviData>,
        file_url: Option<String>,
        own: Option<String>,
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
        let queue = Vec::new();
        let start = Pending { me, aggregator, payload: payload.to_vec(), ledger, data, own, queue };
        let index = task.parties.iter().position(|&p| p == me);
        let fetch = match (index, data.and_then(|d| d.file())) {
            (Some(_), Some(file)) => Some(file_url.unwrap_or_else(|| file.to_string())),
            _ => None,
        };
        self.task = Some(task);
        match fetch {
            Some(url) => {
                self.pending = Some(start);
                vec![FromWorker::Fetch { url }, FromWorker::VviView(Box::new(self.view()))]
            }
            None => self.begin(start, Ok(None), now_ms),
        }
    }

    /// The fetched table (or why it could not be fetched): the waiting party starts on its
    /// block of it, then handles the messages that arrived meanwhile.
    pub fn table(&mut self, joined: Result<String, String>, now_ms: u64) -> Vec<FromWorker> {
        let Some(start) = self.pending.take() else { return Vec::new() };
        match joined {
            Ok(text) => self.begin(start, Ok(Some(&text)), now_ms),
            Err(e) => self.begin(start, Err(e), now_ms),
        }
    }

    /// The role on its block; `joined` is the fetched file, read here and dropped: only this
    /// party's columns are kept (the other party's columns never enter the worker's state).
    /// `joined`: `Err` when its fetch failed.
    fn begin(
        &mut self,
        start: Pending,
        joined: Result<Option<&str>, String>,
        now_ms: u64,
    ) -> Vec<FromWorker> {
        let Pending { me, aggregator, payload, ledger, data, own, queue } = start;
        let Some(task) = self.task.clone() else { return Vec::new() };
        let role = if task.dealer == me {
            Role::Dealer(Box::new(Dealer::new(me, aggregator, Seed::Os)))
        } else if let Some(index) = task.parties.iter().position(|&p| p == me) {
            let schema = &task.schema.parties[index];
            let block = match data {
                Some(VviData::Own { rows }) => own_block(schema, own.as_deref(), rows),
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

    pub fn view(&self) -> VviSiteView {
        let mut view = VviSiteView {
            twin_seed: self.twin_seed,
            epsilon: self.epsilon,
            declined: self.declined.clone(),
            refusals: self.refusals.iter().rev().take(5).cloned().collect(),
            ..VviSiteView::default()
        };
        if let (Some(_), Some(task)) = (&self.pending, &self.task) {
            view.role = "a party (fetching the public table to keep its own columns)".into();
            view.status = format!("Fetching the table ({} rows) …", task.rows);
            return view;
        }
        let (Some(role), Some(task)) = (&self.role, &self.task) else {
            view.status = "Waiting for the dashboard".into();
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
    use crate::studies::vertical_vi::run::{VviFields, VviSource};
    use crate::worker::protocol::ToWorker;
    use crate::worker::state::WorkerState;

    const AGG: ParticipantId = 1;
    const SITES: [ParticipantId; 3] = [2, 3, 4];

    type Outcome = (Aggregator, Vec<Option<VviSiteView>>, Vec<String>);

    /// Runs the study on the generated table; `leave` makes that site vanish after that many of
    /// its inputs.
    fn run(leave: Option<(usize, usize)>) -> Outcome {
        let fields =
            VviFields { rows: 300, batch: 20, steps: 4, components: 3, ..VviFields::default() };
        run_on(&fields, VviData::Generated { rows: 300, seed: 11 }, None, &[], leave)
    }

    /// Runs the study on `data`; a party that asks for its table's file gets `joined` once the
    /// wire is quiet (so the run's first messages wait for it in its queue); site i's tab holds
    /// `own[i]` as its own columns.
    fn run_on(
        fields: &VviFields,
        data: VviData,
        joined: Option<&str>,
        own: &[Option<String>],
        leave: Option<(usize, usize)>,
    ) -> Outcome {
        let (parties, dealer) = fields.roles(&SITES).unwrap();
        let task = fields.task(&data, parties, dealer, AGG, 5).unwrap();
        let mut fetching: VecDeque<usize> = VecDeque::new();
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
                ToWorker::VviStart {
                    me: to,
                    aggregator: AGG,
                    payload,
                    ledger_json: ledgers[i].clone(),
                    data: Some(data),
                    file_url: None,
                    own: own.get(i).cloned().flatten(),
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
        let a = views[0].as_ref().unwrap();
        let declined = a.declined.as_deref().unwrap_or_default();
        assert!(declined.contains("could not fetch cps1988.csv: offline"), "{a:?}");
        assert!(a.stopped.as_deref().unwrap_or_default().contains("offline"), "told to all: {a:?}");
        assert!(a.columns.is_empty() && !a.released);
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
        // Row 3 of party A's file (line 5: the header is line 1) names an unknown ethnicity.
        let mut lines: Vec<&str> = a.lines().collect();
        let bad_row = lines[4].replacen("cauc", "martian", 1).replacen("afam", "martian", 1);
        lines[4] = &bad_row;
        let bad = lines.join("\n");
        let own = [Some(bad), Some(b.clone()), None];
        let (agg, views, ledgers) =
            run_on(&own_fields(), VviData::Own { rows: 300 }, None, &own, None);
        let Status::Stopped(reason) = agg.status() else { panic!("{:?}", agg.status()) };
        assert!(reason.contains("party 0 (participant 2) refused the run"), "{reason}");
        assert!(reason.contains("column 'ethnicity', row 3 (line 5)"), "{reason}");
        assert!(!reason.contains("martian"), "the value stays on party A's tab: {reason}");
        let a = views[0].as_ref().unwrap();
        let here = a.declined.as_deref().unwrap_or_default();
        assert!(here.contains("row 3") && here.contains("'martian'"), "{a:?}");
        for (i, v) in views[..2].iter().enumerate() {
            let v = v.as_ref().unwrap();
            assert!(!v.released && v.stopped.is_some() && v.twin_csv.is_none(), "{v:?}");
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
}
