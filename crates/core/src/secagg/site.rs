//! The site role of SecureAgg (spec §3): one state per round, each holding only what that round
//! needs, and every check an honest site makes before it reveals anything.

use std::collections::{BTreeMap, BTreeSet};

use curve25519_dalek::Scalar;
use curve25519_dalek::ristretto::RistrettoPoint;
use zeroize::Zeroize;

use super::config::{Encoding, Params};
use super::crypto::{
    self, KeyPair, Purpose, ROUND_MASKED_INPUT, ROUND_SHARE_KEYS, SharePair, agree, decode_public,
    derive_key, random_scalar,
};
use super::error::{ConfigError, RoundError};
use super::graph::Topology;
use super::messages::{
    Body, Dropout, KeyEntry, Phase, PublicKeys, RevealedShare, RingVec, SealedShares,
    SecAggMessage, SessionId, SumBroadcast, kind,
};
use super::prg::{Sign, apply_mask};
use super::shamir;
use crate::codec;
use crate::driver::{Machine, Outgoing};
use crate::fixed::FixedPoint;
use crate::rng::CapeRng;
use crate::wire::{ParticipantId, To};

/// What a site contributes to the sum.
#[derive(Clone, Debug, PartialEq)]
pub enum SiteInput {
    /// Elements of Z_{2^64}, already encoded by the caller.
    Ring(Vec<u64>),
    /// Reals, encoded with `format` (stochastic rounding) when the site is created.
    Real { values: Vec<f64>, format: FixedPoint },
}

/// What a site learns at the end.
#[derive(Clone, Debug, PartialEq)]
pub struct SumResult {
    pub session: SessionId,
    /// Σ_{u∈U3} x_u in Z_{2^64}.
    pub sum: Vec<u64>,
    /// The sum as reals, when the session uses [`Encoding::Fixed`].
    pub decoded: Option<Vec<f64>>,
    /// U3: whose inputs are in the sum (CAPE divides by its size, spec §2 Remark 4).
    pub survivors: Vec<ParticipantId>,
    pub dropouts: Vec<Dropout>,
    /// Whether this site's own input is in the sum.
    pub included: bool,
}

/// Where a site is, for drivers, dashboards and scripted dropouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SitePhase {
    AwaitingBegin,
    /// Sent (c^PK, s^PK); waits for the key directory.
    AdvertisedKeys,
    /// Sent its encrypted shares; waits for the others'.
    SharedKeys,
    /// Sent y_u; waits for the unmask request.
    SentMaskedInput,
    /// Sent its unmask shares; waits for the sum.
    SentUnmaskShares,
    /// Not part of the sum (missed a round); waits for the sum anyway.
    Excluded,
    Done,
    Aborted,
}

/// Which of a peer's two secrets a site has helped reveal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Revealed {
    SelfMask,
    SecretKey,
}

impl Revealed {
    fn name(self) -> &'static str {
        match self {
            Revealed::SelfMask => "self-mask (b)",
            Revealed::SecretKey => "secret-key (s^SK)",
        }
    }
}

/// The site role.
///
/// Call order (quinn style; [`Machine`] is the same contract):
/// 1. [`Site::new`] with the aggregator's id, the input and a generator from the run seed.
/// 2. For each transport event: a message → [`Site::handle`]; a peer left →
///    [`Site::handle_departure`]. Send whatever they return, in order.
/// 3. Stop when [`Site::outcome`] is `Some`. A site has no deadlines of its own: the aggregator
///    decides when a round closes and tells it.
///
/// The site answers the aggregator's four requests (`Begin`, the key directory, the forwarded
/// shares, the unmask request) once each, after checking them; everything else is refused with a
/// typed error that names what was expected and what came.
pub struct Site {
    me: ParticipantId,
    aggregator: ParticipantId,
    input: Vec<u64>,
    quantised: Option<Vec<f64>>,
    format: Option<FixedPoint>,
    rng: CapeRng,
    /// Every peer whose secret this site has helped reveal, and which one: the guard of spec §8
    /// pitfall 8, kept for the whole instance.
    revealed: BTreeMap<ParticipantId, Revealed>,
    state: State,
}

struct Session {
    id: SessionId,
    params: Params,
    /// This instance's graph: the site shares with, masks with and reveals for N[me] only.
    topology: Topology,
}

impl Session {
    fn duplicate(&self) -> Session {
        Session { id: self.id, params: self.params.clone(), topology: self.topology.clone() }
    }

    /// Too few sites left where this site needs t of them: the whole room on the complete
    /// graph, this site's neighbourhood in SecAgg+.
    fn too_few(&self, me: ParticipantId, have: usize, phase: Phase) -> RoundError {
        let need = self.params.threshold;
        if self.topology.is_complete() {
            RoundError::TooFewSites { have, need, phase }
        } else {
            RoundError::TooFewNeighbours { site: me, have, need, phase }
        }
    }
}

enum State {
    AwaitingBegin,
    Advertised(Advertised),
    SharedKeys(SharedKeys),
    SentMasked(SentMasked),
    AwaitingResult { session: Session, answered: bool },
    Done(SumResult),
    Aborted(RoundError),
}

struct Advertised {
    session: Session,
    enc: KeyPair,
    mask: KeyPair,
}

struct Peer {
    enc: RistrettoPoint,
    mask: RistrettoPoint,
}

struct SharedKeys {
    session: Session,
    enc: KeyPair,
    mask: KeyPair,
    u1: BTreeMap<ParticipantId, Peer>,
    /// b_u, the self-mask seed.
    self_mask: Scalar,
    /// This site's own shares of its own two secrets.
    own: SharePair,
}

impl Drop for SharedKeys {
    fn drop(&mut self) {
        self.self_mask.zeroize();
        self.own.secret_key.zeroize();
        self.own.self_mask.zeroize();
    }
}

struct SentMasked {
    session: Session,
    /// U2, this site included.
    u2: BTreeSet<ParticipantId>,
    /// The shares every u ∈ U2 gave this site (its own included).
    held: BTreeMap<ParticipantId, SharePair>,
}

impl Drop for SentMasked {
    fn drop(&mut self) {
        for pair in self.held.values_mut() {
            pair.secret_key.zeroize();
            pair.self_mask.zeroize();
        }
    }
}

impl Site {
    /// A site `me` that will answer `aggregator`. A real input is encoded here (stochastic
    /// rounding with `rng`); NaN, ±∞ and values beyond the format's bound are refused.
    pub fn new(
        me: ParticipantId,
        aggregator: ParticipantId,
        input: SiteInput,
        mut rng: CapeRng,
    ) -> Result<Self, ConfigError> {
        let (ring, quantised, format) = match input {
            SiteInput::Ring(v) => (v, None, None),
            SiteInput::Real { values, format } => {
                let (ring, quantised) = format.encode(&values, &mut rng)?;
                (ring, Some(quantised), Some(format))
            }
        };
        Ok(Self {
            me,
            aggregator,
            input: ring,
            quantised,
            format,
            rng,
            revealed: BTreeMap::new(),
            state: State::AwaitingBegin,
        })
    }

    pub fn id(&self) -> ParticipantId {
        self.me
    }

    /// x_u as it enters the sum.
    pub fn ring_input(&self) -> &[u64] {
        &self.input
    }

    /// remap(map(x)): the reals this site's input stands for after quantisation. CAPE must use
    /// these, not the raw values, so that Σ e_s = 0 holds exactly (spec §8 pitfall 3).
    pub fn quantised_input(&self) -> Option<&[f64]> {
        self.quantised.as_deref()
    }

    pub fn session(&self) -> Option<SessionId> {
        self.session_ref().map(|s| s.id)
    }

    pub fn phase(&self) -> SitePhase {
        match &self.state {
            State::AwaitingBegin => SitePhase::AwaitingBegin,
            State::Advertised(_) => SitePhase::AdvertisedKeys,
            State::SharedKeys(_) => SitePhase::SharedKeys,
            State::SentMasked(_) => SitePhase::SentMaskedInput,
            State::AwaitingResult { answered: true, .. } => SitePhase::SentUnmaskShares,
            State::AwaitingResult { answered: false, .. } => SitePhase::Excluded,
            State::Done(_) => SitePhase::Done,
            State::Aborted(_) => SitePhase::Aborted,
        }
    }

    /// `None` while running; then the sum, or why there is none.
    pub fn outcome(&self) -> Option<Result<&SumResult, &RoundError>> {
        match &self.state {
            State::Done(r) => Some(Ok(r)),
            State::Aborted(e) => Some(Err(e)),
            _ => None,
        }
    }

    /// A message from participant `from`.
    pub fn handle(
        &mut self,
        _now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, RoundError> {
        let msg: SecAggMessage = codec::decode("secagg", payload)?;
        let got = msg.body.kind();
        if from != self.aggregator {
            return Err(RoundError::UnknownSender { from, kind: got, phase: self.phase_name() });
        }
        if matches!(self.state, State::Done(_) | State::Aborted(_)) {
            return Err(RoundError::AlreadyOver { from, kind: got });
        }
        if let Some(session) = self.session_ref()
            && session.id != msg.session
        {
            return Err(RoundError::WrongSession { expected: session.id, got: msg.session });
        }
        let session = msg.session;
        match (&self.state, msg.body) {
            (State::AwaitingBegin, Body::Begin(params)) => self.on_begin(session, params),
            (State::Advertised(_), Body::KeyDirectory(entries)) => self.on_key_directory(entries),
            (State::SharedKeys(_), Body::ForwardedShares(list)) => self.on_forwarded(list),
            (State::SentMasked(_), Body::UnmaskRequest { survivors, dropped }) => {
                self.on_unmask_request(&survivors, &dropped)
            }
            (State::AwaitingResult { .. }, Body::UnmaskRequest { survivors, dropped }) => {
                self.on_repeated_unmask_request(&survivors, &dropped)
            }
            // Not in U2 from this site's view: it holds no shares to reveal, and reveals nothing.
            (State::Advertised(_) | State::SharedKeys(_), Body::UnmaskRequest { .. }) => {
                self.exclude();
                Ok(Vec::new())
            }
            (State::AwaitingBegin, body) => Err(self.wrong_phase(from, body.kind())),
            (_, Body::Result(sum)) => self.on_result(sum),
            (_, Body::Abort { phase, reason }) => {
                self.state = State::Aborted(RoundError::AbortedByAggregator { phase, reason });
                Ok(Vec::new())
            }
            (_, body) => Err(self.wrong_phase(from, body.kind())),
        }
    }

    /// Participant `who` left. Only the aggregator's departure matters to a site.
    pub fn handle_departure(
        &mut self,
        _now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, RoundError> {
        if who == self.aggregator && !matches!(self.state, State::Done(_) | State::Aborted(_)) {
            self.state = State::Aborted(RoundError::AggregatorLeft { aggregator: who });
        }
        Ok(Vec::new())
    }

    // -- R0 ------------------------------------------------------------------------------------

    fn on_begin(&mut self, id: SessionId, params: Params) -> Result<Vec<Outgoing>, RoundError> {
        if let Err(e) = params.validate() {
            return self.refuse(RoundError::UnacceptableParams(e));
        }
        if !params.is_invited(self.me) {
            return Err(RoundError::NotInvited { me: self.me, session: id });
        }
        if params.vector_len != self.input.len() {
            return self.refuse(RoundError::UnacceptableParams(ConfigError::InputLength {
                expected: params.vector_len,
                got: self.input.len(),
            }));
        }
        if let Some(ours) = self.format
            && params.encoding != Encoding::Fixed(ours)
        {
            return self.refuse(RoundError::UnacceptableParams(ConfigError::EncodingMismatch {
                ours,
                theirs: params.encoding,
            }));
        }
        // Fresh key pairs for every instance (spec §3).
        let enc = KeyPair::generate(&mut self.rng);
        let mask = KeyPair::generate(&mut self.rng);
        let body = Body::AdvertiseKeys(PublicKeys { enc: enc.public, mask: mask.public });
        let out = self.to_aggregator(id, body);
        let topology = Topology::new(&params);
        let session = Session { id, params, topology };
        self.state = State::Advertised(Advertised { session, enc, mask });
        Ok(vec![out])
    }

    // -- R1 ------------------------------------------------------------------------------------

    fn on_key_directory(&mut self, entries: Vec<KeyEntry>) -> Result<Vec<Outgoing>, RoundError> {
        let State::Advertised(adv) = &self.state else { unreachable!("checked by handle") };
        let params = &adv.session.params;
        let inconsistent = |detail: String| RoundError::Inconsistent {
            from: self.aggregator,
            kind: kind::KEY_DIRECTORY,
            detail,
        };
        if let Some(w) = entries.windows(2).find(|w| w[0].site >= w[1].site) {
            return self.refuse(inconsistent(format!(
                "sites {} and {} are out of order or repeated",
                w[0].site, w[1].site
            )));
        }
        if let Some(e) = entries.iter().find(|e| !params.is_invited(e.site)) {
            return self.refuse(inconsistent(format!("site {} was not invited", e.site)));
        }
        // SecAgg+: the directory lists this site's neighbourhood only.
        if let Some(e) = entries.iter().find(|e| !adv.session.topology.adjacent(self.me, e.site)) {
            return self.refuse(inconsistent(format!(
                "site {} is not a neighbour of site {} in this session's graph",
                e.site, self.me
            )));
        }
        let Some(mine) = entries.iter().find(|e| e.site == self.me) else {
            self.exclude();
            return Ok(Vec::new());
        };
        if mine.keys != (PublicKeys { enc: adv.enc.public, mask: adv.mask.public }) {
            return self.refuse(RoundError::KeysReplaced { me: self.me });
        }
        let t = params.threshold;
        if entries.len() < t {
            return self.refuse(adv.session.too_few(self.me, entries.len(), Phase::ShareKeys));
        }
        let mut seen: BTreeMap<[u8; 32], ParticipantId> = BTreeMap::new();
        let mut u1 = BTreeMap::new();
        for e in &entries {
            for (which, bytes) in [("encryption", &e.keys.enc), ("mask", &e.keys.mask)] {
                if let Some(&a) = seen.get(bytes) {
                    return self.refuse(RoundError::DuplicateKeys { a, b: e.site });
                }
                seen.insert(*bytes, e.site);
                if decode_public(bytes).is_none() {
                    return self.refuse(RoundError::InvalidKey { from: e.site, which });
                }
            }
            let peer = Peer {
                enc: decode_public(&e.keys.enc).expect("checked"),
                mask: decode_public(&e.keys.mask).expect("checked"),
            };
            u1.insert(e.site, peer);
        }

        let State::Advertised(adv) = std::mem::replace(&mut self.state, State::AwaitingBegin)
        else {
            unreachable!("checked above")
        };
        let Advertised { session, enc, mask } = adv;
        let holders: Vec<ParticipantId> = u1.keys().copied().collect();
        let self_mask = random_scalar(&mut self.rng);
        let key_shares = shamir::split(&mask.secret, t, &holders, &mut self.rng);
        let mask_shares = shamir::split(&self_mask, t, &holders, &mut self.rng);
        let mut sealed = Vec::with_capacity(holders.len() - 1);
        let mut own = None;
        for ((&v, key_share), mask_share) in holders.iter().zip(key_shares).zip(mask_shares) {
            let pair = SharePair { secret_key: key_share, self_mask: mask_share };
            if v == self.me {
                own = Some(pair);
                continue;
            }
            let shared = agree(&enc.secret, &u1[&v].enc);
            let key =
                derive_key(Purpose::Encryption, &shared, &session.id, ROUND_SHARE_KEYS, self.me, v);
            let ciphertext = crypto::seal_shares(&key, &session.id, self.me, v, &pair);
            sealed.push(SealedShares { from: self.me, to: v, ciphertext });
        }
        let out = self.to_aggregator(session.id, Body::EncryptedShares(sealed));
        self.state = State::SharedKeys(SharedKeys {
            session,
            enc,
            mask,
            u1,
            self_mask,
            own: own.expect("this site is in U1"),
        });
        Ok(vec![out])
    }

    // -- R2 ------------------------------------------------------------------------------------

    fn on_forwarded(&mut self, list: Vec<SealedShares>) -> Result<Vec<Outgoing>, RoundError> {
        let State::SharedKeys(sk) = &self.state else { unreachable!("checked by handle") };
        let mut held = BTreeMap::new();
        held.insert(self.me, sk.own);
        for sealed in &list {
            let bad = if sealed.to != self.me {
                Some(format!("a ciphertext for site {} was sent to site {}", sealed.to, self.me))
            } else if sealed.from == self.me || !sk.u1.contains_key(&sealed.from) {
                Some(format!("site {} is not another member of U1", sealed.from))
            } else if held.contains_key(&sealed.from) {
                Some(format!("two ciphertexts from site {}", sealed.from))
            } else {
                None
            };
            if let Some(detail) = bad {
                return self.refuse(RoundError::Inconsistent {
                    from: self.aggregator,
                    kind: kind::FORWARDED_SHARES,
                    detail,
                });
            }
            let shared = agree(&sk.enc.secret, &sk.u1[&sealed.from].enc);
            let key = derive_key(
                Purpose::Encryption,
                &shared,
                &sk.session.id,
                ROUND_SHARE_KEYS,
                sealed.from,
                self.me,
            );
            match crypto::open_shares(
                &key,
                &sk.session.id,
                sealed.from,
                self.me,
                &sealed.ciphertext,
            ) {
                Some(pair) => held.insert(sealed.from, pair),
                None => return self.refuse(RoundError::DecryptionFailed { from: sealed.from }),
            };
        }
        let t = sk.session.params.threshold;
        if held.len() < t {
            return self.refuse(sk.session.too_few(self.me, held.len(), Phase::MaskedInput));
        }
        let u2: BTreeSet<ParticipantId> = held.keys().copied().collect();

        // y_u = x_u + PRG(b_u) + Σ_{v∈U2\{u}} sgn(u − v)·PRG(s_{u,v})
        let id = sk.session.id;
        let mut y = self.input.clone();
        let self_seed = self_mask_seed(&sk.self_mask, &id, self.me);
        apply_mask(&mut y, &self_seed, Sign::Plus);
        for &v in u2.iter().filter(|&&v| v != self.me) {
            let seed = pairwise_seed(&sk.mask.secret, &sk.u1[&v].mask, &id, self.me, v);
            apply_mask(&mut y, &seed, if self.me > v { Sign::Plus } else { Sign::Minus });
        }
        let out = self.to_aggregator(id, Body::MaskedInput(RingVec(y)));
        let State::SharedKeys(sk) = std::mem::replace(&mut self.state, State::AwaitingBegin) else {
            unreachable!("checked above")
        };
        let session = sk.session.duplicate();
        // Dropping `sk` zeroizes both secret keys and b_u: only the shares are needed from here.
        drop(sk);
        self.state = State::SentMasked(SentMasked { session, u2, held });
        Ok(vec![out])
    }

    // -- R3 ------------------------------------------------------------------------------------

    fn on_unmask_request(
        &mut self,
        survivors: &[ParticipantId],
        dropped: &[ParticipantId],
    ) -> Result<Vec<Outgoing>, RoundError> {
        if let Err(e) = self.check_not_both(survivors, dropped) {
            return self.refuse(e);
        }
        let State::SentMasked(sm) = &self.state else { unreachable!("checked by handle") };
        let survivor_set: BTreeSet<ParticipantId> = survivors.iter().copied().collect();
        let dropped_set: BTreeSet<ParticipantId> = dropped.iter().copied().collect();
        let detail = if survivor_set.len() != survivors.len() || dropped_set.len() != dropped.len()
        {
            Some("a site is listed twice".to_owned())
        } else if let Some(v) = survivor_set.union(&dropped_set).find(|v| !sm.u2.contains(v)) {
            Some(format!("site {v} is not in U2"))
        } else {
            sm.u2
                .iter()
                .find(|v| !survivor_set.contains(v) && !dropped_set.contains(v))
                .map(|v| format!("site {v} of U2 is neither a survivor nor dropped"))
        };
        if let Some(detail) = detail {
            return self.refuse(RoundError::InconsistentRequest { detail });
        }
        let t = sm.session.params.threshold;
        if survivor_set.len() < t {
            return self.refuse(sm.session.too_few(self.me, survivor_set.len(), Phase::Unmask));
        }
        if !survivor_set.contains(&self.me) {
            // The aggregator counts this site as dropped: it reveals nothing.
            self.exclude();
            return Ok(Vec::new());
        }
        let self_mask: Vec<RevealedShare> = survivor_set
            .iter()
            .map(|&v| RevealedShare { owner: v, share: sm.held[&v].self_mask.to_bytes() })
            .collect();
        let secret_key: Vec<RevealedShare> = dropped_set
            .iter()
            .map(|&v| RevealedShare { owner: v, share: sm.held[&v].secret_key.to_bytes() })
            .collect();
        let id = sm.session.id;
        for &v in &survivor_set {
            self.revealed.insert(v, Revealed::SelfMask);
        }
        for &v in &dropped_set {
            self.revealed.insert(v, Revealed::SecretKey);
        }
        let out = self.to_aggregator(id, Body::UnmaskShares { self_mask, secret_key });
        self.answered();
        Ok(vec![out])
    }

    /// A second unmask request: refused, and if it asks for the other secret of a site this site
    /// already helped unmask, the site stops.
    fn on_repeated_unmask_request(
        &mut self,
        survivors: &[ParticipantId],
        dropped: &[ParticipantId],
    ) -> Result<Vec<Outgoing>, RoundError> {
        if let Err(e) = self.check_not_both(survivors, dropped) {
            return self.refuse(e);
        }
        Err(RoundError::Duplicate { from: self.aggregator, kind: kind::UNMASK_REQUEST })
    }

    /// Spec §8 pitfall 8: never both shares of one site, in one request or across requests.
    fn check_not_both(
        &self,
        survivors: &[ParticipantId],
        dropped: &[ParticipantId],
    ) -> Result<(), RoundError> {
        let both = |peer, revealed: Revealed, asked: Revealed| RoundError::WouldRevealBoth {
            peer,
            revealed: revealed.name(),
            asked: asked.name(),
        };
        if let Some(&peer) = survivors.iter().find(|v| dropped.contains(v)) {
            return Err(both(peer, Revealed::SelfMask, Revealed::SecretKey));
        }
        for (list, asked) in [(survivors, Revealed::SelfMask), (dropped, Revealed::SecretKey)] {
            for &peer in list {
                match self.revealed.get(&peer) {
                    Some(&done) if done != asked => return Err(both(peer, done, asked)),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn on_result(&mut self, b: SumBroadcast) -> Result<Vec<Outgoing>, RoundError> {
        let Some(session) = self.session_ref() else { unreachable!("AwaitingBegin is handled") };
        let params = &session.params;
        if b.sum.0.len() != params.vector_len {
            let e = RoundError::WrongLength {
                from: self.aggregator,
                expected: params.vector_len,
                got: b.sum.0.len(),
            };
            return self.refuse(e);
        }
        let decoded = match params.encoding {
            Encoding::Fixed(fp) => Some(fp.decode_vec(&b.sum.0)),
            Encoding::Ring => None,
        };
        let included = matches!(self.state, State::AwaitingResult { answered: true, .. })
            && b.survivors.contains(&self.me);
        self.state = State::Done(SumResult {
            session: session.id,
            sum: b.sum.0,
            decoded,
            survivors: b.survivors,
            dropouts: b.dropouts,
            included,
        });
        Ok(Vec::new())
    }

    // -- helpers -------------------------------------------------------------------------------

    fn session_ref(&self) -> Option<&Session> {
        match &self.state {
            State::Advertised(a) => Some(&a.session),
            State::SharedKeys(s) => Some(&s.session),
            State::SentMasked(s) => Some(&s.session),
            State::AwaitingResult { session, .. } => Some(session),
            State::AwaitingBegin | State::Done(_) | State::Aborted(_) => None,
        }
    }

    fn take_session(&mut self) -> Session {
        let state = std::mem::replace(&mut self.state, State::AwaitingBegin);
        match state {
            State::Advertised(a) => a.session,
            State::SharedKeys(s) => s.session.duplicate(),
            State::SentMasked(s) => s.session.duplicate(),
            State::AwaitingResult { session, .. } => session,
            State::AwaitingBegin | State::Done(_) | State::Aborted(_) => {
                unreachable!("only called while a session runs")
            }
        }
    }

    /// This site is not part of the sum: drop every secret, wait for the result.
    fn exclude(&mut self) {
        let session = self.take_session();
        self.state = State::AwaitingResult { session, answered: false };
    }

    fn answered(&mut self) {
        let session = self.take_session();
        self.state = State::AwaitingResult { session, answered: true };
    }

    /// Refuses an aggregator request that an honest site must not go on after.
    fn refuse(&mut self, error: RoundError) -> Result<Vec<Outgoing>, RoundError> {
        self.state = State::Aborted(error.clone());
        Err(error)
    }

    fn phase_name(&self) -> &'static str {
        match self.phase() {
            SitePhase::AwaitingBegin => "waiting for begin",
            SitePhase::AdvertisedKeys => "R1 share keys",
            SitePhase::SharedKeys => "R2 masked input",
            SitePhase::SentMaskedInput => "R3 unmask",
            SitePhase::SentUnmaskShares | SitePhase::Excluded => "waiting for the result",
            SitePhase::Done | SitePhase::Aborted => "the end of the instance",
        }
    }

    fn wrong_phase(&self, from: ParticipantId, got: &'static str) -> RoundError {
        let expected = match self.phase() {
            SitePhase::AwaitingBegin => kind::BEGIN,
            SitePhase::AdvertisedKeys => kind::KEY_DIRECTORY,
            SitePhase::SharedKeys => kind::FORWARDED_SHARES,
            SitePhase::SentMaskedInput => kind::UNMASK_REQUEST,
            _ => kind::RESULT,
        };
        RoundError::WrongPhase { phase: self.phase_name(), expected, got, from }
    }

    fn to_aggregator(&self, session: SessionId, body: Body) -> Outgoing {
        let kind = body.kind();
        Outgoing {
            to: To::One(self.aggregator),
            kind,
            payload: codec::encode(&SecAggMessage { session, body }),
        }
    }
}

/// PRG seed of p_u, from b_u.
pub(crate) fn self_mask_seed(b: &Scalar, session: &SessionId, u: ParticipantId) -> [u8; 32] {
    derive_key(Purpose::SelfMask, b.as_bytes(), session, ROUND_MASKED_INPUT, u, u)
}

/// PRG seed of p_{u,v} = p_{v,u}, from KA(s_u^SK, s_v^PK).
pub(crate) fn pairwise_seed(
    secret: &Scalar,
    peer: &RistrettoPoint,
    session: &SessionId,
    u: ParticipantId,
    v: ParticipantId,
) -> [u8; 32] {
    let shared = agree(secret, peer);
    derive_key(Purpose::PairwiseMask, &shared, session, ROUND_MASKED_INPUT, u, v)
}

/// What a corrupted site would hand to a coalition: its current secrets. Test-only, for the
/// collusion tests in `privacy_tests.rs`.
#[cfg(test)]
#[derive(Default)]
pub(crate) struct Exposed {
    pub mask_secret: Option<Scalar>,
    pub held: BTreeMap<ParticipantId, SharePair>,
}

#[cfg(test)]
impl Site {
    pub(crate) fn expose(&self) -> Exposed {
        match &self.state {
            State::SharedKeys(sk) => Exposed {
                mask_secret: Some(sk.mask.secret),
                held: BTreeMap::from([(self.me, sk.own)]),
            },
            State::SentMasked(sm) => Exposed { held: sm.held.clone(), ..Exposed::default() },
            _ => Exposed::default(),
        }
    }
}

impl Machine for Site {
    type Error = RoundError;

    fn handle(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, RoundError> {
        Site::handle(self, now_ms, from, payload)
    }

    fn handle_departure(
        &mut self,
        now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, RoundError> {
        Site::handle_departure(self, now_ms, who)
    }

    fn is_finished(&self) -> bool {
        self.outcome().is_some()
    }
}
