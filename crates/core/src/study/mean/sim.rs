/*!
A deterministic in-memory private-mean study: S sites and the aggregator on a [`MemoryRoom`], one
seed, virtual time, and scripted dropouts in every phase ("site 2 vanishes inside attempt 1's
SecureAgg, right after its masked input"). Used by the tests and by `cape mean`.

Every participant is a [`Driver`] around its role, exactly as in the browser, so a simulation
exercises the same code paths as a real run (the secagg simulator's design, `secagg::sim`). Each
delivery pass advances the clock by [`StudySim::PASS_MS`]; when the room is quiet the clock jumps
to the aggregator's next deadline. The same seed gives the same run, bit for bit.
*/

use crate::accountant::Ledger;
use crate::accountant::ledger::LedgerEntry;
use crate::driver::{Driver, DriverEvent};
use crate::rng::derive;
use crate::secagg::messages::kind as secagg_kind;
use crate::secagg::sim::{DropMode, DropPoint};
use crate::study::gate::LedgerAccess;
use crate::transport::{MemoryRoom, MemoryTransport, Transport, TransportEvent};
use crate::wire::{ParticipantId, Role};

use super::aggregator::{AggregatorSettings, MeanAggregator};
use super::error::StudyConfigError;
use super::messages::{MeanMessage, kind};
use super::outcome::StudyOutcome;
use super::params::{Calibration, Masking, StudyParams};
use super::query::Query;
use super::site::{MeanSite, SiteAttempt, SitePhase};

/// When a scripted site vanishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StudyDropPoint {
    /// On receiving `mean/start`: it never answers.
    OnStart,
    /// Right after its `mean/accept` goes out, before any SecureAgg round.
    AfterAccept,
    /// Inside attempt `attempt`'s SecureAgg, at one of SecureAgg's own drop points.
    SecAgg { attempt: u32, at: DropPoint },
    /// On receiving attempt `attempt`'s noise sum (`secagg/result`): its ê_s is in the sum but it
    /// never releases, which breaks the zero sum.
    BeforeRelease { attempt: u32 },
    /// Right after its release of attempt `attempt` goes out.
    AfterRelease { attempt: u32 },
}

impl StudyDropPoint {
    /// The message (kind, attempt) on whose arrival the site vanishes.
    fn on_receiving(self) -> Option<(&'static str, Option<u32>)> {
        match self {
            StudyDropPoint::OnStart => Some((kind::START, None)),
            StudyDropPoint::SecAgg { attempt, at: DropPoint::BeforeAdvertise } => {
                Some((secagg_kind::BEGIN, Some(attempt)))
            }
            StudyDropPoint::SecAgg { attempt, at: DropPoint::DuringUnmask } => {
                Some((secagg_kind::UNMASK_REQUEST, Some(attempt)))
            }
            StudyDropPoint::BeforeRelease { attempt } => Some((secagg_kind::RESULT, Some(attempt))),
            _ => None,
        }
    }

    /// The message (kind, attempt) after whose sending the site vanishes.
    fn after_sending(self) -> Option<(&'static str, Option<u32>)> {
        let secagg = |attempt, kind| Some((kind, Some(attempt)));
        match self {
            StudyDropPoint::AfterAccept => Some((kind::ACCEPT, None)),
            StudyDropPoint::SecAgg { attempt, at } => match at {
                DropPoint::AfterAdvertise => secagg(attempt, secagg_kind::ADVERTISE_KEYS),
                DropPoint::AfterShareKeys => secagg(attempt, secagg_kind::ENCRYPTED_SHARES),
                DropPoint::AfterMaskedInput => secagg(attempt, secagg_kind::MASKED_INPUT),
                DropPoint::AfterUnmask => secagg(attempt, secagg_kind::UNMASK_SHARES),
                DropPoint::BeforeAdvertise | DropPoint::DuringUnmask => None,
            },
            StudyDropPoint::AfterRelease { attempt } => Some((kind::RELEASE, Some(attempt))),
            _ => None,
        }
    }
}

/// One scripted dropout: site number `site` (0-based, in join order) vanishes at `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScriptedDropout {
    pub site: usize,
    pub at: StudyDropPoint,
    pub mode: DropMode,
}

/// Everything a simulated study needs besides the sites' rows and ledgers.
#[derive(Clone, Debug, PartialEq)]
pub struct StudySimConfig {
    pub seed: u64,
    pub epsilon: f64,
    pub delta: f64,
    pub values_per_site: usize,
    pub dimension: usize,
    /// `None`: the default ⌊2S/3⌋ + 1.
    pub threshold: Option<usize>,
    pub also_conventional: bool,
    pub calibration: Calibration,
    pub max_reruns: u32,
    pub round_timeout_ms: u64,
    pub dropouts: Vec<ScriptedDropout>,
    /// What the sites compute (the mean by default).
    pub query: Query,
    /// Who masks with whom (the complete graph by default).
    pub masking: Masking,
}

impl StudySimConfig {
    pub fn new(seed: u64, epsilon: f64, delta: f64, values_per_site: usize) -> Self {
        Self {
            seed,
            epsilon,
            delta,
            values_per_site,
            dimension: 1,
            threshold: None,
            also_conventional: false,
            calibration: Calibration::Classical,
            max_reruns: StudyParams::DEFAULT_MAX_RERUNS,
            round_timeout_ms: 1_000,
            dropouts: Vec::new(),
            query: Query::Mean,
            masking: Masking::Complete,
        }
    }

    /// SecureAgg masks as `masking` says (e.g. SecAgg+).
    pub fn with_masking(self, masking: Masking) -> Self {
        Self { masking, ..self }
    }

    pub fn with_dimension(self, dimension: usize) -> Self {
        Self { dimension, ..self }
    }

    pub fn with_threshold(self, threshold: usize) -> Self {
        Self { threshold: Some(threshold), ..self }
    }

    pub fn with_conventional(self, also_conventional: bool) -> Self {
        Self { also_conventional, ..self }
    }

    pub fn with_max_reruns(self, max_reruns: u32) -> Self {
        Self { max_reruns, ..self }
    }

    /// The sites compute `query` (for a regression, `dimension` is then D).
    pub fn with_query(self, query: Query) -> Self {
        Self { query, ..self }
    }

    pub fn with_dropout(mut self, site: usize, at: StudyDropPoint, mode: DropMode) -> Self {
        self.dropouts.push(ScriptedDropout { site, at, mode });
        self
    }

    /// The study's parameters for the sites `sites`.
    pub fn params(&self, sites: Vec<ParticipantId>) -> Result<StudyParams, StudyConfigError> {
        let mut params = StudyParams::new(sites, self.epsilon, self.delta, self.values_per_site)?
            .with_dimension(self.dimension)?
            .with_conventional(self.also_conventional)
            .with_calibration(self.calibration)?
            .with_max_reruns(self.max_reruns)?
            .with_query(self.query)?;
        if let Some(t) = self.threshold {
            params = params.with_threshold(t)?;
        }
        if self.masking != Masking::Complete {
            params = params.with_masking(self.masking)?;
        }
        Ok(params)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Active,
    Silent,
    Gone,
}

struct SimSite<L: LedgerAccess> {
    driver: Driver<MemoryTransport, MeanSite<L>>,
    script: Option<ScriptedDropout>,
    status: Status,
}

/// What one site did.
#[derive(Clone, Debug, PartialEq)]
pub struct SiteReport {
    pub id: ParticipantId,
    pub phase: SitePhase,
    /// The kinds it sent, in order: the transport log.
    pub sent: Vec<&'static str>,
    /// Where it vanished, if the script made it.
    pub vanished: Option<StudyDropPoint>,
    /// The inputs it refused (typed errors, not panics), as text.
    pub refusals: Vec<String>,
    /// The ledger entries the study recorded at this site.
    pub spent: Vec<LedgerEntry>,
    /// Its attempts: ê_s, e_s, â_s (local, never sent except â_s).
    pub attempts: Vec<SiteAttempt>,
}

/// The end of a simulation.
#[derive(Clone, Debug, PartialEq)]
pub struct StudySimReport {
    /// `None` only if the run stalled, which the aggregator's deadlines rule out.
    pub outcome: Option<StudyOutcome>,
    pub sites: Vec<SiteReport>,
    pub aggregator_refusals: Vec<String>,
    pub finished_at_ms: u64,
    /// Messages and payload bytes sent by everyone.
    pub messages: usize,
    pub bytes: usize,
}

/// A whole private-mean study in one process.
pub struct StudySim<L: LedgerAccess = Ledger> {
    room: MemoryRoom,
    clock_ms: u64,
    aggregator: Driver<MemoryTransport, MeanAggregator>,
    sites: Vec<SimSite<L>>,
}

impl<L: LedgerAccess> StudySim<L> {
    /// Virtual milliseconds per delivery pass.
    pub const PASS_MS: u64 = 1;
    /// A guard against a run that never ends (a bug).
    const MAX_PASSES: usize = 100_000;

    /// Builds the room (aggregator first, then one site per `(rows, ledger)`) and starts the
    /// study.
    pub fn new(
        config: StudySimConfig,
        sites: Vec<(Vec<Vec<f64>>, L)>,
    ) -> Result<Self, StudyConfigError> {
        let room = MemoryRoom::new();
        let mut agg_transport = room.join(Role::Dashboard, "aggregator");
        let aggregator_id = agg_transport.id();
        let mut sim_sites = Vec::with_capacity(sites.len());
        for (i, (rows, ledger)) in sites.into_iter().enumerate() {
            let transport = room.join(Role::Site, &format!("site {i}"));
            let rng = derive(config.seed, &format!("study/mean/site/{i}"));
            let site = MeanSite::new(transport.id(), aggregator_id, rows, ledger, rng);
            let script = config.dropouts.iter().find(|d| d.site == i).copied();
            sim_sites.push(SimSite {
                driver: Driver::new(transport, site),
                script,
                status: Status::Active,
            });
        }
        // Room set-up events (Connected, PeerJoined) are not protocol inputs.
        while agg_transport.poll_event().is_some() {}
        for s in &mut sim_sites {
            while s.driver.transport.poll_event().is_some() {}
        }
        let ids = sim_sites.iter().map(|s| s.driver.machine.id()).collect();
        let params = config.params(ids)?;
        let settings = AggregatorSettings {
            round_timeout_ms: config.round_timeout_ms,
            ..AggregatorSettings::default()
        };
        let rng = derive(config.seed, "study/mean/aggregator");
        let (aggregator, start) = MeanAggregator::start(params, settings, rng, 0)?;
        let mut aggregator = Driver::new(agg_transport, aggregator);
        aggregator.send(0, start);
        Ok(Self { room, clock_ms: 0, aggregator, sites: sim_sites })
    }

    pub fn now_ms(&self) -> u64 {
        self.clock_ms
    }

    pub fn aggregator(&self) -> &MeanAggregator {
        &self.aggregator.machine
    }

    pub fn site(&self, i: usize) -> &MeanSite<L> {
        &self.sites[i].driver.machine
    }

    pub fn site_mut(&mut self, i: usize) -> &mut MeanSite<L> {
        &mut self.sites[i].driver.machine
    }

    pub fn site_id(&self, i: usize) -> ParticipantId {
        self.sites[i].driver.transport.id()
    }

    pub fn sites(&self) -> usize {
        self.sites.len()
    }

    /// Runs until the aggregator has finished and every message is delivered.
    pub fn run(&mut self) -> StudySimReport {
        for _ in 0..Self::MAX_PASSES {
            if !self.step() {
                break;
            }
        }
        self.report()
    }

    /// One pass: every site, then the aggregator, handles what waits for it. Returns `false` once
    /// nothing can happen any more.
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
            if let (Some(script), TransportEvent::Message { kind, payload, .. }) =
                (s.script, &event)
                && let Some((k, attempt)) = script.at.on_receiving()
                && k == kind.as_str()
                && (attempt.is_none()
                    || attempt == MeanMessage::decode(payload).ok().and_then(|m| m.attempt()))
            {
                self.vanish(i);
                return n;
            }
            let logged = s.driver.log().len();
            s.driver.feed(now, event);
            n += 1;
            if let Some(script) = s.script
                && let Some((k, attempt)) = script.at.after_sending()
                && (attempt.is_none() || attempt == Some(s.driver.machine.attempt()))
                && s.driver.log()[logged..]
                    .iter()
                    .any(|e| matches!(e, DriverEvent::Sent { kind, .. } if *kind == k))
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

    pub fn report(&self) -> StudySimReport {
        let mut messages = 0;
        let mut bytes = 0;
        let mut count = |sent: &mut dyn Iterator<Item = usize>| {
            for b in sent {
                messages += 1;
                bytes += b;
            }
        };
        count(&mut sent_bytes(self.aggregator.log()));
        let sites = self
            .sites
            .iter()
            .map(|s| {
                count(&mut sent_bytes(s.driver.log()));
                let m = &s.driver.machine;
                SiteReport {
                    id: m.id(),
                    phase: m.phase(),
                    sent: s.driver.sent_kinds().collect(),
                    vanished: (s.status != Status::Active)
                        .then(|| s.script.map(|d| d.at))
                        .flatten(),
                    refusals: refusals(s.driver.log()),
                    spent: m.spent().to_vec(),
                    attempts: m.attempts().to_vec(),
                }
            })
            .collect();
        StudySimReport {
            outcome: self.aggregator.machine.outcome().cloned(),
            sites,
            aggregator_refusals: refusals(self.aggregator.log()),
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

fn refusals<E: std::fmt::Display>(log: &[DriverEvent<E>]) -> Vec<String> {
    log.iter()
        .filter_map(|e| match e {
            DriverEvent::Refused { error, .. } => Some(error.to_string()),
            _ => None,
        })
        .collect()
}
