//! `cape fm-sweep`: averaged runs per (x, mechanism) over ε, N or δ, their summary statistics,
//! and the files written (CSV and figures).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use capelab_core::fm::{Evaluation, FmFit, Mechanism, Model, evaluate, fit};
use serde::Serialize;

use super::args::{SweepArgs, SweepAxis, config, parse_list};
use super::charts::{guarantee_chart, metric_chart};
use super::csv::write_csv;
use super::data::load;
use super::output::{accounting, fail};
use crate::outdir::{OutDir, with_out};
use crate::progress::Progress;

/// Summary statistics of one point.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub x: f64,
    pub mechanism: String,
    pub runs: usize,
    pub mean: f64,
    pub sd: f64,
    pub se: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub train_loss_mean: f64,
    pub err_w_mean: Option<f64>,
    pub epsilon_guaranteed: f64,
    pub delta_guaranteed: f64,
    /// How `epsilon_guaranteed` was obtained ([`super::output::accounting`]).
    pub epsilon_accountant: &'static str,
    /// capeFM only: the exact ε at δ under Theorem 1's view (the guarantee is the full view's).
    pub epsilon_theorem1: Option<f64>,
    pub all_trimmed_runs: usize,
}

/// The name of the reference row "predict 0" (ŵ = 0) in linear sweeps.
pub(super) const ZERO_PREDICTOR: &str = "zero_predictor";

pub fn stats(values: &[f64]) -> (f64, f64, f64, f64, f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let sd = if values.len() > 1 {
        (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    let median = if sorted.len().is_multiple_of(2) {
        0.5 * (sorted[mid - 1] + sorted[mid])
    } else {
        sorted[mid]
    };
    (mean, sd, sd / n.sqrt(), median, sorted[0], sorted[sorted.len() - 1])
}

const EPSILON_GRID: [f64; 9] = [1e-3, 5e-3, 1e-2, 5e-2, 0.1, 0.5, 1.0, 5.0, 10.0];
const SAMPLES_GRID: [f64; 7] = [500.0, 1000.0, 2000.0, 5000.0, 10_000.0, 20_000.0, 30_000.0];
const DELTA_GRID: [f64; 10] = [1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2];

fn sweep(args: &SweepArgs, out: &OutDir) -> Result<(Vec<Point>, Vec<PathBuf>), String> {
    let c = &args.common;
    let model: Model = c.model.into();
    let mechanisms = args
        .mechanisms
        .split(',')
        .map(|m| {
            Mechanism::from_name(m.trim()).ok_or_else(|| {
                format!("--mechanisms: unknown '{m}'; use {:?}", Mechanism::ALL.map(|m| m.name()))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let xs = match &args.values {
        Some(v) => parse_list(v, "--values")?,
        None => match args.sweep {
            SweepAxis::Epsilon => EPSILON_GRID.to_vec(),
            SweepAxis::Samples => SAMPLES_GRID.to_vec(),
            SweepAxis::Delta => DELTA_GRID.to_vec(),
        },
    };
    if args.runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    let mut points = Vec::new();
    let progress = Progress::new("fm-sweep", "run", (xs.len() as u64) * args.runs);
    for &x in &xs {
        progress.set_message(format!("x = {x}"));
        let (eps, delta) = match args.sweep {
            SweepAxis::Epsilon => (x, c.delta),
            SweepAxis::Delta => (c.epsilon, x),
            SweepAxis::Samples => (c.epsilon, c.delta),
        };
        let mut data_args = c.data.clone();
        if args.sweep == SweepAxis::Samples {
            data_args.samples = Some(x as usize);
        }
        let mut per: BTreeMap<usize, Vec<(f64, Evaluation, FmFit)>> = BTreeMap::new();
        let mut zero = Vec::new();
        for r in 0..args.runs {
            let seed = c.seed + r;
            let data = load(&data_args, model.target_kind(), 0.1, seed, None)?;
            zero.push(data.test.y.norm_squared() / data.test.len() as f64);
            for (k, &mech) in mechanisms.iter().enumerate() {
                let cfg = config(c, mech, eps, delta, seed);
                let result = fit(&cfg, &data.train)
                    .map_err(|e| format!("{} at x = {x}: {e}", mech.name()))?;
                let eval =
                    evaluate(model, &result.w(), &data.train, &data.test, data.w_star.as_ref());
                let metric = match model {
                    Model::Linear => eval.mse.unwrap_or(f64::NAN),
                    Model::Logistic => eval.accuracy.unwrap_or(f64::NAN),
                };
                per.entry(k).or_default().push((metric, eval, result));
            }
            progress.inc(1);
        }
        for (k, runs) in per {
            let metrics: Vec<f64> = runs.iter().map(|r| r.0).collect();
            let (mean, sd, se, median, min, max) = stats(&metrics);
            let losses: Vec<f64> = runs.iter().map(|r| r.1.train_loss).collect();
            let err_w: Vec<f64> = runs.iter().filter_map(|r| r.1.err_w).collect();
            let g = &runs[0].2.guarantee;
            points.push(Point {
                x,
                mechanism: mechanisms[k].name().into(),
                runs: runs.len(),
                mean,
                sd,
                se,
                median,
                min,
                max,
                train_loss_mean: stats(&losses).0,
                err_w_mean: (!err_w.is_empty()).then(|| stats(&err_w).0),
                epsilon_guaranteed: g.epsilon,
                delta_guaranteed: g.delta,
                epsilon_accountant: accounting(g.kind),
                epsilon_theorem1: g.cape.as_ref().map(|v| v.theorem1.epsilon_exact),
                all_trimmed_runs: runs
                    .iter()
                    .filter(|r| r.2.minimiser.as_ref().is_some_and(|m| m.all_trimmed))
                    .count(),
            });
        }
        if model == Model::Linear {
            let (mean, sd, se, median, min, max) = stats(&zero);
            points.push(Point {
                x,
                mechanism: ZERO_PREDICTOR.into(),
                runs: zero.len(),
                mean,
                sd,
                se,
                median,
                min,
                max,
                train_loss_mean: f64::NAN,
                err_w_mean: None,
                epsilon_guaranteed: 0.0,
                delta_guaranteed: 0.0,
                epsilon_accountant: "none",
                epsilon_theorem1: None,
                all_trimmed_runs: 0,
            });
        }
    }
    progress.finish();
    let data_name = match c.data.data.as_str() {
        "synthetic" => format!("synthetic-d{}", c.data.features.unwrap_or(20)),
        other => Path::new(other)
            .file_stem()
            .map_or(other.to_string(), |s| s.to_string_lossy().into_owned()),
    };
    let axis = match args.sweep {
        SweepAxis::Epsilon => "epsilon",
        SweepAxis::Samples => "samples",
        SweepAxis::Delta => "delta",
    };
    let stem =
        args.name.clone().unwrap_or_else(|| format!("fm-{}-{data_name}-vs-{axis}", model.name()));
    let csv = out.join(format!("{stem}.csv"));
    write_csv(&csv, axis, &points).map_err(|e| format!("writing {}: {e}", csv.display()))?;
    let mut files = vec![csv];
    let probe = load(&c.data, model.target_kind(), 0.1, c.seed, None)?;
    let fixed = match args.sweep {
        SweepAxis::Epsilon => format!("δ = {:e}", c.delta),
        SweepAxis::Samples => format!("ε = {}, δ = {:e}", c.epsilon, c.delta),
        SweepAxis::Delta => format!("ε = {}", c.epsilon),
    };
    let n_text = match args.sweep {
        SweepAxis::Samples => String::new(),
        _ => format!(", N = {}", probe.train.len()),
    };
    let title = format!(
        "{} regression, {} (D = {}){n_text}, {fixed}, S = {}{}",
        if model == Model::Linear { "Linear" } else { "Logistic" },
        probe.name,
        probe.train.features(),
        c.sites,
        if c.strict { ", strict" } else { "" }
    );
    let chart = metric_chart(model, axis, &title, &mechanisms, &points);
    files.extend(chart.write(&out.join(&stem)).map_err(|e| e.to_string())?);
    if args.sweep == SweepAxis::Epsilon {
        let short = format!(
            "{} regression, {} (D = {}), δ = {:e}",
            if model == Model::Linear { "linear" } else { "logistic" },
            probe.name,
            probe.train.features(),
            c.delta
        );
        let chart = guarantee_chart(&short, &mechanisms, &points);
        files.extend(
            chart.write(&out.join(format!("{stem}-guarantee"))).map_err(|e| e.to_string())?,
        );
    }
    Ok((points, files))
}

pub fn run_sweep(args: SweepArgs) -> ExitCode {
    match with_out(args.out.as_deref(), "fm-sweep", |out| sweep(&args, out)) {
        Ok((points, files)) => {
            println!(
                "{:<8} {:<14} {:>12} {:>12} {:>12}  how ε is known",
                "x", "mechanism", "mean", "se", "ε guar."
            );
            for p in &points {
                println!(
                    "{:<8} {:<14} {:>12.4e} {:>12.2e} {:>12.4}  {}",
                    p.x, p.mechanism, p.mean, p.se, p.epsilon_guaranteed, p.epsilon_accountant
                );
            }
            crate::exit::print_written(&files);
            ExitCode::SUCCESS
        }
        Err(m) => fail(m),
    }
}
