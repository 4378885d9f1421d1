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

use capelab_core::accountant::ledger::Shortfall;
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
use crate::studies::vertical_vi::data::{public_blocks, test_blocks};
use crate::studies::vertical_vi::form::VviForm;
use crate::studies::vertical_vi::view::{
    Marginal, PlayerEpsilon, budget_sentence, column_marginals, named, release_json, status_text,
    twin, twin_table,
};

pub use crate::studies::vertical_vi::data::{DATA_KIND, DataAnnouncement, VviData, VviSource};

/// The run's settings, as the form reads them ([`crate::studies::vertical_vi::form`]).
#[derive(Clone, Debug, PartialEq)]
pub struct VviFields {
    pub rows: usize,
    pub components: usize,
    pub noise_multiplier: f64,
    pub clip: f64,
    pub batch: usize,
    pub steps: u32,
    pub learning_rate: f64,
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
            source: VviSource::Generated,
        }
    }
}

impl VviFields {
    /// The task for these roles on `data`, as every tab will check it (the form has checked it:
    /// [`crate::studies::vertical_vi::form`]). CPS1988 keeps its fixed public train/test split
    /// ([`cps1988::SPLIT_SEED`]); a generated table uses `split_seed`.
    pub fn task_unchecked(
        &self,
        data: &VviData,
        parties: Vec<ParticipantId>,
        dealer: ParticipantId,
        split_seed: u64,
    ) -> VviTask {
        let split_seed = match data {
            VviData::Cps1988 => cps1988::SPLIT_SEED,
            VviData::Generated { .. } | VviData::Own { .. } => split_seed,
        };
        VviTask {
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
        }
    }

    /// [`VviFields::task_unchecked`], checked as every tab checks it (`me`: the aggregator).
    pub fn task(
        &self,
        data: &VviData,
        parties: Vec<ParticipantId>,
        dealer: ParticipantId,
        me: ParticipantId,
        split_seed: u64,
    ) -> Result<VviTask, String> {
        let task = self.task_unchecked(data, parties, dealer, split_seed);
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

/// The party that declined the run for its budget, as the dashboard names it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BudgetRefusal {
    pub site: String,
    pub shortfall: Shortfall,
}

/// The run as the dashboard shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VviLive {
    pub number: usize,
    /// The dashboard's own id (the aggregator's, in the roles' messages).
    pub me: ParticipantId,
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
    /// Every column's marginal: the public table's (none on the parties' own columns) against
    /// the twin's, drawn from the posterior as it stands ([`VviLive::marginals_step`]) and, once
    /// released, from the released twin (the same on every tab).
    pub marginals: Vec<Marginal>,
    /// The step whose posterior the synthetic marginals are drawn from.
    pub marginals_step: u32,
    /// Why the run stopped for a party's budget, if it did.
    pub budget: Option<BudgetRefusal>,
    pub refusals: Vec<String>,
}

impl VviLive {
    pub fn name(&self, id: ParticipantId) -> String {
        self.names.get(&id).cloned().unwrap_or_else(|| format!("Site {id}"))
    }

    /// Where the run is, in one sentence with the participants named as people named them.
    pub fn status_line(&self) -> String {
        if let Some(b) = &self.budget {
            return budget_sentence(&b.site, &b.shortfall);
        }
        let (text, _) = status_text(&self.status, self.task.steps);
        named(&text, &self.task, self.me, &self.names)
    }
}

pub struct VviRun {
    pub number: usize,
    pub driver: Driver<StudyTransport, Aggregator>,
    me: ParticipantId,
    data: VviData,
    names: BTreeMap<ParticipantId, String>,
    players: Vec<PlayerEpsilon>,
    twin_seed: u64,
    twin: Option<TwinView>,
    /// The public table's test rows, per party (none on the parties' own columns).
    test: Option<Vec<PartyBlock>>,
    nll: Vec<(u32, f64)>,
    marginals: Vec<Marginal>,
    marginals_step: Option<u32>,
}

/// Rows of the twin the dashboard shows.
const SAMPLE_ROWS: usize = 12;

/// Rows of the twin drawn from the posterior at each step for the live marginals (the released
/// twin has N).
const PREVIEW_ROWS: usize = 2_000;

impl VviRun {
    /// Opens the study the form read: the data announcement (with the twin's seed), then
    /// `vvi/start` to the parties and the dealer. `joined`: the dashboard's copy of CPS1988 when
    /// the form picked it (public, so the dashboard may hold it whole for the test NLL and the
    /// real marginals; the parties never do).
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        number: usize,
        me: ParticipantId,
        form: &VviForm,
        mut transport: StudyTransport,
        names: BTreeMap<ParticipantId, String>,
        now_ms: u64,
        joined: Option<&str>,
    ) -> Result<Self, String> {
        let mut rng = os_rng();
        let fields = &form.fields;
        // 53 bits: the seed crosses `postMessage` to the parties' workers as a JS number.
        let data = fields.source.data(fields.rows, rng.next_u64() >> 11);
        let (parties, dealer) = (form.parties.clone(), form.dealer);
        let task = fields.task(&data, parties.clone(), dealer, me, rng.next_u64())?;
        let mut id = [0u8; 16];
        rng.fill_bytes(&mut id);
        let study = StudyId(id);
        let public = public_blocks(&data, joined)?;
        let test = public.as_deref().map(|blocks| test_blocks(blocks, &task.split().test));
        let marginals = column_marginals(&task.schema, public.as_deref(), None);
        drop(public);
        let twin_seed = rng.next_u64() % 1_000_000;
        let (aggregator, out) =
            Aggregator::start(me, study, task, Seed::Os).map_err(|e| e.to_string())?;
        let announced = DataAnnouncement { study, data, twin_seed }.encode();
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
            me,
            data,
            names,
            players: form.players.clone(),
            twin_seed,
            twin: None,
            test,
            nll: Vec::new(),
            marginals,
            marginals_step: None,
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

    /// The synthetic marginals of the posterior as it stands, once per step reached after the
    /// first: a preview twin of [`PREVIEW_ROWS`] rows (post-processing of the noisy sums the
    /// dashboard already holds), replaced at the release by the released twin's.
    fn record_marginals(&mut self, released: Option<&[PartyBlock]>) {
        let agg = &self.driver.machine;
        let step = agg.steps_done();
        let synthetic = match released {
            Some(blocks) => blocks.to_vec(),
            None if step == 0 || self.marginals_step == Some(step) => return,
            None => {
                let posterior = Posterior { model: agg.model().clone(), q: agg.q().clone() };
                let rows = agg.task().rows.min(PREVIEW_ROWS);
                let seed = Seed::Fixed(self.twin_seed);
                posterior.sample_twin(rows, &mut seed.rng(&format!("vvi/preview/{step}")))
            }
        };
        let schema = &agg.task().schema;
        for (m, fresh) in
            self.marginals.iter_mut().zip(column_marginals(schema, None, Some(&synthetic)))
        {
            m.synthetic = fresh.synthetic;
        }
        self.marginals_step = Some(step);
    }

    pub fn is_finished(&self) -> bool {
        self.driver.machine.is_finished()
    }

    /// The live view; the twin is drawn once, when the release arrives.
    pub fn live(&mut self) -> VviLive {
        self.record_nll();
        let agg = &self.driver.machine;
        if let (Status::Released(release), None) = (agg.status(), &self.twin) {
            let task = agg.task().clone();
            let release = release.clone();
            let blocks = twin(&task, &release, task.rows, self.twin_seed);
            let table = twin_table(&task.schema, &blocks);
            let sample = TextTable {
                header: table.header.clone(),
                rows: table.rows.iter().take(SAMPLE_ROWS).cloned().collect(),
            };
            self.twin = Some(TwinView {
                seed: self.twin_seed,
                sample,
                csv: table.to_csv(),
                json: release_json(&task, &release, &self.players),
            });
            self.record_marginals(Some(&blocks));
        } else if !agg.status().is_over() {
            self.record_marginals(None);
        }
        let agg = &self.driver.machine;
        let refusals = crate::frame::refusal_lines(self.driver.log());
        let budget = agg.budget_refusal().map(|(id, shortfall)| BudgetRefusal {
            site: self.names.get(&id).cloned().unwrap_or_else(|| format!("Site {id}")),
            shortfall,
        });
        VviLive {
            number: self.number,
            me: self.me,
            data: self.data,
            finished: agg.is_finished(),
            status: agg.status().clone(),
            steps_done: agg.steps_done(),
            task: agg.task().clone(),
            names: self.names.clone(),
            players: self.players.clone(),
            twin: self.twin.clone(),
            nll: self.nll.clone(),
            marginals: self.marginals.clone(),
            marginals_step: self.marginals_step.unwrap_or(0),
            budget,
            refusals,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_task_is_what_every_tab_accepts() {
        let f = VviFields::default();
        let data = f.source.data(f.rows, 9);
        let task = f.task(&data, vec![2, 3], 4, 1, 9).unwrap();
        assert_eq!(task.gradient_len(), 69);
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
