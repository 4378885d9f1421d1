//! The synthetic-data report: TV, pairwise association (Cramér's V) and TSTR vs TRTR.

use std::path::PathBuf;
use std::time::Instant;

use capelab_core::rng::{Seed, derive};
use capelab_vertical_vi::cps1988;
use capelab_vertical_vi::model::generate::adult_like;
use capelab_vertical_vi::model::{Sampling, TrainConfig, train_plain};
use capelab_vertical_vi::report::{
    ReportConfig, ReportError, TargetRule, TargetSpec, Threshold, cps1988_wage_target, report,
};
use capelab_vertical_vi::schema::PartyBlock;
use capelab_vertical_vi::table::{public_permutation, select_rows};

fn rows(blocks: &[PartyBlock], idx: &[usize]) -> Vec<PartyBlock> {
    blocks.iter().map(|b| select_rows(b, idx)).collect()
}

/// An independent-columns sampler: every column's values permuted on their own, so each marginal
/// is kept exactly and every association is destroyed.
fn shuffle_columns(blocks: &[PartyBlock], seed: u64) -> Vec<PartyBlock> {
    blocks
        .iter()
        .enumerate()
        .map(|(p, b)| {
            let mut out = b.clone();
            for j in 0..b.features {
                let perm = public_permutation(seed + 100 * p as u64 + j as u64, b.rows);
                for (n, &m) in perm.iter().enumerate() {
                    out.cells[n * b.features + j] = b.row(m)[j];
                }
            }
            out
        })
        .collect()
}

fn income_target() -> TargetSpec {
    TargetSpec { column: "income".into(), rule: TargetRule::Labels(vec![">50K".into()]) }
}

/// Age above a public 45 years: the truth's components differ most in age, and the other columns
/// (income, hours, education, sex) point to the component.
fn age_target() -> TargetSpec {
    TargetSpec { column: "age".into(), rule: TargetRule::Above(Threshold::Public(45.0)) }
}

fn adult_config(target: TargetSpec) -> ReportConfig {
    ReportConfig { target: Some(target), ..ReportConfig::default() }
}

#[test]
fn identical_tables_give_zero_distance_and_tstr_equals_trtr() {
    let g = adult_like(4_000, 1);
    let train = rows(&g.blocks, &(0..2_000).collect::<Vec<_>>());
    let test = rows(&g.blocks, &(2_000..4_000).collect::<Vec<_>>());
    let r = report(&g.schema, &test, &test, Some(&train), &adult_config(age_target())).unwrap();
    assert!(r.columns.iter().all(|c| c.tv == 0.0), "{:?}", r.columns);
    assert_eq!(r.columns.len(), 5);
    assert_eq!(r.pairs.len(), 10);
    assert!(r.pairs.iter().all(|p| p.abs_diff == 0.0 && p.real_v == p.synthetic_v));
    assert_eq!(r.association.cross_pairs, 6);
    assert_eq!(r.association.within_pairs, 4);
    assert_eq!(r.association.cross_mean_abs_diff, 0.0);
    // Real training set passed as the synthetic table: the same fit, the same accuracy.
    let r = report(&g.schema, &test, &train, Some(&train), &adult_config(age_target())).unwrap();
    let t = r.tstr.as_ref().unwrap();
    assert_eq!(Some(t.tstr_accuracy), t.trtr_accuracy);
    assert_eq!(t.tstr_newton_steps, t.trtr_newton_steps.unwrap());
    assert!(t.tstr_accuracy > t.majority_accuracy, "{t:?}");
    assert_eq!(t.features, 1 + 8 + 2 + 1 + 2); // intercept, education, sex, hours, income
    // The CSV names every number; the text rendering mentions the TSTR line.
    let csv = r.to_csv();
    assert!(csv.starts_with("section,metric,"));
    assert!(csv.contains("tstr,tstr_accuracy,"));
    assert!(csv.lines().all(|l| l.split(',').count() == 10), "{csv}");
    assert!(r.to_text().contains("train on synthetic"));
}

#[test]
fn an_independent_columns_sampler_keeps_marginals_and_loses_association() {
    let g = adult_like(10_000, 2);
    let test = rows(&g.blocks, &(0..5_000).collect::<Vec<_>>());
    let synth = shuffle_columns(&test, 7);
    let r = report(&g.schema, &test, &synth, None, &ReportConfig::default()).unwrap();
    println!("{}", r.to_text());
    assert!(r.columns.iter().all(|c| c.tv == 0.0), "a permutation keeps every marginal");
    // The truth's components differ most in age and income (and hours): real V is large there.
    let p = r.pair("age", "income").unwrap();
    assert!(p.cross_party);
    assert!(p.real_v > 0.3, "{p:?}");
    assert!(p.synthetic_v < 0.05, "{p:?}");
    assert!(p.abs_diff > 0.25, "{p:?}");
    assert!(r.pairs.iter().all(|p| p.synthetic_v < 0.05), "no association left");
    assert!(r.association.cross_mean_abs_diff > 0.1, "{:?}", r.association);
}

#[test]
fn errors_are_reported() {
    let g = adult_like(100, 3);
    let cfg = |target| ReportConfig { target: Some(target), ..ReportConfig::default() };
    let e = report(&g.schema, &g.blocks, &g.blocks[..1], None, &ReportConfig::default());
    assert!(matches!(e, Err(ReportError::PartyCount { .. })));
    let spec = TargetSpec { column: "nope".into(), rule: TargetRule::Labels(vec![]) };
    let e = report(&g.schema, &g.blocks, &g.blocks, None, &cfg(spec));
    assert_eq!(e.unwrap_err(), ReportError::UnknownTarget("nope".into()));
    let spec =
        TargetSpec { column: "age".into(), rule: TargetRule::Above(Threshold::RealTrainMedian) };
    let e = report(&g.schema, &g.blocks, &g.blocks, None, &cfg(spec.clone()));
    assert_eq!(e.unwrap_err(), ReportError::NoTrainForMedian);
    let r = report(&g.schema, &g.blocks, &g.blocks, Some(&g.blocks), &cfg(spec)).unwrap();
    let t = r.tstr.unwrap();
    assert_eq!(t.threshold_source, "real training median");
    assert!((t.positive_rate_real_train.unwrap() - 0.5).abs() <= 0.01, "{t:?}");
    let spec =
        TargetSpec { column: "age".into(), rule: TargetRule::Above(Threshold::Public(40.0)) };
    let t = report(&g.schema, &g.blocks, &g.blocks, None, &cfg(spec)).unwrap().tstr.unwrap();
    assert_eq!(t.threshold, Some(40.0));
    assert_eq!(t.trtr_accuracy, None);
    let spec = TargetSpec { column: "sex".into(), rule: TargetRule::Above(Threshold::Public(1.0)) };
    let e = report(&g.schema, &g.blocks, &g.blocks, None, &cfg(spec));
    assert!(matches!(e, Err(ReportError::TargetRule { .. })));
    let mut bad = g.blocks.clone();
    bad[1].rows -= 1;
    let e = report(&g.schema, &g.blocks, &bad, None, &ReportConfig::default());
    assert!(matches!(
        e,
        Err(ReportError::FeatureCount { .. }) | Err(ReportError::RowCounts { .. })
    ));
}

fn plain_config(k: usize, steps: usize, rate: f64, seed: u64) -> TrainConfig {
    TrainConfig {
        components: k,
        steps,
        sampling: Sampling::Poisson { rate },
        clip: 1e6,
        noise_multiplier: 0.0,
        learning_rate: 0.03,
        init_scale: 0.5,
        init_log_sigma: -3.0,
        seed: Seed::Fixed(seed),
    }
}

#[test]
fn a_noise_free_twin_of_adult_like_is_as_useful_as_the_real_table() {
    let g = adult_like(10_000, 4);
    let train = rows(&g.blocks, &(0..5_000).collect::<Vec<_>>());
    let test = rows(&g.blocks, &(5_000..10_000).collect::<Vec<_>>());
    let start = Instant::now();
    let post = train_plain(&g.schema, &train, &plain_config(4, 3_000, 0.02, 5), &mut |_| {});
    let trained = start.elapsed();
    let synth = post.sample_twin(test[0].rows, &mut derive(6, "test/twin"));
    let r = report(&g.schema, &test, &synth, Some(&train), &adult_config(age_target())).unwrap();
    println!("training {trained:?}\n{}", r.to_text());
    let t = r.tstr.as_ref().unwrap();
    let trtr = t.trtr_accuracy.unwrap();
    assert!((t.tstr_accuracy - trtr).abs() < 0.05, "TSTR {} vs TRTR {trtr}", t.tstr_accuracy);
    assert!(trtr > t.majority_accuracy + 0.05, "the task has signal: {t:?}");
    // Income is a weak target here (the Bayes rule rarely says >50K): both stay near the majority.
    let r2 =
        report(&g.schema, &test, &synth, Some(&train), &adult_config(income_target())).unwrap();
    let t2 = r2.tstr.as_ref().unwrap();
    println!("{t2:?}");
    assert!((t2.tstr_accuracy - t2.trtr_accuracy.unwrap()).abs() < 0.05, "{t2:?}");
    // TV has a sampling floor: two real samples of 5 000 differ by about as much.
    for c in &r.columns {
        let floor = c.tv_real_train.unwrap();
        assert!(c.tv < 0.08 && c.tv < 2.0 * floor + 0.02, "{c:?}");
    }
    assert!(r.association.cross_mean_abs_diff < 0.05, "{:?}", r.association);
    let p = r.pair("age", "income").unwrap();
    assert!(p.real_v > 0.3 && p.abs_diff < 0.05, "{p:?}");
}

#[test]
fn cps1988_noise_free_twin_report() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(cps1988::DATA_PATH);
    let Ok(csv) = std::fs::read_to_string(&path) else {
        println!("skipped: {} is absent (scripts/fetch_datasets.py writes it)", path.display());
        return;
    };
    let (tables, _) = cps1988::load(&csv).unwrap();
    let blocks: Vec<PartyBlock> = tables.into_iter().map(|t| t.block).collect();
    let split = cps1988::split(blocks[0].rows);
    let (train, test) = (rows(&blocks, &split.train), rows(&blocks, &split.test));
    let schema = cps1988::schema();
    let start = Instant::now();
    let rate = 100.0 / train[0].rows as f64;
    let post = train_plain(&schema, &train, &plain_config(10, 1_500, rate, 88), &mut |_| {});
    let trained = start.elapsed();
    let synth = post.sample_twin(test[0].rows, &mut derive(89, "test/twin"));
    let cfg = ReportConfig { target: Some(cps1988_wage_target()), ..ReportConfig::default() };
    let r = report(&schema, &test, &synth, Some(&train), &cfg).unwrap();
    println!("training {trained:?}\n{}", r.to_text());
    let t = r.tstr.as_ref().unwrap();
    assert_eq!(t.threshold_source, "real training median");
    assert!((t.positive_rate_real_train.unwrap() - 0.5).abs() < 0.01);
    // Measured (debug, K = 10, T = 1 500, q = 100/22 524, seed 88): TRTR 0.741, TSTR 0.727,
    // majority 0.504; max TV 0.048 (wage); cross-party mean |ΔV| 0.022, max 0.074 (smsa ~ wage).
    let trtr = t.trtr_accuracy.unwrap();
    assert!(trtr > 0.7, "{t:?}");
    assert!(t.tstr_accuracy > trtr - 0.05, "{t:?}");
    assert!(t.tstr_accuracy > t.majority_accuracy + 0.15, "{t:?}");
    assert!(r.max_tv < 0.1, "{:?}", r.columns);
    assert!(r.association.cross_mean_abs_diff < 0.05, "{:?}", r.association);
    assert!(r.association.cross_max_abs_diff < 0.15, "{:?}", r.association);
    // The strongest cross-party association (experience ~ parttime) is carried by the components.
    let p = r.pair("experience", "parttime").unwrap();
    assert!(p.real_v > 0.3 && p.abs_diff < 0.05, "{p:?}");
}
