//! The aggregator role of SecureAgg (spec §3): it collects each round from whoever answers,
//! closes the round when everyone still present has answered or the deadline passes, and goes on
//! only while at least t sites remain.

use std::collections::{BTreeMap, BTreeSet};

use curve25519_dalek::Scalar;
use curve25519_dalek::ristretto::RistrettoPoint;
use rand_core::Rng;

use super::config::{AggregatorConfig, Encoding, Params};
use super::crypto::{SEALED_LEN, decode_public, decode_scalar, public_key};
use super::error::RoundError;
use super::graph::Topology;
use super::messages::{
    Body, DropReason, Dropout, KeyEntry, Phase, PublicKeys, RevealedShare, RingVec, SealedShares,
    SecAggMessage, SessionId, SumBroadcast, kind,
};
use super::prg::{Sign, apply_mask};
use super::shamir;
use super::site::{pairwise_seed, self_mask_seed};
use crate::codec;
use crate::driver::{Machine, Outgoing};
use crate::rng::CapeRng;
use crate::wire::{ParticipantId, To};

/// What the aggregator learns: the sum of the survivors' inputs and who took part.
#[derive(Clone, Debug, PartialEq)]
pub struct Aggregate {
    pub session: SessionId,
    /// Σ_{u∈U3} x_u in Z_{2^64}.
    pub sum: Vec<u64>,
    /// The sum as reals, when the session uses [`Encoding::Fixed`].
    pub decoded: Option<Vec<f64>>,
    /// U3: whose inputs are in the sum.
    pub survivors: Vec<ParticipantId>,
    /// Who stopped answering, in which round and why, in the order the rounds closed.
    pub dropouts: Vec<Dropout>,
}

/// The sets U1 ⊇ U2 ⊇ U3 as far as they are known.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Membership {
    pub u1: Vec<ParticipantId>,
    pub u2: Vec<ParticipantId>,
    pub u3: Vec<ParticipantId>,
}

/// The aggregator role (the room's dashboard participant).
///
/// Call order (quinn style; [`Machine`] is the same contract):
/// 1. [`Aggregator::start`] picks the session id and returns the `Begin` broadcast: send it.
/// 2. For each transport event: a message → [`Aggregator::handle`]; a peer left →
///    [`Aggregator::handle_departure`]. Send whatever they return, in order.
/// 3. When the clock reaches [`Aggregator::poll_timeout`], call [`Aggregator::handle_timeout`]:
///    the round closes with whoever answered (if at least t did), or the instance aborts.
/// 4. Stop when [`Aggregator::outcome`] is `Some`. Its last output was the `Result` (or `Abort`)
///    broadcast.
///
/// `Err` from `handle` means that one message was refused (malformed, from an unknown sender,
/// wrong round, duplicate, wrong length) and changed nothing. Running out of sites is not an
/// error of the call: the call returns the `Abort` broadcast and `outcome()` says why.
pub struct Aggregator {
    config: AggregatorConfig,
    /// The instance's graph: on SecAgg+ every check and every unmasking is per neighbourhood.
    topology: Topology,
    session: SessionId,
    state: State,
    departed: BTreeSet<ParticipantId>,
    dropouts: Vec<Dropout>,
    masked_inputs: BTreeMap<ParticipantId, Vec<u64>>,
    membership: Membership,
}

/// One collection round: who it still waits for, and until when.
struct Collect {
    deadline: u64,
    waiting: BTreeSet<ParticipantId>,
}

struct Site {
    keys: PublicKeys,
    mask: RistrettoPoint,
}

enum State {
    AdvertiseKeys {
        round: Collect,
        keys: BTreeMap<ParticipantId, PublicKeys>,
    },
    ShareKeys {
        round: Collect,
        u1: BTreeMap<ParticipantId, Site>,
        sealed: BTreeMap<ParticipantId, Vec<SealedShares>>,
    },
    MaskedInput {
        round: Collect,
        u1: BTreeMap<ParticipantId, Site>,
        u2: BTreeSet<ParticipantId>,
        sum: Vec<u64>,
        u3: BTreeSet<ParticipantId>,
    },
    Unmask {
        round: Collect,
        u1: BTreeMap<ParticipantId, Site>,
        u2: BTreeSet<ParticipantId>,
        u3: BTreeSet<ParticipantId>,
        sum: Vec<u64>,
        responses: BTreeMap<ParticipantId, Response>,
    },
    Finished(Aggregate),
    Aborted(RoundError),
}

/// One site's R3 answer, decoded: shares of b_v by v ∈ U3, of s_v^SK by v ∈ U2\U3.
struct Response {
    self_mask: BTreeMap<ParticipantId, Scalar>,
    secret_key: BTreeMap<ParticipantId, Scalar>,
}

impl Aggregator {
    /// Opens an instance at `now_ms`: a fresh session id from `rng`, and the `Begin` broadcast.
    pub fn start(
        config: AggregatorConfig,
        rng: &mut CapeRng,
        now_ms: u64,
    ) -> (Self, Vec<Outgoing>) {
        let mut id = [0u8; 16];
        rng.fill_bytes(&mut id);
        let session = SessionId(id);
        let waiting: BTreeSet<ParticipantId> = config.params.sites.iter().copied().collect();
        let deadline = now_ms.saturating_add(config.round_timeout_ms);
        let begin = broadcast(session, Body::Begin(config.params.clone()));
        let agg = Self {
            topology: Topology::new(&config.params),
            config,
            session,
            state: State::AdvertiseKeys {
                round: Collect { deadline, waiting },
                keys: BTreeMap::new(),
            },
            departed: BTreeSet::new(),
            dropouts: Vec::new(),
            masked_inputs: BTreeMap::new(),
            membership: Membership::default(),
        };
        (agg, vec![begin])
    }

    pub fn session(&self) -> SessionId {
        self.session
    }

    pub fn params(&self) -> &Params {
        &self.config.params
    }

    /// The round being collected; `None` once the instance has ended.
    pub fn phase(&self) -> Option<Phase> {
        match &self.state {
            State::AdvertiseKeys { .. } => Some(Phase::AdvertiseKeys),
            State::ShareKeys { .. } => Some(Phase::ShareKeys),
            State::MaskedInput { .. } => Some(Phase::MaskedInput),
            State::Unmask { .. } => Some(Phase::Unmask),
            State::Finished(_) | State::Aborted(_) => None,
        }
    }

    /// Who the current round still waits for.
    pub fn waiting_for(&self) -> Vec<ParticipantId> {
        self.round().map(|r| r.waiting.iter().copied().collect()).unwrap_or_default()
    }

    /// U1, U2, U3 as far as the rounds have closed.
    pub fn membership(&self) -> &Membership {
        &self.membership
    }

    /// Who has dropped so far, and where.
    pub fn dropouts(&self) -> &[Dropout] {
        &self.dropouts
    }

    /// Every masked vector y_u the aggregator received (if the config retains them): what it
    /// actually saw of each site's input, for showing that it looks uniform.
    pub fn masked_inputs(&self) -> &BTreeMap<ParticipantId, Vec<u64>> {
        &self.masked_inputs
    }

    /// `None` while running; then the sum, or why there is none.
    pub fn outcome(&self) -> Option<Result<&Aggregate, &RoundError>> {
        match &self.state {
            State::Finished(a) => Some(Ok(a)),
            State::Aborted(e) => Some(Err(e)),
            _ => None,
        }
    }

    /// When the current round's deadline falls.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.round().map(|r| r.deadline)
    }

    /// A message from participant `from`.
    pub fn handle(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, RoundError> {
        let msg: SecAggMessage = codec::decode("secagg", payload)?;
        let got = msg.body.kind();
        if matches!(self.state, State::Finished(_) | State::Aborted(_)) {
            return Err(RoundError::AlreadyOver { from, kind: got });
        }
        if msg.session != self.session {
            return Err(RoundError::WrongSession { expected: self.session, got: msg.session });
        }
        let phase = self.phase_name();
        let expected = self.expected_kind();
        let vector_len = self.config.params.vector_len;
        let retain = self.config.retain_masked_inputs;
        match (&mut self.state, msg.body) {
            (State::AdvertiseKeys { round, keys }, Body::AdvertiseKeys(k)) => {
                expect_member(self.config.params.sites.iter(), from, got, phase)?;
                no_duplicate(keys.contains_key(&from), from, got)?;
                for (which, bytes) in [("encryption", &k.enc), ("mask", &k.mask)] {
                    if decode_public(bytes).is_none() {
                        return Err(RoundError::InvalidKey { from, which });
                    }
                }
                if k.enc == k.mask {
                    return Err(inconsistent(from, got, "the two public keys are equal".into()));
                }
                keys.insert(from, k);
                round.waiting.remove(&from);
            }
            (State::ShareKeys { round, u1, sealed }, Body::EncryptedShares(list)) => {
                expect_member(u1.keys(), from, got, phase)?;
                no_duplicate(sealed.contains_key(&from), from, got)?;
                check_sealed(&list, u1, &self.topology, from)?;
                sealed.insert(from, list);
                round.waiting.remove(&from);
            }
            (State::MaskedInput { round, u2, sum, u3, .. }, Body::MaskedInput(y)) => {
                expect_member(u2.iter(), from, got, phase)?;
                no_duplicate(u3.contains(&from), from, got)?;
                if y.0.len() != vector_len {
                    return Err(RoundError::WrongLength {
                        from,
                        expected: vector_len,
                        got: y.0.len(),
                    });
                }
                crate::fixed::add_assign(sum, &y.0);
                u3.insert(from);
                round.waiting.remove(&from);
                if retain {
                    self.masked_inputs.insert(from, y.0);
                }
            }
            (
                State::Unmask { round, u2, u3, responses, .. },
                Body::UnmaskShares { self_mask, secret_key },
            ) => {
                expect_member(u3.iter(), from, got, phase)?;
                no_duplicate(responses.contains_key(&from), from, got)?;
                let near = |v: &&ParticipantId| self.topology.adjacent(from, **v);
                let survivors: BTreeSet<ParticipantId> = u3.iter().filter(near).copied().collect();
                let dropped: BTreeSet<ParticipantId> =
                    u2.difference(u3).filter(near).copied().collect();
                let response = Response {
                    self_mask: decode_revealed(&self_mask, &survivors, from, "self-mask")?,
                    secret_key: decode_revealed(&secret_key, &dropped, from, "secret-key")?,
                };
                responses.insert(from, response);
                round.waiting.remove(&from);
            }
            (_, body) => {
                return Err(RoundError::WrongPhase { phase, expected, got: body.kind(), from });
            }
        }
        Ok(self.advance(now_ms, false, false))
    }

    /// Participant `who` left the room: the current round stops waiting for it, and the instance
    /// aborts at once if fewer than t sites could still answer.
    pub fn handle_departure(
        &mut self,
        now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, RoundError> {
        self.departed.insert(who);
        if let Some(round) = self.round_mut() {
            round.waiting.remove(&who);
        }
        Ok(self.advance(now_ms, false, true))
    }

    /// The clock reached `now_ms`: if the round's deadline has passed, close it with whoever
    /// answered.
    pub fn handle_timeout(&mut self, now_ms: u64) -> Result<Vec<Outgoing>, RoundError> {
        match self.poll_timeout() {
            Some(deadline) if now_ms >= deadline => Ok(self.advance(now_ms, true, true)),
            _ => Ok(Vec::new()),
        }
    }

    // -- closing rounds ------------------------------------------------------------------------

    /// Closes the current round if everyone it waits for has answered, or `deadline_passed`;
    /// aborts early when fewer than t sites can still answer (on SecAgg+: when some
    /// neighbourhood that matters holds fewer than t sites that can still answer, checked when
    /// someone has `left` or the round closes).
    fn advance(&mut self, now_ms: u64, deadline_passed: bool, left: bool) -> Vec<Outgoing> {
        let t = self.config.params.threshold;
        let (answered, waiting, phase) = match &self.state {
            State::AdvertiseKeys { round, keys } => {
                (keys.len(), round.waiting.len(), Phase::AdvertiseKeys)
            }
            State::ShareKeys { round, sealed, .. } => {
                (sealed.len(), round.waiting.len(), Phase::ShareKeys)
            }
            State::MaskedInput { round, u3, .. } => {
                (u3.len(), round.waiting.len(), Phase::MaskedInput)
            }
            State::Unmask { round, responses, .. } => {
                (responses.len(), round.waiting.len(), Phase::Unmask)
            }
            State::Finished(_) | State::Aborted(_) => return Vec::new(),
        };
        if answered + waiting < t {
            self.record_dropouts(phase, false);
            return self.abort(RoundError::TooFewSites {
                have: answered + waiting,
                need: t,
                phase,
            });
        }
        if left && let Some(e) = self.neighbourhood_shortfall(true) {
            self.record_dropouts(phase, false);
            return self.abort(e);
        }
        if waiting > 0 && !deadline_passed {
            return Vec::new();
        }
        self.record_dropouts(phase, true);
        if answered < t {
            // The deadline passed with sites still connected but silent.
            return self.abort(RoundError::TooFewSites { have: answered, need: t, phase });
        }
        if let Some(e) = self.neighbourhood_shortfall(false) {
            return self.abort(e);
        }
        let deadline = now_ms.saturating_add(self.config.round_timeout_ms);
        let state = std::mem::replace(&mut self.state, State::Aborted(placeholder()));
        match state {
            State::AdvertiseKeys { keys, .. } => self.close_advertise(keys, deadline),
            State::ShareKeys { u1, sealed, .. } => self.close_share_keys(u1, sealed, deadline),
            State::MaskedInput { u1, u2, sum, u3, .. } => {
                self.close_masked(u1, u2, u3, sum, deadline)
            }
            State::Unmask { u1, u2, u3, sum, responses, .. } => {
                self.close_unmask(&u1, &u2, &u3, sum, &responses)
            }
            State::Finished(_) | State::Aborted(_) => unreachable!("returned above"),
        }
    }

    /// R0 closes: U1 is whoever advertised. Broadcast the directory.
    fn close_advertise(
        &mut self,
        keys: BTreeMap<ParticipantId, PublicKeys>,
        deadline: u64,
    ) -> Vec<Outgoing> {
        let directory: Vec<KeyEntry> =
            keys.iter().map(|(&site, &keys)| KeyEntry { site, keys }).collect();
        let u1: BTreeMap<ParticipantId, Site> = keys
            .into_iter()
            .map(|(id, keys)| {
                (id, Site { keys, mask: decode_public(&keys.mask).expect("checked on receipt") })
            })
            .collect();
        self.membership.u1 = u1.keys().copied().collect();
        let waiting = self.alive(u1.keys());
        if let Some(abort) = self.abort_unless_enough(&waiting, &waiting, Phase::ShareKeys) {
            return abort;
        }
        self.state =
            State::ShareKeys { round: Collect { deadline, waiting }, u1, sealed: BTreeMap::new() };
        if self.topology.is_complete() {
            return vec![broadcast(self.session, Body::KeyDirectory(directory))];
        }
        // SecAgg+: each site gets the keys of its own neighbourhood, and only those.
        let sites = self.config.params.sites.clone();
        self.alive(sites.iter())
            .into_iter()
            .map(|v| {
                let entries = directory
                    .iter()
                    .filter(|e| self.topology.adjacent(v, e.site))
                    .copied()
                    .collect();
                self.to_one(v, Body::KeyDirectory(entries))
            })
            .collect()
    }

    /// R1 closes: U2 is whoever sent shares. Forward to each v ∈ U2 the e_{u,v} of the others.
    fn close_share_keys(
        &mut self,
        u1: BTreeMap<ParticipantId, Site>,
        sealed: BTreeMap<ParticipantId, Vec<SealedShares>>,
        deadline: u64,
    ) -> Vec<Outgoing> {
        let u2: BTreeSet<ParticipantId> = sealed.keys().copied().collect();
        self.membership.u2 = u2.iter().copied().collect();
        let mut inbox: BTreeMap<ParticipantId, Vec<SealedShares>> = BTreeMap::new();
        for list in sealed.into_values() {
            for s in list.into_iter().filter(|s| u2.contains(&s.to)) {
                inbox.entry(s.to).or_default().push(s);
            }
        }
        let waiting = self.alive(u2.iter());
        if let Some(abort) = self.abort_unless_enough(&waiting, &u2, Phase::MaskedInput) {
            return abort;
        }
        let out = waiting
            .iter()
            .map(|&v| self.to_one(v, Body::ForwardedShares(inbox.remove(&v).unwrap_or_default())))
            .collect();
        let sum = vec![0u64; self.config.params.vector_len];
        self.state = State::MaskedInput {
            round: Collect { deadline, waiting },
            u1,
            u2,
            sum,
            u3: BTreeSet::new(),
        };
        out
    }

    /// R2 closes: U3 is whoever sent y_u. Ask the live members of U3 to unmask.
    fn close_masked(
        &mut self,
        u1: BTreeMap<ParticipantId, Site>,
        u2: BTreeSet<ParticipantId>,
        u3: BTreeSet<ParticipantId>,
        sum: Vec<u64>,
        deadline: u64,
    ) -> Vec<Outgoing> {
        self.membership.u3 = u3.iter().copied().collect();
        let waiting = self.alive(u3.iter());
        // If some of U3 already left and fewer than t could answer, nobody is asked anything.
        if let Some(abort) = self.abort_unless_enough(&waiting, &u2, Phase::Unmask) {
            return abort;
        }
        let out = if self.topology.is_complete() {
            vec![broadcast(
                self.session,
                Body::UnmaskRequest {
                    survivors: u3.iter().copied().collect(),
                    dropped: u2.difference(&u3).copied().collect(),
                },
            )]
        } else {
            // SecAgg+: each site is asked about its own neighbourhood only.
            let sites = self.config.params.sites.clone();
            self.alive(sites.iter())
                .into_iter()
                .map(|w| {
                    let near = |v: &&ParticipantId| self.topology.adjacent(w, **v);
                    let survivors = u3.iter().filter(near).copied().collect();
                    let dropped = u2.difference(&u3).filter(near).copied().collect();
                    self.to_one(w, Body::UnmaskRequest { survivors, dropped })
                })
                .collect()
        };
        self.state = State::Unmask {
            round: Collect { deadline, waiting },
            u1,
            u2,
            u3,
            sum,
            responses: BTreeMap::new(),
        };
        out
    }

    /// R3 closes: reconstruct b_v (v ∈ U3) and s_v^SK (v ∈ U2\U3) from t responders, and remove
    /// every mask that does not cancel: Σ y_u − Σ PRG(b_u) − Σ_{u∈U3, v∈U2\U3} sgn(u−v)·PRG(s_{u,v}).
    fn close_unmask(
        &mut self,
        u1: &BTreeMap<ParticipantId, Site>,
        u2: &BTreeSet<ParticipantId>,
        u3: &BTreeSet<ParticipantId>,
        mut sum: Vec<u64>,
        responses: &BTreeMap<ParticipantId, Response>,
    ) -> Vec<Outgoing> {
        let t = self.config.params.threshold;
        // Any t shares determine the secret; take the t lowest ids among the owner's
        // neighbourhood (everyone on the complete graph), so runs reproduce. Holder sets repeat
        // (always on the complete graph): their Lagrange weights are computed once.
        let mut weights: BTreeMap<Vec<ParticipantId>, Vec<Scalar>> = BTreeMap::new();
        let topology = &self.topology;
        let mut reconstruct = |owner: ParticipantId, self_mask: bool| {
            let holders: Vec<ParticipantId> = responses
                .keys()
                .copied()
                .filter(|&h| topology.adjacent(owner, h))
                .take(t)
                .collect();
            debug_assert_eq!(holders.len(), t, "advance() closes R3 only with t answers each");
            let ys: Vec<Scalar> = holders
                .iter()
                .map(|h| {
                    let r = &responses[h];
                    if self_mask { r.self_mask[&owner] } else { r.secret_key[&owner] }
                })
                .collect();
            let w = weights.entry(holders).or_insert_with_key(|h| {
                shamir::lagrange_at_zero(h).expect("response ids are distinct")
            });
            shamir::combine(w, &ys)
        };
        for &v in u3 {
            let b = reconstruct(v, true);
            apply_mask(&mut sum, &self_mask_seed(&b, &self.session, v), Sign::Minus);
        }
        for v in u2.difference(u3).copied() {
            let secret = reconstruct(v, false);
            if public_key(&secret) != u1[&v].keys.mask {
                return self.abort(RoundError::ReconstructionMismatch { site: v });
            }
            for &u in u3.iter().filter(|&&u| self.topology.adjacent(u, v)) {
                let seed = pairwise_seed(&secret, &u1[&u].mask, &self.session, u, v);
                // y_u carried +PRG if u > v and −PRG if u < v: take it off again.
                apply_mask(&mut sum, &seed, if u > v { Sign::Minus } else { Sign::Plus });
            }
        }
        let decoded = match self.config.params.encoding {
            Encoding::Fixed(fp) => Some(fp.decode_vec(&sum)),
            Encoding::Ring => None,
        };
        let survivors: Vec<ParticipantId> = u3.iter().copied().collect();
        let result = broadcast(
            self.session,
            Body::Result(SumBroadcast {
                sum: RingVec(sum.clone()),
                survivors: survivors.clone(),
                dropouts: self.dropouts.clone(),
            }),
        );
        self.state = State::Finished(Aggregate {
            session: self.session,
            sum,
            decoded,
            survivors,
            dropouts: self.dropouts.clone(),
        });
        vec![result]
    }

    /// Everyone the closing round expected and did not hear from; on an early abort
    /// (`include_waiting` false) only those who have left, since the others may still answer.
    fn record_dropouts(&mut self, phase: Phase, include_waiting: bool) {
        let waiting = self.round().map(|r| r.waiting.clone()).unwrap_or_default();
        let missing: Vec<ParticipantId> = match &self.state {
            State::AdvertiseKeys { keys, .. } => {
                self.config.params.sites.iter().filter(|s| !keys.contains_key(s)).copied().collect()
            }
            State::ShareKeys { u1, sealed, .. } => {
                u1.keys().filter(|s| !sealed.contains_key(s)).copied().collect()
            }
            State::MaskedInput { u2, u3, .. } => u2.difference(u3).copied().collect(),
            State::Unmask { u3, responses, .. } => {
                u3.iter().filter(|s| !responses.contains_key(s)).copied().collect()
            }
            State::Finished(_) | State::Aborted(_) => Vec::new(),
        };
        for site in missing {
            if !include_waiting && waiting.contains(&site) {
                continue;
            }
            let reason =
                if self.departed.contains(&site) { DropReason::Left } else { DropReason::TimedOut };
            self.dropouts.push(Dropout { site, phase, reason });
        }
    }

    fn abort(&mut self, error: RoundError) -> Vec<Outgoing> {
        let phase = match &error {
            RoundError::TooFewSites { phase, .. } => *phase,
            _ => self.phase().unwrap_or(Phase::Unmask),
        };
        let notice = broadcast(self.session, Body::Abort { phase, reason: error.to_string() });
        self.state = State::Aborted(error);
        vec![notice]
    }

    /// A new round opens waiting for `waiting`: if they are fewer than t (the others have already
    /// left), or on SecAgg+ some site of `cover` has fewer than t of them in its neighbourhood,
    /// abort now instead of at the first event or the deadline.
    fn abort_unless_enough(
        &mut self,
        waiting: &BTreeSet<ParticipantId>,
        cover: &BTreeSet<ParticipantId>,
        phase: Phase,
    ) -> Option<Vec<Outgoing>> {
        let t = self.config.params.threshold;
        if waiting.len() < t {
            return Some(self.abort(RoundError::TooFewSites {
                have: waiting.len(),
                need: t,
                phase,
            }));
        }
        let e = self.shortfall_in(cover, waiting, phase)?;
        Some(self.abort(e))
    }

    /// SecAgg+ only: a site whose secrets the round still needs (`cover`: the live sites until
    /// U2 is fixed, then U2) with fewer than t sites of `live` in its neighbourhood.
    fn shortfall_in(
        &self,
        cover: &BTreeSet<ParticipantId>,
        live: &BTreeSet<ParticipantId>,
        phase: Phase,
    ) -> Option<RoundError> {
        if self.topology.is_complete() {
            return None; // |N[u] ∩ live| = |live|, checked against t by the caller
        }
        let t = self.config.params.threshold;
        cover.iter().find_map(|&u| {
            let have = self.topology.neighbourhood(u).iter().filter(|v| live.contains(v)).count();
            (have < t).then_some(RoundError::TooFewNeighbours { site: u, have, need: t, phase })
        })
    }

    /// [`Self::shortfall_in`] for the current round: live = who answered, plus (while the
    /// round is open, `with_waiting`) who it still waits for.
    fn neighbourhood_shortfall(&self, with_waiting: bool) -> Option<RoundError> {
        if self.topology.is_complete() {
            return None;
        }
        let waiting = self.round().map(|r| r.waiting.clone()).unwrap_or_default();
        let (mut live, u2, phase): (BTreeSet<ParticipantId>, Option<&BTreeSet<_>>, Phase) =
            match &self.state {
                State::AdvertiseKeys { keys, .. } => {
                    (keys.keys().copied().collect(), None, Phase::AdvertiseKeys)
                }
                State::ShareKeys { sealed, .. } => {
                    (sealed.keys().copied().collect(), None, Phase::ShareKeys)
                }
                State::MaskedInput { u2, u3, .. } => (u3.clone(), Some(u2), Phase::MaskedInput),
                State::Unmask { u2, responses, .. } => {
                    (responses.keys().copied().collect(), Some(u2), Phase::Unmask)
                }
                State::Finished(_) | State::Aborted(_) => return None,
            };
        if with_waiting {
            live.extend(waiting);
        }
        let cover = u2.cloned().unwrap_or_else(|| live.clone());
        self.shortfall_in(&cover, &live, phase)
    }

    fn to_one(&self, to: ParticipantId, body: Body) -> Outgoing {
        Outgoing {
            to: To::One(to),
            kind: body.kind(),
            payload: codec::encode(&SecAggMessage { session: self.session, body }),
        }
    }

    fn alive<'a>(&self, ids: impl Iterator<Item = &'a ParticipantId>) -> BTreeSet<ParticipantId> {
        ids.filter(|id| !self.departed.contains(id)).copied().collect()
    }

    fn round(&self) -> Option<&Collect> {
        match &self.state {
            State::AdvertiseKeys { round, .. }
            | State::ShareKeys { round, .. }
            | State::MaskedInput { round, .. }
            | State::Unmask { round, .. } => Some(round),
            State::Finished(_) | State::Aborted(_) => None,
        }
    }

    fn round_mut(&mut self) -> Option<&mut Collect> {
        match &mut self.state {
            State::AdvertiseKeys { round, .. }
            | State::ShareKeys { round, .. }
            | State::MaskedInput { round, .. }
            | State::Unmask { round, .. } => Some(round),
            State::Finished(_) | State::Aborted(_) => None,
        }
    }

    fn phase_name(&self) -> &'static str {
        match self.phase() {
            Some(Phase::AdvertiseKeys) => "R0 advertise keys",
            Some(Phase::ShareKeys) => "R1 share keys",
            Some(Phase::MaskedInput) => "R2 masked input",
            Some(Phase::Unmask) => "R3 unmask",
            None => "the end of the instance",
        }
    }

    fn expected_kind(&self) -> &'static str {
        match self.phase() {
            Some(Phase::AdvertiseKeys) => kind::ADVERTISE_KEYS,
            Some(Phase::ShareKeys) => kind::ENCRYPTED_SHARES,
            Some(Phase::MaskedInput) => kind::MASKED_INPUT,
            Some(Phase::Unmask) | None => kind::UNMASK_SHARES,
        }
    }
}

/// Stands in for the state while a round closes; never observable.
fn placeholder() -> RoundError {
    RoundError::AggregatorLeft { aggregator: 0 }
}

fn broadcast(session: SessionId, body: Body) -> Outgoing {
    Outgoing {
        to: To::All,
        kind: body.kind(),
        payload: codec::encode(&SecAggMessage { session, body }),
    }
}

fn inconsistent(from: ParticipantId, kind: &'static str, detail: String) -> RoundError {
    RoundError::Inconsistent { from, kind, detail }
}

fn expect_member<'a>(
    mut members: impl Iterator<Item = &'a ParticipantId>,
    from: ParticipantId,
    kind: &'static str,
    phase: &'static str,
) -> Result<(), RoundError> {
    if members.any(|&m| m == from) {
        Ok(())
    } else {
        Err(RoundError::UnknownSender { from, kind, phase })
    }
}

fn no_duplicate(already: bool, from: ParticipantId, kind: &'static str) -> Result<(), RoundError> {
    if already { Err(RoundError::Duplicate { from, kind }) } else { Ok(()) }
}

/// A site's R1 ciphertexts must be exactly one per other member of U1 in its neighbourhood
/// (all of U1 on the complete graph), each from it.
fn check_sealed(
    list: &[SealedShares],
    u1: &BTreeMap<ParticipantId, Site>,
    topology: &Topology,
    from: ParticipantId,
) -> Result<(), RoundError> {
    let bad = |detail: String| Err(inconsistent(from, kind::ENCRYPTED_SHARES, detail));
    let mut to = BTreeSet::new();
    for s in list {
        if s.from != from {
            return bad(format!("a ciphertext claims to come from site {}", s.from));
        }
        if s.to == from || !u1.contains_key(&s.to) || !topology.adjacent(from, s.to) {
            return bad(format!(
                "a ciphertext is addressed to site {}, not another member of U1 among its \
                 neighbours",
                s.to
            ));
        }
        if !to.insert(s.to) {
            return bad(format!("two ciphertexts for site {}", s.to));
        }
        if s.ciphertext.len() != SEALED_LEN {
            return bad(format!(
                "a ciphertext of {} bytes, expected {SEALED_LEN}",
                s.ciphertext.len()
            ));
        }
    }
    let expected = if topology.is_complete() {
        u1.len() - 1
    } else {
        u1.keys().filter(|&&v| v != from && topology.adjacent(from, v)).count()
    };
    if to.len() != expected {
        return bad(format!(
            "{} ciphertexts for the {expected} other members of U1 among its neighbours",
            to.len()
        ));
    }
    Ok(())
}

/// Decodes one list of revealed shares, which must cover exactly `owners`.
fn decode_revealed(
    shares: &[RevealedShare],
    owners: &BTreeSet<ParticipantId>,
    from: ParticipantId,
    what: &str,
) -> Result<BTreeMap<ParticipantId, Scalar>, RoundError> {
    let bad = |detail: String| inconsistent(from, kind::UNMASK_SHARES, detail);
    let mut out = BTreeMap::new();
    for s in shares {
        if !owners.contains(&s.owner) {
            return Err(bad(format!(
                "a {what} share of site {}, which was not asked for",
                s.owner
            )));
        }
        let Some(y) = decode_scalar(&s.share) else {
            return Err(bad(format!(
                "the {what} share of site {} is not a canonical scalar",
                s.owner
            )));
        };
        if out.insert(s.owner, y).is_some() {
            return Err(bad(format!("two {what} shares of site {}", s.owner)));
        }
    }
    if out.len() != owners.len() {
        return Err(bad(format!("{} {what} shares, expected {}", out.len(), owners.len())));
    }
    Ok(out)
}

impl Machine for Aggregator {
    type Error = RoundError;

    fn handle(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, RoundError> {
        Aggregator::handle(self, now_ms, from, payload)
    }

    fn handle_departure(
        &mut self,
        now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, RoundError> {
        Aggregator::handle_departure(self, now_ms, who)
    }

    fn handle_timeout(&mut self, now_ms: u64) -> Result<Vec<Outgoing>, RoundError> {
        Aggregator::handle_timeout(self, now_ms)
    }

    fn poll_timeout(&self) -> Option<u64> {
        Aggregator::poll_timeout(self)
    }

    fn is_finished(&self) -> bool {
        self.outcome().is_some()
    }
}
