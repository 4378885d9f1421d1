//! Property tests of SecureAgg on the simulator (spec §3): any set of at most S − t dropouts, at
//! any point, leaves the exact sum of the survivors' inputs; more dropouts abort cleanly, and
//! nothing that could unmask a site is sent.
#![cfg(not(target_arch = "wasm32"))]

use capelab_core::fixed::{FixedPoint, add_assign};
use capelab_core::secagg::sim::{DropMode, DropPoint, Sim, SimConfig, SimReport};
use capelab_core::secagg::{Encoding, Params, Phase, RoundError, SiteInput, SitePhase};
use proptest::prelude::*;
use proptest::sample::subsequence;

#[derive(Clone, Debug)]
struct Case {
    sites: usize,
    threshold: usize,
    len: usize,
    seed: u64,
    real: bool,
    /// (site index, drop point, disconnect?)
    dropouts: Vec<(usize, DropPoint, bool)>,
}

/// S in 3..=20, t in (S/2, S], and `count(S, t)` distinct sites dropping at random `points`.
fn case(
    count: fn(usize, usize) -> std::ops::RangeInclusive<usize>,
    points: &'static [DropPoint],
) -> impl Strategy<Value = Case> {
    (3usize..=20)
        .prop_flat_map(|s| (Just(s), (s / 2 + 1)..=s))
        .prop_filter("the range of dropouts is not empty", move |&(s, t)| !count(s, t).is_empty())
        .prop_flat_map(move |(s, t)| (Just(s), Just(t), count(s, t)))
        .prop_flat_map(move |(s, t, k)| {
            let drops = subsequence((0..s).collect::<Vec<_>>(), k).prop_flat_map(move |who| {
                let n = who.len();
                (
                    Just(who),
                    proptest::collection::vec(proptest::sample::select(points), n),
                    proptest::collection::vec(any::<bool>(), n),
                )
            });
            (Just(s), Just(t), 1usize..6, any::<u64>(), any::<bool>(), drops)
        })
        .prop_map(|(sites, threshold, len, seed, real, (who, at, disconnect))| Case {
            sites,
            threshold,
            len,
            seed,
            real,
            dropouts: who
                .into_iter()
                .zip(at)
                .zip(disconnect)
                .map(|((w, a), d)| (w, a, d))
                .collect(),
        })
}

fn run(c: &Case) -> (Sim, SimReport) {
    let fp = FixedPoint::new(32, 1000.0).unwrap();
    let mut rng = capelab_core::rng::derive(c.seed, "inputs");
    let inputs: Vec<SiteInput> = (0..c.sites)
        .map(|_| {
            if c.real {
                let values = (0..c.len)
                    .map(|_| rand::RngExt::random_range(&mut rng, -1000.0..1000.0))
                    .collect();
                SiteInput::Real { values, format: fp }
            } else {
                SiteInput::Ring((0..c.len).map(|_| rand::RngExt::random(&mut rng)).collect())
            }
        })
        .collect();
    let encoding = if c.real { Encoding::Fixed(fp) } else { Encoding::Ring };
    let mut config = SimConfig::new(c.seed, encoding);
    config.threshold = Some(c.threshold);
    for &(site, at, disconnect) in &c.dropouts {
        let mode = if disconnect { DropMode::Disconnect } else { DropMode::Silent };
        config = config.with_dropout(site, at, mode);
    }
    let mut sim = Sim::new(config, inputs).unwrap();
    let report = sim.run();
    (sim, report)
}

fn drop_point(c: &Case, i: usize) -> Option<DropPoint> {
    c.dropouts.iter().find(|d| d.0 == i).map(|d| d.1)
}

/// The points at which a site really drops out (one that vanishes after answering R3 has done
/// its part).
const DROPPING: [DropPoint; 5] = [
    DropPoint::BeforeAdvertise,
    DropPoint::AfterAdvertise,
    DropPoint::AfterShareKeys,
    DropPoint::AfterMaskedInput,
    DropPoint::DuringUnmask,
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn up_to_s_minus_t_dropouts_leave_the_exact_sum(c in case(|s, t| 0..=s - t, &DropPoint::ALL)) {
        let (sim, report) = run(&c);
        let agg = report.outcome.clone().expect("finished").expect("a sum");
        // U3: everyone whose masked input went out before it vanished
        let in_sum: Vec<usize> = (0..c.sites)
            .filter(|&i| drop_point(&c, i).is_none_or(|p| p.keeps_input_in_sum()))
            .collect();
        let mut expected = vec![0u64; c.len];
        for &i in &in_sum {
            add_assign(&mut expected, sim.site(i).ring_input());
        }
        prop_assert_eq!(&agg.sum, &expected, "bit-exact in Z_2^64");
        let survivors: Vec<u32> = in_sum.iter().map(|&i| sim.site_id(i)).collect();
        prop_assert_eq!(&agg.survivors, &survivors);
        if let (true, Some(decoded)) = (c.real, &agg.decoded) {
            for (j, d) in decoded.iter().enumerate() {
                let q: f64 = in_sum.iter().map(|&i| sim.site(i).quantised_input().unwrap()[j]).sum();
                prop_assert!((d - q).abs() < 1e-6, "decoded {} vs quantised sum {}", d, q);
            }
        }
        // every dropout is accounted for, in the round it missed
        for d in &agg.dropouts {
            let i = (0..c.sites).find(|&i| sim.site_id(i) == d.site).unwrap();
            let p = drop_point(&c, i).expect("only scripted sites drop");
            let expected_phase = match p {
                DropPoint::BeforeAdvertise => Phase::AdvertiseKeys,
                DropPoint::AfterAdvertise => Phase::ShareKeys,
                DropPoint::AfterShareKeys => Phase::MaskedInput,
                DropPoint::AfterMaskedInput | DropPoint::DuringUnmask => Phase::Unmask,
                DropPoint::AfterUnmask => unreachable!("it answered every round"),
            };
            prop_assert_eq!(d.phase, expected_phase, "site {} dropped at {:?}", d.site, p);
        }
        // every site still in the room gets the sum
        for (i, s) in report.sites.iter().enumerate() {
            if s.vanished.is_none() {
                let r = s.outcome.clone().expect("finished").expect("a sum");
                prop_assert_eq!(&r.sum, &agg.sum);
                prop_assert!(r.included);
                prop_assert_eq!(s.refusals, 0, "site {} refused something", i);
            }
        }
    }

    #[test]
    fn more_dropouts_abort_without_unmasking_anyone(c in case(|s, t| (s - t + 1)..=s, &DROPPING)) {
        let (_sim, report) = run(&c);
        let err = report.outcome.clone().expect("finished").expect_err("no sum");
        let is_too_few = matches!(err, RoundError::TooFewSites { .. });
        prop_assert!(is_too_few, "{}", err);
        let u3 = (0..c.sites).filter(|&i| drop_point(&c, i).is_none_or(|p| p.keeps_input_in_sum())).count();
        let answered_r3 = report.sites.iter().filter(|s| s.sent.contains(&"secagg/unmask-shares")).count();
        if u3 < c.threshold {
            prop_assert!(!report.any_unmask_shares_sent(), "U3 too small: nobody may reveal shares");
        }
        // even when the abort comes in R3, fewer than t sites revealed shares: no secret of
        // anyone can be interpolated
        prop_assert!(answered_r3 < c.threshold, "{} sites revealed shares, t = {}", answered_r3, c.threshold);
        for s in report.sites.iter().filter(|s| s.vanished.is_none()) {
            prop_assert!(s.phase == SitePhase::Aborted, "site {} ended in {:?}", s.id, s.phase);
        }
    }
}

#[test]
fn default_threshold_tolerates_s_minus_t_dropouts_at_every_point() {
    // Deterministic complement to the properties: S = 7, t = 5, two sites vanish at each pair of
    // points, in both modes.
    let s = 7;
    let t = Params::default_threshold(s);
    assert_eq!(t, 5);
    for (a, pa) in DropPoint::ALL.iter().enumerate() {
        for pb in &DropPoint::ALL[a..] {
            for disconnect in [true, false] {
                let c = Case {
                    sites: s,
                    threshold: t,
                    len: 3,
                    seed: 11,
                    real: false,
                    dropouts: vec![(1, *pa, disconnect), (5, *pb, !disconnect)],
                };
                let (sim, report) = run(&c);
                let agg = report
                    .outcome
                    .expect("finished")
                    .unwrap_or_else(|e| panic!("{pa:?} {pb:?}: {e}"));
                let mut expected = vec![0u64; 3];
                for i in
                    (0..s).filter(|&i| drop_point(&c, i).is_none_or(|p| p.keeps_input_in_sum()))
                {
                    add_assign(&mut expected, sim.site(i).ring_input());
                }
                assert_eq!(agg.sum, expected, "{pa:?} {pb:?} disconnect={disconnect}");
            }
        }
    }
}
