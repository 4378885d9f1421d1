/*!
The site's Joint ICA work, as the worker runs it: the core's site roles for capePCA and capeDJICA
(`IterativeSite` over `PcaSite` / `DjicaStudySite`), fed by the main thread's [`ToWorker`]
messages and answering with [`FromWorker`] ones. Plain Rust, so it is tested natively; the
worker's entry point ([`crate::worker::entry`]) only moves messages in and out.

Data: a study that names a public synthetic data set ([`PublicSynthetic`]) makes this site
generate its own subjects from the tab's seed (with the public maps); a loaded matrix file is used
instead when the site has one. capeDJICA runs on the data capePCA used.
*/

use capelab_core::accountant::Ledger;
use capelab_core::driver::Outgoing;
use capelab_core::fmri::SiteData;
use capelab_core::fmri::matrix_io::{parse_csv_bytes, parse_npy};
use capelab_core::fmri::nifti::{BrainMask, site_from_nifti};
use capelab_core::fmri::normalise::normalise_site;
use capelab_core::rng::os_rng;
use capelab_core::study::iterative::djica::{DjicaState, DjicaStudySite, DjicaTask};
use capelab_core::study::iterative::pca::{PcaSite, PcaState, PcaTask, PublicSynthetic};
use capelab_core::study::iterative::{
    IterBody, IterMessage, IterativeSite, SiteSettings, SiteStep,
};
use capelab_core::wire::{ParticipantId, To};

use crate::studies::ica::site_view::{DataSummary, IcaSiteView, NoisePoint, phase_text};
use crate::worker::protocol::{FromWorker, OwnData, OwnFiles, ToWorker};

enum Role {
    Pca(Box<IterativeSite<PcaSite, Ledger>>),
    Djica(Box<IterativeSite<DjicaStudySite, Ledger>>),
}

/// Where the data came from, so a second study on the same data does not regenerate it.
#[derive(Clone, Debug, PartialEq)]
enum DataKey {
    Synthetic(PublicSynthetic, u64),
    /// The files themselves: a file loaded again under the same name with other bytes is new.
    Own(OwnData),
}

#[derive(Default)]
pub struct Engine {
    data: Option<(DataKey, SiteData, DataSummary)>,
    role: Option<Role>,
    computation: String,
    /// Ledger entries of the running role already sent to the main thread.
    saved: usize,
    refusals: Vec<String>,
}

impl Engine {
    pub fn handle(&mut self, message: ToWorker, now_ms: u64) -> Vec<FromWorker> {
        let mut out = Vec::new();
        match message {
            ToWorker::Start {
                me,
                dashboard,
                computation,
                payload,
                ledger_json,
                seed,
                allow_nonprivate,
                own_data,
            } => {
                let settings = SiteSettings { allow_nonprivate };
                match self.start(
                    me,
                    dashboard,
                    &computation,
                    &payload,
                    &ledger_json,
                    seed,
                    own_data,
                    settings,
                ) {
                    Ok(()) => {
                        self.computation = computation;
                        self.saved = 0;
                        self.refusals.clear();
                        self.feed(&mut out, |role| role.handle(now_ms, dashboard, &payload));
                    }
                    Err(reason) => {
                        // Nothing of the data was used: the refusal is all that leaves.
                        self.refusals.push(reason.clone());
                        if let Some(decline) = decline(&computation, &payload, dashboard, reason) {
                            out.push(decline);
                        }
                    }
                }
            }
            ToWorker::Message { from, payload } => {
                self.feed(&mut out, |role| role.handle(now_ms, from, &payload));
            }
            ToWorker::Departure { who } => {
                self.feed(&mut out, |role| role.handle_departure(now_ms, who));
            }
            // A dashboard's messages: [`crate::worker::state`] routes them to its run.
            ToWorker::IcaStart { .. } | ToWorker::IcaTimer | ToWorker::IcaStop { .. } => {}
            // The EFPSN agent's: [`crate::worker::state`] routes them to it.
            ToWorker::EfpsnStart { .. }
            | ToWorker::EfpsnMessage { .. }
            | ToWorker::EfpsnDeparture { .. } => {}
            // The vertical study's party or dealer: [`crate::worker::state`] routes them to it.
            ToWorker::VviStart { .. }
            | ToWorker::VviMessage { .. }
            | ToWorker::VviDeparture { .. }
            | ToWorker::VviTable { .. } => {}
        }
        out.push(FromWorker::View(Box::new(self.view())));
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn start(
        &mut self,
        me: ParticipantId,
        dashboard: ParticipantId,
        computation: &str,
        payload: &[u8],
        ledger_json: &str,
        seed: u64,
        own_data: Option<OwnData>,
        settings: SiteSettings,
    ) -> Result<(), String> {
        let ledger = Ledger::from_json(ledger_json).map_err(|e| format!("the ledger: {e}"))?;
        let synthetic = if computation == PcaSite::NAME {
            let message =
                IterMessage::<PcaTask, PcaState>::decode(payload).map_err(|e| e.to_string())?;
            match message.body {
                IterBody::Start { task, .. } => task.synthetic,
                _ => None,
            }
        } else {
            None
        };
        let data = self.data_for(synthetic, seed, own_data)?;
        self.role = Some(match computation {
            c if c == PcaSite::NAME => Role::Pca(Box::new(IterativeSite::new(
                me,
                dashboard,
                PcaSite::new(data),
                ledger,
                os_rng(),
                settings,
            ))),
            c if c == DjicaStudySite::NAME => Role::Djica(Box::new(IterativeSite::new(
                me,
                dashboard,
                DjicaStudySite::new(data),
                ledger,
                os_rng(),
                settings,
            ))),
            other => return Err(format!("this tab cannot compute {other}")),
        });
        Ok(())
    }

    /// The data for a new study: the loaded file, else the synthetic set the study names, else
    /// what the previous step (capePCA) used.
    fn data_for(
        &mut self,
        synthetic: Option<PublicSynthetic>,
        seed: u64,
        own: Option<OwnData>,
    ) -> Result<SiteData, String> {
        let key = match (&own, synthetic) {
            (Some(own), _) => DataKey::Own(own.clone()),
            (None, Some(public)) => DataKey::Synthetic(public, seed),
            (None, None) => match &self.data {
                Some((key, ..)) => key.clone(),
                None => {
                    return Err("this tab has no data for the study: the study uses the sites' \
                                own files (load them under Joint ICA data), or the tab missed \
                                capePCA, where a generated data set is named"
                        .into());
                }
            },
        };
        if let Some((cached, data, _)) = &self.data
            && *cached == key
        {
            return Ok(data.clone());
        }
        let (data, origin) = match (&key, own) {
            (DataKey::Own(_), Some(own)) => {
                (load_own(&own)?, format!("loaded in this tab: {}", own.describe()))
            }
            (DataKey::Synthetic(public, seed), _) => (
                public.site_data(*seed).map_err(|e| e.to_string())?,
                format!(
                    "generated in this tab: {} subjects with sources from its own seed {seed}, \
                     mixed by the study's public maps",
                    public.subjects_per_site
                ),
            ),
            _ => return Err("the loaded file is gone".into()),
        };
        let summary = DataSummary::of(&data, origin);
        self.data = Some((key, data.clone(), summary));
        Ok(data)
    }

    fn feed(
        &mut self,
        out: &mut Vec<FromWorker>,
        step: impl FnOnce(&mut dyn RoleInput) -> Result<Vec<Outgoing>, String>,
    ) {
        let Some(role) = self.role.as_mut() else { return };
        let input: &mut dyn RoleInput = match role {
            Role::Pca(site) => site.as_mut(),
            Role::Djica(site) => site.as_mut(),
        };
        match step(input) {
            Ok(sent) => out.extend(FromWorker::sends(sent)),
            Err(e) => {
                self.refusals.push(e.clone());
                out.push(FromWorker::Refused(e));
            }
        }
        let keep = self.refusals.len().saturating_sub(5);
        self.refusals.drain(..keep);
        let (spent, json) = match self.role.as_mut() {
            Some(Role::Pca(site)) => (site.spent().len(), site.ledger_mut().to_json()),
            Some(Role::Djica(site)) => (site.spent().len(), site.ledger_mut().to_json()),
            None => return,
        };
        if spent > self.saved {
            self.saved = spent;
            out.push(FromWorker::Ledger { json });
        }
    }

    pub fn view(&self) -> IcaSiteView {
        let mut view = IcaSiteView {
            computation: self.computation.clone(),
            data: self.data.as_ref().map(|(_, _, summary)| summary.clone()),
            refusals: self.refusals.clone(),
            ..IcaSiteView::default()
        };
        match &self.role {
            Some(Role::Pca(site)) => progress(&mut view, site),
            Some(Role::Djica(site)) => {
                progress(&mut view, site);
                let r = site.step().components();
                view.components = r;
                if let Some(last) = site.iterations().last() {
                    view.last_gradient = Some(last.statistic[..r * r].to_vec());
                    view.last_release = Some(last.release[..r * r].to_vec());
                }
            }
            None => view.phase = "Waiting for the dashboard".into(),
        }
        view
    }
}

/// Where either role is and what it released.
fn progress<C: SiteStep>(view: &mut IcaSiteView, site: &IterativeSite<C, Ledger>) {
    view.phase = phase_text(&view.computation, site.phase());
    view.released = site.iterations().len() as u32;
    view.max_iterations = site.params().map_or(0, |p| p.max_iterations);
    view.noise = site.iterations().iter().map(NoisePoint::of).collect();
    view.end = match site.shortfall() {
        Some(s) => Some(crate::frame::budget::own_decline(s)),
        None => site.end_reason().map(str::to_owned),
    };
}

/// The two roles' inputs, so [`Engine::feed`] handles either.
trait RoleInput {
    fn handle(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, String>;
    fn handle_departure(
        &mut self,
        now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, String>;
}

impl<C: SiteStep> RoleInput for IterativeSite<C, Ledger> {
    fn handle(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, String> {
        IterativeSite::handle(self, now_ms, from, payload).map_err(|e| e.to_string())
    }

    fn handle_departure(
        &mut self,
        now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, String> {
        IterativeSite::handle_departure(self, now_ms, who).map_err(|e| e.to_string())
    }
}

/// A site's own files as its data: read, then demeaned, scaled by the public scale and clipped
/// at ‖x‖ = 1 as the generator's data are.
pub fn load_own(own: &OwnData) -> Result<SiteData, String> {
    if !(own.scale.is_finite() && own.scale > 0.0) {
        return Err(format!("the public scale {} must be positive", own.scale));
    }
    let mut data = match &own.files {
        OwnFiles::Matrix { name, bytes, timepoints } => load_matrix(bytes, name, *timepoints)?,
        OwnFiles::Nifti { subjects, mask } => {
            let mask =
                BrainMask::from_nifti(&mask.bytes).map_err(|e| format!("{}: {e}", mask.name))?;
            let images: Vec<&[u8]> = subjects.iter().map(|s| s.bytes.as_slice()).collect();
            site_from_nifti(&images, &mask).map_err(|e| e.to_string())?
        }
    };
    normalise_site(&mut data, own.scale);
    Ok(data)
}

/// A matrix file (CSV, or `.npy` by name) as site data: D × N, subjects of `timepoints` columns
/// (not yet normalised).
pub fn load_matrix(bytes: &[u8], name: &str, timepoints: usize) -> Result<SiteData, String> {
    let x = if name.to_ascii_lowercase().ends_with(".npy") {
        parse_npy(bytes)
    } else {
        parse_csv_bytes(bytes)
    }
    .map_err(|e| format!("{name}: {e}"))?;
    if timepoints == 0 || x.ncols() % timepoints != 0 {
        return Err(format!(
            "{name}: {} columns are not whole subjects of {timepoints} time points",
            x.ncols()
        ));
    }
    let subjects = x.ncols() / timepoints;
    SiteData::new(x, vec![timepoints; subjects]).map_err(|e| e.to_string())
}

/// An `iter/decline` for a study this tab cannot take part in (e.g. no data).
fn decline(
    computation: &str,
    payload: &[u8],
    dashboard: ParticipantId,
    reason: String,
) -> Option<FromWorker> {
    let body = |study| -> Option<(String, Vec<u8>)> {
        Some(match computation {
            c if c == PcaSite::NAME => {
                let m = IterMessage::<PcaTask, PcaState> {
                    study,
                    body: IterBody::Decline { reason: reason.clone(), shortfall: None },
                };
                (m.body.kind().to_owned(), m.encode())
            }
            _ => {
                let m = IterMessage::<DjicaTask, DjicaState> {
                    study,
                    body: IterBody::Decline { reason: reason.clone(), shortfall: None },
                };
                (m.body.kind().to_owned(), m.encode())
            }
        })
    };
    let (study, _) = capelab_core::study::iterative::peek_start(payload).ok()?;
    let (kind, payload) = body(study)?;
    Some(FromWorker::Send { to: To::One(dashboard), kind, payload })
}

#[cfg(test)]
mod tests {
    //! Three engines (as three workers) and the core's aggregators exchange the messages the tab
    //! would forward: capePCA, then capeDJICA on the same generated data.

    use capelab_core::accountant::{Budget, Ledger};
    use capelab_core::djica::{ClipBounds, GaussianLevel, Precision, PrivacyUnit};
    use capelab_core::pca::{CovarianceSensitivity, Whitening};
    use capelab_core::rng::derive;
    use capelab_core::study::iterative::djica::{DjicaSchedule, DjicaStudyAggregator, noise_for};
    use capelab_core::study::iterative::pca::{PcaAggregator, SyntheticPreset};
    use capelab_core::study::iterative::{
        AggregatorStep, IterativeAggregator, IterativeParams, NoiseMode,
    };

    use super::*;

    const DASHBOARD: ParticipantId = 1;
    const SITES: [ParticipantId; 3] = [2, 3, 4];

    fn public() -> PublicSynthetic {
        PublicSynthetic {
            preset: SyntheticPreset::WellConditioned,
            grid: 6,
            components: 3,
            timepoints: 50,
            subjects_per_site: 3,
            maps_seed: 5,
        }
    }

    /// Runs one step to its end; returns every site's replies (ledgers, views) in order.
    fn run<U: AggregatorStep>(
        engines: &mut [Engine],
        aggregator: &mut IterativeAggregator<U>,
        start: Vec<Outgoing>,
        ledgers: &[String],
    ) -> Vec<Vec<FromWorker>> {
        let mut replies: Vec<Vec<FromWorker>> = vec![Vec::new(); engines.len()];
        let mut to_sites: Vec<(usize, ToWorker)> = Vec::new();
        for o in start {
            for (i, &me) in SITES.iter().enumerate() {
                to_sites.push((
                    i,
                    ToWorker::Start {
                        me,
                        dashboard: DASHBOARD,
                        computation: U::NAME.into(),
                        payload: o.payload.clone(),
                        ledger_json: ledgers[i].clone(),
                        seed: 100 + i as u64,
                        allow_nonprivate: false,
                        own_data: None,
                    },
                ));
            }
        }
        let mut now = 0;
        while !to_sites.is_empty() {
            now += 1;
            let mut to_aggregator = Vec::new();
            for (i, message) in to_sites.drain(..) {
                for reply in engines[i].handle(message, now) {
                    if let FromWorker::Send { to, payload, .. } = &reply {
                        assert_eq!(*to, To::One(DASHBOARD));
                        to_aggregator.push((SITES[i], payload.clone()));
                    }
                    replies[i].push(reply);
                }
            }
            for (from, payload) in to_aggregator {
                for o in aggregator.handle(now, from, &payload).unwrap() {
                    let targets: Vec<usize> = match o.to {
                        To::All => (0..SITES.len()).collect(),
                        To::One(id) => SITES.iter().position(|&s| s == id).into_iter().collect(),
                    };
                    for i in targets {
                        to_sites.push((
                            i,
                            ToWorker::Message { from: DASHBOARD, payload: o.payload.clone() },
                        ));
                    }
                }
            }
        }
        replies
    }

    fn last_ledger(replies: &[FromWorker]) -> Option<Ledger> {
        replies.iter().rev().find_map(|r| match r {
            FromWorker::Ledger { json } => Some(Ledger::from_json(json).unwrap()),
            _ => None,
        })
    }

    fn last_view(replies: &[FromWorker]) -> IcaSiteView {
        replies
            .iter()
            .rev()
            .find_map(|r| match r {
                FromWorker::View(v) => Some((**v).clone()),
                _ => None,
            })
            .expect("every input ends with a view")
    }

    #[test]
    fn engines_run_capepca_then_capedjica_on_their_own_generated_subjects() {
        let public = public();
        let mut engines: Vec<Engine> = (0..3).map(|_| Engine::default()).collect();
        let ledgers: Vec<String> = (0..3)
            .map(|i| {
                Ledger::new(format!("Lab {i}"), Budget::new(1e6, 1e-5).unwrap()).unwrap().to_json()
            })
            .collect();

        let task = PcaTask {
            voxels: public.voxels(),
            components: 3,
            sensitivity: CovarianceSensitivity { unit: PrivacyUnit::TimePoint, rigorous: false },
            whitening: Whitening::Runica,
            synthetic: Some(public.clone()),
        };
        let z = GaussianLevel { epsilon: 2.0, delta: 1e-2 }.multiplier().unwrap();
        let params = IterativeParams::new(
            SITES.to_vec(),
            NoiseMode::Upfront,
            1,
            task.statistic_len(),
            1.0 / 150.0,
            z,
            1e-2,
        )
        .unwrap();
        let (mut pca, start) = IterativeAggregator::start(
            params,
            PcaAggregator::new(task, Some(public.maps())),
            1_000,
            derive(1, "agg"),
            0,
        )
        .unwrap();
        let replies = run(&mut engines, &mut pca, start, &ledgers);
        let outcome = pca.outcome().expect("capePCA finished");
        assert_eq!(outcome.contributors, SITES.to_vec());
        assert_eq!(outcome.final_state.eigenvalues.len(), 3);
        let ledgers: Vec<String> = replies
            .iter()
            .map(|r| {
                let ledger = last_ledger(r).expect("the release was recorded and posted");
                assert_eq!(ledger.entries().len(), 1);
                ledger.to_json()
            })
            .collect();
        for (i, r) in replies.iter().enumerate() {
            let view = last_view(r);
            let data = view.data.expect("the data at a glance");
            assert_eq!((data.subjects, data.samples, data.voxels), (3, 150, 36));
            assert_eq!(data.grid, Some(6));
            assert!(data.origin.contains(&format!("seed {}", 100 + i)));
            assert_eq!(view.released, 1);
            assert!(view.refusals.is_empty(), "{:?}", view.refusals);
        }
        // Different seeds, different subjects: the sites' data are their own.
        assert_ne!(
            last_view(&replies[0]).data.unwrap().course,
            last_view(&replies[1]).data.unwrap().course
        );

        // capeDJICA on the same data (the engines keep it), J = 5.
        let djica_task = DjicaTask {
            voxels: 36,
            components: 3,
            projection: outcome.final_state.projection.clone(),
            bounds: ClipBounds::default(),
            unit: PrivacyUnit::TimePoint,
            precision: Precision::F64,
        };
        let level = GaussianLevel { epsilon: 1.0, delta: 1e-2 };
        let (sensitivity, z) = noise_for(&djica_task, level, 150, 50).unwrap();
        let params =
            IterativeParams::new(SITES.to_vec(), NoiseMode::Upfront, 5, 12, sensitivity, z, 1e-2)
                .unwrap();
        let step = DjicaStudyAggregator::new(
            djica_task,
            DjicaSchedule::for_private(true),
            5,
            Some(&public.maps()),
        )
        .unwrap();
        let (mut djica, start) =
            IterativeAggregator::start(params, step, 1_000, derive(2, "agg"), 0).unwrap();
        let replies = run(&mut engines, &mut djica, start, &ledgers);
        let outcome = djica.outcome().expect("capeDJICA finished");
        assert_eq!(outcome.iterations, 5);
        for r in &replies {
            assert_eq!(last_ledger(r).unwrap().entries().len(), 1 + 5);
            let view = last_view(r);
            assert_eq!(
                (view.computation.as_str(), view.released, view.components),
                ("capedjica", 5, 3)
            );
            let (g, sent) = (view.last_gradient.unwrap(), view.last_release.unwrap());
            assert_eq!(g.len(), 9);
            assert!(g.iter().zip(&sent).any(|(a, b)| a != b), "the release carries noise");
            assert_eq!(view.noise.len(), 5);
        }
    }

    #[test]
    fn a_tab_without_data_declines_capedjica_and_sends_nothing_else() {
        let task = DjicaTask {
            voxels: 36,
            components: 3,
            projection: vec![0.1; 3 * 36],
            bounds: ClipBounds::default(),
            unit: PrivacyUnit::TimePoint,
            precision: Precision::F32,
        };
        let step =
            DjicaStudyAggregator::new(task, DjicaSchedule::for_private(true), 5, None).unwrap();
        let params =
            IterativeParams::new(SITES.to_vec(), NoiseMode::Upfront, 5, 12, 0.1, 3.0, 1e-2)
                .unwrap();
        let (_agg, start) =
            IterativeAggregator::start(params, step, 1_000, derive(3, "agg"), 0).unwrap();
        let ledger = Ledger::new("Lab", Budget::new(10.0, 1e-5).unwrap()).unwrap().to_json();
        let mut engine = Engine::default();
        let replies = engine.handle(
            ToWorker::Start {
                me: 2,
                dashboard: DASHBOARD,
                computation: "capedjica".into(),
                payload: start[0].payload.clone(),
                ledger_json: ledger,
                seed: 1,
                allow_nonprivate: false,
                own_data: None,
            },
            1,
        );
        let sent: Vec<&str> = replies
            .iter()
            .filter_map(|r| match r {
                FromWorker::Send { kind, .. } => Some(kind.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(sent, vec!["iter/decline"]);
        assert!(last_view(&replies).refusals[0].contains("missed capePCA"));
    }

    #[test]
    fn with_the_sites_own_files_capepca_runs_on_them_and_a_tab_without_files_declines() {
        use capelab_core::fmri::matrix_io::to_csv;

        let public = public();
        let task = PcaTask {
            voxels: 36,
            components: 3,
            sensitivity: CovarianceSensitivity { unit: PrivacyUnit::TimePoint, rigorous: false },
            whitening: Whitening::Runica,
            synthetic: None,
        };
        let z = GaussianLevel { epsilon: 2.0, delta: 1e-2 }.multiplier().unwrap();
        let params = IterativeParams::new(
            SITES.to_vec(),
            NoiseMode::Upfront,
            1,
            task.statistic_len(),
            1.0 / 150.0,
            z,
            1e-2,
        )
        .unwrap();
        let (mut pca, start) = IterativeAggregator::start(
            params,
            PcaAggregator::new(task, None),
            1_000,
            derive(4, "agg"),
            0,
        )
        .unwrap();
        let ledger = Ledger::new("Lab", Budget::new(1e6, 1e-5).unwrap()).unwrap().to_json();
        // Sites 0 and 1 loaded a matrix (D = 36 × 150, subjects of 50); site 2 loaded nothing.
        let mut engines: Vec<Engine> = (0..3).map(|_| Engine::default()).collect();
        let own = |i: u64| OwnData {
            files: OwnFiles::Matrix {
                name: format!("site{i}.csv"),
                bytes: to_csv(&public.site_data(10 + i).unwrap().x().into_owned()).into_bytes(),
                timepoints: 50,
            },
            scale: 1.0,
        };
        let mut sent = vec![Vec::new(); 3];
        for (i, engine) in engines.iter_mut().enumerate() {
            let replies = engine.handle(
                ToWorker::Start {
                    me: SITES[i],
                    dashboard: DASHBOARD,
                    computation: "capepca".into(),
                    payload: start[0].payload.clone(),
                    ledger_json: ledger.clone(),
                    seed: 1,
                    allow_nonprivate: false,
                    own_data: (i < 2).then(|| own(i as u64)),
                },
                1,
            );
            for r in &replies {
                if let FromWorker::Send { kind, payload, .. } = r {
                    sent[i].push(kind.clone());
                    pca.handle(1, SITES[i], payload).unwrap();
                }
            }
            if i < 2 {
                let data = last_view(&replies).data.unwrap();
                assert!(data.origin.contains(&format!("site{i}.csv")), "{}", data.origin);
                assert_eq!((data.voxels, data.samples, data.subjects), (36, 150, 3));
            }
        }
        assert_eq!(sent[0], vec!["iter/accept"]);
        assert_eq!(sent[1], vec!["iter/accept"]);
        assert_eq!(sent[2], vec!["iter/decline"], "no files, no generated data set: it declines");
    }

    #[test]
    fn a_file_loaded_again_under_the_same_name_with_other_bytes_is_new_data() {
        let own = |csv: &str| OwnData {
            files: OwnFiles::Matrix {
                name: "site.csv".into(),
                bytes: csv.as_bytes().to_vec(),
                timepoints: 2,
            },
            scale: 1.0,
        };
        let mut engine = Engine::default();
        let first = engine.data_for(None, 1, Some(own("1,2\n3,5\n"))).unwrap();
        let again = engine.data_for(None, 1, Some(own("1,2\n3,5\n"))).unwrap();
        assert_eq!(first.xt, again.xt);
        let edited = engine.data_for(None, 1, Some(own("1,2\n3,9\n"))).unwrap();
        assert_ne!(first.xt, edited.xt, "the edited file's data, not the cached one");
    }

    #[test]
    fn a_matrix_file_must_hold_whole_subjects() {
        let csv = "1,2,3,4\n5,6,7,8\n";
        let data = load_matrix(csv.as_bytes(), "site.csv", 2).unwrap();
        assert_eq!((data.voxels(), data.subjects(), data.samples()), (2, 2, 4));
        let err = load_matrix(csv.as_bytes(), "site.csv", 3).unwrap_err();
        assert!(err.contains("4 columns are not whole subjects of 3"), "{err}");
        assert!(load_matrix(b"1,x\n", "bad.csv", 1).unwrap_err().starts_with("bad.csv"));
    }
}
