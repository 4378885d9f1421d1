//! The four modes (`modes.rs`): mpc against fixed against plain on a real training run, learning
//! in every mode, reproducibility, input checks and the privacy table.

use capelab_core::rng::{Seed, derive};
use capelab_vertical_vi::batch::{PartyLocal, clipped_sum_plain};
use capelab_vertical_vi::model::generate::adult_like;
use capelab_vertical_vi::model::train::{TrainConfig, train};
use capelab_vertical_vi::model::{Sampling, Variational};
use capelab_vertical_vi::modes::{Mode, ModeError, MpcSum, RunConfig, run};
use capelab_vertical_vi::mpc::circuit::{GradientConfig, fixed_clipped_sum};
use capelab_vertical_vi::privacy::{NoiseSource, Viewer};
use capelab_vertical_vi::schema::{PartyBlock, Schema};

fn data(rows: usize, seed: u64) -> (Schema, Vec<PartyBlock>, Vec<PartyBlock>) {
    let train = adult_like(rows, seed);
    let test = adult_like(rows / 3, seed + 1000);
    (train.schema, train.blocks, test.blocks)
}

/// max_i |a_i − b_i| / ‖b‖₂, as in tests/mpc.rs.
fn max_rel(a: &[f64], b: &[f64]) -> f64 {
    let norm = b.iter().map(|v| v * v).sum::<f64>().sqrt();
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max) / norm
}

#[test]
fn mpc_equals_fixed_and_fixed_equals_plain_over_100_training_steps() {
    let (schema, blocks, _) = data(300, 11);
    let config = TrainConfig {
        components: 3,
        steps: 100,
        sampling: Sampling::Fixed { size: 8 },
        clip: 1.0,
        noise_multiplier: 0.0,
        learning_rate: 0.05,
        seed: Seed::Fixed(5),
        ..TrainConfig::default()
    };
    let mut mpc = MpcSum::new(0.0, Seed::Fixed(5));
    let mut rng = derive(5, "fixed");
    let (mut worst_mf, mut worst_fp, mut clipped, mut steps) = (0.0f64, 0.0f64, 0usize, 0usize);
    // drive every engine from the aggregator state of the mpc run: same batches, same θ
    let mut engine = |pi: &[f64], locals: &[PartyLocal], clip: f64| {
        let m = mpc.try_sum(pi, locals, clip).expect("mpc");
        let f = fixed_clipped_sum(locals, &GradientConfig::new(pi.to_vec(), clip, 0.0), &mut rng)
            .expect("fixed");
        let p = clipped_sum_plain(pi, locals, clip);
        let unclipped = clipped_sum_plain(pi, locals, 1e9);
        if max_rel(&p, &unclipped) > 1e-9 {
            clipped += 1;
        }
        let (mf, fp) = (max_rel(&m, &f), max_rel(&f, &p));
        assert!(mf < 2f64.powi(-20), "step {steps}: mpc vs fixed {mf:e}");
        assert!(fp < 1e-6, "step {steps}: fixed vs plain {fp:e}");
        worst_mf = worst_mf.max(mf);
        worst_fp = worst_fp.max(fp);
        steps += 1;
        m
    };
    let mut moved = Vec::<Variational>::new();
    train(&schema, &blocks, &config, &mut engine, &mut |s| {
        if s.step == 1 || s.step == 100 {
            moved.push(s.q.clone());
        }
    });
    assert_eq!(steps, 100);
    assert_ne!(moved[0], moved[1], "q moved");
    assert!(clipped > 10, "the clip was active in {clipped} steps only");
    eprintln!(
        "100 steps: worst |mpc − fixed|/‖G‖ = {worst_mf:.2e}, |fixed − plain|/‖G‖ = {worst_fp:.2e}; clip active in {clipped} steps; {} rounds, bytes {:?}",
        mpc.reports[0].0, mpc.reports[0].1
    );
}

fn small(mode: Mode, steps: usize, seed: u64) -> RunConfig {
    RunConfig {
        components: 3,
        sigma: 1.0,
        sampling: Sampling::Fixed { size: 30 },
        learning_rate: 0.05,
        eval_every: 10,
        ..RunConfig::paper(mode, 600, steps, Seed::Fixed(seed))
    }
}

#[test]
fn a_short_run_lowers_test_nll_in_every_mode() {
    let (schema, blocks, test) = data(600, 3);
    for mode in Mode::ALL {
        let steps = if mode == Mode::Mpc { 40 } else { 150 };
        let config = small(mode, steps, 9);
        let mut seen = 0;
        let r = run(&schema, &blocks, &test, &config, &mut |p| seen = p.step).unwrap();
        let first = r.evals[0].test_nll;
        eprintln!(
            "{}: test NLL {first:.3} → {:.3} in {steps} steps ({:.1} ms/step, bytes/step {:?}, {} rounds)",
            mode.name(),
            r.final_test_nll,
            1e3 * r.cost.mean_seconds,
            r.cost.mean_bytes_sent,
            r.cost.rounds
        );
        assert_eq!(seen, steps);
        assert!(r.final_test_nll < first - 0.1, "{}: {first} → {}", mode.name(), r.final_test_nll);
        assert_eq!(r.evals.last().unwrap().step, steps);
        assert_eq!(r.costs.len(), steps);
        assert_eq!(r.train_records, 600);
        assert_eq!(r.test_records, 200);
        if mode == Mode::Mpc {
            assert!(r.costs.iter().all(|c| c.rounds > 50 && c.bytes_sent.len() == 2));
            assert!(r.cost.mean_bytes_sent.iter().all(|&b| b > 1000.0));
        } else {
            assert!(r.costs.iter().all(|c| c.rounds == 0 && c.bytes_sent.is_empty()));
        }
        let table = r.privacy.as_ref().expect("σ > 0 has a table");
        assert_eq!(table[0].viewer, Viewer::Analyst);
        let run = r.privacy_run.unwrap();
        assert_eq!(run.noise, mode.noise_source());
        assert_eq!(run.parties, if mode == Mode::NonPartitioned { 1 } else { 2 });
        assert_eq!(run.steps, steps as u64);
        if matches!(mode, Mode::Mpc | Mode::Fixed) {
            assert_eq!(run.noise, NoiseSource::Parties);
        }
    }
}

#[test]
fn seeded_runs_reproduce() {
    let (schema, blocks, test) = data(300, 4);
    for (mode, steps) in [(Mode::Mpc, 4), (Mode::Fixed, 30), (Mode::Plain, 30)] {
        let go = |seed| run(&schema, &blocks, &test, &small(mode, steps, seed), &mut |_| {});
        let (a, b, c) = (go(1).unwrap(), go(1).unwrap(), go(2).unwrap());
        assert_eq!(a.posterior, b.posterior, "{}", mode.name());
        assert_eq!(a.evals, b.evals);
        assert_ne!(a.posterior, c.posterior, "{}: another seed, another run", mode.name());
        if mode == Mode::Mpc {
            let bytes = |r: &capelab_vertical_vi::modes::RunResult| {
                r.costs.iter().map(|c| c.bytes_sent.clone()).collect::<Vec<_>>()
            };
            assert_eq!(bytes(&a), bytes(&b));
        }
    }
}

#[test]
fn bad_inputs_are_refused_by_name() {
    let (schema, blocks, test) = data(90, 5);
    let base = small(Mode::Fixed, 5, 1);
    let err = |c: &RunConfig, b: &[PartyBlock], t: &[PartyBlock]| {
        run(&schema, b, t, c, &mut |_| {}).unwrap_err()
    };
    let bad = RunConfig { components: 0, ..base.clone() };
    assert_eq!(err(&bad, &blocks, &test), ModeError::Components(0));
    let bad = RunConfig { sigma: -1.0, ..base.clone() };
    assert_eq!(err(&bad, &blocks, &test), ModeError::Sigma(-1.0));
    let bad = RunConfig { clip: 0.0, ..base.clone() };
    assert_eq!(err(&bad, &blocks, &test), ModeError::Clip(0.0));
    let bad = RunConfig { steps: 0, ..base.clone() };
    assert_eq!(err(&bad, &blocks, &test), ModeError::Steps);
    let bad = RunConfig { sampling: Sampling::Fixed { size: 91 }, ..base.clone() };
    let e = err(&bad, &blocks, &test);
    assert_eq!(e, ModeError::Batch { batch: 91, records: 90 });
    assert!(e.to_string().contains("B = 91"), "{e}");
    let bad = RunConfig { sampling: Sampling::Poisson { rate: 0.0 }, ..base.clone() };
    assert_eq!(err(&bad, &blocks, &test), ModeError::Rate(0.0));
    let mut ragged = blocks.clone();
    ragged[1].rows -= 1;
    let keep = ragged[1].rows * ragged[1].features;
    ragged[1].cells.truncate(keep);
    let e = err(&base, &ragged, &test);
    assert_eq!(e, ModeError::RowCounts { which: "training", rows: vec![90, 89] });
    assert!(e.to_string().contains("different row counts"), "{e}");
    let e = err(&base, &blocks[..1], &test);
    assert!(matches!(e, ModeError::PartyCount { schema: 2, given: 1, .. }), "{e}");
    // mpc needs two parties to share: the merged one-party table is refused in mpc mode
    let (one, merged) = capelab_vertical_vi::model::train::merge_parties(&schema, &blocks);
    let (_, merged_test) = capelab_vertical_vi::model::train::merge_parties(&schema, &test);
    let e = run(&one, &merged, &merged_test, &small(Mode::Mpc, 2, 1), &mut |_| {}).unwrap_err();
    assert_eq!(e, ModeError::MpcParties(1));
    // σ = 0 runs, without a privacy table
    let r = run(&schema, &blocks, &test, &RunConfig { sigma: 0.0, ..base }, &mut |_| {}).unwrap();
    assert!(r.privacy.is_none() && r.privacy_run.is_none());
}
