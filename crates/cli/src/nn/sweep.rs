//! `cape nn-sweep`: averaged runs over ε per iteration or N, written as CSV and figures.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use capelab_core::nn::{NnMechanism, NnReport, train};

use super::args::{NnSweepArgs, NnSweepAxis, config, load_nn};
use crate::fm::{parse_list, stats};
use crate::outdir::{OutDir, with_out};
use crate::plot::{Legend, LineChart, Series};
use crate::progress::Progress;

fn sweep(args: &NnSweepArgs, out: &OutDir) -> Result<Vec<PathBuf>, String> {
    let c = &args.common;
    let xs = match &args.values {
        Some(v) => parse_list(v, "--values")?,
        None => match args.sweep {
            NnSweepAxis::Epsilon => vec![1e-3, 5e-3, 1e-2, 5e-2, 0.1, 0.5, 1.0, 5.0, 10.0],
            NnSweepAxis::Samples => (1..=10).map(|k| 1000.0 * k as f64).collect(),
        },
    };
    let mut rows: Vec<(f64, NnMechanism, Vec<NnReport>)> = vec![];
    let progress =
        Progress::new("nn-sweep", "run", (xs.len() * NnMechanism::ALL.len()) as u64 * args.runs);
    for &x in &xs {
        progress.set_message(format!("x = {x}"));
        let mut common = c.clone();
        let eps = match args.sweep {
            NnSweepAxis::Epsilon => x,
            NnSweepAxis::Samples => {
                common.data.samples = Some(x as usize);
                c.epsilon
            }
        };
        let mut per: BTreeMap<usize, Vec<NnReport>> = BTreeMap::new();
        for r in 0..args.runs {
            let seed = c.seed + r;
            let data = load_nn(&common, seed)?;
            for (k, m) in NnMechanism::ALL.iter().enumerate() {
                let cfg = config(&common, *m, eps, seed);
                let rep = train(&cfg, &data.train, &data.test)
                    .map_err(|e| format!("{} at x = {x}: {e}", m.name()))?;
                per.entry(k).or_default().push(rep);
                progress.inc(1);
            }
        }
        for (k, reps) in per {
            rows.push((x, NnMechanism::ALL[k], reps));
        }
    }
    progress.finish();
    let axis = match args.sweep {
        NnSweepAxis::Epsilon => "epsilon",
        NnSweepAxis::Samples => "samples",
    };
    let stem = args.name.clone().unwrap_or_else(|| {
        let data = if c.data.data == "synthetic" {
            "synthetic".into()
        } else {
            c.data.data.replace('/', "_")
        };
        format!("nn-{data}-vs-{axis}")
    });
    let mut csv = format!(
        "{axis},mechanism,runs,test_accuracy_mean,test_accuracy_se,train_accuracy_mean,\
         epsilon_overall_exact,epsilon_overall_rdp,view\n"
    );
    let mut acc_series: BTreeMap<&str, Series> = BTreeMap::new();
    let mut eps_series: BTreeMap<String, Series> = BTreeMap::new();
    for (x, m, reps) in &rows {
        let test: Vec<f64> = reps.iter().map(|r| 100.0 * r.test_accuracy).collect();
        let trainacc: Vec<f64> = reps.iter().map(|r| 100.0 * r.train_accuracy).collect();
        let (mean, _, se, ..) = stats(&test);
        let (p_exact, p_rdp, view) = match &reps[0].privacy {
            Some(p) => {
                let worst = p.views.iter().find(|v| v.view == p.guarantee_view);
                (p.epsilon, worst.map_or(f64::NAN, |v| v.epsilon_rdp), p.guarantee_view.clone())
            }
            None => (f64::INFINITY, f64::INFINITY, "none".into()),
        };
        csv.push_str(&format!(
            "{x},{},{},{mean},{se},{},{p_exact},{p_rdp},{view}\n",
            m.name(),
            reps.len(),
            stats(&trainacc).0
        ));
        let s = acc_series.entry(m.name()).or_insert_with(|| Series {
            label: match m {
                NnMechanism::Cape => "CAPE".into(),
                NnMechanism::Conventional => "conv".into(),
                NnMechanism::NonPrivate => "non-priv".into(),
            },
            dashed: *m == NnMechanism::NonPrivate,
            colour: Some(match m {
                NnMechanism::NonPrivate => 0,
                NnMechanism::Cape => 2,
                NnMechanism::Conventional => 3,
            }),
            ..Default::default()
        });
        s.points.push((*x, mean));
        s.band.push((*x, mean - se, mean + se));
        if let Some(p) = &reps[0].privacy {
            for v in &p.views {
                let label = format!(
                    "{}: {}",
                    if *m == NnMechanism::Cape { "CAPE" } else { "conv" },
                    v.view
                );
                eps_series
                    .entry(label.clone())
                    .or_insert_with(|| Series { label, ..Default::default() })
                    .points
                    .push((*x, v.epsilon_exact));
            }
        }
    }
    let csv_path = out.join(format!("{stem}.csv"));
    std::fs::write(&csv_path, csv).map_err(|e| format!("writing {}: {e}", csv_path.display()))?;
    let probe = load_nn(c, c.seed)?;
    let title = format!(
        "Two-layer network, {} (D = {}), S = {}, T = {}, δ = {}",
        probe.name,
        probe.train.features(),
        c.sites,
        c.iterations,
        c.delta
    );
    let order = ["nonprivate", "cape", "conventional"];
    let chart = LineChart {
        title: title.clone(),
        x_label: match args.sweep {
            NnSweepAxis::Epsilon => "ε per iteration".into(),
            NnSweepAxis::Samples => format!("total records N (ε per iteration = {})", c.epsilon),
        },
        y_label: "test accuracy, % (mean ± 1 s.e.)".into(),
        x_log: true,
        y_log: false,
        series: order.iter().filter_map(|k| acc_series.remove(k)).collect(),
        y_range: None,
        legend: Legend::LowerRight,
    };
    let mut files = vec![csv_path];
    files.extend(chart.write(&out.join(&stem)).map_err(|e| e.to_string())?);
    if args.sweep == NnSweepAxis::Epsilon {
        let mut series: Vec<Series> = eps_series.into_values().collect();
        series.push(Series {
            label: "ε per iteration (seed 002's axis)".into(),
            points: xs.iter().map(|&x| (x, x)).collect(),
            dashed: true,
            ..Default::default()
        });
        let chart = LineChart {
            title: format!(
                "Overall ε of all {} iterations (exact Gaussian composition = PLD; ε = 0 not \
                 drawn), δ = {}",
                c.iterations, c.delta
            ),
            x_label: "ε per iteration".into(),
            y_label: "overall ε (exact Gaussian composition)".into(),
            x_log: true,
            y_log: true,
            series,
            y_range: None,
            legend: Legend::UpperLeft,
        };
        files.extend(
            chart.write(&out.join(format!("{stem}-overall-epsilon"))).map_err(|e| e.to_string())?,
        );
    }
    Ok(files)
}

pub fn run_sweep(args: NnSweepArgs) -> ExitCode {
    crate::exit::files_or_fail(with_out(args.out.as_deref(), "nn-sweep", |out| sweep(&args, out)))
}
