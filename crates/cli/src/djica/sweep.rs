//! `cape djica-sweep`: averaged runs over ε_i or M for every method, the threshold ε_i of each
//! and their ratios to CAPE's, written as CSV, JSON and figures.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use capelab_core::djica::accounting::StudyAccount;
use capelab_core::djica::{CapeZeroSumNoise, Method, REPORT_DELTA};
use capelab_core::rng::Seed;
use serde_json::{Value, json};

use super::args::{
    DjicaCommon, DjicaSweepArgs, SweepAxis, UnitArg, method_name, parse_methods, validate,
};
use super::output::parameters_json;
use super::pipeline::{Run, project, run_once, used_sites};
use super::run::{fmt_opt, write};
use super::study::synthetic_study;
use crate::fm::{parse_list, stats};
use crate::outdir::{OutDir, with_out};
use crate::plot::{Legend, LineChart, Series};
use crate::progress::Progress;

/// One (x, method) point: per-run q and ε.
#[derive(Default)]
struct Point {
    q: Vec<f64>,
    eps_full: Vec<f64>,
    eps_aggregator: Vec<f64>,
    eps_full_max: Vec<f64>,
    iterations: Vec<f64>,
    pca_cos: Vec<f64>,
}

/// The smallest grid x with mean q ≤ level, and the log-linear interpolation of the crossing
/// between it and the grid point before it.
fn threshold(points: &[(f64, f64)], level: f64) -> (Option<f64>, Option<f64>) {
    let Some(k) = points.iter().position(|&(_, q)| q <= level) else {
        return (None, None);
    };
    let (x1, q1) = points[k];
    if k == 0 {
        return (Some(x1), Some(x1));
    }
    let (x0, q0) = points[k - 1];
    let t = if q0 > q1 { (q0 - level) / (q0 - q1) } else { 1.0 };
    (Some(x1), Some((x0.ln() + t * (x1.ln() - x0.ln())).exp()))
}

fn sweep(args: &DjicaSweepArgs, out: &OutDir) -> Result<(Value, Vec<PathBuf>), String> {
    let c = &args.common;
    let methods = parse_methods(&args.methods)?;
    let unit = c.privacy_unit;
    let xs = match &args.values {
        Some(v) => parse_list(v, "--values")?,
        None => match (args.sweep, unit) {
            (SweepAxis::Epsilon, UnitArg::Subject) => {
                vec![0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]
            }
            (SweepAxis::Epsilon, UnitArg::Timepoint) => vec![0.05, 0.1, 0.2, 0.5, 1.0],
            (SweepAxis::Subjects, _) => vec![64.0, 128.0, 256.0, 512.0],
        },
    };
    if args.runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    for &m in &methods {
        let subjects = match args.sweep {
            SweepAxis::Subjects => xs.iter().fold(f64::INFINITY, |a, &b| a.min(b)) as usize,
            SweepAxis::Epsilon => c.subjects,
        };
        let eps = match args.sweep {
            SweepAxis::Epsilon => xs.iter().fold(f64::INFINITY, |a, &b| a.min(b)),
            SweepAxis::Subjects => c.eps_iter,
        };
        validate(&DjicaCommon { subjects, eps_iter: eps, ..c.clone() }, m)?;
    }
    // x-independent work is shared: the data per (seed, M), the PCA per (seed, M, method), and a
    // non-private run per (seed, M).
    let total_runs = args.runs as usize * xs.len() * methods.len();
    let bar = Progress::new("djica-sweep", "run", total_runs as u64);
    let mut points: BTreeMap<(usize, usize), Point> = BTreeMap::new();
    let subject_values: Vec<usize> = match args.sweep {
        SweepAxis::Epsilon => vec![c.subjects],
        SweepAxis::Subjects => xs.iter().map(|&x| x as usize).collect(),
    };
    for run in 0..args.runs {
        let seed = c.seed + run;
        let rc = DjicaCommon { seed, ..c.clone() };
        for (mi, &m_subjects) in subject_values.iter().enumerate() {
            let study = synthetic_study(&rc, m_subjects, seed)?;
            for (k, &method) in methods.iter().enumerate() {
                let mut noise =
                    CapeZeroSumNoise::ideal(Seed::Fixed(seed), used_sites(&study, method).len());
                let projected = project(&study, &rc, method, &mut noise)?;
                let eps_values: Vec<(usize, f64)> = match args.sweep {
                    SweepAxis::Epsilon => xs.iter().copied().enumerate().collect(),
                    SweepAxis::Subjects => vec![(mi, c.eps_iter)],
                };
                let mut cached: Option<Run> = None;
                for (xi, eps) in eps_values {
                    bar.set_message(format!("{} x = {}", method_name(method), xs[xi]));
                    // A non-private run does not depend on ε_i: run it once.
                    let r = match &cached {
                        Some(r) if !method.is_private() => {
                            (r.djica.q, None::<StudyAccount>, r.djica.privacy.iterations)
                        }
                        _ => {
                            let r =
                                run_once(&study, &rc, method, eps, projected.clone(), &mut |_| {})?;
                            let out =
                                (r.djica.q, Some(r.account.clone()), r.djica.privacy.iterations);
                            cached = Some(r);
                            out
                        }
                    };
                    let p = points.entry((xi, k)).or_default();
                    p.q.push(r.0.unwrap_or(f64::NAN));
                    p.iterations.push(r.2 as f64);
                    let cos = projected.principal_cosines.as_deref().unwrap_or_default();
                    p.pca_cos.push(cos.iter().sum::<f64>() / cos.len().max(1) as f64);
                    if let Some(a) = r.1.as_ref().filter(|a| a.ica.is_some()) {
                        p.eps_full.push(a.ica_epsilon().unwrap_or(f64::NAN));
                        p.eps_full_max.push(a.ica_epsilon_at_max().unwrap_or(f64::NAN));
                        p.eps_aggregator.push(
                            a.ica
                                .as_ref()
                                .and_then(|i| i.at_realised.exact("aggregator"))
                                .unwrap_or(f64::NAN),
                        );
                    }
                    bar.inc(1);
                }
            }
        }
    }
    bar.finish();

    let axis = match args.sweep {
        SweepAxis::Epsilon => "eps_iter",
        SweepAxis::Subjects => "subjects",
    };
    let unit_name = match unit {
        UnitArg::Subject => "subject",
        UnitArg::Timepoint => "timepoint",
    };
    let stem = args.name.clone().unwrap_or_else(|| format!("djica-{unit_name}-vs-{axis}"));
    let mut csv = format!(
        "{axis},method,runs,q_mean,q_se,epsilon_full_view_exact,epsilon_aggregator_view_exact,\
         epsilon_full_view_at_jmax_exact,iterations_mean,pca_mean_principal_cosine\n"
    );
    let mut q_series = vec![];
    let mut eps_series = vec![];
    let mut thresholds = serde_json::Map::new();
    let mut rows_json = vec![];
    for (k, &method) in methods.iter().enumerate() {
        let name = method_name(method);
        let colour = match method {
            Method::NonPrivate => 0,
            Method::PooledNonPrivate => 6,
            Method::Cape => 2,
            Method::Conventional => 3,
            Method::Local => 1,
        };
        let mut qs = Series {
            label: name.into(),
            dashed: !method.is_private(),
            colour: Some(colour),
            ..Default::default()
        };
        let mut es = Series {
            label: format!("{name} (full view)"),
            colour: Some(colour),
            ..Default::default()
        };
        let mut curve = vec![];
        for (xi, &x) in xs.iter().enumerate() {
            let Some(p) = points.get(&(xi, k)) else { continue };
            let (q_mean, _, q_se, ..) = stats(&p.q);
            let mean = |v: &[f64]| if v.is_empty() { f64::NAN } else { stats(v).0 };
            let (ef, ea, efm) = (mean(&p.eps_full), mean(&p.eps_aggregator), mean(&p.eps_full_max));
            csv.push_str(&format!(
                "{x},{name},{},{q_mean},{q_se},{ef},{ea},{efm},{},{}\n",
                p.q.len(),
                mean(&p.iterations),
                mean(&p.pca_cos)
            ));
            rows_json.push(json!({
                axis: x, "method": name, "runs": p.q.len(), "q_mean": q_mean, "q_se": q_se,
                "q_runs": p.q, "epsilon_full_view": ef.is_finite().then_some(ef),
                "epsilon_aggregator_view": ea.is_finite().then_some(ea),
                "epsilon_full_view_at_jmax": efm.is_finite().then_some(efm),
                "iterations_mean": mean(&p.iterations),
            }));
            qs.points.push((x, q_mean));
            qs.band.push((x, q_mean - q_se, q_mean + q_se));
            if ef.is_finite() {
                es.points.push((x, ef));
            }
            curve.push((x, q_mean));
        }
        if args.sweep == SweepAxis::Epsilon && method.is_private() {
            let (grid, interpolated) = threshold(&curve, args.threshold_q);
            thresholds.insert(name.into(), json!({"grid": grid, "interpolated": interpolated}));
        }
        q_series.push(qs);
        if !es.points.is_empty() {
            eps_series.push(es);
        }
    }
    let csv_path = out.join(format!("{stem}.csv"));
    let mut files = vec![write(&csv_path, csv)?];
    let x_label = match args.sweep {
        SweepAxis::Epsilon => {
            format!("ε_i per iteration ({unit_name} level, δ_i = {})", c.delta_iter)
        }
        SweepAxis::Subjects => format!("subjects M (ε_i = {}, {unit_name} level)", c.eps_iter),
    };
    let title = format!(
        "capeDJICA, S = {}, R = {}, D = {}, J_max = {}, {} runs",
        c.sites,
        c.components,
        c.grid * c.grid,
        c.max_iterations,
        args.runs
    );
    let chart = LineChart {
        title: title.clone(),
        x_label: x_label.clone(),
        y_label: "q_NGI (mean ± 1 s.e.; lower is better)".into(),
        x_log: true,
        y_log: false,
        series: q_series,
        y_range: Some((0.0, 0.5)),
        legend: Legend::UpperRight,
    };
    files.extend(chart.write(&out.join(&stem)).map_err(|e| e.to_string())?);
    if !eps_series.is_empty() {
        let chart = LineChart {
            title: format!(
                "Overall ε at J* (δ = {REPORT_DELTA:e}, full view; exact Gaussian composition = PLD)"
            ),
            x_label,
            y_label: "overall ε (exact Gaussian composition)".into(),
            x_log: true,
            y_log: true,
            series: eps_series,
            y_range: None,
            legend: Legend::UpperLeft,
        };
        files.extend(
            chart.write(&out.join(format!("{stem}-overall-epsilon"))).map_err(|e| e.to_string())?,
        );
    }
    // Ratios of the threshold ε_i to CAPE's (spec §9.4 predicts 1 : √S : S).
    let cape_t = thresholds.get("cape").and_then(|t| t["interpolated"].as_f64());
    let mut ratios = serde_json::Map::new();
    if let Some(base) = cape_t {
        for (name, t) in &thresholds {
            if let Some(v) = t["interpolated"].as_f64() {
                ratios.insert(name.clone(), json!(v / base));
            }
        }
    }
    let summary = json!({
        "sweep": axis,
        "epsilon_accountant": "exact Gaussian composition (equal to PLD for these unsampled releases)",
        "privacy_unit": unit_name,
        "threshold_q": args.threshold_q,
        "thresholds": thresholds,
        "threshold_ratios_to_cape": ratios,
        "predicted_ratios": {"cape": 1.0, "conventional": (c.sites as f64).sqrt(), "local": c.sites as f64},
        "parameters": parameters_json(c, Method::Cape, c.eps_iter, c.subjects),
        "runs": args.runs,
        "rows": rows_json,
    });
    files.push(write(
        &out.join(format!("{stem}.json")),
        serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?,
    )?);
    Ok((summary, files))
}

pub fn run_sweep(args: DjicaSweepArgs) -> ExitCode {
    match with_out(args.out.as_deref(), "djica-sweep", |out| sweep(&args, out)) {
        Ok((summary, files)) => {
            if let Some(t) = summary["thresholds"].as_object() {
                for (name, v) in t {
                    println!(
                        "threshold ε_i (mean q ≤ {}) {name:<13} grid {}, interpolated {}",
                        args.threshold_q,
                        fmt_opt(&v["grid"]),
                        fmt_opt(&v["interpolated"])
                    );
                }
            }
            if let Some(r) = summary["threshold_ratios_to_cape"].as_object() {
                let parts: Vec<String> =
                    r.iter().map(|(k, v)| format!("{k} {}", fmt_opt(v))).collect();
                println!(
                    "ratio to cape           {} (predicted 1 : √S : S = 1 : {:.2} : {})",
                    parts.join(", "),
                    (args.common.sites as f64).sqrt(),
                    args.common.sites
                );
            }
            crate::exit::print_written(&files);
            ExitCode::SUCCESS
        }
        Err(m) => crate::exit::fail(m),
    }
}
