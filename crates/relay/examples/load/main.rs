/*!
`load`: the relay's load and soak benchmark (issue 16 §2), a load generator in Rust so the client
is not the bottleneck. It talks to a running relay over its real wire protocol and prints one JSON
object: the throughput scenario (rooms of members exchanging small envelopes at a pace under the
relay's per-sender message rate), the soak (many clients connected for minutes, with
application pings and presence churn, and the relay's RSS over time), and a member that never
reads (the relay's RSS stays under its outbox cap, the member is dropped with the relay's reason,
and the others' latency with and without it).

    cargo run --release -p capelab-relay --example load -- --url ws://127.0.0.1:PORT/ws \
        --relay-pid PID [--scenarios throughput,soak,stuck] [--seconds 30] ...

With several `--url`s (relays started with `--broker`), the throughput scenario spreads each
room's members over them, so most envelopes cross the broker (`CAPE_BENCH_ONLY=broker`).

`scripts/bench` (`CAPE_BENCH_ONLY=relay`) starts a release relay on a free port and runs this;
see there for the relay flags it passes. `--relay-pid` is only for RSS (from /proc/PID/status).
*/

mod traffic;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::{Value, json};

use traffic::{ExchangeOptions, SoakOptions, StuckOptions};

#[derive(Debug, Parser)]
#[command(name = "load")]
struct Args {
    /// The relay's websocket URL; several (comma-separated) for relays behind one broker: the
    /// throughput scenario then spreads each room's members over them (the others use the first).
    #[arg(long, value_delimiter = ',', required = true)]
    url: Vec<String>,
    /// The name of the benchmark in the output ("relay", or "broker" for relays behind one).
    #[arg(long, default_value = "relay")]
    bench: String,
    /// The relay's process id, to sample its RSS (VmRSS in /proc/PID/status).
    #[arg(long)]
    relay_pid: Option<u32>,
    /// The relay's flags, recorded in the output as given (the limits in force).
    #[arg(long, default_value = "")]
    relay_flags: String,
    /// Which scenarios to run, in this order.
    #[arg(long, default_value = "throughput,soak,stuck", value_delimiter = ',')]
    scenarios: Vec<String>,
    /// RSS sampling period.
    #[arg(long, default_value_t = 1000)]
    rss_every_ms: u64,

    /// Throughput: measured seconds (after the warm-up).
    #[arg(long, default_value_t = 30.0)]
    seconds: f64,
    #[arg(long, default_value_t = 2.0)]
    warmup_seconds: f64,
    /// Throughput: rooms, and members in each (64 clients by default).
    #[arg(long, default_value_t = 8)]
    rooms: usize,
    #[arg(long, default_value_t = 8)]
    members: usize,
    /// Small envelopes per second per sender (the relay's default limit is 200, bursts of 400),
    /// one throughput run per rate: 80 gives about 20 000 delivered/s (the goal's load), 150 the
    /// most that stays well under the limit.
    #[arg(long, default_value = "80,150", value_delimiter = ',')]
    rate: Vec<f64>,
    /// Payload bytes of a small envelope, before base64.
    #[arg(long, default_value_t = 32)]
    payload_bytes: usize,

    /// Soak: stable clients, their room size (plus one churner per room) and seconds.
    #[arg(long, default_value_t = 300)]
    soak_clients: usize,
    #[arg(long, default_value_t = 10)]
    soak_room_size: usize,
    #[arg(long, default_value_t = 600.0)]
    soak_seconds: f64,
    /// Soak: each client echoes to itself this often; each room's churner resumes this often.
    #[arg(long, default_value_t = 1000)]
    echo_every_ms: u64,
    #[arg(long, default_value_t = 5000)]
    churn_every_ms: u64,

    /// Never-reading member: room size (the last member is stuck), small envelopes per second
    /// per other member, bulk frames to the stuck one (payload bytes before base64, per second
    /// per other member), seconds of baseline with everyone reading and after the drop.
    #[arg(long, default_value_t = 8)]
    stuck_members: usize,
    #[arg(long, default_value_t = 100.0)]
    stuck_rate: f64,
    #[arg(long, default_value_t = 196_608)]
    bulk_bytes: usize,
    #[arg(long, default_value_t = 12.0)]
    bulk_rate: f64,
    #[arg(long, default_value_t = 10.0)]
    stuck_baseline_seconds: f64,
    #[arg(long, default_value_t = 5.0)]
    stuck_after_seconds: f64,
    /// The relay's per-connection outbox cap (`--max-queue-bytes`), for the report.
    #[arg(long, default_value_t = 256 * 1024 * 1024)]
    queue_cap: u64,
}

/// RSS samples: (seconds since the generator started, KiB).
type Samples = Arc<Mutex<Vec<(f64, u64)>>>;

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn spawn_sampler(pid: u32, every: Duration, epoch: Instant) -> Samples {
    let samples: Samples = Arc::default();
    let out = samples.clone();
    std::thread::spawn(move || {
        while let Some(kib) = rss_kib(pid) {
            out.lock().unwrap().push((epoch.elapsed().as_secs_f64(), kib));
            std::thread::sleep(every);
        }
    });
    samples
}

fn mib(kib: u64) -> f64 {
    (kib as f64 / 1024.0 * 10.0).round() / 10.0
}

/// RSS over `[from, until]`: start, max, end, and the least-squares slope.
fn rss_summary(samples: &Samples, from: f64, until: f64) -> Value {
    let window: Vec<(f64, u64)> =
        samples.lock().unwrap().iter().copied().filter(|&(t, _)| t >= from && t <= until).collect();
    if window.len() < 2 {
        return json!({ "samples": window.len(), "note": "no RSS samples (no --relay-pid?)" });
    }
    let n = window.len() as f64;
    let mean_t = window.iter().map(|s| s.0).sum::<f64>() / n;
    let mean_r = window.iter().map(|s| s.1 as f64).sum::<f64>() / n;
    let cov: f64 = window.iter().map(|&(t, r)| (t - mean_t) * (r as f64 - mean_r)).sum();
    let var: f64 = window.iter().map(|&(t, _)| (t - mean_t).powi(2)).sum();
    let slope_kib_per_s = if var > 0.0 { cov / var } else { 0.0 };
    let span = window.last().unwrap().0 - window[0].0;
    let start = window[0].1;
    let trend_kib = slope_kib_per_s * span;
    // Flat: no growth trend; the fitted rise over the whole window is under 2 % of the start,
    // or under 1 MiB. (A fall, memory given back, is not growth.)
    let flat = trend_kib <= (start as f64 * 0.02).max(1024.0);
    json!({
        "samples": window.len(),
        "start_mib": mib(start),
        "max_mib": mib(window.iter().map(|s| s.1).max().unwrap()),
        "end_mib": mib(window.last().unwrap().1),
        "slope_kib_per_min": (slope_kib_per_s * 60.0 * 10.0).round() / 10.0,
        "trend_over_window_mib": (trend_kib / 1024.0 * 100.0).round() / 100.0,
        "flat": flat,
        "flat_means": "the least-squares rise over the window is under max(2 % of the start, 1 MiB)",
    })
}

/// RSS samples of a window, downsampled to at most `max` points, as [seconds, MiB].
fn rss_points(samples: &Samples, from: f64, until: f64, max: usize) -> Value {
    let window: Vec<(f64, u64)> =
        samples.lock().unwrap().iter().copied().filter(|&(t, _)| t >= from && t <= until).collect();
    let step = window.len().div_ceil(max.max(1)).max(1);
    let points: Vec<Value> = window
        .iter()
        .step_by(step)
        .map(|&(t, kib)| json!([((t - from) * 10.0).round() / 10.0, mib(kib)]))
        .collect();
    Value::Array(points)
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.max(0.0))
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let epoch = Instant::now();
    let samples = match args.relay_pid {
        Some(pid) => spawn_sampler(pid, Duration::from_millis(args.rss_every_ms.max(10)), epoch),
        None => Samples::default(),
    };
    let mut out = json!({
        "bench": args.bench,
        "url": args.url,
        "relay_flags": args.relay_flags,
        "machine_cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "goals": { "delivered_per_second": 20000, "p99_ms": 5.0, "soak_dropped": 0 },
    });
    let mut failed = Vec::new();
    let idle_rss = args.relay_pid.and_then(rss_kib);
    if let Some(kib) = idle_rss {
        out["relay_rss_at_start_mib"] = json!(mib(kib));
    }

    for scenario in &args.scenarios {
        eprintln!("load: {scenario}…");
        match scenario.as_str() {
            "throughput" => {
                let mut runs = Vec::new();
                for &rate in &args.rate {
                    let options = ExchangeOptions {
                        rooms: args.rooms,
                        members: args.members,
                        rate,
                        payload_bytes: args.payload_bytes,
                        warmup: secs(args.warmup_seconds),
                        duration: secs(args.seconds),
                    };
                    let from = epoch.elapsed().as_secs_f64();
                    match traffic::exchange_across(&args.url, &options).await {
                        Ok(report) => {
                            if !report.correctness.clean() {
                                failed.push("throughput: lost, duplicated, reordered or dropped");
                            }
                            let mut value = serde_json::to_value(&report).unwrap();
                            value["relay_rss"] =
                                rss_summary(&samples, from, epoch.elapsed().as_secs_f64());
                            value["goal_met"] = json!(
                                report.delivered_per_second >= 20_000.0
                                    && report.latency.p99_ms < 5.0
                            );
                            runs.push(value);
                        }
                        Err(e) => {
                            failed.push("throughput: could not run");
                            runs.push(json!({ "error": e }));
                        }
                    }
                }
                out["throughput"] = Value::Array(runs);
            }
            "stuck" => {
                let options = StuckOptions {
                    members: args.stuck_members,
                    rate: args.stuck_rate,
                    payload_bytes: args.payload_bytes,
                    bulk_bytes: args.bulk_bytes,
                    bulk_rate: args.bulk_rate,
                    baseline: secs(args.stuck_baseline_seconds),
                    after_drop: secs(args.stuck_after_seconds),
                    give_up: Duration::from_secs(180),
                };
                let before = epoch.elapsed().as_secs_f64();
                let rss_before = args.relay_pid.and_then(rss_kib);
                match traffic::never_reading(&args.url[0], &options, epoch).await {
                    Ok(report) => {
                        if !report.correctness.clean() || report.secs_until_dropped.is_none() {
                            failed.push("stuck: the others lost messages, or it was never dropped");
                        }
                        let mut value = serde_json::to_value(&report).unwrap();
                        let mut rss =
                            rss_summary(&samples, report.stuck_from, report.stuck_until + 2.0);
                        // A rise is the point here (up to the cap, then given back): not a trend.
                        if let Some(map) = rss.as_object_mut() {
                            map.remove("flat");
                            map.remove("flat_means");
                        }
                        let max_kib = samples
                            .lock()
                            .unwrap()
                            .iter()
                            .filter(|s| s.0 >= before)
                            .map(|s| s.1)
                            .max();
                        if let (Some(b), Some(m)) = (rss_before, max_kib) {
                            let growth = m.saturating_sub(b) * 1024;
                            value["rss_growth_mib"] = json!(mib(growth / 1024));
                            // Bounded: the growth is within the cap plus a quarter for allocator
                            // slack (frames are freed, not returned to the OS at once).
                            value["rss_bounded_by_cap"] = json!(growth <= args.queue_cap * 5 / 4);
                        }
                        value["queue_cap_mib"] = json!(args.queue_cap as f64 / 1048576.0);
                        value["relay_rss"] = rss;
                        value["relay_rss_points"] =
                            rss_points(&samples, before, epoch.elapsed().as_secs_f64(), 120);
                        value["relay_rss_after_mib"] =
                            json!(args.relay_pid.and_then(rss_kib).map(mib));
                        value["p99_ratio_stuck_vs_all_reading"] = json!(
                            (report.latency_one_stuck.p99_ms
                                / report.latency_all_reading.p99_ms.max(1e-9)
                                * 100.0)
                                .round()
                                / 100.0
                        );
                        out["stuck"] = value;
                    }
                    Err(e) => {
                        failed.push("stuck: could not run");
                        out["stuck"] = json!({ "error": e });
                    }
                }
            }
            "soak" => {
                let options = SoakOptions {
                    clients: args.soak_clients,
                    room_size: args.soak_room_size,
                    duration: secs(args.soak_seconds),
                    echo_every: Duration::from_millis(args.echo_every_ms.max(1)),
                    churn_every: Duration::from_millis(args.churn_every_ms.max(1)),
                };
                match traffic::soak(&args.url[0], &options, epoch).await {
                    Ok(report) => {
                        if !report.dropped.is_empty()
                            || report.echoes_lost > 0
                            || report.stable_left_events > 0
                        {
                            failed.push("soak: clients dropped or echoes lost");
                        }
                        let mut value = serde_json::to_value(&report).unwrap();
                        value["relay_rss"] =
                            rss_summary(&samples, report.steady_from, report.steady_until);
                        value["relay_rss_points"] =
                            rss_points(&samples, report.steady_from, report.steady_until, 120);
                        out["soak"] = value;
                    }
                    Err(e) => {
                        failed.push("soak: could not run");
                        out["soak"] = json!({ "error": e });
                    }
                }
            }
            other => {
                eprintln!("load: unknown scenario {other:?} (throughput, stuck, soak)");
                std::process::exit(2);
            }
        }
    }
    out["failed"] = json!(failed);
    println!("{}", serde_json::to_string_pretty(&out).unwrap());
    if !failed.is_empty() {
        eprintln!("load: {}", failed.join("; "));
        std::process::exit(1);
    }
}
