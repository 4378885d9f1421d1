/*!
SecureAgg: the aggregator learns Σ_{u∈U3} x_u and nothing else about any x_u (Bonawitz et al.,
CCS'17, honest-but-curious variant; spec cape-secagg-pca-djica §3). CAPE's Algorithm 1 uses it to
sum the sites' noise vectors ê_s (spec §2).

# The protocol
Sites are the room's site participants and the aggregator is its dashboard participant; both
are named by relay [`ParticipantId`](crate::wire::ParticipantId)s, and site `id` holds the Shamir
share at x = id + 1. The aggregator opens an instance with `Begin` (a fresh random
[`SessionId`] and the public [`Params`]: invited sites, threshold t, vector length, encoding).
U1 ⊇ U2 ⊇ U3 are the sites that answered R0, R1, R2.

| round | site → aggregator | aggregator → sites |
|---|---|---|
| R0 advertise keys | (c^PK, s^PK), fresh per instance | directory U1 + keys |
| R1 share keys | e_{u,v} = AEnc(KA(c_u, c_v), u‖v‖s^SK share‖b share) | to each v ∈ U2: its e_{u,v} |
| R2 masked input | y_u = x_u + PRG(b_u) + Σ_{v∈U2\u} sgn(u−v)·PRG(s_{u,v}) | U3 and U2\U3 |
| R3 unmask | b-shares of U3, s^SK-shares of U2\U3 | Σ_{u∈U3} x_u |

A site checks |U1| ≥ t and distinct keys (R1), |U2| ≥ t (R2), U3 ∪ (U2\U3) = U2 and |U3| ≥ t
(R3), and never reveals both shares of one site ([`RoundError::WouldRevealBoth`], spec §8
pitfall 8). The aggregator closes a round when every site it still waits for has answered or
left, or at the round's deadline; fewer than t possible answers abort the instance at once
([`RoundError::TooFewSites`]), before anything that could unmask a site is asked for.

# SecAgg+ (Bell, Bonawitz, Gascón, Lepoint, Raykova, CCS 2020)
[`Params::graph`] picks who shares keys and masks with whom. [`Graph::Complete`] (the default,
and what a `Params` without the field decodes to) is the table above: every site with all S − 1
others. [`Graph::Harary`] is SecAgg+: a public Harary graph H(S, k) over a permutation of the
sites drawn from a public seed ([`graph`]), and every step above runs within a site's
neighbourhood N[u] (u and its k neighbours):

- R0/R1: the aggregator sends each site the keys of N[u] ∩ U1 only; u Shamir-shares s^SK and
  b among N[u] ∩ U1 with threshold t, so it seals k ciphertexts, not S − 1.
- R2: y_u = x_u + PRG(b_u) + Σ_{v∈N(u)∩U2} sgn(u−v)·PRG(s_{u,v}): k + 1 masks, not S.
- R3: each site is asked about N[u] only (survivors and dropped of its neighbourhood) and, as
  before, never reveals both kinds of share for one peer. The aggregator rebuilds b_v of each
  survivor from t holders in N[v], and s_v^SK of each dropped v from t holders in N[v], and
  removes v's pairwise masks from its neighbours' inputs.

t counts per neighbourhood: (k + 1)/2 < t ≤ k + 1 ([`ConfigError::ThresholdAtMostHalfNeighbourhood`]),
k even with 2 ≤ k < S − 1. The aggregator aborts with [`RoundError::TooFewNeighbours`] (naming the
site) as soon as a neighbourhood whose secrets the round still needs holds fewer than t live
sites, before anything that could unmask a site is asked for; a site refuses the same way.
[`choose_harary`] picks the smallest k (and a t) for S sites, a dropout fraction δ, a corruption
fraction γ and a failure probability 2^−σ; [`graph`]'s docs state exactly what that bound covers
and how it is computed (hypergeometric tails and a union bound, numerically). Per-site work and
bytes then grow with k, which grows like σ + log S (`cape bench secagg --graph harary`).

# Using it
Each role is a sans-IO state machine with the call order written on its type: [`Aggregator`]
(`start`, then `handle` / `handle_departure` / `handle_timeout`, `poll_timeout`, `outcome`) and
[`Site`] (`new`, then `handle` / `handle_departure`, `outcome`). Both return [`Outgoing`]
messages (`to`, `kind`, bytes) that go to any [`Transport`](crate::transport::Transport)
unchanged. [`Driver`] ([`crate::driver`], protocol-agnostic) does that for one role and one
transport; [`sim::Sim`] runs a whole room in memory with virtual time and scripted dropouts;
[`lockstep::Lockstep`] drives the bare roles round by round for benchmarks.

# Decisions the spec leaves open (or gets wrong)
- Primitives (spec §3 proposal): Ristretto255 KA, HKDF-SHA256 with info = label ‖ session ‖
  round ‖ min(u,v) ‖ max(u,v) (labels length-prefixed), ChaCha20-Poly1305 with nonce
  (round, from, to) and the session as associated data, ChaCha20 keystream as PRG (one
  little-endian u64 per coordinate), Shamir over the Ristretto scalar field.
- The self mask's PRG seed is HKDF(b_u) with a third label, "cape/self-mask".
- R3 reveals shares of the *secret* keys s^SK of U2\U3, not "public keys" as the paper says.
- The unmask request lists U3 and U2\U3 explicitly, so a site can refuse a request that names
  one site in both, and a second request, without trusting the aggregator's bookkeeping.
- A site is in U_k when its round-k message arrived before round k closed, even if it left
  right after: a masked input already summed must be unmasked, so the site stays in U3.
- Sites decrypt their shares on receipt (R2) rather than in R3, so a bad ciphertext stops the
  site before it sends y_u.
- t must satisfy n/2 < t ≤ n ([`ConfigError::ThresholdAtMostHalf`] explains why); the default is
  ⌊2n/3⌋ + 1 (spec §1).
*/

mod aggregator;
mod config;
pub(crate) mod crypto;
mod error;
pub mod graph;
pub mod lockstep;
pub mod messages;
pub mod prg;
pub mod shamir;
pub mod sim;
mod site;

#[cfg(test)]
mod privacy_tests;

/// Re-exported from [`crate::driver`], where the protocol-agnostic driver now lives.
pub use crate::driver::{Driver, DriverEvent, Machine, Outgoing};
pub use aggregator::{Aggregate, Aggregator, Membership};
pub use config::{AggregatorConfig, Encoding, Params};
pub use error::{ConfigError, RoundError};
pub use graph::{Graph, HararyChoice, Topology, choose_harary, failure_bound_log2};
pub use messages::{DropReason, Dropout, Phase, SessionId};
pub use site::{Site, SiteInput, SitePhase, SumResult};
