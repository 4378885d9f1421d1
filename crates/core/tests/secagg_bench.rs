//! Time per round per role, on the bare roles ([`Lockstep`]: no transport, no simulator): what
//! `cape bench secagg` reports. Ignored by default; run it in release:
//!
//! `cargo test --release -p capelab-core --test secagg_bench -- --ignored --nocapture`
//!
//! A site's time is its `handle` call for the round's request (key generation, share encryption,
//! masking, share lookup, with message encoding and decoding). The aggregator's time is the sum of
//! its `handle` calls for the round's answers, including the call that closes the round (in R3:
//! reconstruction and unmasking). Each figure is the best of three runs: other processes only
//! ever add time.
#![cfg(not(target_arch = "wasm32"))]

use std::time::{Duration, Instant};

use capelab_core::secagg::lockstep::{Actor, Lockstep, Work};
use capelab_core::secagg::{AggregatorConfig, Encoding, Params, Phase, SiteInput};
use capelab_core::wire::ParticipantId;

#[derive(Default)]
struct RoundTiming {
    sites: Vec<Duration>,
    site_bytes: usize,
    aggregator: Duration,
}

/// One instance with S sites and vectors of length `len`; the last `dropped` sites leave right
/// after R1, the costliest case for the aggregator (it rebuilds their keys and removes their
/// pairwise masks from every survivor).
fn measure(s: u32, len: usize, dropped: u32) -> Vec<RoundTiming> {
    let params = Params::new((1..=s).collect(), len, Encoding::Ring).unwrap();
    let config = AggregatorConfig::new(params).unwrap().with_retain_masked_inputs(false);
    let inputs =
        (1..=s).map(|id| SiteInput::Ring((0..len as u64).map(|j| j * u64::from(id)).collect()));
    let leaving: Vec<ParticipantId> = (s - dropped + 1..=s).collect();
    let mut ls = Lockstep::new(config, inputs.collect(), 1, &leaving).unwrap();
    let mut rounds: Vec<RoundTiming> = (0..4).map(|_| RoundTiming::default()).collect();
    let mut probe = |w: &mut Work<'_>| {
        let t0 = Instant::now();
        w.run();
        let dt = t0.elapsed();
        let r = &mut rounds[match w.phase {
            Phase::AdvertiseKeys => 0,
            Phase::ShareKeys => 1,
            Phase::MaskedInput => 2,
            Phase::Unmask => 3,
        }];
        match w.actor {
            Actor::Site(_) => {
                r.sites.push(dt);
                r.site_bytes = r.site_bytes.max(w.sent_bytes());
            }
            Actor::Aggregator => r.aggregator += dt,
        }
    };
    ls.run(&mut probe).unwrap();
    let expected: Vec<u64> = (0..len as u64)
        .map(|j| (1..=u64::from(s - dropped)).fold(0u64, |a, id| a.wrapping_add(j * id)))
        .collect();
    assert_eq!(ls.outcome().unwrap().unwrap().sum, expected, "S = {s}, D = {len}");
    rounds
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[test]
#[ignore = "timing; run in release with --ignored --nocapture"]
fn secagg_round_timings() {
    println!(
        "| S | D | dropped | round | site mean ms | site max ms | aggregator ms | bytes/site |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for s in [4u32, 16, 64] {
        let t = Params::default_threshold(s as usize) as u32;
        for len in [1_000usize, 100_000] {
            for dropped in [0, s - t] {
                let runs: Vec<Vec<RoundTiming>> =
                    (0..3).map(|_| measure(s, len, dropped)).collect();
                for round in 0..4 {
                    let best = |f: &dyn Fn(&RoundTiming) -> f64| {
                        runs.iter().map(|r| f(&r[round])).fold(f64::INFINITY, f64::min)
                    };
                    let mean = best(&|r| {
                        ms(r.sites.iter().sum::<Duration>()) / r.sites.len().max(1) as f64
                    });
                    let max = best(&|r| ms(r.sites.iter().max().copied().unwrap_or_default()));
                    let agg = best(&|r| ms(r.aggregator));
                    let bytes = runs[0][round].site_bytes;
                    println!(
                        "| {s} | {len} | {dropped} | R{round} | {mean:.3} | {max:.3} | {agg:.3} | {bytes} |"
                    );
                }
            }
        }
    }
}
