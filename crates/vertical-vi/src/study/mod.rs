/*!
DPVI-VPD as a study of the room (spec Part C, "DPVI-VPD demo must implement"): party tabs, the
aggregator on the dashboard and a **separate** dealer tab, each a sans-IO
[`Machine`](capelab_core::driver::Machine) over the transport seam; one step is spec B3.

```text
aggregator (dashboard)                 party p (its PartyBlock)            dealer (TTP)
  vvi/start {task, agg key} ────────▶   check task + block; ledger      ◀─ same task: check
                                        preview; link key pair             link key pair
              ◀──── vvi/key ──────────  key to every member ─────────▶  ◀─ vvi/key ─▶ parties
  step t: draw batch, η; θ = T(μ+ση)
  vvi/step {t, θ, indices} ─────────▶   (step 1: ledger records the run)
  vvi/deal {t, |batch|} ──────────────────────────────────────────────▶  deal_program
                                        ◀──────── vvi/triples (sealed to p) ─────────
                                        local step; MpcParty rounds
                                        ◀──▶ vvi/round (sealed p→q) ◀──▶ other parties
              ◀──── vvi/opened ───────  its share of G̃ (sealed to the aggregator)
  Σ shares = G̃; Adam on (μ, log σ)
  after T steps: vvi/report {posterior, ε} ─▶ parties and dealer
```

- [`task`]: the public task ([`VviTask`]), checked identically on every tab.
- [`messages`]: the `vvi/…` kinds and [`VviMessage`].
- [`seal`]: the sealed links (directional keys from Ristretto255 DH, ChaCha20-Poly1305; nonce =
  (purpose, step, round)). The relay sees every envelope but can open none of the MPC traffic: a
  relay holding both parties' round messages (which together would reveal the secrets) holds two
  ciphertexts under keys it cannot derive.
- [`party`], [`dealer`], [`aggregator`]: the three roles.
- [`sim`]: the whole study in one process over a `MemoryRoom`.

**What each role sees.** The aggregator receives, per step, one share of G̃ from each party and
nothing else of the MPC: it never holds two shares of any other value. The dealer reads only the
public program shape (K, the widths, |batch|, C, σ), never an input, share or opening. A party
sees its own data, θ, the batch indices (spec D6: Q = 1), its dealt material, and the other
parties' masked openings.

**Privacy bookkeeping.** A party previews the run's release ([`crate::privacy::ledger_events`]:
the analyst's view of the T noisy sums) against its ledger when it accepts the task, and records
it through the core gate ([`capelab_core::study::gate`]) before the first message computed from
its data leaves (step 1's input shares). A capelab ledger cannot shrink an entry, so a run that
stops early stays charged for the whole announced run (an upper bound); a party that stops before
step 1 records nothing.

**Stopping.** A member leaving mid-run (a party, the dealer or the aggregator) stops every role
with a reason naming who left; the step in progress is never opened (the aggregator needs every
party's share, and no party sends its share before the MPC finished). Messages from participants
outside the run, malformed or undecryptable ones, and ones for another step or round are refused
(the driver logs the refusal) and change nothing.

**Metrics.** The roles release ε, the step count and the posterior. The test NLL needs every
party's test rows, so it is an in-process metric ([`sim::StudySim::test_nll`]), not a message.

**Randomness.** Every role takes a [`Seed`]: `Seed::Os` in a tab. With `Seed::Fixed(s)` for all
roles, step t's dealer and party streams are [`step_seed`]`(s, t)`'s `mpc/dealer` and
`mpc/party/p`, the streams [`crate::mpc::circuit::mpc_clipped_sum`] uses, so a simulated run
reproduces `model::train` with the MPC engine bit for bit.
*/

pub mod aggregator;
pub mod dealer;
pub mod messages;
pub mod party;
pub mod seal;
pub mod sim;
pub mod task;

pub use aggregator::Aggregator;
pub use dealer::Dealer;
pub use messages::{Body, Release, VviMessage, kind};
pub use party::Party;
pub use task::{BatchSampling, VviTask};

use capelab_core::accountant::ledger::Shortfall;
use capelab_core::driver::Outgoing;
use capelab_core::rng::{Seed, derive};
use capelab_core::study::StudyId;
use capelab_core::wire::{ParticipantId, To};
use rand_core::Rng;
use serde::Serialize;

use crate::mpc::MpcError;

/// Everything a role refuses, each naming the problem.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum StudyError {
    /// The task (or this tab's part in it) cannot run; the text says why, in plain words.
    #[error("{0}")]
    Task(String),
    #[error("malformed message: {0}")]
    Malformed(String),
    #[error("{0}")]
    Protocol(String),
    #[error("MPC: {0}")]
    Mpc(#[from] MpcError),
}

/// Where a role is.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Status {
    /// Before the task, or waiting for the members' keys.
    Waiting,
    /// Working on step `step` (1-based).
    Running { step: u32 },
    /// The run finished and released this.
    Released(Release),
    /// The run stopped here, for this reason.
    Stopped(String),
}

impl Status {
    pub fn is_over(&self) -> bool {
        matches!(self, Status::Released(_) | Status::Stopped(_))
    }
}

/// The seed of step `step`'s MPC streams under a role's `seed` (see the module doc).
pub fn step_seed(seed: Seed, step: u32) -> Seed {
    match seed {
        Seed::Os => Seed::Os,
        Seed::Fixed(s) => Seed::Fixed(derive(s, &format!("vvi/study/step/{step}")).next_u64()),
    }
}

/// Ring values as they travel inside the sealed MPC payloads (rounds, shares of G̃): 16 bytes
/// each, little-endian (a varint would spend about 19 bytes on a uniformly random value).
pub fn ring_bytes(values: &[u128]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The inverse of [`ring_bytes`]; refuses a length that is not a multiple of 16.
pub fn ring_values(what: &str, bytes: &[u8]) -> Result<Vec<u128>, StudyError> {
    if !bytes.len().is_multiple_of(16) {
        return Err(StudyError::Malformed(format!(
            "{what}: {} bytes is not a whole number of ring values",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(16)
        .map(|c| u128::from_le_bytes(c.try_into().expect("16 bytes")))
        .collect())
}

/// The ledger's study name of a run.
pub fn ledger_study_name(study: StudyId) -> String {
    format!("dpvi-vpd/{}", study.to_hex())
}

/// `msg` to each of `to`.
fn to_each(to: impl IntoIterator<Item = ParticipantId>, msg: &VviMessage) -> Vec<Outgoing> {
    let payload = msg.encode();
    to.into_iter()
        .map(|id| Outgoing { to: To::One(id), kind: msg.kind(), payload: payload.clone() })
        .collect()
}

/// A party's or the dealer's stop: `status` becomes `Stopped(reason)` once; with `tell` (it stops
/// of its own accord), every other member of the run hears why (and, for a party that declined for
/// its budget, by how much it is short).
fn stop_member(
    status: &mut Status,
    run: Option<(StudyId, &VviTask)>,
    aggregator: ParticipantId,
    me: ParticipantId,
    reason: String,
    tell: bool,
    budget: Option<Shortfall>,
) -> Vec<Outgoing> {
    if status.is_over() {
        return Vec::new();
    }
    *status = Status::Stopped(reason.clone());
    match (run, tell) {
        (Some((study, task)), true) => {
            let msg = VviMessage { study, body: Body::Stop { reason, budget } };
            to_each(others(task, aggregator, me), &msg)
        }
        _ => Vec::new(),
    }
}

/// What a member says of `who`'s stop: its reason, which names `who` already when `who` stopped
/// of its own accord ("party 1 (participant 3) refused the run: …"), else prefixed with it.
fn heard_stop(who: &str, reason: &str) -> String {
    if reason.starts_with(who) {
        reason.to_owned()
    } else {
        format!("{who} stopped the run: {reason}")
    }
}

/// Every member of the run but `me`.
fn others(task: &VviTask, aggregator: ParticipantId, me: ParticipantId) -> Vec<ParticipantId> {
    task.parties.iter().copied().chain([task.dealer, aggregator]).filter(|&id| id != me).collect()
}
