//! One `mpc` step at the paper's shape (P = 2, K = 20, B = 100, C = 1) on CPS1988 (data/cps1988.csv
//! from the repository root, else the generated Adult-like table): time per step (median and min
//! over the steps), rounds, bytes each party sends (openings) and ring values the dealer sends
//! each party, and, with the noise off, the largest |mpc − fixed| / ‖fixed‖ over the steps. Run
//! with `cargo run --release -p capelab-vertical-vi --example vvi_mpc_step [steps]`.

use std::time::Instant;

use capelab_core::rng::{Seed, derive};
use capelab_vertical_vi::batch::PartyLocal;
use capelab_vertical_vi::cps1988;
use capelab_vertical_vi::model::generate::adult_like;
use capelab_vertical_vi::model::{Sampling, TrainConfig, train};
use capelab_vertical_vi::mpc::GradientConfig;
use capelab_vertical_vi::mpc::circuit::{fixed_clipped_sum, mpc_clipped_sum};
use capelab_vertical_vi::mpc::noise::{party_variance, sample_vec};

fn main() {
    let steps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(20);
    let (name, schema, blocks) = match std::fs::read_to_string(cps1988::DATA_PATH) {
        Ok(csv) => {
            let (tables, _) = cps1988::load(&csv).expect("cps1988");
            ("CPS1988", cps1988::schema(), tables.into_iter().map(|t| t.block).collect::<Vec<_>>())
        }
        Err(_) => {
            let g = adult_like(30_162, 1);
            ("generated Adult-like", g.schema, g.blocks)
        }
    };
    let cfg = TrainConfig {
        components: 20,
        steps,
        sampling: Sampling::Fixed { size: 100 },
        clip: 1.0,
        noise_multiplier: 0.0,
        seed: Seed::Fixed(3),
        ..TrainConfig::default()
    };
    let (mut times, mut ftimes, mut worst) = (Vec::new(), Vec::new(), 0.0f64);
    let mut cost = None;
    let mut rng = derive(3, "fixed");
    let mut step = 0u64;
    let mut engine = |pi: &[f64], locals: &[PartyLocal], clip: f64| {
        step += 1;
        let g = GradientConfig::new(pi.to_vec(), clip, 0.0);
        let t = Instant::now();
        let (m, report) = mpc_clipped_sum(locals, &g, Seed::Fixed(step)).expect("mpc");
        times.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let f = fixed_clipped_sum(locals, &g, &mut rng).expect("fixed");
        ftimes.push(t.elapsed().as_secs_f64());
        let norm = f.iter().map(|v| v * v).sum::<f64>().sqrt();
        let d = m.iter().zip(&f).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        worst = worst.max(d / norm);
        cost =
            Some((report.rounds, report.bytes_sent.clone(), report.dealt_values.clone(), f.len()));
        m
    };
    train(&schema, &blocks, &cfg, &mut engine, &mut |_| {});
    let var = party_variance(1.0, 2.042, 2);
    let mut nrng = derive(4, "noise");
    let t = Instant::now();
    for _ in 0..20 {
        sample_vec(1000, var, &mut nrng).expect("noise");
    }
    let noise_us = t.elapsed().as_secs_f64() / 20_000.0 * 1e6;
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[0])
    };
    let (tm, tmin) = med(&mut times);
    let (fm, fmin) = med(&mut ftimes);
    let (rounds, bytes, dealt, d) = cost.expect("a step");
    println!(
        "{name}: P = 2, K = 20, B = 100, D = {d}, {steps} steps: mpc {:.1} ms median ({:.1} min), \
         fixed {:.1} ms ({:.1}); {rounds} rounds; bytes sent per party {bytes:?}; dealer values per \
         party {dealt:?} (= {:?} bytes); max |mpc − fixed|/‖fixed‖ = {worst:.2e}; one party's \
         noise (σ = 2.042, C = 1) {noise_us:.2} µs per value",
        tm * 1e3,
        tmin * 1e3,
        fm * 1e3,
        fmin * 1e3,
        dealt.iter().map(|v| 16 * v).collect::<Vec<_>>()
    );
}
