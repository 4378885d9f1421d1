//! Time per round per role, driving the roles directly (no simulator, no transport): what
//! `cape bench secagg` will report. Ignored by default; run it in release:
//!
//! `cargo test --release -p capelab-core --test secagg_bench -- --ignored --nocapture`
//!
//! Each site's time is the time of its `handle` call for that round's request (key generation,
//! share encryption, masking, share lookup); the aggregator's time is the sum of its `handle`
//! calls for the round's answers, including closing the round (in R3: reconstruction and
//! unmasking). Payloads are real `codec` bytes, so encoding and decoding are counted.
#![cfg(not(target_arch = "wasm32"))]

use std::time::{Duration, Instant};

use capelab_core::rng::derive;
use capelab_core::secagg::{
    Aggregator, AggregatorConfig, Encoding, Outgoing, Params, Site, SiteInput,
};
use capelab_core::wire::{ParticipantId, To};

const AGG: ParticipantId = 0;

struct RoundTiming {
    /// Per-site times of this round's `handle`.
    sites: Vec<Duration>,
    aggregator: Duration,
    /// Bytes each site sent this round (mean).
    site_bytes: usize,
}

/// Runs one instance in which the last `dropped` sites leave right after R1 (the most expensive
/// case for the aggregator: it must rebuild their keys and remove their pairwise masks from every
/// survivor); returns the R0..R3 timings.
fn measure(s: u32, len: usize, dropped: u32) -> Vec<RoundTiming> {
    let ids: Vec<ParticipantId> = (1..=s).collect();
    let params = Params::new(ids.clone(), len, Encoding::Ring).unwrap();
    let config = AggregatorConfig::new(params).unwrap().with_retain_masked_inputs(false);
    let (mut agg, begin) = Aggregator::start(config, &mut derive(1, "agg"), 0);
    let mut sites: Vec<Site> = ids
        .iter()
        .map(|&id| {
            let input = (0..len as u64).map(|j| j * u64::from(id)).collect();
            Site::new(id, AGG, SiteInput::Ring(input), derive(1, &format!("{id}"))).unwrap()
        })
        .collect();
    let gone = |id: ParticipantId| id > s - dropped;

    let mut requests = begin;
    let mut timings = Vec::new();
    for round in 0..4 {
        let mut agg_time = Duration::ZERO;
        if round == 2 {
            for id in ids.iter().copied().filter(|&id| gone(id)) {
                let t0 = Instant::now();
                assert!(agg.handle_departure(0, id).unwrap().is_empty());
                agg_time += t0.elapsed();
            }
        }
        // every site still here answers this round's request
        let mut site_times = Vec::new();
        let mut answers: Vec<(ParticipantId, Outgoing)> = Vec::new();
        for site in sites.iter_mut().filter(|site| round < 2 || !gone(site.id())) {
            let id = site.id();
            for req in requests.iter().filter(|o| o.to == To::All || o.to == To::One(id)) {
                let t0 = Instant::now();
                let replies = site.handle(0, AGG, &req.payload).unwrap();
                site_times.push(t0.elapsed());
                answers.extend(replies.into_iter().map(|r| (id, r)));
            }
        }
        let site_bytes =
            answers.iter().map(|(_, a)| a.payload.len()).sum::<usize>() / answers.len().max(1);
        // the aggregator collects them; the last answer closes the round
        requests = Vec::new();
        for (from, answer) in answers {
            let t0 = Instant::now();
            requests.extend(agg.handle(0, from, &answer.payload).unwrap());
            agg_time += t0.elapsed();
        }
        timings.push(RoundTiming { sites: site_times, aggregator: agg_time, site_bytes });
    }
    let sum = &agg.outcome().expect("finished").expect("a sum").sum;
    let expected: Vec<u64> = (0..len as u64)
        .map(|j| (1..=u64::from(s - dropped)).fold(0u64, |a, id| a.wrapping_add(j * id)))
        .collect();
    assert_eq!(sum, &expected, "S = {s}, D = {len}, dropped = {dropped}");
    timings
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
                let timings = measure(s, len, dropped);
                for (round, r) in timings.iter().enumerate() {
                    let total: Duration = r.sites.iter().sum();
                    let max = r.sites.iter().max().copied().unwrap_or_default();
                    println!(
                        "| {s} | {len} | {dropped} | R{round} | {:.2} | {:.2} | {:.2} | {} |",
                        ms(total) / r.sites.len() as f64,
                        ms(max),
                        ms(r.aggregator),
                        r.site_bytes,
                    );
                }
            }
        }
    }
}
