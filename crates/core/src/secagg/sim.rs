//! A deterministic in-memory SecureAgg room: S sites and an aggregator on a [`MemoryRoom`], one
//! seed, virtual time, and scripted dropouts ("site 3 vanishes after sending R1").
//!
//! Every participant is a [`Driver`] around its role, exactly as in the browser and the CLI, so a
//! simulation exercises the same code paths as a real run. Time is virtual: each pass in which
//! something is delivered advances the clock by [`Sim::PASS_MS`]; when the room is quiet the
//! clock jumps to the aggregator's next deadline. The same seed gives the same run, bit for bit.
//!
//! For timing the protocol itself, drive the roles directly (see `tests/secagg_bench.rs`): the
//! simulator copies every payload through the room and keeps logs.

use super::aggregator::{Aggregate, Aggregator};
use super::config::{AggregatorConfig, Encoding, Params};
use super::error::{ConfigError, RoundError};
use super::graph::Graph;
use super::messages::kind;
use super::site::{Site, SiteInput, SitePhase, SumResult};
use crate::driver::{Driver, DriverEvent};
use crate::rng::derive;
use crate::transport::{MemoryRoom, MemoryTransport, Transport, TransportEvent};
use crate::wire::{ParticipantId, Role};

/// When a scripted site vanishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DropPoint {
    /// On receiving `Begin`: it never sends anything.
    BeforeAdvertise,
    /// Right after its R0 keys go out.
    AfterAdvertise,
    /// Right after its R1 ciphertexts go out.
    AfterShareKeys,
    /// Right after its R2 masked input goes out: its input is in the sum.
    AfterMaskedInput,
    /// On receiving the unmask request, without answering it: its input is in the sum.
    DuringUnmask,
    /// Right after its R3 shares go out.
    AfterUnmask,
}

impl DropPoint {
    pub const ALL: [DropPoint; 6] = [
        DropPoint::BeforeAdvertise,
        DropPoint::AfterAdvertise,
        DropPoint::AfterShareKeys,
        DropPoint::AfterMaskedInput,
        DropPoint::DuringUnmask,
        DropPoint::AfterUnmask,
    ];

    /// Whether a site that vanishes here still has its input in the sum.
    pub fn keeps_input_in_sum(self) -> bool {
        self >= DropPoint::AfterMaskedInput
    }

    /// Whether a site that vanishes here still answers the unmask request.
    pub fn answers_unmask(self) -> bool {
        self == DropPoint::AfterUnmask
    }

    /// The message after which the site vanishes (for the `After…` points).
    fn after_sending(self) -> Option<&'static str> {
        match self {
            DropPoint::AfterAdvertise => Some(kind::ADVERTISE_KEYS),
            DropPoint::AfterShareKeys => Some(kind::ENCRYPTED_SHARES),
            DropPoint::AfterMaskedInput => Some(kind::MASKED_INPUT),
            DropPoint::AfterUnmask => Some(kind::UNMASK_SHARES),
            DropPoint::BeforeAdvertise | DropPoint::DuringUnmask => None,
        }
    }

    /// The message on whose arrival the site vanishes (for the others).
    fn on_receiving(self) -> Option<&'static str> {
        match self {
            DropPoint::BeforeAdvertise => Some(kind::BEGIN),
            DropPoint::DuringUnmask => Some(kind::UNMASK_REQUEST),
            _ => None,
        }
    }
}

/// How a scripted site vanishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropMode {
    /// Its connection closes: everyone sees `PeerLeft` at once.
    Disconnect,
    /// It stays connected but never answers again: the aggregator has to wait for its deadline.
    Silent,
}

/// One scripted dropout: site number `site` (0-based, in join order) vanishes at `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ScriptedDropout {
    pub site: usize,
    pub at: DropPoint,
    pub mode: DropMode,
}

/// Everything a simulation needs besides the inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct SimConfig {
    pub seed: u64,
    /// `None`: the default ⌊2S/3⌋ + 1.
    pub threshold: Option<usize>,
    pub encoding: Encoding,
    pub round_timeout_ms: u64,
    pub dropouts: Vec<ScriptedDropout>,
    /// The complete graph, or SecAgg+ (with `threshold` per neighbourhood; `None` there: the
    /// default ⌊2(k+1)/3⌋ + 1 of a neighbourhood of k + 1 sites).
    pub graph: Graph,
}

impl SimConfig {
    pub fn new(seed: u64, encoding: Encoding) -> Self {
        Self {
            seed,
            threshold: None,
            encoding,
            round_timeout_ms: 1_000,
            dropouts: Vec::new(),
            graph: Graph::Complete,
        }
    }

    pub fn with_graph(self, graph: Graph) -> Self {
        Self { graph, ..self }
    }

    pub fn with_dropout(mut self, site: usize, at: DropPoint, mode: DropMode) -> Self {
        self.dropouts.push(ScriptedDropout { site, at, mode });
        self
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Active,
    Silent,
    Gone,
}

struct SimSite {
    driver: Driver<MemoryTransport, Site>,
    script: Option<ScriptedDropout>,
    status: Status,
}

/// What one site did.
#[derive(Clone, Debug, PartialEq)]
pub struct SiteReport {
    pub id: ParticipantId,
    pub phase: SitePhase,
    pub outcome: Option<Result<SumResult, RoundError>>,
    /// The kinds it sent, in order.
    pub sent: Vec<&'static str>,
    /// Where it vanished, if the script made it.
    pub vanished: Option<DropPoint>,
    /// How many inputs it refused (typed errors, not panics).
    pub refusals: usize,
    /// Messages and payload bytes it sent (its share of [`SimReport::messages`] and `bytes`).
    pub messages_sent: usize,
    pub bytes_sent: usize,
}

/// The end of a simulation.
#[derive(Clone, Debug, PartialEq)]
pub struct SimReport {
    /// `None` only if the run stalled, which the aggregator's deadlines should rule out.
    pub outcome: Option<Result<Aggregate, RoundError>>,
    pub sites: Vec<SiteReport>,
    pub finished_at_ms: u64,
    /// Messages and payload bytes sent by everyone.
    pub messages: usize,
    pub bytes: usize,
}

impl SimReport {
    /// Whether any site sent an R3 message.
    pub fn any_unmask_shares_sent(&self) -> bool {
        self.sites.iter().any(|s| s.sent.contains(&kind::UNMASK_SHARES))
    }
}

/// A whole SecureAgg room in one process.
pub struct Sim {
    room: MemoryRoom,
    clock_ms: u64,
    aggregator: Driver<MemoryTransport, Aggregator>,
    sites: Vec<SimSite>,
}

impl Sim {
    /// Virtual milliseconds per delivery pass.
    pub const PASS_MS: u64 = 1;
    /// A guard against a run that never ends (a bug): far more passes than four rounds need.
    const MAX_PASSES: usize = 100_000;

    /// Builds the room (aggregator first, then one site per input) and opens the instance.
    pub fn new(config: SimConfig, inputs: Vec<SiteInput>) -> Result<Self, ConfigError> {
        let room = MemoryRoom::new();
        let mut agg_transport = room.join(Role::Dashboard, "aggregator");
        let aggregator_id = agg_transport.id();
        let mut sites = Vec::with_capacity(inputs.len());
        for (i, input) in inputs.into_iter().enumerate() {
            let transport = room.join(Role::Site, &format!("site {i}"));
            let rng = derive(config.seed, &format!("secagg/site/{i}"));
            let site = Site::new(transport.id(), aggregator_id, input, rng)?;
            let script = config.dropouts.iter().find(|d| d.site == i).copied();
            sites.push(SimSite {
                driver: Driver::new(transport, site),
                script,
                status: Status::Active,
            });
        }
        // Room set-up events (Connected, PeerJoined) are not protocol inputs.
        while agg_transport.poll_event().is_some() {}
        for s in &mut sites {
            while s.driver.transport.poll_event().is_some() {}
        }
        let ids: Vec<ParticipantId> = sites.iter().map(|s| s.driver.machine.id()).collect();
        let mut params = Params::new(ids, Self::vector_len(&sites)?, config.encoding)?;
        match (config.graph, config.threshold) {
            (Graph::Complete, Some(t)) => params = params.with_threshold(t)?,
            (Graph::Complete, None) => {}
            (graph @ Graph::Harary { k, .. }, t) => {
                let t = t.unwrap_or_else(|| Params::default_threshold(k + 1));
                params = params.with_graph(graph, t)?;
            }
        }
        let agg_config =
            AggregatorConfig::new(params)?.with_round_timeout_ms(config.round_timeout_ms);
        let mut rng = derive(config.seed, "secagg/aggregator");
        let (aggregator, begin) = Aggregator::start(agg_config, &mut rng, 0);
        let mut aggregator = Driver::new(agg_transport, aggregator);
        aggregator.send(0, begin);
        Ok(Self { room, clock_ms: 0, aggregator, sites })
    }

    fn vector_len(sites: &[SimSite]) -> Result<usize, ConfigError> {
        let len = sites.first().map_or(0, |s| s.driver.machine.ring_input().len());
        match sites.iter().find(|s| s.driver.machine.ring_input().len() != len) {
            Some(s) => Err(ConfigError::InputLength {
                expected: len,
                got: s.driver.machine.ring_input().len(),
            }),
            None => Ok(len),
        }
    }

    pub fn now_ms(&self) -> u64 {
        self.clock_ms
    }

    pub fn aggregator(&self) -> &Aggregator {
        &self.aggregator.machine
    }

    pub fn aggregator_id(&self) -> ParticipantId {
        self.aggregator.transport.id()
    }

    pub fn site(&self, i: usize) -> &Site {
        &self.sites[i].driver.machine
    }

    pub fn site_id(&self, i: usize) -> ParticipantId {
        self.sites[i].driver.transport.id()
    }

    pub fn sites(&self) -> usize {
        self.sites.len()
    }

    /// Runs until the aggregator has finished and every message is delivered.
    pub fn run(&mut self) -> SimReport {
        for _ in 0..Self::MAX_PASSES {
            if !self.step() {
                break;
            }
        }
        self.report()
    }

    /// One pass: every site, then the aggregator, handles what waits for it. Returns `false`
    /// once nothing can happen any more.
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
        let now = self.clock_ms;
        let s = &mut self.sites[i];
        match s.status {
            Status::Gone => return 0,
            Status::Silent => {
                while s.driver.transport.poll_event().is_some() {}
                return 0;
            }
            Status::Active => {}
        }
        let mut n = 0;
        while let Some(event) = s.driver.transport.poll_event() {
            let arriving = match &event {
                TransportEvent::Message { kind, .. } => Some(kind.as_str()),
                _ => None,
            };
            if let Some(d) = s.script
                && d.at.on_receiving().is_some()
                && d.at.on_receiving() == arriving
            {
                self.vanish(i);
                return n;
            }
            s.driver.feed(now, event);
            n += 1;
            if let Some(d) = s.script
                && let Some(k) = d.at.after_sending()
                && s.driver.sent_kinds().any(|sent| sent == k)
            {
                self.vanish(i);
                return n;
            }
        }
        n
    }

    fn vanish(&mut self, i: usize) {
        let s = &mut self.sites[i];
        let Some(script) = s.script else { return };
        match script.mode {
            DropMode::Disconnect => {
                self.room.disconnect(s.driver.transport.id());
                s.status = Status::Gone;
            }
            DropMode::Silent => s.status = Status::Silent,
        }
    }

    pub fn report(&self) -> SimReport {
        let mut messages = 0;
        let mut bytes = 0;
        let mut count = |log: &mut dyn Iterator<Item = usize>| {
            for b in log {
                messages += 1;
                bytes += b;
            }
        };
        count(&mut sent_bytes(self.aggregator.log()));
        let sites = self
            .sites
            .iter()
            .map(|s| {
                let own: Vec<usize> = sent_bytes(s.driver.log()).collect();
                count(&mut own.iter().copied());
                SiteReport {
                    id: s.driver.transport.id(),
                    phase: s.driver.machine.phase(),
                    outcome: s.driver.machine.outcome().map(|o| o.cloned().map_err(Clone::clone)),
                    sent: s.driver.sent_kinds().collect(),
                    vanished: (s.status != Status::Active)
                        .then(|| s.script.map(|d| d.at))
                        .flatten(),
                    refusals: s
                        .driver
                        .log()
                        .iter()
                        .filter(|e| matches!(e, DriverEvent::Refused { .. }))
                        .count(),
                    messages_sent: own.len(),
                    bytes_sent: own.iter().sum(),
                }
            })
            .collect();
        SimReport {
            outcome: self.aggregator.machine.outcome().map(|o| o.cloned().map_err(Clone::clone)),
            sites,
            finished_at_ms: self.clock_ms,
            messages,
            bytes,
        }
    }
}

fn sent_bytes<E>(log: &[DriverEvent<E>]) -> impl Iterator<Item = usize> + '_ {
    log.iter().filter_map(|e| match e {
        DriverEvent::Sent { bytes, .. } => Some(*bytes),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed::FixedPoint;
    use crate::secagg::messages::{DropReason, Phase};

    fn real_inputs(sites: usize, len: usize, fp: FixedPoint) -> Vec<SiteInput> {
        (0..sites)
            .map(|i| SiteInput::Real {
                values: (0..len).map(|j| (i as f64 - 2.0) * 0.75 + j as f64 / 8.0).collect(),
                format: fp,
            })
            .collect()
    }

    fn expected_sum(sim: &Sim, included: impl Fn(usize) -> bool) -> Vec<u64> {
        let len = sim.site(0).ring_input().len();
        let mut sum = vec![0u64; len];
        for i in (0..sim.sites()).filter(|&i| included(i)) {
            crate::fixed::add_assign(&mut sum, sim.site(i).ring_input());
        }
        sum
    }

    #[test]
    fn no_dropouts_gives_the_exact_sum_everywhere() {
        let fp = FixedPoint::new(32, 100.0).unwrap();
        let mut sim =
            Sim::new(SimConfig::new(1, Encoding::Fixed(fp)), real_inputs(5, 7, fp)).unwrap();
        let report = sim.run();
        let agg = report.outcome.clone().unwrap().unwrap();
        assert_eq!(agg.sum, expected_sum(&sim, |_| true));
        assert_eq!(agg.survivors, (0..5).map(|i| sim.site_id(i)).collect::<Vec<_>>());
        assert!(agg.dropouts.is_empty());
        // the decoded sum is the sum of the quantised reals
        let decoded = agg.decoded.unwrap();
        for (j, d) in decoded.iter().enumerate() {
            let q: f64 = (0..5).map(|i| sim.site(i).quantised_input().unwrap()[j]).sum();
            assert!((d - q).abs() < 1e-9, "{d} vs {q}");
        }
        for s in &report.sites {
            let r = s.outcome.clone().unwrap().unwrap();
            assert_eq!(r.sum, agg.sum);
            assert!(r.included);
            assert_eq!(s.refusals, 0);
        }
        // four rounds and no deadline: a handful of passes
        assert!(report.finished_at_ms < 20, "{}", report.finished_at_ms);
    }

    #[test]
    fn the_same_seed_reproduces_the_run() {
        let fp = FixedPoint::new(20, 10.0).unwrap();
        let cfg = SimConfig::new(9, Encoding::Fixed(fp)).with_dropout(
            1,
            DropPoint::AfterShareKeys,
            DropMode::Silent,
        );
        let a = Sim::new(cfg.clone(), real_inputs(4, 3, fp)).unwrap().run();
        let b = Sim::new(cfg, real_inputs(4, 3, fp)).unwrap().run();
        assert_eq!(a, b);
    }

    #[test]
    fn a_silent_site_costs_one_deadline() {
        let cfg = SimConfig::new(2, Encoding::Ring).with_dropout(
            4,
            DropPoint::AfterShareKeys,
            DropMode::Silent,
        );
        let inputs = (0..6).map(|i| SiteInput::Ring(vec![i as u64; 3])).collect();
        let mut sim = Sim::new(cfg, inputs).unwrap();
        let report = sim.run();
        let agg = report.outcome.unwrap().unwrap();
        assert_eq!(
            agg.sum,
            vec![1 + 2 + 3 + 5; 3],
            "sites 0..6 contribute their index; site 4 is missing"
        );
        assert_eq!(
            agg.dropouts,
            vec![crate::secagg::Dropout {
                site: sim.site_id(4),
                phase: Phase::MaskedInput,
                reason: DropReason::TimedOut
            }]
        );
        assert!(report.finished_at_ms >= 1_000 && report.finished_at_ms < 1_100);
        // the silent site stays excluded and learns nothing
        assert_eq!(report.sites[4].vanished, Some(DropPoint::AfterShareKeys));
    }
}
