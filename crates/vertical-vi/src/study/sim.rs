//! The whole study in one process: the aggregator, one [`Party`] per block and the [`Dealer`],
//! each behind a [`Driver`] on a [`MemoryRoom`], so every message is the one a browser tab sends
//! through the relay. Every transport is a [`Tap`]: the sim keeps every envelope as the relay
//! sees it (sender, recipient, kind, payload bytes), the "eavesdropper view".

use std::sync::{Arc, Mutex};

use capelab_core::accountant::Ledger;
use capelab_core::driver::{Driver, DriverEvent, Machine};
use capelab_core::rng::{Seed, derive};
use capelab_core::study::StudyId;
use capelab_core::transport::{
    MemoryRoom, MemoryTransport, Transport, TransportError, TransportEvent,
};
use capelab_core::wire::{ParticipantId, Role, To};
use rand_core::Rng;

use super::task::VviTask;
use super::{Aggregator, Dealer, Party, Status, StudyError};
use crate::model::Posterior;
use crate::schema::PartyBlock;
use crate::table::select_rows;

/// One envelope as the relay routed it.
#[derive(Clone, Debug, PartialEq)]
pub struct Seen {
    pub from: ParticipantId,
    pub to: To,
    pub kind: String,
    pub payload: Vec<u8>,
}

/// A [`MemoryTransport`] that records everything it sends.
pub struct Tap {
    pub inner: MemoryTransport,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Transport for Tap {
    fn send(&mut self, to: To, kind: &str, payload: &[u8]) -> Result<(), TransportError> {
        self.inner.send(to, kind, payload)?;
        let seen =
            Seen { from: self.inner.id(), to, kind: kind.to_owned(), payload: payload.to_vec() };
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).push(seen);
        Ok(())
    }

    fn poll_event(&mut self) -> Option<TransportEvent> {
        self.inner.poll_event()
    }
}

pub struct StudySim {
    pub room: MemoryRoom,
    pub aggregator: Driver<Tap, Aggregator>,
    pub parties: Vec<Driver<Tap, Party<Ledger>>>,
    pub dealer: Driver<Tap, Dealer>,
    seen: Arc<Mutex<Vec<Seen>>>,
    blocks: Vec<PartyBlock>,
}

impl StudySim {
    /// The aggregator joins, then one party per block, then the dealer; `task(parties, dealer)`
    /// builds the task for their ids. Party p holds `blocks[p]` and the ledger `ledger(p)`. Every
    /// role runs on `Seed::Fixed(seed)` (see the module doc of [`super`] for what lines up).
    pub fn start(
        blocks: Vec<PartyBlock>,
        ledger: impl Fn(usize) -> Ledger,
        task: impl FnOnce(&[ParticipantId], ParticipantId) -> VviTask,
        seed: u64,
    ) -> Result<Self, StudyError> {
        let room = MemoryRoom::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let tap = |inner| Tap { inner, seen: Arc::clone(&seen) };
        let mut agg = tap(room.join(Role::Dashboard, "aggregator"));
        let mut parties: Vec<Tap> =
            (0..blocks.len()).map(|p| tap(room.join(Role::Site, &format!("party {p}")))).collect();
        let mut dealer = tap(room.join(Role::Site, "dealer"));
        while agg.poll_event().is_some() {}
        for t in parties.iter_mut().chain([&mut dealer]) {
            while t.poll_event().is_some() {}
        }
        let ids: Vec<ParticipantId> = parties.iter().map(|t| t.inner.id()).collect();
        let task = task(&ids, dealer.inner.id());
        let mut study = [0u8; 16];
        derive(seed, "vvi/study/id").fill_bytes(&mut study);
        let seed = Seed::Fixed(seed);
        let agg_id = agg.inner.id();
        let (role, out) = Aggregator::start(agg_id, StudyId(study), task, seed)?;
        let mut aggregator = Driver::new(agg, role);
        aggregator.send(0, out);
        let parties = parties
            .into_iter()
            .zip(&blocks)
            .enumerate()
            .map(|(p, (t, block))| {
                let role = Party::new(t.inner.id(), agg_id, block.clone(), ledger(p), seed)
                    .keep_transcript();
                Driver::new(t, role)
            })
            .collect();
        let dealer_role = Dealer::new(dealer.inner.id(), agg_id, seed);
        let dealer = Driver::new(dealer, dealer_role);
        Ok(StudySim { room, aggregator, parties, dealer, seen, blocks })
    }

    /// Delivers messages until nothing moves (the run released, stopped or stalled).
    pub fn run(&mut self) {
        loop {
            let mut moved = self.aggregator.pump(0);
            for p in &mut self.parties {
                moved += p.pump(0);
            }
            moved += self.dealer.pump(0);
            // A pass in which no role had anything to read: every message sent was read (one
            // sent late in a pass makes the next pass move). Outsiders' inboxes do not count.
            if moved == 0 {
                return;
            }
        }
    }

    /// Every refusal any role logged, with who refused it.
    pub fn refusals(&self) -> Vec<(String, StudyError)> {
        let mut all = refused("aggregator", self.aggregator.log());
        for (p, d) in self.parties.iter().enumerate() {
            all.extend(refused(&format!("party {p}"), d.log()));
        }
        all.extend(refused("dealer", self.dealer.log()));
        all
    }

    /// Every envelope the relay routed so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn finished(&self) -> bool {
        self.aggregator.machine.is_finished()
    }

    /// Every role's status: aggregator, parties in order, dealer.
    pub fn statuses(&self) -> Vec<Status> {
        let mut all = vec![self.aggregator.machine.status().clone()];
        all.extend(self.parties.iter().map(|p| p.machine.status().clone()));
        all.push(self.dealer.machine.status().clone());
        all
    }

    /// The posterior as it stands (the released one once the run is over).
    pub fn posterior(&self) -> Posterior {
        Posterior {
            model: self.aggregator.machine.model().clone(),
            q: self.aggregator.machine.q().clone(),
        }
    }

    /// The mean test NLL of [`Self::posterior`] on the parties' test rows: an in-process metric
    /// (it needs every party's test rows at once, which no role ever holds).
    pub fn test_nll(&self) -> f64 {
        let split = self.aggregator.machine.task().split();
        let test: Vec<PartyBlock> =
            self.blocks.iter().map(|b| select_rows(b, &split.test)).collect();
        self.posterior().test_nll(&test)
    }
}

fn refused(who: &str, log: &[DriverEvent<StudyError>]) -> Vec<(String, StudyError)> {
    log.iter()
        .filter_map(|e| match e {
            DriverEvent::Refused { error, .. } => Some((who.to_owned(), error.clone())),
            _ => None,
        })
        .collect()
}
