//! The short version of the load and soak benchmark (`scripts/bench`, `CAPE_BENCH_ONLY=relay`),
//! through the same traffic code as `examples/load`: a real relay on a socket, clients over real
//! websockets. Correctness only — nothing lost, duplicated, reordered, misrouted or dropped; the
//! speed targets live in the benchmark.

mod common;

#[path = "../examples/load/traffic.rs"]
mod traffic;

use std::time::{Duration, Instant};

use capelab_relay::Clock;
use common::start;
use traffic::{ExchangeOptions, SoakOptions, StuckOptions};

/// A relay on the system clock, so its rate limits refill as they do in production.
async fn relay() -> common::Relay {
    start(|config| config.clock = Clock::system()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_clients_exchange_envelopes_and_none_is_lost_duplicated_or_reordered() {
    let relay = relay().await;
    let options = ExchangeOptions {
        rooms: 2,
        members: 8,
        rate: 50.0,
        payload_bytes: 32,
        warmup: Duration::from_millis(500),
        duration: Duration::from_millis(2500),
    };
    let report = traffic::exchange(&relay.ws_url(), &options).await.expect("the run");
    let c = &report.correctness;
    assert!(c.clean(), "{c:#?}");
    // Each of the 16 senders sent up to 150 messages (fewer on a busy machine); half of them
    // reached 7 members, half one.
    assert!(c.sent >= 16 * 20, "{c:#?}");
    assert!(c.delivered >= c.sent * 3, "{c:#?}");
    assert!(report.latency.count > 0, "{report:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_clients_stay_connected_with_pings_and_presence() {
    let relay = relay().await;
    let options = SoakOptions {
        clients: 50,
        room_size: 10,
        duration: Duration::from_secs(5),
        echo_every: Duration::from_millis(250),
        churn_every: Duration::from_millis(1000),
    };
    let report = traffic::soak(&relay.ws_url(), &options, Instant::now()).await.expect("the run");
    assert!(report.dropped.is_empty(), "{report:#?}");
    assert_eq!(report.echoes_lost, 0, "{report:#?}");
    assert_eq!(report.stable_left_events, 0, "{report:#?}");
    assert!(report.refusals.is_empty(), "{report:#?}");
    assert!(report.echoes_sent >= 50 * 2, "{report:#?}");
    // The churners left and came back (about five times each), and the others heard it.
    assert!(report.churn_cycles >= report.rooms as u64, "{report:#?}");
    assert!(report.presence_events >= 2 * report.churn_cycles, "{report:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_never_reads_is_dropped_and_the_others_lose_nothing() {
    // A small outbox cap, so the stuck member falls behind in a second or two.
    let relay = start(|config| {
        config.clock = Clock::system();
        config.limits.max_frame_bytes = 256 * 1024;
        config.limits.max_queue_bytes = 1024 * 1024;
    })
    .await;
    let options = StuckOptions {
        members: 4,
        rate: 50.0,
        payload_bytes: 32,
        bulk_bytes: 48 * 1024,
        bulk_rate: 20.0,
        baseline: Duration::from_millis(500),
        after_drop: Duration::from_millis(500),
        give_up: common::HANG_GUARD,
    };
    let report =
        traffic::never_reading(&relay.ws_url(), &options, Instant::now()).await.expect("the run");
    assert!(report.secs_until_dropped.is_some(), "{report:#?}");
    assert_eq!(report.ending.close_code, Some(capelab_relay::close_code::POLICY), "{report:#?}");
    let reason = report.ending.close_reason.as_deref().unwrap_or_default();
    assert!(reason.starts_with("fell behind"), "{report:#?}");
    assert!(report.correctness.clean(), "{report:#?}");
}
