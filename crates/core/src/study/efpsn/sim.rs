//! A whole EFPSN study in one process: the dashboard's [`EfpsnObserver`] and one
//! [`EfpsnStudySite`] per agent, each behind a [`Driver`] on a [`MemoryRoom`], so every message
//! is the one a browser tab sends through the relay.

use super::observer::EfpsnObserver;
use super::site::{AgentData, EfpsnStudySite};
use super::task::EfpsnTask;
use crate::accountant::Ledger;
use crate::data::Dataset;
use crate::driver::{Driver, DriverEvent, Machine};
use crate::efpsn::EfpsnError;
use crate::rng::derive;
use crate::study::StudyId;
use crate::study::iterative::SiteSettings;
use crate::transport::{MemoryRoom, MemoryTransport, Transport};
use crate::wire::{ParticipantId, Role};

pub struct StudySim {
    pub room: MemoryRoom,
    pub dashboard: Driver<MemoryTransport, EfpsnObserver>,
    pub sites: Vec<Driver<MemoryTransport, EfpsnStudySite<Ledger>>>,
}

impl StudySim {
    /// `n` site tabs joined before the dashboard starts; `task(agents)` builds the study for
    /// their ids. Every site holds `data` and the ledger `ledger(i)`.
    pub fn start(
        n: usize,
        data: &Dataset,
        settings: SiteSettings,
        ledger: impl Fn(usize) -> Ledger,
        task: impl FnOnce(&[ParticipantId]) -> EfpsnTask,
        seed: u64,
    ) -> Result<Self, EfpsnError> {
        Self::start_with(n, data, |_| AgentData::Shared(data.clone()), settings, ledger, task, seed)
    }

    /// As [`StudySim::start`], but site `i` optimises on `rows(i)` (the shared table or its own);
    /// the dashboard measures against the shared table `data`.
    pub fn start_with(
        n: usize,
        data: &Dataset,
        rows: impl Fn(usize) -> AgentData,
        settings: SiteSettings,
        ledger: impl Fn(usize) -> Ledger,
        task: impl FnOnce(&[ParticipantId]) -> EfpsnTask,
        seed: u64,
    ) -> Result<Self, EfpsnError> {
        let room = MemoryRoom::new();
        let mut dash = room.join(Role::Dashboard, "dashboard");
        let mut sites: Vec<MemoryTransport> =
            (0..n).map(|i| room.join(Role::Site, &format!("site {i}"))).collect();
        while dash.poll_event().is_some() {}
        for s in &mut sites {
            while s.poll_event().is_some() {}
        }
        let ids: Vec<ParticipantId> = sites.iter().map(|s| s.id()).collect();
        let task = task(&ids);
        let problem = task.split.problem(data, n)?;
        let mut study = [0u8; 16];
        rand_core::Rng::fill_bytes(&mut derive(seed, "efpsn-study/id"), &mut study);
        let rng = derive(seed, "efpsn-study/dashboard");
        let (observer, out) = EfpsnObserver::start(dash.id(), StudyId(study), task, problem, rng)?;
        let mut dashboard = Driver::new(dash, observer);
        dashboard.send(0, out);
        let sites = sites
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                let role = EfpsnStudySite::new(
                    t.id(),
                    dashboard.transport.id(),
                    rows(i),
                    ledger(i),
                    settings,
                    derive(seed, &format!("efpsn-study/site/{i}")),
                );
                Driver::new(t, role)
            })
            .collect();
        Ok(StudySim { room, dashboard, sites })
    }

    /// Delivers messages until nothing moves; `Err` on the first refusal any role logged.
    pub fn run(&mut self) -> Result<(), EfpsnError> {
        loop {
            let mut moved = self.dashboard.pump(0);
            for s in &mut self.sites {
                moved += s.pump(0);
            }
            if let Some(e) = refusal(self.dashboard.log())
                .or_else(|| self.sites.iter().find_map(|s| refusal(s.log())))
            {
                return Err(e);
            }
            if moved == 0 && self.room.pending() == 0 {
                return Ok(());
            }
        }
    }

    pub fn finished(&self) -> bool {
        self.dashboard.machine.is_finished()
    }
}

fn refusal(log: &[DriverEvent<EfpsnError>]) -> Option<EfpsnError> {
    log.iter().find_map(|e| match e {
        DriverEvent::Refused { error, .. } => Some(error.clone()),
        _ => None,
    })
}
