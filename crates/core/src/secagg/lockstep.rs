//! Lock-step driving of one SecureAgg instance for benchmarks: no transport, no logs, no virtual
//! clock; the roles' own `handle` calls are all that runs.
//!
//! Core has no clock, so the caller measures: [`Lockstep::round`] hands every unit of work (one
//! role's `handle` call) to a `probe`, which must run it once and may time it. `cape bench secagg`
//! and `tests/secagg_bench.rs` wrap it with `Instant::now()`. [`Lockstep::round_parallel`] runs
//! the sites' calls of a round in parallel instead (`crate::par`), for the wall-clock time of a
//! whole round.

use std::collections::BTreeSet;

use super::aggregator::{Aggregate, Aggregator};
use super::config::AggregatorConfig;
use super::error::{ConfigError, RoundError};
use super::messages::Phase;
use super::site::{Site, SiteInput};
use crate::driver::Outgoing;
use crate::rng::derive;
use crate::wire::{ParticipantId, To};

/// Whose work a probe is running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Actor {
    Site(ParticipantId),
    Aggregator,
}

/// One unit of work in a round: a role answering one message (or, for the aggregator, taking
/// one answer or departure; the call that closes the round includes closing it).
pub struct Work<'a> {
    pub actor: Actor,
    pub phase: Phase,
    run: &'a mut dyn FnMut() -> Result<Vec<Outgoing>, RoundError>,
    result: Option<Result<Vec<Outgoing>, RoundError>>,
}

/// The aggregator's participant id in a lock-step run; sites are 1..=S.
pub const AGGREGATOR: ParticipantId = 0;

/// A SecureAgg instance with sites 1..=S, driven one round at a time.
pub struct Lockstep {
    aggregator: Aggregator,
    sites: Vec<Site>,
    requests: Vec<Outgoing>,
    next: usize,
    leaving: BTreeSet<ParticipantId>,
}

impl Lockstep {
    /// One site per input, with the aggregator configured by `config` (whose site list must be
    /// 1..=S). The sites in `leave_after_share_keys` answer R0 and R1 and then leave.
    pub fn new(
        config: AggregatorConfig,
        inputs: Vec<SiteInput>,
        seed: u64,
        leave_after_share_keys: &[ParticipantId],
    ) -> Result<Self, ConfigError> {
        let sites = (1u32..)
            .zip(inputs)
            .map(|(id, input)| {
                Site::new(id, AGGREGATOR, input, derive(seed, &format!("site/{id}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (aggregator, requests) = Aggregator::start(config, &mut derive(seed, "aggregator"), 0);
        Ok(Self {
            aggregator,
            sites,
            requests,
            next: 0,
            leaving: leave_after_share_keys.iter().copied().collect(),
        })
    }

    pub fn aggregator(&self) -> &Aggregator {
        &self.aggregator
    }

    pub fn site(&self, id: ParticipantId) -> Option<&Site> {
        self.sites.get(id.checked_sub(1)? as usize)
    }

    pub fn outcome(&self) -> Option<Result<&Aggregate, &RoundError>> {
        self.aggregator.outcome()
    }

    /// Runs the next round (R0, R1, R2, R3 in turn): every site still present answers the
    /// aggregator's request, then the aggregator takes every answer. `probe` receives each unit
    /// of work and must call [`Work::run`] exactly once. Returns the round, or `None` after R3.
    pub fn round(
        &mut self,
        probe: &mut dyn FnMut(&mut Work<'_>),
    ) -> Result<Option<Phase>, RoundError> {
        let Some(phase) = self.next_phase() else { return Ok(None) };
        let gone = phase >= Phase::MaskedInput;
        let mut answers: Vec<(ParticipantId, Outgoing)> = Vec::new();
        for site in self.sites.iter_mut() {
            let id = site.id();
            if gone && self.leaving.contains(&id) {
                continue;
            }
            for req in self.requests.iter().filter(|o| o.to == To::All || o.to == To::One(id)) {
                let out = run(probe, Actor::Site(id), phase, &mut || {
                    site.handle(0, AGGREGATOR, &req.payload)
                })?;
                answers.extend(out.into_iter().map(|o| (id, o)));
            }
        }
        self.close_round(phase, answers, probe)?;
        Ok(Some(phase))
    }

    /// [`Lockstep::round`] with the sites' calls run in parallel (`crate::par`: one task per site,
    /// each with its own state and RNG), then the aggregator's, sequentially and in site order as
    /// there. No probe: the caller times the whole round, all parties, by the wall clock. The
    /// messages and the sum are the same as [`Lockstep::round`]'s whatever the thread count.
    pub fn round_parallel(&mut self) -> Result<Option<Phase>, RoundError> {
        let Some(phase) = self.next_phase() else { return Ok(None) };
        let gone = phase >= Phase::MaskedInput;
        let (requests, leaving) = (&self.requests, &self.leaving);
        let per_site = crate::par::map_sites_mut(&mut self.sites, |_, site| {
            let id = site.id();
            let mut answers: Vec<(ParticipantId, Outgoing)> = Vec::new();
            if gone && leaving.contains(&id) {
                return Ok(answers);
            }
            for req in requests.iter().filter(|o| o.to == To::All || o.to == To::One(id)) {
                let out = site.handle(0, AGGREGATOR, &req.payload)?;
                answers.extend(out.into_iter().map(|o| (id, o)));
            }
            Ok::<_, RoundError>(answers)
        });
        let mut answers = Vec::new();
        for site in per_site {
            answers.extend(site?);
        }
        self.close_round(phase, answers, &mut |w| w.run())?;
        Ok(Some(phase))
    }

    /// Runs every remaining round with [`Lockstep::round_parallel`].
    pub fn run_parallel(&mut self) -> Result<(), RoundError> {
        while self.round_parallel()?.is_some() {}
        Ok(())
    }

    fn next_phase(&mut self) -> Option<Phase> {
        let phase = match self.next {
            0 => Phase::AdvertiseKeys,
            1 => Phase::ShareKeys,
            2 => Phase::MaskedInput,
            3 => Phase::Unmask,
            _ => return None,
        };
        self.next += 1;
        Some(phase)
    }

    /// The aggregator's part of a round: the departures (in R2), then every answer in order.
    fn close_round(
        &mut self,
        phase: Phase,
        answers: Vec<(ParticipantId, Outgoing)>,
        probe: &mut dyn FnMut(&mut Work<'_>),
    ) -> Result<(), RoundError> {
        let mut requests = Vec::new();
        if phase == Phase::MaskedInput {
            for &id in &self.leaving {
                let agg = &mut self.aggregator;
                requests.extend(run(probe, Actor::Aggregator, phase, &mut || {
                    agg.handle_departure(0, id)
                })?);
            }
        }
        for (from, answer) in answers {
            let agg = &mut self.aggregator;
            requests.extend(run(probe, Actor::Aggregator, phase, &mut || {
                agg.handle(0, from, &answer.payload)
            })?);
        }
        self.requests = requests;
        Ok(())
    }

    /// Runs every remaining round.
    pub fn run(&mut self, probe: &mut dyn FnMut(&mut Work<'_>)) -> Result<(), RoundError> {
        while self.round(probe)?.is_some() {}
        Ok(())
    }
}

impl Work<'_> {
    /// Runs the work (a second call does nothing).
    pub fn run(&mut self) {
        if self.result.is_none() {
            self.result = Some((self.run)());
        }
    }

    /// The messages the call sent, once it has run (empty if it was refused).
    pub fn outputs(&self) -> &[Outgoing] {
        match &self.result {
            Some(Ok(out)) => out,
            _ => &[],
        }
    }

    /// Payload bytes the call sent, once it has run (for the aggregator, nonzero only for the
    /// call that closed the round).
    pub fn sent_bytes(&self) -> usize {
        match &self.result {
            Some(Ok(out)) => out.iter().map(|o| o.payload.len()).sum(),
            _ => 0,
        }
    }
}

/// Hands one unit of work to the probe; runs it if the probe did not.
fn run(
    probe: &mut dyn FnMut(&mut Work<'_>),
    actor: Actor,
    phase: Phase,
    f: &mut dyn FnMut() -> Result<Vec<Outgoing>, RoundError>,
) -> Result<Vec<Outgoing>, RoundError> {
    let mut work = Work { actor, phase, run: f, result: None };
    probe(&mut work);
    work.run();
    work.result.take().expect("ran above")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secagg::config::{Encoding, Params};

    #[test]
    fn rounds_run_in_order_and_the_sum_is_exact() {
        let s = 7; // t = 5: two sites may leave
        let params = Params::new((1..=s).collect(), 3, Encoding::Ring).unwrap();
        let inputs = (1..=s).map(|id| SiteInput::Ring(vec![u64::from(id); 3])).collect();
        let mut ls =
            Lockstep::new(AggregatorConfig::new(params).unwrap(), inputs, 1, &[3, 6]).unwrap();
        let mut seen: Vec<(Actor, Phase, usize)> = Vec::new();
        let mut probe = |w: &mut Work<'_>| {
            w.run();
            seen.push((w.actor, w.phase, w.sent_bytes()));
        };
        ls.run(&mut probe).unwrap();
        assert_eq!(ls.outcome().unwrap().unwrap().sum, vec![1 + 2 + 4 + 5 + 7; 3]);
        // R0 and R1: seven sites answer; R2 and R3: five
        for (phase, answering) in [
            (Phase::AdvertiseKeys, 7),
            (Phase::ShareKeys, 7),
            (Phase::MaskedInput, 5),
            (Phase::Unmask, 5),
        ] {
            let sites = seen
                .iter()
                .filter(|(a, p, bytes)| *p == phase && matches!(a, Actor::Site(_)) && *bytes > 0)
                .count();
            assert_eq!(sites, answering, "{phase}");
        }
        // the aggregator's last call in each round closes it and sends the next request
        let agg_sends = seen.iter().filter(|(a, _, b)| *a == Actor::Aggregator && *b > 0).count();
        assert_eq!(agg_sends, 4);
        assert_eq!(ls.round(&mut |w| w.run()).unwrap(), None, "after R3");

        // the parallel rounds give the same sum and the same aggregate
        let params = Params::new((1..=s).collect(), 3, Encoding::Ring).unwrap();
        let inputs = (1..=s).map(|id| SiteInput::Ring(vec![u64::from(id); 3])).collect();
        let mut par =
            Lockstep::new(AggregatorConfig::new(params).unwrap(), inputs, 1, &[3, 6]).unwrap();
        par.run_parallel().unwrap();
        assert_eq!(par.outcome(), ls.outcome());
        assert_eq!(par.round_parallel().unwrap(), None, "after R3");
    }
}
