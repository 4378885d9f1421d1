//! SecAgg+ (Bell et al., CCS 2020) on the Harary graph: exact sums with and without dropouts,
//! the per-neighbourhood threshold, and per-site messages that grow with k, not S.

use capelab_core::codec;
use capelab_core::secagg::lockstep::{Actor, Lockstep, Work};
use capelab_core::secagg::messages::{Body, SecAggMessage};
use capelab_core::secagg::sim::{DropMode, DropPoint, Sim, SimConfig};
use capelab_core::secagg::{
    AggregatorConfig, ConfigError, Encoding, Graph, Params, Phase, RoundError, SiteInput, Topology,
    choose_harary,
};
use capelab_core::wire::ParticipantId;

const LEN: usize = 16;

fn input(id: ParticipantId) -> Vec<u64> {
    (0..LEN as u64).map(|j| (j + 1).wrapping_mul(u64::from(id)).wrapping_mul(0x9e37_79b9)).collect()
}

fn expected_sum(sites: u32, absent: &[ParticipantId]) -> Vec<u64> {
    (0..LEN)
        .map(|j| {
            (1..=sites)
                .filter(|id| !absent.contains(id))
                .fold(0u64, |a, id| a.wrapping_add(input(id)[j]))
        })
        .collect()
}

fn harary(sites: u32, k: usize, t: usize, seed: u64) -> Params {
    Params::new((1..=sites).collect(), LEN, Encoding::Ring)
        .unwrap()
        .with_graph(Graph::Harary { k, seed }, t)
        .unwrap()
}

fn lockstep(params: Params, leaving: &[ParticipantId]) -> Lockstep {
    let s = params.sites.len() as u32;
    let inputs = (1..=s).map(|id| SiteInput::Ring(input(id))).collect();
    Lockstep::new(AggregatorConfig::new(params).unwrap(), inputs, 5, leaving).unwrap()
}

/// The (k, t) the helper picks for S sites at δ = 0.1, γ = 0.05, σ = 20.
fn chosen(sites: usize) -> (usize, usize, usize) {
    let c = choose_harary(sites, 0.1, 0.05, 20.0).unwrap();
    (c.k, c.threshold, c.dropouts)
}

#[test]
fn sums_are_exact_without_dropouts() {
    for (s, k, t) in [(16u32, 6usize, 4usize), (64, 8, 6)] {
        let mut ls = lockstep(harary(s, k, t, 1), &[]);
        ls.run(&mut |w| w.run()).unwrap();
        assert_eq!(ls.outcome().unwrap().unwrap().sum, expected_sum(s, &[]), "S = {s}");
    }
    let (k, t, _) = chosen(64);
    let mut ls = lockstep(harary(64, k, t, 2), &[]);
    ls.run(&mut |w| w.run()).unwrap();
    assert_eq!(ls.outcome().unwrap().unwrap().sum, expected_sum(64, &[]), "k = {k}, t = {t}");
}

#[test]
fn sums_are_exact_with_the_tolerated_dropouts() {
    // S = 16, k = 6, t = 4: any two sites may leave after sharing their keys (k − t = 2).
    for leaving in [[3u32, 4], [1, 16], [7, 11]] {
        let mut ls = lockstep(harary(16, 6, 4, 9), &leaving);
        ls.run(&mut |w| w.run()).unwrap();
        let agg = ls.outcome().unwrap().unwrap();
        assert_eq!(agg.sum, expected_sum(16, &leaving), "{leaving:?}");
        assert_eq!(agg.survivors.len(), 14);
    }
    // S = 64 at the helper's (k, t) for δ = 0.1: ⌈δS⌉ = 7 sites leave.
    let (k, t, d) = chosen(64);
    assert_eq!(d, 7);
    let leaving: Vec<ParticipantId> = (1..=64).step_by(10).take(d).collect();
    let mut ls = lockstep(harary(64, k, t, 3), &leaving);
    ls.run(&mut |w| w.run()).unwrap();
    assert_eq!(ls.outcome().unwrap().unwrap().sum, expected_sum(64, &leaving));
}

#[test]
fn dropouts_at_every_point_in_the_simulated_room() {
    // The full room (transport, deadlines): one site per drop point on S = 16, k = 6, t = 4,
    // spread over the cycle so that no neighbourhood loses more than k − t = 2.
    let points = [
        (0usize, DropPoint::BeforeAdvertise, DropMode::Disconnect),
        (5, DropPoint::AfterShareKeys, DropMode::Silent),
        (10, DropPoint::DuringUnmask, DropMode::Disconnect),
    ];
    let mut config = SimConfig::new(4, Encoding::Ring).with_graph(Graph::Harary { k: 6, seed: 21 });
    config.threshold = Some(4);
    for (site, at, mode) in points {
        config = config.with_dropout(site, at, mode);
    }
    let inputs: Vec<SiteInput> = (1..=16).map(|id| SiteInput::Ring(input(id))).collect();
    let mut sim = Sim::new(config, inputs).unwrap();
    let report = sim.run();
    let agg = report.outcome.clone().unwrap().unwrap();
    // Sim's sites are room participants; their inputs are input(i + 1) by position.
    let ids: Vec<ParticipantId> = (0..16).map(|i| sim.site_id(i)).collect();
    let in_sum: Vec<u32> =
        (0..16).filter(|&i| agg.survivors.contains(&ids[i])).map(|i| i as u32 + 1).collect();
    assert_eq!(in_sum.len(), 14, "sites 0 and 5 are out, site 10's input stays in");
    let absent: Vec<u32> = (1..=16).filter(|id| !in_sum.contains(id)).collect();
    assert_eq!(absent, vec![1, 6]);
    assert_eq!(agg.sum, expected_sum(16, &absent));
}

#[test]
fn below_the_neighbourhood_threshold_the_round_fails_clearly() {
    // S = 16, k = 4, t = 3: three of site 1's four neighbours leave after R1, so its
    // neighbourhood keeps only 2 live sites (itself included) when R2 must be unmasked.
    let params = harary(16, 4, 3, 13);
    let top = Topology::new(&params);
    let near: Vec<ParticipantId> = top.neighbourhood(1).into_iter().filter(|&v| v != 1).collect();
    let leaving = &near[..3];
    let mut ls = lockstep(params, leaving);
    let mut unmask_shares_sent = 0;
    // The lock-step driver still hands the aggregator the R2 answers after it aborted, which it
    // refuses (AlreadyOver): the run itself reports that; the outcome says why it ended.
    let _ = ls.run(&mut |w: &mut Work<'_>| {
        w.run();
        if w.phase == Phase::Unmask && matches!(w.actor, Actor::Site(_)) {
            unmask_shares_sent += w.sent_bytes();
        }
    });
    let err = ls.outcome().unwrap().unwrap_err().clone();
    match &err {
        RoundError::TooFewNeighbours { have, need: 3, phase: Phase::MaskedInput, .. } => {
            assert!(*have < 3)
        }
        other => panic!("expected TooFewNeighbours, got {other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains("neighbourhood") && text.contains("need t = 3"), "{text}");
    assert_eq!(unmask_shares_sent, 0, "nothing that could unmask a site was revealed");
}

/// Per site and round: (key-directory entries, ciphertexts sent, ciphertexts received,
/// unmask-request ids, shares revealed), read off the messages themselves.
fn counts(params: Params) -> Vec<(usize, usize, usize, usize, usize)> {
    let s = params.sites.len();
    let mut out = vec![(0, 0, 0, 0, 0); s + 1];
    let mut ls = lockstep(params, &[]);
    let mut requests: Vec<(Option<ParticipantId>, Body)> = Vec::new();
    ls.run(&mut |w: &mut Work<'_>| {
        w.run();
        for o in w.outputs() {
            let m: SecAggMessage = codec::decode("secagg", &o.payload).unwrap();
            match (w.actor, o.to) {
                (Actor::Site(id), _) => requests.push((Some(id), m.body)),
                (Actor::Aggregator, capelab_core::wire::To::One(id)) => {
                    requests.push((Some(id + 1000), m.body))
                }
                (Actor::Aggregator, _) => requests.push((None, m.body)),
            }
        }
    })
    .unwrap();
    for (who, body) in requests {
        match (who, body) {
            (Some(id), Body::KeyDirectory(e)) if id > 1000 => out[(id - 1000) as usize].0 = e.len(),
            (Some(id), Body::EncryptedShares(l)) if id <= 1000 => out[id as usize].1 = l.len(),
            (Some(id), Body::ForwardedShares(l)) if id > 1000 => {
                out[(id - 1000) as usize].2 = l.len()
            }
            (Some(id), Body::UnmaskRequest { survivors, dropped }) if id > 1000 => {
                out[(id - 1000) as usize].3 = survivors.len() + dropped.len()
            }
            (Some(id), Body::UnmaskShares { self_mask, secret_key }) if id <= 1000 => {
                out[id as usize].4 = self_mask.len() + secret_key.len()
            }
            (None, Body::KeyDirectory(e)) => out.iter_mut().for_each(|c| c.0 = e.len()),
            (None, Body::UnmaskRequest { survivors, dropped }) => {
                out.iter_mut().for_each(|c| c.3 = survivors.len() + dropped.len())
            }
            _ => {}
        }
    }
    out.remove(0);
    out
}

#[test]
fn per_site_messages_grow_with_k_not_s() {
    for s in [64u32, 256] {
        let k = 8;
        for (id, c) in (1..).zip(counts(harary(s, k, 6, 4))) {
            assert_eq!(c, (k + 1, k, k, k + 1, k + 1), "S = {s}, site {id}");
        }
    }
    // the complete graph, for contrast: everything is S − 1 or S
    for c in counts(Params::new((1..=16).collect(), LEN, Encoding::Ring).unwrap()) {
        assert_eq!(c, (16, 15, 15, 16, 16));
    }
}

#[test]
fn bad_graph_parameters_are_named() {
    let base = Params::new((1..=16).collect(), LEN, Encoding::Ring).unwrap();
    let with = |k, t| base.clone().with_graph(Graph::Harary { k, seed: 0 }, t);
    assert_eq!(with(15, 9), Err(ConfigError::HararyDegreeOutOfRange { k: 15, sites: 16 }));
    assert_eq!(with(0, 1), Err(ConfigError::HararyDegreeOutOfRange { k: 0, sites: 16 }));
    assert_eq!(with(5, 4), Err(ConfigError::HararyDegreeOdd { k: 5 }));
    assert_eq!(with(6, 8), Err(ConfigError::ThresholdAboveNeighbourhood { threshold: 8, k: 6 }));
    let half = with(6, 3).unwrap_err();
    assert_eq!(half, ConfigError::ThresholdAtMostHalfNeighbourhood { threshold: 3, k: 6 });
    assert!(half.to_string().contains("t > (k + 1)/2"), "{half}");
    assert!(with(14, 8).is_ok(), "k = S − 2 is the largest sparse degree");
    let e = with(15, 9).unwrap_err().to_string();
    assert!(e.contains("complete graph"), "{e}");
}

#[test]
fn the_complete_graph_is_the_default_and_old_params_decode() {
    let p = Params::new(vec![1, 2, 3], 4, Encoding::Ring).unwrap();
    assert_eq!(p.graph, Graph::Complete);
    // JSON written before the graph existed still reads, as the complete graph
    let json = r#"{"sites":[1,2,3],"threshold":3,"vector_len":4,"encoding":"Ring"}"#;
    let old: Params = serde_json::from_str(json).unwrap();
    assert_eq!(old, p);
}
