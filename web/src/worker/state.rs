//! Everything one worker holds: a site tab's [`Engine`], or a dashboard's [`DashboardRun`]
//! (a tab is one or the other), and the routing of the page's messages between them.

use capelab_core::data::Dataset;
use capelab_core::efpsn::problem::labelled_csv;
use capelab_core::study::efpsn::AgentData;

use crate::local_data::LabelledRows;
use crate::studies::efpsn::worker::EfpsnEngine;
use crate::studies::ica::worker_dashboard::DashboardRun;
use crate::studies::ica::worker_site::Engine;
use crate::studies::vertical_vi::worker::VviEngine;
use crate::worker::protocol::{FromWorker, ToWorker};

/// The rows a site's EFPSN agent optimises on: its own table when it has one, else its part of
/// the shared table `csv`.
fn agent_data(csv: &str, own: Option<Result<LabelledRows, String>>) -> AgentData {
    let unusable =
        |e: &dyn std::fmt::Display| AgentData::Unusable(format!("this agent's own table: {e}"));
    match own {
        Some(Ok(rows)) => match Dataset::from_rows(&rows.x, &rows.y) {
            Ok(d) => AgentData::Own(d),
            Err(e) => unusable(&e),
        },
        Some(Err(e)) => unusable(&e),
        None => match labelled_csv(csv) {
            Ok((d, _)) => AgentData::Shared(d),
            Err(e) => AgentData::Unusable(format!("the shared data set: {e}")),
        },
    }
}

#[derive(Default)]
pub struct WorkerState {
    site: Engine,
    efpsn: EfpsnEngine,
    vvi: VviEngine,
    dashboard: Option<DashboardRun>,
}

impl WorkerState {
    pub fn handle(&mut self, message: ToWorker, now_ms: u64) -> Vec<FromWorker> {
        match (message, self.dashboard.as_mut()) {
            (
                ToWorker::EfpsnStart {
                    me,
                    dashboard,
                    payload,
                    ledger_json,
                    csv,
                    own,
                    allow_nonprivate,
                },
                _,
            ) => self.efpsn.start(
                me,
                dashboard,
                &payload,
                &ledger_json,
                agent_data(&csv, own),
                allow_nonprivate,
                now_ms,
            ),
            (ToWorker::EfpsnMessage { from, payload }, _) => {
                self.efpsn.message(from, &payload, now_ms)
            }
            (ToWorker::EfpsnDeparture { who }, _) => self.efpsn.departure(who, now_ms),
            (ToWorker::VviStart(start), _) => self.vvi.start(*start, now_ms),
            (ToWorker::VviTable { joined }, _) => self.vvi.table(joined, now_ms),
            (ToWorker::VviMessage { from, payload }, _) => self.vvi.message(from, &payload, now_ms),
            (ToWorker::VviDeparture { who }, _) => self.vvi.departure(who, now_ms),
            (ToWorker::IcaStart { number, form, names }, _) => {
                match DashboardRun::start(number, *form, names, now_ms) {
                    Ok((run, replies)) => {
                        self.dashboard = Some(run);
                        replies
                    }
                    Err(e) => vec![FromWorker::IcaStartFailed(e)],
                }
            }
            (ToWorker::IcaTimer, Some(run)) => run.timer(now_ms),
            (ToWorker::IcaStop { reason }, Some(run)) => run.stop(now_ms, &reason),
            (ToWorker::Message { from, payload }, Some(run)) => run.message(now_ms, from, payload),
            (ToWorker::Departure { who }, Some(run)) => run.departure(now_ms, who),
            (ToWorker::IcaTimer | ToWorker::IcaStop { .. }, None) => Vec::new(),
            (message, None) => self.site.handle(message, now_ms),
            (ToWorker::Start { .. }, Some(_)) => {
                vec![FromWorker::Refused("a dashboard's worker takes no site study".into())]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! A dashboard's worker and three sites' workers, wired as the page and the relay would:
    //! the whole Joint ICA study with nothing but worker messages.

    use std::collections::BTreeMap;

    use capelab_core::accountant::{Budget, Ledger};
    use capelab_core::djica::PrivacyUnit;
    use capelab_core::study::iterative::peek_start;
    use capelab_core::wire::{ParticipantId, To};

    use super::*;
    use crate::studies::ica::form::IcaFields;
    use crate::studies::ica::run::IcaLive;

    const DASHBOARD: ParticipantId = 1;
    const SITES: [ParticipantId; 3] = [2, 3, 4];

    #[test]
    fn a_dashboard_worker_and_site_workers_run_the_study_to_its_maps() {
        let fields = IcaFields {
            grid: "6".into(),
            components: "3".into(),
            subjects_per_site: "4".into(),
            timepoints: "60".into(),
            unit: PrivacyUnit::TimePoint,
            epsilon_iteration: "2".into(),
            iterations: "40".into(),
            ..IcaFields::default()
        };
        let form = fields.read(SITES.to_vec()).unwrap();
        let names: BTreeMap<ParticipantId, String> =
            SITES.iter().map(|&s| (s, format!("Lab {s}"))).collect();
        let mut dashboard = WorkerState::default();
        let mut sites: Vec<WorkerState> = SITES.iter().map(|_| WorkerState::default()).collect();
        let ledgers: Vec<String> = SITES
            .iter()
            .map(|s| {
                Ledger::new(format!("Lab {s}"), Budget::new(1e6, 1e-5).unwrap()).unwrap().to_json()
            })
            .collect();
        let mut ledgers = ledgers;
        let mut live: Option<IcaLive> = None;
        let mut inbox: Vec<(Option<usize>, ToWorker)> =
            vec![(None, ToWorker::IcaStart { number: 1, form: Box::new(form), names })];
        let mut now = 0;
        while let Some((to, message)) = inbox.pop() {
            now += 1;
            let (from, replies) = match to {
                None => (DASHBOARD, dashboard.handle(message, now)),
                Some(i) => (SITES[i], sites[i].handle(message, now)),
            };
            for reply in replies {
                match reply {
                    FromWorker::Send { to, kind, payload } if from == DASHBOARD => {
                        let targets: Vec<usize> = match to {
                            To::All => (0..SITES.len()).collect(),
                            To::One(id) => {
                                SITES.iter().position(|&s| s == id).into_iter().collect()
                            }
                        };
                        for i in targets {
                            // The page starts a site's role on `iter/start`, else forwards.
                            let message = if kind == "iter/start" {
                                let (_, computation) = peek_start(&payload).unwrap();
                                ToWorker::Start {
                                    me: SITES[i],
                                    dashboard: DASHBOARD,
                                    computation,
                                    payload: payload.clone(),
                                    ledger_json: ledgers[i].clone(),
                                    seed: 40 + i as u64,
                                    allow_nonprivate: false,
                                    own_data: None,
                                }
                            } else {
                                ToWorker::Message { from: DASHBOARD, payload: payload.clone() }
                            };
                            inbox.insert(0, (Some(i), message));
                        }
                    }
                    FromWorker::Send { to, payload, .. } => {
                        assert_eq!(to, To::One(DASHBOARD), "sites write to the dashboard only");
                        inbox.insert(0, (None, ToWorker::Message { from, payload }));
                    }
                    FromWorker::Ledger { json } => {
                        let i = SITES.iter().position(|&s| s == from).unwrap();
                        ledgers[i] = json;
                    }
                    FromWorker::IcaLive(l) => live = Some(*l),
                    FromWorker::IcaStartFailed(e) => panic!("{e}"),
                    _ => {}
                }
            }
        }
        let live = live.expect("the dashboard reported its study");
        assert!(live.finished && live.failure.is_none(), "{:?}", live.failure);
        assert_eq!(live.stage, "capeDJICA");
        assert_eq!(live.points.len(), 40);
        let maps = live.maps.expect("the maps of the final state");
        assert_eq!((maps.truth.len(), maps.recovered.len(), maps.grid), (3, 3, 6));
        let q = live.points.last().unwrap().q.unwrap();
        // Quality is core's to test with fixed seeds; here the noise is the OS's.
        assert!((0.0..=1.0).contains(&q), "q_NGI = {q}");
        for json in &ledgers {
            assert_eq!(Ledger::from_json(json).unwrap().entries().len(), 1 + 40);
        }
    }
}
