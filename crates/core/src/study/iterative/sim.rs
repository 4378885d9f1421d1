/*!
A deterministic in-memory iterative study: the aggregator and S sites as [`Driver`]s on a
[`MemoryRoom`], one seed, virtual time, and scripted departures ("site 2 leaves when the state of
iteration 5 arrives"). The same code paths as in the browser; the same seed gives the same run.
*/

use crate::accountant::Ledger;
use crate::driver::{Driver, DriverEvent};
use crate::rng::derive;
use crate::secagg::messages::kind as secagg_kind;
use crate::study::gate::LedgerAccess;
use crate::transport::{MemoryRoom, MemoryTransport, Transport, TransportEvent};
use crate::wire::{ParticipantId, Role};

use super::aggregator::IterativeAggregator;
use super::messages::{IterBody, IterMessage, kind_of_secagg};
use super::params::{IterativeConfigError, IterativeParams};
use super::site::{IterativeSite, SiteSettings};
use super::step::{AggregatorStep, SiteStep};

/// Site number `site` (0-based, in join order) leaves the room when the state of iteration
/// `iteration` reaches it, before releasing it (`after_release`: right after it sent its release
/// of `iteration`); `iteration: 0` leaves when a SecureAgg run of the noise begins
/// (`secagg/begin`: the upfront run's, or a zero-sum repair's), before its noise enters the sum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScriptedDeparture {
    pub site: usize,
    pub iteration: u32,
    pub after_release: bool,
}

impl ScriptedDeparture {
    pub fn on_state(site: usize, iteration: u32) -> Self {
        Self { site, iteration, after_release: false }
    }

    pub fn after_release(site: usize, iteration: u32) -> Self {
        Self { site, iteration, after_release: true }
    }
}

/// A whole iterative study in one process.
pub struct IterativeSim<C: SiteStep, U: AggregatorStep, L: LedgerAccess = Ledger> {
    room: MemoryRoom,
    clock_ms: u64,
    aggregator: Driver<MemoryTransport, IterativeAggregator<U>>,
    sites: Vec<Driver<MemoryTransport, IterativeSite<C, L>>>,
    departures: Vec<ScriptedDeparture>,
    gone: Vec<bool>,
}

impl<C, U, L> IterativeSim<C, U, L>
where
    C: SiteStep,
    U: AggregatorStep<Task = C::Task, State = C::State>,
    L: LedgerAccess,
{
    /// Virtual milliseconds per delivery pass.
    pub const PASS_MS: u64 = 1;
    const MAX_PASSES: usize = 10_000_000;

    /// Builds the room (aggregator first, then one site per `(step, ledger)`) and starts the
    /// study with `params` built for the sites' ids by `params`.
    pub fn new(
        seed: u64,
        params: impl FnOnce(Vec<ParticipantId>) -> Result<IterativeParams, IterativeConfigError>,
        aggregator_step: U,
        sites: Vec<(C, L)>,
        settings: SiteSettings,
        departures: Vec<ScriptedDeparture>,
        round_timeout_ms: u64,
    ) -> Result<Self, IterativeConfigError> {
        let room = MemoryRoom::new();
        let mut agg_transport = room.join(Role::Dashboard, "aggregator");
        let aggregator_id = agg_transport.id();
        let mut drivers = Vec::with_capacity(sites.len());
        for (i, (step, ledger)) in sites.into_iter().enumerate() {
            let transport = room.join(Role::Site, &format!("site {i}"));
            let rng = derive(seed, &format!("study/iterative/site/{i}"));
            let site =
                IterativeSite::new(transport.id(), aggregator_id, step, ledger, rng, settings);
            drivers.push(Driver::new(transport, site));
        }
        while agg_transport.poll_event().is_some() {}
        for d in &mut drivers {
            while d.transport.poll_event().is_some() {}
        }
        let params = params(drivers.iter().map(|d| d.machine.id()).collect())?;
        let rng = derive(seed, "study/iterative/aggregator");
        let (aggregator, start) =
            IterativeAggregator::start(params, aggregator_step, round_timeout_ms, rng, 0)?;
        let mut aggregator = Driver::new(agg_transport, aggregator);
        aggregator.send(0, start);
        let gone = vec![false; drivers.len()];
        Ok(Self { room, clock_ms: 0, aggregator, sites: drivers, departures, gone })
    }

    pub fn aggregator(&self) -> &IterativeAggregator<U> {
        &self.aggregator.machine
    }

    pub fn site(&self, i: usize) -> &IterativeSite<C, L> {
        &self.sites[i].machine
    }

    pub fn sites(&self) -> usize {
        self.sites.len()
    }

    /// The kinds site `i` sent, in order.
    pub fn sent_by_site(&self, i: usize) -> Vec<&'static str> {
        self.sites[i].sent_kinds().collect()
    }

    /// The inputs the aggregator and the sites refused, as text.
    pub fn refusals(&self) -> Vec<String> {
        let mut all = refusals(self.aggregator.log());
        for s in &self.sites {
            all.extend(refusals(s.log()));
        }
        all
    }

    /// Runs until the aggregator has finished and every message is delivered.
    pub fn run(&mut self) {
        for _ in 0..Self::MAX_PASSES {
            if !self.step() {
                break;
            }
        }
    }

    /// One pass; `false` once nothing can happen any more.
    pub fn step(&mut self) -> bool {
        let mut delivered = 0;
        for i in 0..self.sites.len() {
            delivered += self.pump_site(i);
        }
        delivered += self.aggregator.pump(self.clock_ms);
        if delivered > 0 {
            self.clock_ms += Self::PASS_MS;
            return true;
        }
        self.aggregator.advance_idle_clock(&mut self.clock_ms)
    }

    fn pump_site(&mut self, i: usize) -> usize {
        if self.gone[i] {
            return 0;
        }
        let now = self.clock_ms;
        let mut n = 0;
        while let Some(event) = self.sites[i].transport.poll_event() {
            if let TransportEvent::Message { payload, .. } = &event
                && let Some(iteration) = leaves_at::<C>(payload)
                && self.scripted(i, iteration, false)
            {
                self.leave(i);
                return n;
            }
            self.sites[i].feed(now, event);
            n += 1;
            let released = self.sites[i].machine.iterations().last().map(|it| it.iteration);
            if let Some(iteration) = released
                && self.scripted(i, iteration, true)
                && self.sites[i].sent_kinds().last() == Some(super::messages::kind::RELEASE)
            {
                self.leave(i);
                return n;
            }
        }
        n
    }
}

impl<C, U, L> IterativeSim<C, U, L>
where
    C: SiteStep,
    U: AggregatorStep<Task = C::Task, State = C::State>,
    L: LedgerAccess,
{
    fn scripted(&self, site: usize, iteration: u32, after_release: bool) -> bool {
        let wanted = ScriptedDeparture { site, iteration, after_release };
        self.departures.contains(&wanted)
    }

    fn leave(&mut self, site: usize) {
        self.room.disconnect(self.sites[site].transport.id());
        self.gone[site] = true;
    }
}

/// The departure point a message is: its iteration for `iter/state`, 0 for `secagg/begin`.
fn leaves_at<C: SiteStep>(payload: &[u8]) -> Option<u32> {
    match IterMessage::<C::Task, C::State>::decode(payload).ok()?.body {
        IterBody::State { iteration, .. } => Some(iteration),
        IterBody::SecAgg(message) if kind_of_secagg(&message) == secagg_kind::BEGIN => Some(0),
        _ => None,
    }
}

fn refusals<E: std::fmt::Display>(log: &[DriverEvent<E>]) -> Vec<String> {
    log.iter()
        .filter_map(|e| match e {
            DriverEvent::Refused { error, .. } => Some(error.to_string()),
            _ => None,
        })
        .collect()
}
