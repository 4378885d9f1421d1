//! Time per DP-VI step in `plain` mode at the paper's shape (spec B7): P = 2, K = 20, B = 100,
//! σ = 2.042, C = 1, on the generated Adult-like table with N = 30162; and the non-partitioned
//! baseline on the same data. Run with `cargo run --release -p capelab-vertical-vi --example
//! vvi_step_time`.

use capelab_core::rng::Seed;
use capelab_vertical_vi::model::generate::adult_like;
use capelab_vertical_vi::model::train::merge_parties;
use capelab_vertical_vi::model::{Sampling, TrainConfig, train_plain};
use std::time::Instant;

fn main() {
    let g = adult_like(30_162, 1);
    let steps = 2_000;
    let cfg = TrainConfig {
        components: 20,
        steps,
        sampling: Sampling::Fixed { size: 100 },
        seed: Seed::Fixed(2),
        ..TrainConfig::default()
    };
    let (ms, mb) = merge_parties(&g.schema, &g.blocks);
    for (name, schema, blocks) in
        [("partitioned (P = 2)", &g.schema, &g.blocks), ("non-partitioned", &ms, &mb)]
    {
        let start = Instant::now();
        let post = train_plain(schema, blocks, &cfg, &mut |_| {});
        let per = start.elapsed().as_secs_f64() / steps as f64;
        println!(
            "{name}: {:.1} µs per step (K = 20, B = 100, {steps} steps), train NLL {:.4}",
            per * 1e6,
            post.test_nll(blocks)
        );
    }
}
