/*!
The dashboard's side of the vertical synthetic-data study (DP-VI + MPC, seed 004): the task from
the form (which tab is the dealer, which tabs hold which columns), the public data announcement,
and the core's [`Aggregator`] in a [`Driver`] on the room's websocket. Per step it draws the batch
and η, receives one share of the noisy clipped gradient sum from each party and updates q with
Adam: cheap, so it runs on the page's thread (as EFPSN's observer does); the MPC runs in the
parties' and the dealer's workers.

**Data** ([`crate::studies::vertical_vi::data`]): a seeded Adult-like table every party tab draws and cuts to its
columns (a stand-in: anyone with the seed could redraw it), CPS1988, whose file each party's
worker fetches and cuts to its own columns, or each party's own CSV column block, read against
CPS1988's public schema and the form's N ([`crate::studies::vertical_vi::own`]). The table is announced
([`DataAnnouncement`]) before the task.

**Test NLL.** On the public tables the dashboard redraws (or fetches) the test rows and follows
the posterior's test NLL step by step ([`VviLive::nll`]). On the parties' own columns no tab can:
the NLL needs every party's columns of the same rows, which is what the study never joins.
*/

use std::collections::BTreeMap;

use capelab_core::driver::{Driver, Machine};
use capelab_core::rng::{Seed, os_rng};
use capelab_core::study::StudyId;
use capelab_core::transport::Transport;
use capelab_core::wire::{ParticipantId, To};
use capelab_vertical_vi::cps1988;
use capelab_vertical_vi::model::Posterior;
use capelab_vertical_vi::model::twin::TextTable;
use capelab_vertical_vi::schema::PartyBlock;
use capelab_vertical_vi::study::{Aggregator, BatchSampling, Status, VviTask};
use rand_core::Rng;
use serde::Serialize;

use crate::frame::wire::StudyTransport;
use crate::studies::vertical_vi::data::test_blocks;
use crate::studies::vertical_vi::view::{PlayerEpsilon, epsilons, release_json, twin, twin_table};

pub use crate::studies::vertical_vi::data::{DATA_KIND, DataAnnouncement, VviData, VviSource};

/// What the teacher picks in the form. Roles: `None` picks the default (dealer: the last site
/// present; parties: the first two others).
#[derive(Clone, Debug, PartialEq)]
pub struct VviFields {
    pub rows: usize,
    pub components: usize,
    pub noise_multiplier: f64,
    pub clip: f64,
    pub batch: usize,
    pub steps: u32,
    pub learning_rate: f64,
    pub dealer: Option<ParticipantId>,
    pub parties: [Option<ParticipantId>; 2],
    /// Which table: generated (N = `rows`), CPS1988 (its own N; `rows` is not used) or the
    /// parties' own columns (N = `rows`, which every party's file must hold).
    pub source: VviSource,
}

impl Default for VviFields {
    /// Small enough for a classroom's browsers: D = (K−1) + K·Σe_p = 69 at K = 5, so a step
    /// moves some hundreds of kB per party.
    fn default() -> Self {
        VviFields {
            rows: 1000,
            components: 5,
            noise_multiplier: 1.0,
            clip: 1.0,
            batch: 30,
            steps: 20,
            learning_rate: 0.05,
            dealer: None,
            parties: [None, None],
            source: VviSource::Generated,
        }
    }
}

impl VviFields {
    /// The roles among the `sites` present: (parties in schema order, dealer).
    pub fn roles(
        &self,
        sites: &[ParticipantId],
    ) -> Result<(Vec<ParticipantId>, ParticipantId), String> {
        if sites.len() < 3 {
            return Err(format!(
                "{} site(s) present: the study needs two parties and a dealer (3 tabs)",
                sites.len()
            ));
        }
        let present = |id: ParticipantId, what: &str| {
            if sites.contains(&id) {
                Ok(id)
            } else {
                Err(format!("the {what} (participant {id}) is not in the room"))
            }
        };
        let dealer = match self.dealer {
            Some(id) => present(id, "dealer")?,
            None => *sites.last().expect("three sites"),
        };
        let mut free =
            sites.iter().copied().filter(|&s| s != dealer && !self.parties.contains(&Some(s)));
        let mut parties = Vec::new();
        for (p, pick) in self.parties.iter().enumerate() {
            let id = match pick {
                Some(id) => present(*id, &format!("party {}", ["A", "B"][p]))?,
                None => free.next().ok_or("not enough sites for both parties")?,
            };
            if id == dealer || parties.contains(&id) {
                return Err(format!("participant {id} is picked for two roles"));
            }
            parties.push(id);
        }
        Ok((parties, dealer))
    }

    /// The task for these roles on `data`, checked as every tab will check it. CPS1988 keeps
    /// its fixed public train/test split ([`cps1988::SPLIT_SEED`]); a generated table uses
    /// `split_seed`.
    pub fn task(
        &self,
        data: &VviData,
        parties: Vec<ParticipantId>,
        dealer: ParticipantId,
        me: ParticipantId,
        split_seed: u64,
    ) -> Result<VviTask, String> {
        let split_seed = match data {
            VviData::Cps1988 => cps1988::SPLIT_SEED,
            VviData::Generated { .. } | VviData::Own { .. } => split_seed,
        };
        let task = VviTask {
            schema: data.schema(),
            parties,
            dealer,
            components: self.components,
            noise_multiplier: self.noise_multiplier,
            clip: self.clip,
            sampling: BatchSampling::Poisson,
            batch: self.batch,
            steps: self.steps,
            learning_rate: self.learning_rate,
            init_scale: 0.5,
            init_log_sigma: -3.0,
            split_seed,
            test_fraction: 0.2,
            rows: data.rows(),
            delta: 1e-5,
        };
        task.check(me).map_err(|e| e.to_string())?;
        Ok(task)
    }
}

/// The released twin as the dashboard shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TwinView {
    pub seed: u64,
    /// The first rows, for a glance (the CSV has them all).
    #[serde(skip)]
    pub sample: TextTable,
    pub csv: String,
    pub json: String,
}

/// The run as the dashboard shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VviLive {
    pub number: usize,
    /// The announced table (for the captions: both kinds are public).
    pub data: VviData,
    pub finished: bool,
    pub status: Status,
    pub steps_done: u32,
    pub task: VviTask,
    pub names: BTreeMap<ParticipantId, String>,
    pub players: Vec<PlayerEpsilon>,
    pub twin: Option<TwinView>,
    /// (step, mean test NLL per record) of the posterior so far, from step 0.
    pub nll: Vec<(u32, f64)>,
    pub refusals: Vec<String>,
}

impl VviLive {
    pub fn name(&self, id: ParticipantId) -> String {
        self.names.get(&id).cloned().unwrap_or_else(|| format!("Site {id}"))
    }
}

pub struct VviRun {
    pub number: usize,
    pub driver: Driver<StudyTransport, Aggregator>,
    data: VviData,
    names: BTreeMap<ParticipantId, String>,
    players: Vec<PlayerEpsilon>,
    twin_seed: u64,
    twin: Option<TwinView>,
    /// The public table's test rows, per party (none on the parties' own columns).
    test: Option<Vec<PartyBlock>>,
    nll: Vec<(u32, f64)>,
}

/// Rows of the twin the dashboard shows.
const SAMPLE_ROWS: usize = 12;

impl VviRun {
    /// Opens the study: the data announcement, then `vvi/start` to the parties and the dealer.
    /// `joined`: the dashboard's copy of CPS1988 when the form picked it (public, so the
    /// dashboard may hold it whole for the test NLL; the parties never do).
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        number: usize,
        me: ParticipantId,
        fields: &VviFields,
        sites: &[ParticipantId],
        mut transport: StudyTransport,
        names: BTreeMap<ParticipantId, String>,
        now_ms: u64,
        joined: Option<&str>,
    ) -> Result<Self, String> {
        let mut rng = os_rng();
        let (parties, dealer) = fields.roles(sites)?;
        // 53 bits: the seed crosses `postMessage` to the parties' workers as a JS number.
        let data = fields.source.data(fields.rows, rng.next_u64() >> 11);
        let task = fields.task(&data, parties.clone(), dealer, me, rng.next_u64())?;
        let players = epsilons(&task)?;
        let mut id = [0u8; 16];
        rng.fill_bytes(&mut id);
        let study = StudyId(id);
        let test = test_blocks(&data, joined, &task.split().test)?;
        let (aggregator, out) =
            Aggregator::start(me, study, task, Seed::Os).map_err(|e| e.to_string())?;
        let announced = DataAnnouncement { study, data }.encode();
        for party in parties {
            transport
                .send(To::One(party), DATA_KIND, &announced)
                .map_err(|e| format!("could not announce the data: {e}"))?;
        }
        let mut driver = Driver::new(transport, aggregator);
        driver.send(now_ms, out);
        let mut run = VviRun {
            number,
            driver,
            data,
            names,
            players,
            twin_seed: rng.next_u64() % 1_000_000,
            twin: None,
            test,
            nll: Vec::new(),
        };
        run.record_nll();
        Ok(run)
    }

    /// The test NLL of the posterior as it stands, once per step reached (public tables only).
    fn record_nll(&mut self) {
        let Some(test) = &self.test else { return };
        let agg = &self.driver.machine;
        let step = agg.steps_done();
        if self.nll.last().is_some_and(|&(s, _)| s >= step) {
            return;
        }
        let posterior = Posterior { model: agg.model().clone(), q: agg.q().clone() };
        self.nll.push((step, posterior.test_nll(test)));
    }

    pub fn is_finished(&self) -> bool {
        self.driver.machine.is_finished()
    }

    /// The live view; the twin is drawn once, when the release arrives.
    pub fn live(&mut self) -> VviLive {
        self.record_nll();
        let agg = &self.driver.machine;
        if let (Status::Released(release), None) = (agg.status(), &self.twin) {
            let task = agg.task();
            let blocks = twin(task, release, task.rows, self.twin_seed);
            let table = twin_table(&task.schema, &blocks);
            let sample = TextTable {
                header: table.header.clone(),
                rows: table.rows.iter().take(SAMPLE_ROWS).cloned().collect(),
            };
            self.twin = Some(TwinView {
                seed: self.twin_seed,
                sample,
                csv: table.to_csv(),
                json: release_json(task, release, &self.players),
            });
        }
        let refusals = crate::frame::refusal_lines(self.driver.log());
        VviLive {
            number: self.number,
            data: self.data,
            finished: agg.is_finished(),
            status: agg.status().clone(),
            steps_done: agg.steps_done(),
            task: agg.task().clone(),
            names: self.names.clone(),
            players: self.players.clone(),
            twin: self.twin.clone(),
            nll: self.nll.clone(),
            refusals,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_default_to_the_last_site_as_dealer_and_refuse_a_double_pick() {
        let f = VviFields::default();
        assert_eq!(f.roles(&[2, 3, 4]).unwrap(), (vec![2, 3], 4));
        let picked = VviFields { dealer: Some(2), parties: [Some(4), None], ..f.clone() };
        assert_eq!(picked.roles(&[2, 3, 4]).unwrap(), (vec![4, 3], 2));
        let twice = VviFields { dealer: Some(2), parties: [Some(2), None], ..f.clone() };
        assert!(twice.roles(&[2, 3, 4]).unwrap_err().contains("two roles"));
        assert!(f.roles(&[2, 3]).unwrap_err().contains("3 tabs"));
        let data = f.source.data(f.rows, 9);
        let task = f.task(&data, vec![2, 3], 4, 1, 9).unwrap();
        assert_eq!(task.schema.zeta_gradient_len(task.components), 69);
        let bad = VviFields { batch: 5000, ..f };
        assert!(bad.task(&data, vec![2, 3], 4, 1, 9).unwrap_err().contains("batch"));
    }

    #[test]
    fn a_cps1988_task_is_the_public_schema_rows_and_split() {
        let f = VviFields {
            source: VviSource::Cps1988,
            components: 20,
            batch: 100,
            ..VviFields::default()
        };
        let data = f.source.data(f.rows, 9);
        assert_eq!(data, VviData::Cps1988);
        let task = f.task(&data, vec![2, 3], 4, 1, 9).unwrap();
        assert_eq!((task.rows, task.split_seed), (cps1988::ROWS, cps1988::SPLIT_SEED));
        assert_eq!(task.schema, cps1988::schema());
        assert_eq!(task.train_rows(), 22_524);
    }

    #[test]
    fn an_own_columns_task_is_cps1988_s_schema_on_the_form_s_n() {
        let f = VviFields { source: VviSource::Own, rows: 300, ..VviFields::default() };
        let data = f.source.data(f.rows, 9);
        let task = f.task(&data, vec![2, 3], 4, 1, 9).unwrap();
        assert_eq!((task.rows, task.split_seed, task.train_rows()), (300, 9, 240));
        assert_eq!(task.schema, cps1988::schema());
        let big = VviFields { batch: 500, ..f };
        assert!(big.task(&data, vec![2, 3], 4, 1, 9).unwrap_err().contains("batch"));
    }
}
