//! Collusion tests: the aggregator plus t − 1 sites pool everything they hold and try to unmask
//! one honest site. Each attack is checked twice: with t − 1 colluders it must fail (the recovered
//! vector is not the input and looks uniform), and with one more share (a positive control) the
//! same attack code must succeed, which shows the failure is the protocol's doing, not the test's.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use curve25519_dalek::Scalar;

use super::aggregator::Aggregator;
use super::config::{AggregatorConfig, Encoding, Params};
use super::crypto::{SharePair, decode_public, decode_scalar, public_key};
use super::graph::{Graph, Topology};
use super::messages::{Body, SecAggMessage, kind};
use super::prg::{Sign, apply_mask};
use super::shamir;
use super::site::{Site, SiteInput, pairwise_seed, self_mask_seed};
use crate::codec;
use crate::driver::Outgoing;
use crate::rng::derive;
use crate::wire::{ParticipantId, To};

const AGG: ParticipantId = 100;

/// χ² statistic of the top 4 bits over 16 bins. With 15 degrees of freedom, P(χ² > 37.70) = 0.001.
pub(crate) fn chi_square_top_bits(v: &[u64]) -> f64 {
    let mut bins = [0usize; 16];
    for x in v {
        bins[(x >> 60) as usize] += 1;
    }
    let expected = v.len() as f64 / 16.0;
    bins.iter().map(|&o| (o as f64 - expected).powi(2) / expected).sum()
}
const CHI2_15_P001: f64 = 37.70;

/// Every site's secrets, snapshotted as the protocol runs. An attack may only use the entries
/// of the coalition's members.
#[derive(Default)]
struct Pool {
    mask_secrets: BTreeMap<ParticipantId, Scalar>,
    /// holder → (owner → the shares owner gave holder)
    held: BTreeMap<ParticipantId, BTreeMap<ParticipantId, SharePair>>,
}

/// A lock-step room that records everything the aggregator receives (accepted or not).
struct Room {
    agg: Aggregator,
    sites: BTreeMap<ParticipantId, Site>,
    queue: VecDeque<(ParticipantId, Outgoing)>,
    /// Messages held back: (from, message), delivered only on request.
    delayed: Vec<(ParticipantId, Outgoing)>,
    hold_back: Option<(ParticipantId, &'static str)>,
    seen_by_agg: Vec<(ParticipantId, SecAggMessage)>,
    colluders: BTreeSet<ParticipantId>,
    pool: Pool,
    now: u64,
}

impl Room {
    fn new(n: u32, inputs: &dyn Fn(u32) -> Vec<u64>, colluders: &[ParticipantId]) -> Self {
        let ids: Vec<ParticipantId> = (1..=n).collect();
        let params = Params::new(ids, inputs(1).len(), Encoding::Ring).unwrap();
        Self::with_params(params, inputs, colluders)
    }

    fn with_params(
        params: Params,
        inputs: &dyn Fn(u32) -> Vec<u64>,
        colluders: &[ParticipantId],
    ) -> Self {
        let ids = params.sites.clone();
        let config = AggregatorConfig::new(params).unwrap().with_round_timeout_ms(1_000);
        let (agg, begin) = Aggregator::start(config, &mut derive(7, "agg"), 0);
        let sites = ids
            .iter()
            .map(|&id| {
                let site = Site::new(
                    id,
                    AGG,
                    SiteInput::Ring(inputs(id)),
                    derive(7, &format!("site{id}")),
                );
                (id, site.unwrap())
            })
            .collect();
        let mut room = Self {
            agg,
            sites,
            queue: VecDeque::new(),
            delayed: Vec::new(),
            hold_back: None,
            seen_by_agg: Vec::new(),
            colluders: colluders.iter().copied().collect(),
            pool: Pool::default(),
            now: 0,
        };
        room.queue.extend(begin.into_iter().map(|o| (AGG, o)));
        room
    }

    fn run(&mut self) {
        while let Some((from, out)) = self.queue.pop_front() {
            if Some((from, out.kind)) == self.hold_back {
                self.delayed.push((from, out));
                continue;
            }
            self.deliver(from, out);
        }
    }

    fn deliver(&mut self, from: ParticipantId, out: Outgoing) {
        let targets: Vec<ParticipantId> = match out.to {
            To::All if from == AGG => self.sites.keys().copied().collect(),
            To::All => vec![AGG],
            To::One(id) => vec![id],
        };
        for to in targets {
            let replies = if to == AGG {
                self.seen_by_agg.push((from, codec::decode("secagg", &out.payload).unwrap()));
                self.agg.handle(self.now, from, &out.payload).unwrap_or_default()
            } else {
                let site = self.sites.get_mut(&to).unwrap();
                let replies = site.handle(self.now, from, &out.payload).unwrap_or_default();
                let exposed = site.expose();
                if let Some(s) = exposed.mask_secret {
                    self.pool.mask_secrets.insert(to, s);
                }
                self.pool.held.entry(to).or_default().extend(exposed.held);
                replies
            };
            self.queue.extend(replies.into_iter().map(|o| (to, o)));
        }
    }

    fn timeout(&mut self) {
        self.now = self.agg.poll_timeout().unwrap();
        let out = self.agg.handle_timeout(self.now).unwrap();
        self.queue.extend(out.into_iter().map(|o| (AGG, o)));
        self.run();
    }

    fn masked_input_of(&self, site: ParticipantId) -> Vec<u64> {
        self.seen_by_agg
            .iter()
            .find_map(|(from, m)| match &m.body {
                Body::MaskedInput(y) if *from == site => Some(y.0.clone()),
                _ => None,
            })
            .expect("the aggregator saw y_target")
    }

    /// Every share of `owner`'s secret the coalition (plus `extra` sites) can pool: the members'
    /// own, plus what sites revealed to the aggregator in R3.
    fn pooled_shares(
        &self,
        owner: ParticipantId,
        self_mask: bool,
        extra: &[ParticipantId],
    ) -> BTreeMap<ParticipantId, Scalar> {
        let mut shares = BTreeMap::new();
        let members =
            self.pool.held.iter().filter(|(h, _)| self.colluders.contains(h) || extra.contains(h));
        for (&holder, held) in members {
            if let Some(pair) = held.get(&owner) {
                shares.insert(holder, if self_mask { pair.self_mask } else { pair.secret_key });
            }
        }
        for (from, m) in &self.seen_by_agg {
            if let Body::UnmaskShares { self_mask: b, secret_key: s } = &m.body {
                for r in if self_mask { b } else { s } {
                    if r.owner == owner {
                        shares.insert(*from, decode_scalar(&r.share).unwrap());
                    }
                }
            }
        }
        shares
    }

    fn public_keys(&self) -> BTreeMap<ParticipantId, [u8; 32]> {
        self.seen_by_agg
            .iter()
            .filter_map(|(from, m)| match &m.body {
                Body::AdvertiseKeys(k) => Some((*from, k.mask)),
                _ => None,
            })
            .collect()
    }

    /// The best unmasking attempt on `target`: y_T − PRG(b) − Σ_v sgn(T − v)·PRG(s_{T,v}), where
    /// b and s_T^SK come from interpolating the pooled shares (whatever they are worth). A
    /// pairwise seed with v uses v's key when the coalition has it (v colludes, or v dropped and
    /// its key was reconstructed), and the interpolated s_T^SK otherwise.
    fn attack(
        &self,
        target: ParticipantId,
        u2: &[ParticipantId],
        extra: &[ParticipantId],
    ) -> (Vec<u64>, bool) {
        let session = self.agg.session();
        let t = self.agg.params().threshold;
        let pks = self.public_keys();
        let interpolate = |owner: ParticipantId, self_mask: bool| {
            let pts: Vec<(ParticipantId, Scalar)> =
                self.pooled_shares(owner, self_mask, extra).into_iter().collect();
            (shamir::reconstruct(&pts).unwrap(), pts.len())
        };
        let (b, _) = interpolate(target, true);
        let (s_target, _) = interpolate(target, false);
        let key_recovered = public_key(&s_target) == pks[&target];
        let mut r = self.masked_input_of(target);
        apply_mask(&mut r, &self_mask_seed(&b, &session, target), Sign::Minus);
        for &v in u2.iter().filter(|&&v| v != target) {
            let known_v = if self.colluders.contains(&v) {
                Some(self.pool.mask_secrets[&v])
            } else {
                match interpolate(v, false) {
                    (s_v, n) if n >= t => Some(s_v),
                    _ => None,
                }
            };
            let seed = match known_v {
                Some(s_v) => {
                    pairwise_seed(&s_v, &decode_public(&pks[&target]).unwrap(), &session, target, v)
                }
                None => {
                    pairwise_seed(&s_target, &decode_public(&pks[&v]).unwrap(), &session, target, v)
                }
            };
            apply_mask(&mut r, &seed, if target > v { Sign::Minus } else { Sign::Plus });
        }
        (r, key_recovered)
    }
}

fn input_of(id: u32) -> Vec<u64> {
    // small, structured values: far from uniform in their top bits
    (0..4096u64).map(|j| (j % 17) * u64::from(id)).collect()
}

#[test]
fn aggregator_and_t_minus_one_sites_cannot_unmask_a_survivor() {
    // S = 7, t = 5. Site 6 drops after sharing keys, so the aggregator legitimately learns
    // s_6^SK; the target, site 3, survives; sites 1, 2, 4, 5 collude with the aggregator.
    let target = 3;
    let colluders = [1, 2, 4, 5];
    let mut room = Room::new(7, &input_of, &colluders);
    room.hold_back = Some((6, kind::MASKED_INPUT));
    room.run();
    room.timeout(); // R2 closes without site 6
    let agg = room.agg.outcome().unwrap().unwrap().clone();
    let expected: Vec<u64> = (0..4096)
        .map(|j| {
            [1u32, 2, 3, 4, 5, 7].iter().map(|&id| input_of(id)[j]).fold(0u64, u64::wrapping_add)
        })
        .collect();
    assert_eq!(agg.sum, expected, "the protocol itself works");
    let u2: Vec<ParticipantId> = (1..=7).collect();
    assert_eq!(room.agg.membership().u2, u2);

    let (recovered, key_recovered) = room.attack(target, &u2, &[]);
    assert!(!key_recovered, "t − 1 shares of s_3^SK do not give the key");
    assert_ne!(recovered, input_of(target));
    let chi2 = chi_square_top_bits(&recovered);
    assert!(chi2 < CHI2_15_P001, "the failed attack's output looks uniform: χ² = {chi2}");
    assert!(chi_square_top_bits(&input_of(target)) > 1000.0, "while the input is far from it");

    // Positive control: one more honest site's share of s_3^SK, and the same attack succeeds.
    let (recovered, key_recovered) = room.attack(target, &u2, &[7]);
    assert!(key_recovered);
    assert_eq!(recovered, input_of(target));
}

#[test]
fn a_late_masked_input_stays_masked_by_b() {
    // The target's y_T reaches the aggregator after R2 closed: it is counted as dropped, its
    // s^SK is reconstructed by design, but honest sites never reveal b_T. With t − 1 colluders
    // the late y_T stays masked.
    let target = 4;
    let colluders = [1, 2, 3, 5];
    let mut room = Room::new(7, &input_of, &colluders);
    room.hold_back = Some((target, kind::MASKED_INPUT));
    room.run();
    room.timeout(); // R2 closes without the target; R3 reveals s_4^SK
    let late = room.delayed.pop().unwrap();
    room.hold_back = None;
    room.deliver(late.0, late.1); // the curious aggregator keeps the bytes it refused
    assert!(room.agg.outcome().unwrap().is_ok());
    let u2: Vec<ParticipantId> = (1..=7).collect();
    assert_eq!(room.pooled_shares(target, true, &[]).len(), 4, "only the colluders' b-shares");

    let (recovered, key_recovered) = room.attack(target, &u2, &[]);
    assert!(key_recovered, "s_4^SK is reconstructed, as the protocol intends for a dropout");
    assert_ne!(recovered, input_of(target));
    let chi2 = chi_square_top_bits(&recovered);
    assert!(chi2 < CHI2_15_P001, "χ² = {chi2}");

    let (recovered, _) = room.attack(target, &u2, &[6]);
    assert_eq!(recovered, input_of(target), "positive control: a t-th b-share unmasks");
}

#[test]
fn masked_inputs_look_uniform() {
    let mut room = Room::new(5, &|_| vec![0u64; 8192], &[]);
    room.run();
    assert!(room.agg.outcome().unwrap().is_ok());
    for (site, y) in room.agg.masked_inputs() {
        let chi2 = chi_square_top_bits(y);
        assert!(chi2 < CHI2_15_P001, "y_{site}: χ² = {chi2}");
    }
    assert_eq!(room.agg.masked_inputs().len(), 5);
}

// -- SecAgg+ ---------------------------------------------------------------------------------

fn harary_room(colluders: &[ParticipantId]) -> (Room, Topology) {
    // S = 16, k = 6, t = 4: each site shares with its 6 neighbours and itself.
    let params = Params::new((1..=16).collect(), 4096, Encoding::Ring)
        .unwrap()
        .with_graph(Graph::Harary { k: 6, seed: 11 }, 4)
        .unwrap();
    let topology = Topology::new(&params);
    (Room::with_params(params, &input_of, colluders), topology)
}

#[test]
fn secagg_plus_aggregator_and_t_minus_one_neighbours_cannot_unmask_a_survivor() {
    let target = 5;
    let (probe, top) = harary_room(&[]);
    drop(probe);
    let near: Vec<ParticipantId> = top.neighbourhood(target);
    let others: Vec<ParticipantId> = near.iter().copied().filter(|&v| v != target).collect();
    // Three neighbours collude with the aggregator (t − 1), and one more neighbour drops after
    // sharing its keys, so its s^SK is reconstructed by design. (Sites outside N[T] hold nothing
    // of T's; the analysis in graph.rs bounds the chance that t colluders sit around one of T's
    // honest neighbours instead.)
    let dropper = others[3];
    let colluders: Vec<ParticipantId> = others[..3].to_vec();
    let (mut room, _) = harary_room(&colluders);
    room.hold_back = Some((dropper, kind::MASKED_INPUT));
    room.run();
    room.timeout();
    let agg = room.agg.outcome().unwrap().unwrap().clone();
    let expected: Vec<u64> = (0..4096)
        .map(|j| {
            (1..=16u32)
                .filter(|&id| id != dropper)
                .map(|id| input_of(id)[j])
                .fold(0u64, u64::wrapping_add)
        })
        .collect();
    assert_eq!(agg.sum, expected, "the protocol itself works");
    let pooled = room.pooled_shares(target, false, &[]);
    assert_eq!(pooled.len(), 3, "only the three colluding neighbours hold s_T^SK shares");

    let (recovered, key_recovered) = room.attack(target, &near, &[]);
    assert!(!key_recovered, "t − 1 shares of s_T^SK do not give the key");
    assert_ne!(recovered, input_of(target));
    let chi2 = chi_square_top_bits(&recovered);
    assert!(chi2 < CHI2_15_P001, "the failed attack's output looks uniform: χ² = {chi2}");

    // Positive control: a fourth neighbour's share, and the same attack succeeds.
    let (recovered, key_recovered) = room.attack(target, &near, &[others[4]]);
    assert!(key_recovered);
    assert_eq!(recovered, input_of(target));
}

#[test]
fn secagg_plus_masked_inputs_look_uniform() {
    let params = Params::new((1..=16).collect(), 8192, Encoding::Ring)
        .unwrap()
        .with_graph(Graph::Harary { k: 4, seed: 3 }, 3)
        .unwrap();
    let mut room = Room::with_params(params, &|_| vec![0u64; 8192], &[]);
    room.run();
    assert!(room.agg.outcome().unwrap().is_ok());
    assert_eq!(room.agg.masked_inputs().len(), 16);
    for (site, y) in room.agg.masked_inputs() {
        let chi2 = chi_square_top_bits(y);
        assert!(chi2 < CHI2_15_P001, "y_{site}: χ² = {chi2}");
    }
}
