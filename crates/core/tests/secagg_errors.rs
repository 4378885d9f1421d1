//! Bad inputs to the SecureAgg roles: malformed, wrong-phase, duplicate, unknown-sender and
//! wrong-length messages, a curious aggregator, and dropouts that leave too few sites. Each one
//! gives a typed error (never a panic), and a refused message changes nothing.

use std::collections::VecDeque;

use capelab_core::codec;
use capelab_core::fixed::{FixedPoint, FixedPointError};
use capelab_core::rng::derive;
use capelab_core::secagg::messages::{Body, RingVec, SecAggMessage, SessionId, kind};
use capelab_core::secagg::{
    Aggregator, AggregatorConfig, ConfigError, Encoding, Outgoing, Params, Phase, RoundError, Site,
    SiteInput, SitePhase,
};
use capelab_core::wire::{ParticipantId, To};

const AGG: ParticipantId = 100;
const LEN: usize = 4;

/// A lock-step room of sites 1..=n and the aggregator, with a hand on every message.
struct Net {
    agg: Aggregator,
    sites: Vec<Site>,
    queue: VecDeque<(ParticipantId, Outgoing)>,
    now: u64,
}

impl Net {
    fn new(n: u32) -> Self {
        let ids: Vec<ParticipantId> = (1..=n).collect();
        let params = Params::new(ids.clone(), LEN, Encoding::Ring).unwrap();
        let config = AggregatorConfig::new(params).unwrap().with_round_timeout_ms(500);
        let (agg, begin) = Aggregator::start(config, &mut derive(1, "agg"), 0);
        let sites = ids
            .iter()
            .map(|&id| {
                let input = SiteInput::Ring(vec![u64::from(id); LEN]);
                Site::new(id, AGG, input, derive(1, &format!("site{id}"))).unwrap()
            })
            .collect();
        let mut net = Self { agg, sites, queue: VecDeque::new(), now: 0 };
        net.queue.extend(begin.into_iter().map(|o| (AGG, o)));
        net
    }

    fn site(&mut self, id: ParticipantId) -> &mut Site {
        &mut self.sites[id as usize - 1]
    }

    fn session(&self) -> SessionId {
        self.agg.session()
    }

    /// Delivers until the next message of `stop_kind` (returned undelivered), or until quiet.
    fn run_until(&mut self, stop_kind: &str) -> Option<(ParticipantId, Outgoing)> {
        while let Some((from, out)) = self.queue.pop_front() {
            if out.kind == stop_kind {
                return Some((from, out));
            }
            self.deliver(from, out);
        }
        None
    }

    fn run(&mut self) {
        self.run_until("");
    }

    fn deliver(&mut self, from: ParticipantId, out: Outgoing) {
        let targets: Vec<ParticipantId> = match out.to {
            To::All if from == AGG => (1..=self.sites.len() as u32).collect(),
            To::All => vec![AGG],
            To::One(id) => vec![id],
        };
        for to in targets {
            let now = self.now;
            let replies = if to == AGG {
                self.agg.handle(now, from, &out.payload)
            } else {
                self.site(to).handle(now, from, &out.payload)
            };
            let replies = replies.unwrap_or_else(|e| panic!("{to} refused {}: {e}", out.kind));
            self.queue.extend(replies.into_iter().map(|o| (to, o)));
        }
    }

    /// Delivers every queued message except those from `silent`.
    fn run_without(&mut self, silent: &[ParticipantId]) {
        while let Some((from, out)) = self.queue.pop_front() {
            if !silent.contains(&from) {
                self.deliver(from, out);
            }
        }
    }

    fn message(&self, body: Body) -> Vec<u8> {
        codec::encode(&SecAggMessage { session: self.session(), body })
    }
}

#[test]
fn malformed_bytes_are_refused_and_change_nothing() {
    let mut net = Net::new(4);
    for garbage in [&[][..], &[1, 2, 3], &[0xff; 40]] {
        assert!(matches!(net.agg.handle(0, 1, garbage), Err(RoundError::Malformed(_))));
        assert!(matches!(net.site(1).handle(0, AGG, garbage), Err(RoundError::Malformed(_))));
    }
    assert_eq!(net.site(1).phase(), SitePhase::AwaitingBegin);
    assert_eq!(net.agg.phase(), Some(Phase::AdvertiseKeys));
    net.run();
    let agg = net.agg.outcome().unwrap().unwrap();
    assert_eq!(agg.sum, vec![1 + 2 + 3 + 4; LEN]);
}

#[test]
fn wrong_phase_messages_name_what_was_expected() {
    let mut net = Net::new(4);
    let y = net.message(Body::MaskedInput(RingVec(vec![0; LEN])));
    assert_eq!(
        net.agg.handle(0, 2, &y),
        Err(RoundError::WrongPhase {
            phase: "R0 advertise keys",
            expected: kind::ADVERTISE_KEYS,
            got: kind::MASKED_INPUT,
            from: 2
        })
    );
    let request = net.message(Body::UnmaskRequest { survivors: vec![1, 2, 3], dropped: vec![] });
    assert!(matches!(
        net.site(3).handle(0, AGG, &request),
        Err(RoundError::WrongPhase { expected: kind::BEGIN, got: kind::UNMASK_REQUEST, .. })
    ));
    // an aggregator-only message sent to the aggregator
    let begin = net.message(Body::Begin(net.agg.params().clone()));
    assert!(matches!(net.agg.handle(0, 1, &begin), Err(RoundError::WrongPhase { .. })));
    net.run();
    assert!(net.agg.outcome().unwrap().is_ok());
}

#[test]
fn duplicates_unknown_senders_and_other_sessions_are_refused() {
    let mut net = Net::new(4);
    let (from, advert) = net.run_until(kind::ADVERTISE_KEYS).unwrap();
    net.deliver(from, advert.clone());
    assert_eq!(
        net.agg.handle(0, from, &advert.payload),
        Err(RoundError::Duplicate { from, kind: kind::ADVERTISE_KEYS })
    );
    // participant 42 was not invited
    assert!(matches!(
        net.agg.handle(0, 42, &advert.payload),
        Err(RoundError::UnknownSender { from: 42, kind: kind::ADVERTISE_KEYS, .. })
    ));
    // a site takes orders only from the aggregator
    let begin = net.message(Body::Begin(net.agg.params().clone()));
    assert!(matches!(
        net.site(2).handle(0, 3, &begin),
        Err(RoundError::UnknownSender { from: 3, .. })
    ));
    // another session
    let stale = codec::encode(&SecAggMessage {
        session: SessionId([0; 16]),
        body: Body::MaskedInput(RingVec(vec![0; LEN])),
    });
    assert!(matches!(net.agg.handle(0, 1, &stale), Err(RoundError::WrongSession { .. })));
    net.run();
    assert_eq!(net.agg.outcome().unwrap().unwrap().sum, vec![10; LEN]);
    // after the end
    assert!(matches!(net.agg.handle(0, 1, &advert.payload), Err(RoundError::AlreadyOver { .. })));
}

#[test]
fn wrong_vector_lengths_are_refused() {
    let mut net = Net::new(4);
    let (from, real) = net.run_until(kind::MASKED_INPUT).unwrap();
    let short = net.message(Body::MaskedInput(RingVec(vec![0; LEN - 1])));
    assert_eq!(
        net.agg.handle(0, from, &short),
        Err(RoundError::WrongLength { from, expected: LEN, got: LEN - 1 })
    );
    net.deliver(from, real);
    net.run();
    assert_eq!(net.agg.outcome().unwrap().unwrap().sum, vec![10; LEN]);

    // a site whose input does not match the session refuses to join
    let params = Params::new(vec![1, 2, 3], LEN, Encoding::Ring).unwrap();
    let (agg, begin) =
        Aggregator::start(AggregatorConfig::new(params).unwrap(), &mut derive(2, "a"), 0);
    let mut site = Site::new(1, AGG, SiteInput::Ring(vec![0; LEN + 1]), derive(2, "s")).unwrap();
    let err = site.handle(0, AGG, &begin[0].payload).unwrap_err();
    assert_eq!(
        err,
        RoundError::UnacceptableParams(ConfigError::InputLength { expected: LEN, got: LEN + 1 })
    );
    assert_eq!(site.outcome(), Some(Err(&err)));
    drop(agg);
}

#[test]
fn bad_real_inputs_name_index_and_value() {
    let fp = FixedPoint::new(32, 10.0).unwrap();
    let site = |values: Vec<f64>| {
        Site::new(1, AGG, SiteInput::Real { values, format: fp }, derive(3, "s")).err()
    };
    assert!(matches!(
        site(vec![0.0, 1.0, f64::NAN]),
        Some(ConfigError::FixedPoint(FixedPointError::NotFinite { index: 2, .. }))
    ));
    assert!(matches!(
        site(vec![f64::INFINITY]),
        Some(ConfigError::FixedPoint(FixedPointError::NotFinite { index: 0, .. }))
    ));
    assert_eq!(
        site(vec![1.0, -10.5]),
        Some(ConfigError::FixedPoint(FixedPointError::OutOfBound {
            index: 1,
            value: -10.5,
            bound: 10.0
        }))
    );
    // a session that decodes with another format is refused before anything is sent
    let other = FixedPoint::new(16, 10.0).unwrap();
    let params = Params::new(vec![1, 2], 1, Encoding::Fixed(other)).unwrap();
    let (_, begin) =
        Aggregator::start(AggregatorConfig::new(params).unwrap(), &mut derive(3, "a"), 0);
    let mut s =
        Site::new(1, AGG, SiteInput::Real { values: vec![1.0], format: fp }, derive(3, "s"))
            .unwrap();
    assert!(matches!(
        s.handle(0, AGG, &begin[0].payload),
        Err(RoundError::UnacceptableParams(ConfigError::EncodingMismatch { .. }))
    ));
}

#[test]
fn a_curious_aggregator_asking_for_both_shares_is_refused() {
    let mut net = Net::new(5);
    // Let everything run up to the unmask request; hold that back.
    let (_, real_request) = net.run_until(kind::UNMASK_REQUEST).unwrap();
    assert_eq!(net.site(2).phase(), SitePhase::SentMaskedInput);

    // 1. One request naming site 4 as both survivor and dropped.
    let both =
        net.message(Body::UnmaskRequest { survivors: vec![1, 2, 3, 4, 5], dropped: vec![4] });
    let err = net.site(1).handle(0, AGG, &both).unwrap_err();
    assert!(matches!(err, RoundError::WouldRevealBoth { peer: 4, .. }), "{err}");
    assert_eq!(net.site(1).phase(), SitePhase::Aborted, "an honest site stops there");

    // 2. A valid request, then a second one that calls site 5 dropped: site 2 already revealed
    //    its b-share of site 5 and refuses the s^SK share.
    let replies = net.site(2).handle(0, AGG, &real_request.payload).unwrap();
    assert_eq!(replies.len(), 1);
    assert_eq!(replies[0].kind, kind::UNMASK_SHARES);
    let second = net.message(Body::UnmaskRequest { survivors: vec![1, 2, 3, 4], dropped: vec![5] });
    let err = net.site(2).handle(0, AGG, &second).unwrap_err();
    assert_eq!(
        err,
        RoundError::WouldRevealBoth {
            peer: 5,
            revealed: "self-mask (b)",
            asked: "secret-key (s^SK)"
        }
    );
    assert_eq!(net.site(2).phase(), SitePhase::Aborted);

    // 3. Repeating the same request is a harmless duplicate: refused, the site carries on.
    let replies = net.site(3).handle(0, AGG, &real_request.payload).unwrap();
    assert_eq!(replies.len(), 1);
    assert_eq!(
        net.site(3).handle(0, AGG, &real_request.payload),
        Err(RoundError::Duplicate { from: AGG, kind: kind::UNMASK_REQUEST })
    );
    assert_eq!(net.site(3).phase(), SitePhase::SentUnmaskShares);
}

#[test]
fn unmask_requests_inconsistent_with_u2_reveal_nothing() {
    let mut net = Net::new(5); // t = 4
    net.run_until(kind::UNMASK_REQUEST).unwrap();
    let cases = [
        (vec![1, 2, 3], vec![4, 5], "fewer than t survivors"),
        (vec![1, 2, 3, 4, 5, 6], vec![], "a site outside U2"),
        (vec![1, 2, 3, 4], vec![], "site 5 missing from both lists"),
        (vec![1, 2, 2, 3, 4], vec![5], "a repeated site"),
    ];
    for (site, (survivors, dropped, why)) in (1..).zip(cases) {
        let request = net.message(Body::UnmaskRequest { survivors, dropped });
        let err = net.site(site).handle(0, AGG, &request).unwrap_err();
        match site {
            1 => {
                assert_eq!(err, RoundError::TooFewSites { have: 3, need: 4, phase: Phase::Unmask })
            }
            _ => assert!(matches!(err, RoundError::InconsistentRequest { .. }), "{why}: {err}"),
        }
        assert_eq!(net.site(site).phase(), SitePhase::Aborted, "{why}");
    }
}

#[test]
fn tampered_share_ciphertexts_are_detected() {
    let mut net = Net::new(4);
    let (from, out) = net.run_until(kind::FORWARDED_SHARES).unwrap();
    let To::One(to) = out.to else { panic!("forwarded shares go to one site") };
    let mut msg: SecAggMessage = codec::decode("test", &out.payload).unwrap();
    let Body::ForwardedShares(list) = &mut msg.body else { panic!() };
    let victim = list[1].from;
    list[1].ciphertext[10] ^= 0x40;
    let err = net.site(to).handle(0, from, &codec::encode(&msg)).unwrap_err();
    assert_eq!(err, RoundError::DecryptionFailed { from: victim });
    assert_eq!(net.site(to).phase(), SitePhase::Aborted, "no masked input after a bad share");
}

#[test]
fn too_few_sites_abort_at_once_and_nothing_is_unmasked() {
    // S = 4, t = 3: two sites leave once R1 has closed (the aggregator collects R2). The second
    // departure makes the abort immediate, without waiting for the deadline.
    let mut net = Net::new(4);
    net.run_until(kind::FORWARDED_SHARES).unwrap();
    assert!(net.agg.handle_departure(0, 3).unwrap().is_empty(), "3 of 4 can still answer");
    let out = net.agg.handle_departure(0, 4).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].kind, kind::ABORT);
    assert_eq!(out[0].to, To::All);
    assert_eq!(
        net.agg.outcome(),
        Some(Err(&RoundError::TooFewSites { have: 2, need: 3, phase: Phase::MaskedInput }))
    );
    // the sites hear it and stop; none ever sent an unmask share
    for id in 1..=2 {
        net.site(id).handle(0, AGG, &out[0].payload).unwrap();
        assert!(matches!(
            net.site(id).outcome(),
            Some(Err(RoundError::AbortedByAggregator { phase: Phase::MaskedInput, .. }))
        ));
    }
}

#[test]
fn silent_sites_abort_at_the_deadline() {
    // S = 4, t = 3: sites 3 and 4 stay connected but never send their masked inputs.
    let mut net = Net::new(4);
    let first = net.run_until(kind::FORWARDED_SHARES).unwrap();
    net.queue.push_front(first);
    net.run_without(&[3, 4]);
    assert_eq!(net.agg.phase(), Some(Phase::MaskedInput));
    let deadline = net.agg.poll_timeout().unwrap();
    assert!(net.agg.handle_timeout(deadline - 1).unwrap().is_empty(), "not yet");
    let out = net.agg.handle_timeout(deadline).unwrap();
    assert_eq!(out[0].kind, kind::ABORT);
    assert_eq!(
        net.agg.outcome(),
        Some(Err(&RoundError::TooFewSites { have: 2, need: 3, phase: Phase::MaskedInput }))
    );
    assert_eq!(net.agg.poll_timeout(), None);
}

#[test]
fn the_aggregator_leaving_ends_every_site() {
    let mut net = Net::new(3);
    net.run_until(kind::KEY_DIRECTORY);
    net.site(1).handle_departure(0, 2).unwrap();
    assert_eq!(net.site(1).outcome(), None, "another site leaving is the aggregator's business");
    net.site(1).handle_departure(0, AGG).unwrap();
    assert_eq!(net.site(1).outcome(), Some(Err(&RoundError::AggregatorLeft { aggregator: AGG })));
}

#[test]
fn configuration_errors_come_before_any_message() {
    assert_eq!(
        Params::new(vec![1, 2, 3, 4, 5, 6], 3, Encoding::Ring).unwrap().with_threshold(3),
        Err(ConfigError::ThresholdAtMostHalf { threshold: 3, sites: 6 })
    );
    assert_eq!(
        Params::new(vec![1, 2, 3], 3, Encoding::Ring).unwrap().with_threshold(4),
        Err(ConfigError::ThresholdAboveSites { threshold: 4, sites: 3 })
    );
    // a Begin with bad parameters (crafted) is refused by the site
    let bad = Params {
        sites: vec![1, 2, 3, 4],
        threshold: 2,
        vector_len: 1,
        encoding: Encoding::Ring,
        graph: Default::default(),
    };
    let begin =
        codec::encode(&SecAggMessage { session: SessionId([1; 16]), body: Body::Begin(bad) });
    let mut site = Site::new(1, AGG, SiteInput::Ring(vec![0]), derive(4, "s")).unwrap();
    assert_eq!(
        site.handle(0, AGG, &begin),
        Err(RoundError::UnacceptableParams(ConfigError::ThresholdAtMostHalf {
            threshold: 2,
            sites: 4
        }))
    );
}
