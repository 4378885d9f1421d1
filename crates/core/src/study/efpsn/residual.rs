//! The zero-sum check the dashboard shows: once every agent has built its EFPSN mask, one
//! SecureAgg instance (spec cape-secagg §3, the same roles as every other study's) sums the
//! agents' integer masks 10^{P_prec}·η̄_i on Z_{2^64}. The dashboard learns Σ_i η̄_i and nothing
//! about any single mask; EFPSN's masks cancel exactly, so every coordinate must be 0.

use serde::{Deserialize, Serialize};

use super::messages::{StudyBody, StudyMessage, kind};
use crate::driver::Outgoing;
use crate::efpsn::mask::Mask;
use crate::secagg::{self, AggregatorConfig, Encoding, Params, SiteInput};
use crate::study::StudyId;
use crate::wire::{ParticipantId, To};

/// Where the check is, as the dashboard shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Residual {
    /// Not every agent has its mask yet (or there is no EFPSN run).
    Waiting,
    Summing,
    /// Σ_i 10^{P_prec}·η̄_ik per k, over `survivors` of `agents` (a check only when all are in).
    Done {
        residual: Vec<i64>,
        survivors: usize,
        agents: usize,
    },
    Failed(String),
}

impl Residual {
    /// Whether the check ran over every agent and found all zeros.
    pub fn is_exactly_zero(&self) -> bool {
        matches!(self, Residual::Done { residual, survivors, agents }
            if survivors == agents && residual.iter().all(|&r| r == 0))
    }
}

/// A mask as ring elements (two's complement): sums wrap back to the exact integer sum while
/// it stays below 2^63 in size, which n·2^53 does for any room.
pub fn ring_input(mask: &Mask) -> SiteInput {
    SiteInput::Ring(mask.numerators.iter().map(|&v| v as u64).collect())
}

/// Wraps SecureAgg's messages for the study's envelopes; a broadcast goes to the agents only.
pub fn wrap(study: StudyId, out: Vec<Outgoing>, agents: &[ParticipantId]) -> Vec<Outgoing> {
    let mut wrapped = Vec::new();
    for o in out {
        let msg = StudyMessage { study, body: StudyBody::SecAgg(o.payload) };
        let payload = msg.encode();
        let targets: Vec<ParticipantId> = match o.to {
            To::All => agents.to_vec(),
            To::One(p) => vec![p],
        };
        wrapped.extend(targets.into_iter().map(|p| Outgoing {
            to: To::One(p),
            kind: kind::SECAGG,
            payload: payload.clone(),
        }));
    }
    wrapped
}

/// The aggregator of the check over `agents`' masks of `n_b` coefficients.
pub fn start_aggregator(
    agents: &[ParticipantId],
    n_b: usize,
    rng: &mut crate::rng::CapeRng,
    now_ms: u64,
) -> Result<(secagg::Aggregator, Vec<Outgoing>), String> {
    let params = Params::new(agents.to_vec(), n_b, Encoding::Ring).map_err(|e| e.to_string())?;
    let config = AggregatorConfig::new(params).map_err(|e| e.to_string())?;
    Ok(secagg::Aggregator::start(config, rng, now_ms))
}

/// The result of a finished aggregator.
pub fn result(aggregate: &secagg::Aggregate, agents: usize) -> Residual {
    Residual::Done {
        residual: aggregate.sum.iter().map(|&v| v as i64).collect(),
        survivors: aggregate.survivors.len(),
        agents,
    }
}
