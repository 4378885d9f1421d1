/*!
The dashboard's side of the Joint ICA study: capePCA, then capeDJICA, each an
`IterativeAggregator` of the core in a [`Driver`] on the room's websocket (as [`crate::studies::nn::run`]
runs the NN study). capePCA is one release; when its outcome holds K, capeDJICA starts among the
sites whose covariance went into it, with K in its task. The dashboard scores the state after
every iteration against the public maps (q_NGI) and lines the recovered maps up with them.
*/

use std::collections::BTreeMap;

use capelab_core::driver::{Driver, DriverEvent};
use capelab_core::ica_quality::{align_maps, estimated_maps, match_components};
use capelab_core::rng::os_rng;
use capelab_core::study::iterative::djica::{DjicaReport, DjicaState, DjicaStudyAggregator};
use capelab_core::study::iterative::pca::{PcaAggregator, PcaReport, PcaState, PublicSynthetic};
use capelab_core::study::iterative::{
    IterAggregatorPhase, IterativeAggregator, IterativeOutcome, IterativeParams,
};
use capelab_core::transport::TransportEvent;
use capelab_core::wire::ParticipantId;
use nalgebra::DMatrix;

use crate::studies::ica::form::IcaForm;
use crate::studies::nn::run::{ROUND_TIMEOUT_MS, phase_text};
use crate::studies::nn::view::stop_text;
use capelab_core::transport::Transport;
use serde::{Deserialize, Serialize};

/// How long capePCA waits for each round: a site generates its subjects and computes its D×D
/// covariance (D² · N_s) in between, which takes tens of seconds in a tab at the largest sizes
/// (12 s at D = 900, N_s = 16 000 in `scripts/bench`'s browser run). capeDJICA's rounds use
/// [`ROUND_TIMEOUT_MS`].
pub const PCA_TIMEOUT_MS: u64 = 120_000;

pub type PcaOutcome = IterativeOutcome<PcaState, PcaReport>;
pub type DjicaOutcome = IterativeOutcome<DjicaState, DjicaReport>;

/// The recovered maps lined up with the true ones (D values each, R of each).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MapsView {
    pub grid: usize,
    pub truth: Vec<Vec<f64>>,
    pub recovered: Vec<Vec<f64>>,
    /// How cleanly each true component was recovered, in [0, 1].
    pub strength: Vec<f64>,
}

/// One capeDJICA iteration, for the charts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct IcaPoint {
    pub iteration: u32,
    pub q: Option<f64>,
    pub rate: f64,
    pub epsilon_spent: Option<f64>,
}

/// The study as the dashboard shows it, running or finished.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IcaLive {
    pub number: usize,
    pub form: IcaForm,
    /// "capePCA" or "capeDJICA".
    pub stage: String,
    pub phase: String,
    pub pca: Option<PcaOutcome>,
    pub djica_params: Option<IterativeParams>,
    pub points: Vec<IcaPoint>,
    pub maps: Option<MapsView>,
    pub djica: Option<DjicaOutcome>,
    /// Why the study ended before capeDJICA finished, if it did.
    pub failure: Option<String>,
    pub names: BTreeMap<ParticipantId, String>,
    pub refusals: Vec<String>,
    pub finished: bool,
    /// One line per zero-sum repair of capeDJICA (who left, at which iteration, the new S).
    #[serde(default)]
    pub repairs: Vec<String>,
}

impl IcaLive {
    pub fn name(&self, site: ParticipantId) -> String {
        self.names.get(&site).cloned().unwrap_or_else(|| format!("Site {site}"))
    }
}

enum Stage<T: Transport> {
    Pca(Box<Driver<T, IterativeAggregator<PcaAggregator>>>),
    Djica(Box<Driver<T, IterativeAggregator<DjicaStudyAggregator>>>),
    Over,
}

pub struct IcaRun<T: Transport + Clone> {
    pub number: usize,
    form: IcaForm,
    names: BTreeMap<ParticipantId, String>,
    /// The true maps A (D×R) when the data set is public (generated); `None` for own files.
    truth: Option<DMatrix<f64>>,
    transport: T,
    stage: Stage<T>,
    pca: Option<PcaOutcome>,
    djica: Option<DjicaOutcome>,
    djica_params: Option<IterativeParams>,
    failure: Option<String>,
    refusals: Vec<String>,
    /// The maps of the last state drawn, and at which iteration (`u64::MAX`: the final state).
    maps: Option<(u64, MapsView)>,
}

impl<T: Transport + Clone> IcaRun<T> {
    /// Opens capePCA at `now_ms`.
    pub fn start(
        number: usize,
        form: IcaForm,
        transport: T,
        names: BTreeMap<ParticipantId, String>,
        now_ms: u64,
    ) -> Result<Self, String> {
        let truth = form.data.synthetic.as_ref().map(PublicSynthetic::maps);
        let step = PcaAggregator::new(form.pca_task.clone(), truth.clone());
        let (aggregator, start) = IterativeAggregator::start(
            form.pca_params.clone(),
            step,
            PCA_TIMEOUT_MS,
            os_rng(),
            now_ms,
        )
        .map_err(|e| e.to_string())?;
        let mut driver = Driver::new(transport.clone(), aggregator);
        driver.send(now_ms, start);
        Ok(IcaRun {
            number,
            form,
            names,
            truth,
            transport,
            stage: Stage::Pca(Box::new(driver)),
            pca: None,
            djica: None,
            djica_params: None,
            failure: None,
            refusals: Vec::new(),
            maps: None,
        })
    }

    pub fn feed(&mut self, now_ms: u64, event: &TransportEvent) {
        match &mut self.stage {
            Stage::Pca(d) => d.feed(now_ms, event.clone()),
            Stage::Djica(d) => d.feed(now_ms, event.clone()),
            Stage::Over => {}
        }
        self.advance(now_ms);
    }

    pub fn fire_timeout(&mut self, now_ms: u64) {
        match &mut self.stage {
            Stage::Pca(d) => {
                d.fire_timeout(now_ms);
            }
            Stage::Djica(d) => {
                d.fire_timeout(now_ms);
            }
            Stage::Over => {}
        }
        self.advance(now_ms);
    }

    pub fn poll_timeout(&self) -> Option<u64> {
        match &self.stage {
            Stage::Pca(d) => d.machine.poll_timeout(),
            Stage::Djica(d) => d.machine.poll_timeout(),
            Stage::Over => None,
        }
    }

    /// Ends the running step now, keeping what it reached.
    pub fn stop(&mut self, now_ms: u64, reason: &str) {
        match &mut self.stage {
            Stage::Pca(d) => {
                let out = d.machine.stop(now_ms, reason);
                d.send(now_ms, out);
            }
            Stage::Djica(d) => {
                let out = d.machine.stop(now_ms, reason);
                d.send(now_ms, out);
            }
            Stage::Over => {}
        }
        self.advance(now_ms);
        if let Stage::Pca(_) = self.stage {
            self.stage = Stage::Over;
        }
    }

    pub fn is_over(&self) -> bool {
        matches!(self.stage, Stage::Over)
    }

    /// capePCA done → capeDJICA; capeDJICA done → over.
    fn advance(&mut self, now_ms: u64) {
        self.collect_refusals();
        match &self.stage {
            Stage::Pca(d) => {
                let Some(outcome) = d.machine.outcome().cloned() else { return };
                self.pca = Some(outcome.clone());
                if let Err(e) = self.start_djica(&outcome, now_ms) {
                    self.failure = Some(e);
                    self.stage = Stage::Over;
                }
            }
            Stage::Djica(d) => {
                let Some(outcome) = d.machine.outcome().cloned() else { return };
                self.djica = Some(outcome);
                self.refresh_maps();
                self.stage = Stage::Over;
            }
            Stage::Over => {}
        }
    }

    fn start_djica(&mut self, pca: &PcaOutcome, now_ms: u64) -> Result<(), String> {
        if let Some(e) = pca.records.last().and_then(|r| r.report.error.clone()) {
            return Err(format!("capePCA found no subspace: {e}"));
        }
        if pca.final_state.projection.is_empty() {
            return Err(format!("capePCA ended without a release: {}", pca.stop));
        }
        let task = self.form.djica_task(pca.final_state.projection.clone());
        let (params, task) =
            self.form.djica_params(&pca.contributors, task).map_err(|e| e.to_string())?;
        let step = DjicaStudyAggregator::new(
            task,
            self.form.schedule(),
            self.form.max_iterations,
            self.truth.as_ref(),
        )?;
        let (aggregator, start) =
            IterativeAggregator::start(params.clone(), step, ROUND_TIMEOUT_MS, os_rng(), now_ms)
                .map_err(|e| e.to_string())?;
        let mut driver = Driver::new(self.transport.clone(), aggregator);
        driver.send(now_ms, start);
        self.djica_params = Some(params);
        self.stage = Stage::Djica(Box::new(driver));
        Ok(())
    }

    fn collect_refusals(&mut self) {
        let refused = |log: &[DriverEvent<_>]| -> Vec<String> {
            log.iter()
                .filter_map(|e| match e {
                    DriverEvent::Refused { error, .. } => Some(format!("{error}")),
                    _ => None,
                })
                .collect()
        };
        let mut all = match &self.stage {
            Stage::Pca(d) => refused(d.log()),
            Stage::Djica(d) => refused(d.log()),
            Stage::Over => return,
        };
        let skip = all.len().saturating_sub(5);
        self.refusals = all.split_off(skip);
    }

    /// Recomputes the maps when the state changed (every iteration: R×D is small), and once
    /// more for the final state (the tail average, under noise).
    fn refresh_maps(&mut self) {
        let (Stage::Djica(d), Some(truth), Some(synthetic)) =
            (&self.stage, &self.truth, &self.form.data.synthetic)
        else {
            return;
        };
        let (key, state) = match d.machine.outcome() {
            Some(outcome) => (u64::MAX, &outcome.final_state),
            None => {
                let iteration = d.machine.records().last().map_or(0, |r| r.iteration);
                (u64::from(iteration), d.machine.current_state())
            }
        };
        if self.maps.as_ref().is_some_and(|(k, _)| *k == key) {
            return;
        }
        let unmixing = d.machine.step().unmixing(state);
        if let Some(maps) = maps_view(&unmixing, truth, synthetic.grid) {
            self.maps = Some((key, maps));
        }
    }

    pub fn live(&mut self) -> IcaLive {
        self.refresh_maps();
        let (stage, phase, points) = match &self.stage {
            Stage::Pca(d) => ("capePCA", pca_phase(d.machine.phase()), Vec::new()),
            Stage::Djica(d) => {
                ("capeDJICA", phase_text(d.machine.phase()), points(d.machine.records()))
            }
            Stage::Over => (
                if self.djica.is_some() { "capeDJICA" } else { "capePCA" },
                match (&self.djica, &self.pca) {
                    (None, Some(pca)) => not_run_text(pca, |id| {
                        self.names.get(&id).cloned().unwrap_or_else(|| format!("Site {id}"))
                    }),
                    _ => "Finished".to_owned(),
                },
                self.djica.as_ref().map(|o| points(&o.records)).unwrap_or_default(),
            ),
        };
        let repairs = match &self.stage {
            Stage::Djica(d) => d.machine.repairs().to_vec(),
            _ => self.djica.as_ref().map(|o| o.repairs.clone()).unwrap_or_default(),
        };
        let names = self.names.clone();
        let repairs = crate::studies::nn::view::repair_lines(&repairs, |id| {
            names.get(&id).cloned().unwrap_or_else(|| format!("Site {id}"))
        });
        IcaLive {
            number: self.number,
            form: self.form.clone(),
            stage: stage.to_owned(),
            phase,
            pca: self.pca.clone(),
            djica_params: self.djica_params.clone(),
            points,
            maps: self.maps.as_ref().map(|(_, m)| m.clone()),
            djica: self.djica.clone(),
            failure: self.failure.clone(),
            names: self.names.clone(),
            refusals: self.refusals.clone(),
            finished: self.is_over(),
            repairs,
        }
    }
}

fn points(
    records: &[capelab_core::study::iterative::IterationRecord<DjicaReport>],
) -> Vec<IcaPoint> {
    records
        .iter()
        .map(|r| IcaPoint {
            iteration: r.iteration,
            q: r.report.q,
            rate: r.report.rate,
            epsilon_spent: r.epsilon_spent,
        })
        .collect()
}

/// The headline of a study that ended at capePCA: it did not run, why, and the way out when
/// sites declined for lack of budget (a decline costs them nothing: the whole study was
/// previewed before capePCA's release).
pub fn not_run_text(pca: &PcaOutcome, name: impl Fn(ParticipantId) -> String) -> String {
    let released = if pca.contributors.is_empty() {
        "nothing was released".to_owned()
    } else {
        format!("capePCA released from {} site(s), capeDJICA did not start", pca.contributors.len())
    };
    let mut text = format!("Not run: {released} ({}).", stop_text(&pca.stop, &name));
    let poor = crate::frame::budget::summary(
        pca.declined.iter().filter_map(|d| d.shortfall.as_ref().map(|s| (name(d.site), s))),
    );
    if let Some(poor) = poor {
        text.push_str(&format!(" {poor} Or ask for less: a lower ε, fewer iterations J."));
    }
    text
}

fn pca_phase(phase: IterAggregatorPhase) -> String {
    match phase {
        IterAggregatorPhase::Iterating { .. } => {
            "capePCA: waiting for every site's noisy covariance".into()
        }
        other => phase_text(other).replace("all iterations' noise", "the covariance noise"),
    }
}

/// The recovered maps (columns of (W·K)⁺) matched to the true ones, sign-corrected, as images.
pub fn maps_view(unmixing: &DMatrix<f64>, truth: &DMatrix<f64>, grid: usize) -> Option<MapsView> {
    let p = unmixing * truth;
    let matching = match_components(&p);
    let aligned = align_maps(&estimated_maps(unmixing)?, &matching);
    let r = truth.ncols();
    let mut strength = vec![0.0; r];
    for (i, &j) in matching.true_index.iter().enumerate() {
        strength[j] = matching.strength[i];
    }
    let columns = |m: &DMatrix<f64>| -> Vec<Vec<f64>> {
        (0..m.ncols()).map(|j| m.column(j).iter().copied().collect()).collect()
    };
    Some(MapsView { grid, truth: columns(truth), recovered: columns(&aligned), strength })
}
