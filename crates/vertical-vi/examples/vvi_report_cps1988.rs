//! The synthetic-data report on CPS1988 (`data/cps1988.csv`, written by
//! `scripts/fetch_datasets.py`): one noise-free run (σ = 0, no clipping), one clipped noise-free run
//! (σ = 0, C = 1) and one DP run (C = 1, σ chosen so that the outside analyst's ε ≈ 1 at δ = 1e−5,
//! Poisson q = 100/N_train, TTP noise, add/remove, by `capelab_vertical_vi::privacy`). Each run's
//! twin has as many rows as the real test set.
//!
//! `cargo run --release -p capelab-vertical-vi --example vvi_report_cps1988 -- [T] [K] [--clip=C]
//! [--csv]` (defaults T = 20 000, K = 10, C = 1). It also prints the public bound on the per-example
//! norm outside the Beta blocks (`batch::norm_bound_without_betas`), the data-independent C that
//! never clips a record for its π or Categorical part (√11 ≈ 3.317 for K = 10).

use std::path::PathBuf;
use std::time::Instant;

use capelab_core::rng::{Seed, derive};
use capelab_vertical_vi::batch::norm_bound_without_betas;
use capelab_vertical_vi::cps1988;
use capelab_vertical_vi::model::{Sampling, TrainConfig, train_plain};
use capelab_vertical_vi::privacy::{self, Adjacency, NoiseSource, Run, Viewer};
use capelab_vertical_vi::report::{ReportConfig, cps1988_wage_target, report};
use capelab_vertical_vi::schema::PartyBlock;
use capelab_vertical_vi::table::select_rows;

const DELTA: f64 = 1e-5;
const BATCH: usize = 100;

fn epsilon(sigma: f64, records: usize, steps: u64) -> f64 {
    let run = Run {
        noise_multiplier: sigma,
        batch: BATCH,
        records,
        steps,
        parties: 2,
        noise: NoiseSource::Ttp,
        sampling: privacy::Sampling::Poisson,
    };
    privacy::guarantee(&run, Viewer::Analyst, Adjacency::AddRemove, DELTA)
        .expect("a valid run")
        .epsilon
        .best()
}

/// The smallest σ (to 1e−3) with ε ≤ 1, by bisection.
fn sigma_for_epsilon_one(records: usize, steps: u64) -> f64 {
    let (mut lo, mut hi) = (0.5, 20.0);
    while hi - lo > 1e-3 {
        let mid = 0.5 * (lo + hi);
        if epsilon(mid, records, steps) > 1.0 { lo = mid } else { hi = mid }
    }
    hi
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let numbers: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let steps = numbers.first().copied().unwrap_or(20_000);
    let k = numbers.get(1).copied().unwrap_or(10);
    let csv_out = args.iter().any(|a| a == "--csv");
    let clip: f64 = args
        .iter()
        .find_map(|a| a.strip_prefix("--clip=").and_then(|v| v.parse().ok()))
        .unwrap_or(1.0);

    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(cps1988::DATA_PATH);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run scripts/fetch_datasets.py)", path.display()));
    let (tables, _) = cps1988::load(&text).expect("CPS1988 loads");
    let blocks: Vec<PartyBlock> = tables.into_iter().map(|t| t.block).collect();
    let split = cps1988::split(blocks[0].rows);
    let train: Vec<PartyBlock> = blocks.iter().map(|b| select_rows(b, &split.train)).collect();
    let test: Vec<PartyBlock> = blocks.iter().map(|b| select_rows(b, &split.test)).collect();
    let n_train = train[0].rows;
    let schema = cps1988::schema();
    let rate = BATCH as f64 / n_train as f64;

    let start = Instant::now();
    let sigma = sigma_for_epsilon_one(n_train, steps as u64);
    println!(
        "σ for ε ≤ 1 (δ = {DELTA}, Poisson q = {BATCH}/{n_train}, T = {steps}): {sigma:.3} → ε = \
         {:.4} ({:.1?} to compute)",
        epsilon(sigma, n_train, steps as u64),
        start.elapsed()
    );

    println!(
        "per-example ‖g‖ outside the Beta blocks ≤ {:.4} (public bound, K = {k}); C = {clip}",
        norm_bound_without_betas(&schema, k)
    );

    let base = TrainConfig {
        components: k,
        steps,
        sampling: Sampling::Poisson { rate },
        clip,
        noise_multiplier: 0.0,
        learning_rate: 0.01,
        init_scale: 0.5,
        init_log_sigma: -3.0,
        seed: Seed::Fixed(1988),
    };
    let runs = [
        ("noise-free, unclipped", TrainConfig { clip: 1e6, ..base.clone() }),
        ("noise-free, clipped", base.clone()),
        ("DP, clipped, ε ≈ 1", TrainConfig { noise_multiplier: sigma, ..base.clone() }),
    ];
    let cfg = ReportConfig { target: Some(cps1988_wage_target()), ..ReportConfig::default() };
    for (i, (name, config)) in runs.iter().enumerate() {
        let start = Instant::now();
        let post = train_plain(&schema, &train, config, &mut |_| {});
        let took = start.elapsed();
        let synth = post.sample_twin(test[0].rows, &mut derive(i as u64, "report/twin"));
        let r = report(&schema, &test, &synth, Some(&train), &cfg).expect("report");
        println!(
            "\n=== {name}: K = {k}, T = {steps}, σ = {}, C = {}, lr = {}; trained in {took:.1?}, test \
             NLL {:.4} ===",
            config.noise_multiplier,
            config.clip,
            config.learning_rate,
            post.test_nll(&test)
        );
        println!("{}", if csv_out { r.to_csv() } else { r.to_text() });
    }
}
