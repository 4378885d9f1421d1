//! Typed refusals of the private-mean roles, driven by hand: malformed bytes, strangers, another
//! study, messages in the wrong phase or attempt, duplicates, bad releases, bad data and bad
//! parameters (which make a site decline with a reason the dashboard can show).

mod study_support;

use std::collections::VecDeque;

use capelab_core::driver::Outgoing;
use capelab_core::rng::derive;
use capelab_core::secagg::{self, AggregatorConfig, Encoding};
use capelab_core::study::StudyId;
use capelab_core::study::mean::{
    AbortReason, AggregatorPhase, AggregatorSettings, DataError, DeclineReason, MeanAggregator,
    MeanBody, MeanMessage, MeanSite, ReleaseMessage, SitePhase, StudyError, StudyParams, kind,
};
use capelab_core::wire::{ParticipantId, To};
use study_support::{ledger, rows};

const AGG: ParticipantId = 1;
const SITES: [ParticipantId; 3] = [2, 3, 4];
const N_S: usize = 5;
const D: usize = 2;

fn params() -> StudyParams {
    StudyParams::new(SITES.to_vec(), 0.5, 1e-5, N_S)
        .unwrap()
        .with_dimension(D)
        .unwrap()
        .with_conventional(true)
}

fn aggregator(params: StudyParams) -> (MeanAggregator, Vec<Outgoing>) {
    MeanAggregator::start(params, AggregatorSettings::default(), derive(1, "agg"), 0).unwrap()
}

fn site(me: ParticipantId, rows: Vec<Vec<f64>>) -> MeanSite {
    MeanSite::new(me, AGG, rows, ledger(me as usize, 10.0), derive(2, &format!("site {me}")))
}

fn good_site(me: ParticipantId) -> MeanSite {
    site(me, rows(me as usize, N_S, D))
}

fn encode(study: StudyId, body: MeanBody) -> Vec<u8> {
    MeanMessage { study, body }.encode()
}

fn decoded(out: &Outgoing) -> MeanBody {
    MeanMessage::decode(&out.payload).unwrap().body
}

#[test]
fn a_site_refuses_what_it_must_not_take() {
    let (agg, start) = aggregator(params());
    let study = agg.study();
    let mut s = good_site(2);

    assert!(matches!(s.handle(0, AGG, &[0xff, 0xff, 0xff]), Err(StudyError::Malformed(_))));
    assert_eq!(
        s.handle(0, 7, &start[0].payload),
        Err(StudyError::UnknownSender { from: 7, kind: kind::START })
    );
    let release =
        MeanBody::Release(ReleaseMessage { attempt: 1, cape: vec![0.0; D], conventional: None });
    assert!(matches!(
        s.handle(0, AGG, &encode(study, release.clone())),
        Err(StudyError::WrongPhase { expected: kind::START, got: kind::RELEASE, .. })
    ));
    let stray = MeanBody::SecAgg { attempt: 1, message: vec![1, 2, 3] };
    assert!(matches!(s.handle(0, AGG, &encode(study, stray)), Err(StudyError::WrongPhase { .. })));
    assert_eq!(s.phase(), SitePhase::AwaitingStart, "refusals change nothing");

    let out = s.handle(0, AGG, &start[0].payload).unwrap();
    assert_eq!((out.len(), out[0].kind, out[0].to), (1, kind::ACCEPT, To::One(AGG)));
    assert_eq!(s.phase(), SitePhase::Accepted);
    assert_eq!(
        s.handle(0, AGG, &start[0].payload),
        Err(StudyError::Duplicate { from: AGG, kind: kind::START })
    );
    let other = StudyId([9; 16]);
    assert_eq!(
        s.handle(0, AGG, &encode(other, MeanBody::Accept)),
        Err(StudyError::WrongStudy { expected: study, got: other })
    );
    // a SecureAgg message of an attempt before the current one
    let stale = MeanBody::SecAgg { attempt: 0, message: vec![] };
    assert!(matches!(
        s.handle(0, AGG, &encode(study, stale)),
        Err(StudyError::WrongAttempt { expected: 1, got: 0, .. })
    ));
    assert!(matches!(
        s.handle(0, AGG, &encode(study, release)),
        Err(StudyError::WrongPhase { .. })
    ));
    assert!(s.spent().is_empty());
}

#[test]
fn a_site_that_is_not_invited_stays_out() {
    let (_, start) = aggregator(params());
    let mut s = good_site(9);
    assert!(matches!(
        s.handle(0, AGG, &start[0].payload),
        Err(StudyError::NotInvited { me: 9, .. })
    ));
    assert_eq!(s.phase(), SitePhase::NotInvited);
}

#[test]
fn bad_data_makes_the_site_decline_with_the_row_column_and_value() {
    let (agg, start) = aggregator(params());
    let cases: Vec<(Vec<Vec<f64>>, DataError)> = vec![
        (rows(2, N_S - 1, D), DataError::WrongRowCount { expected: N_S, got: N_S - 1 }),
        (rows(2, N_S, D + 1), DataError::WrongWidth { row: 0, expected: D, got: D + 1 }),
        (
            {
                let mut r = rows(2, N_S, D);
                r[3][0] = 1.5;
                r
            },
            DataError::OutOfRange { row: 3, column: 0, value: 1.5 },
        ),
    ];
    for (data, expected) in cases {
        let mut s = site(2, data);
        let out = s.handle(0, AGG, &start[0].payload).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].kind, kind::DECLINE);
        assert_eq!(decoded(&out[0]), MeanBody::Decline(DeclineReason::Data(expected)));
        assert_eq!(s.phase(), SitePhase::Declined);
    }
    let mut nan = rows(2, N_S, D);
    nan[1][1] = f64::NAN;
    let out = site(2, nan).handle(0, AGG, &start[0].payload).unwrap();
    let MeanBody::Decline(reason) = decoded(&out[0]) else { panic!() };
    assert!(matches!(reason, DeclineReason::Data(DataError::NotFinite { row: 1, column: 1, .. })));
    assert!(reason.to_string().contains("row 1, column 1 is NaN"), "{reason}");

    // parameters that came off the network unchecked
    let bad = StudyParams { epsilon: -1.0, ..params() };
    let payload = encode(agg.study(), MeanBody::Start(bad));
    let out = good_site(2).handle(0, AGG, &payload).unwrap();
    let MeanBody::Decline(reason) = decoded(&out[0]) else { panic!() };
    assert!(matches!(&reason, DeclineReason::Params(m) if m.contains("ε = -1")), "{reason}");
}

#[test]
fn a_site_refuses_a_secure_agg_round_that_does_not_match_the_study() {
    let p = params();
    let (agg, start) = aggregator(p.clone());
    let format = p.noise().unwrap().format;
    // a SecureAgg Begin with t = 2 instead of the study's t = 3
    let wrong = secagg::Params {
        sites: SITES.to_vec(),
        threshold: 2,
        vector_len: D,
        encoding: Encoding::Fixed(format),
        graph: secagg::Graph::Complete,
    };
    let (_, begin) =
        secagg::Aggregator::start(AggregatorConfig::new(wrong).unwrap(), &mut derive(3, "x"), 0);
    let payload =
        encode(agg.study(), MeanBody::SecAgg { attempt: 1, message: begin[0].payload.clone() });
    let mut s = good_site(2);
    s.handle(0, AGG, &start[0].payload).unwrap();
    assert!(matches!(
        s.handle(0, AGG, &payload),
        Err(StudyError::Inconsistent { ref detail, .. }) if detail.contains("threshold t = 2")
    ));
    assert_eq!(s.phase(), SitePhase::Aborted);

    // a Begin for an attempt the study does not allow (max_reruns = 0: attempt 2 is one too many)
    let p0 = params().with_max_reruns(0).unwrap();
    let (agg0, start0) = aggregator(p0.clone());
    let right = p0.secagg_params(SITES.to_vec(), format, 0).unwrap();
    let (_, begin) =
        secagg::Aggregator::start(AggregatorConfig::new(right).unwrap(), &mut derive(3, "x"), 0);
    let mut s = good_site(2);
    s.handle(0, AGG, &start0[0].payload).unwrap();
    let payload =
        encode(agg0.study(), MeanBody::SecAgg { attempt: 2, message: begin[0].payload.clone() });
    let out = s.handle(0, AGG, &payload).unwrap();
    let MeanBody::Decline(reason) = decoded(&out[0]) else { panic!() };
    assert!(reason.to_string().contains("at most 1 attempts"), "{reason}");
    assert!(s.spent().is_empty());
}

/// The roles wired together by hand; messages whose kind `hold` picks are kept back.
struct Room {
    agg: MeanAggregator,
    sites: Vec<MeanSite>,
    held: Vec<(ParticipantId, Outgoing)>,
}

impl Room {
    fn new() -> (Self, Vec<Outgoing>) {
        let (agg, start) = aggregator(params());
        (
            Room { agg, sites: SITES.iter().map(|&s| good_site(s)).collect(), held: Vec::new() },
            start,
        )
    }

    fn deliver(&mut self, first: Vec<Outgoing>, hold: &dyn Fn(&Outgoing) -> bool) {
        let mut queue: VecDeque<(ParticipantId, Outgoing)> =
            first.into_iter().map(|o| (AGG, o)).collect();
        while let Some((from, out)) = queue.pop_front() {
            if from == AGG {
                for s in
                    self.sites.iter_mut().filter(|s| out.to == To::All || out.to == To::One(s.id()))
                {
                    let replies = s.handle(0, AGG, &out.payload).unwrap();
                    queue.extend(replies.into_iter().map(|r| (s.id(), r)));
                }
            } else if hold(&out) {
                self.held.push((from, out));
            } else {
                let replies = self.agg.handle(0, from, &out.payload).unwrap();
                queue.extend(replies.into_iter().map(|r| (AGG, r)));
            }
        }
    }
}

#[test]
fn the_aggregator_refuses_what_does_not_fit_and_takes_what_does() {
    let (mut room, start) = Room::new();
    let study = room.agg.study();
    assert!(matches!(room.agg.handle(0, 2, &[0u8; 2]), Err(StudyError::Malformed(_))));
    assert_eq!(
        room.agg.handle(0, 9, &encode(study, MeanBody::Accept)),
        Err(StudyError::UnknownSender { from: 9, kind: kind::ACCEPT })
    );
    assert!(matches!(
        room.agg.handle(0, 2, &encode(StudyId([0; 16]), MeanBody::Accept)),
        Err(StudyError::WrongStudy { .. })
    ));
    let early =
        MeanBody::Release(ReleaseMessage { attempt: 1, cape: vec![0.0; D], conventional: None });
    assert!(matches!(
        room.agg.handle(0, 2, &encode(study, early)),
        Err(StudyError::WrongPhase { expected: kind::ACCEPT, got: kind::RELEASE, .. })
    ));
    room.agg.handle(0, 2, &encode(study, MeanBody::Accept)).unwrap();
    assert_eq!(
        room.agg.handle(0, 2, &encode(study, MeanBody::Accept)),
        Err(StudyError::Duplicate { from: 2, kind: kind::ACCEPT })
    );

    // run SecureAgg through, holding back the releases (site 2 has accepted already)
    let mut opening = Vec::new();
    for s in &mut room.sites[1..] {
        let accept = s.handle(0, AGG, &start[0].payload).unwrap();
        opening.extend(room.agg.handle(0, s.id(), &accept[0].payload).unwrap());
    }
    room.sites[0].handle(0, AGG, &start[0].payload).unwrap();
    assert!(matches!(room.agg.phase(), AggregatorPhase::Summing { attempt: 1, .. }));
    let wrong_attempt = MeanBody::SecAgg { attempt: 2, message: vec![] };
    assert!(matches!(
        room.agg.handle(0, 3, &encode(study, wrong_attempt)),
        Err(StudyError::WrongAttempt { expected: 1, got: 2, .. })
    ));
    room.deliver(opening, &|o| o.kind == kind::RELEASE);
    assert_eq!(room.agg.phase(), AggregatorPhase::Collecting { attempt: 1 });
    assert_eq!(room.held.len(), 3);

    let bad = |cape: Vec<f64>, conventional: Option<Vec<f64>>, attempt| {
        encode(study, MeanBody::Release(ReleaseMessage { attempt, cape, conventional }))
    };
    let refusals = [
        (bad(vec![0.0; D + 1], Some(vec![0.0; D]), 1), "d = 2"),
        (bad(vec![0.0, f64::INFINITY], Some(vec![0.0; D]), 1), "inf at index 1"),
        (bad(vec![0.0; D], None, 1), "conventional message is missing"),
    ];
    for (payload, says) in refusals {
        match room.agg.handle(0, 2, &payload) {
            Err(StudyError::Inconsistent { detail, .. }) => {
                assert!(detail.contains(says), "{detail}")
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(matches!(
        room.agg.handle(0, 2, &bad(vec![0.0; D], Some(vec![0.0; D]), 2)),
        Err(StudyError::WrongAttempt { expected: 1, got: 2, .. })
    ));
    // the genuine releases, then a copy
    let held = std::mem::take(&mut room.held);
    let (first_from, first) = held[0].clone();
    room.agg.handle(0, first_from, &first.payload).unwrap();
    assert_eq!(
        room.agg.handle(0, first_from, &first.payload),
        Err(StudyError::Duplicate { from: first_from, kind: kind::RELEASE })
    );
    let mut result = Vec::new();
    for (from, out) in &held[1..] {
        result = room.agg.handle(0, *from, &out.payload).unwrap();
    }
    assert_eq!(result[0].kind, kind::RESULT);
    let outcome = room.agg.outcome().expect("finished");
    assert_eq!(outcome.estimates().unwrap().survivors, SITES.to_vec());
    assert_eq!(
        room.agg.handle(0, first_from, &first.payload),
        Err(StudyError::AlreadyOver { from: first_from, kind: kind::RELEASE })
    );
    // the sites learn the result
    room.deliver(result, &|_| false);
    assert!(room.sites.iter().all(|s| s.phase() == SitePhase::Done));
}

#[test]
fn the_dashboard_can_stop_a_study() {
    let (mut agg, _) = aggregator(params());
    let out = agg.stop(5, "closing the room");
    assert_eq!((out.len(), out[0].kind, out[0].to), (1, kind::ABORT, To::All));
    assert_eq!(
        agg.outcome().unwrap().abort_reason(),
        Some(&AbortReason::Stopped { reason: "closing the room".into() })
    );
    assert!(agg.stop(6, "again").is_empty());
}

#[test]
fn a_decline_from_a_site_outside_the_running_attempt_is_refused() {
    // sites 2, 3, 4 accept, site 5 declines: attempt 1 runs among 2, 3, 4
    let params = StudyParams::new(vec![2, 3, 4, 5], 0.5, 1e-5, N_S).unwrap();
    let (mut agg, _) = aggregator(params);
    let study = agg.study();
    let decline = encode(study, MeanBody::Decline(DeclineReason::Params("no".into())));
    agg.handle(0, 5, &decline).unwrap();
    for s in [2, 3, 4] {
        agg.handle(0, s, &encode(study, MeanBody::Accept)).unwrap();
    }
    assert!(matches!(agg.phase(), AggregatorPhase::Summing { attempt: 1, .. }));
    assert_eq!(agg.attempts()[0].invited, vec![2, 3, 4]);
    assert!(matches!(
        agg.handle(0, 5, &decline),
        Err(StudyError::Inconsistent { from: 5, ref detail, .. }) if detail.contains("attempt 1")
    ));
    assert_eq!(agg.declined().len(), 1);
}
