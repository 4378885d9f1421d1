//! `cape vertical-vi-sweep`: test NLL against the outside analyst's ε for the four modes (seed
//! 004's utility figure), with each run's synthetic-data report, as CSV and figures (PNG + SVG).
//!
//! For each target ε the noise multiplier σ is the smallest the PLD accountant allows (Poisson
//! sampling at q = B/N_train, add/remove, T steps, δ = --delta); every mode then runs at that σ
//! with the same data, model and seeds, so the modes differ only in how the noisy clipped sum is
//! computed. The CSV gives each run's outside-analyst ε (add/remove) from its privacy table by
//! both accountants, `epsilon_analyst_pld` (at most the target) and `epsilon_analyst_rdp`; the
//! figures' ε axis is the PLD target. Noise-free runs (σ = 0, still clipped) of the cheap modes
//! give the reference line a private run approaches as ε grows.
//!
//! Files go to --out, by default a new folder `cape-out/vertical-vi-sweep-NNN`: the committed
//! figures in docs/figures change only with `--out docs/figures`.
//!
//! Every run's seed (from --seed, else drawn from the OS) is written to the CSV so that any point
//! reproduces: a sweep is an experiment about the method, not a private release of its posteriors.

use std::path::PathBuf;
use std::process::ExitCode;

use capelab_core::rng::{Seed, derive};
use capelab_vertical_vi::modes::{Mode, run as run_mode};
use capelab_vertical_vi::privacy::{Adjacency, Viewer};
use rand::Rng;

use super::args::VerticalViSweepArgs;
use super::report::{check_target, synthetic_report};
use crate::outdir::{OutDir, with_out};
use crate::plot::{Legend, LineChart, Series};
use crate::progress::Progress;

struct Row {
    /// None: the noise-free reference.
    target: Option<f64>,
    sigma: f64,
    mode: Mode,
    repeat: usize,
    seed: u64,
    /// The outside analyst's ε (add/remove) from the run's privacy table: (PLD, RDP).
    epsilon: Option<(f64, f64)>,
    test_nll: f64,
    mean_tv: f64,
    max_tv: f64,
    tstr: Option<f64>,
    trtr: Option<f64>,
    seconds: f64,
}

fn check(args: &VerticalViSweepArgs) -> Result<(), String> {
    if let Some(e) = args.epsilons.iter().find(|e| !(e.is_finite() && **e > 0.0)) {
        return Err(format!("--epsilons: ε = {e} must be positive and finite"));
    }
    if args.epsilons.is_empty() || args.modes.is_empty() {
        return Err("--epsilons and --modes each need at least one value".into());
    }
    if args.repeats == 0 {
        return Err("--repeats 0: need at least one run per point".into());
    }
    Ok(())
}

/// The runs' seeds: --seed's "vvi/sweep/repeat/r" streams, or the OS's.
fn seeds(args: &VerticalViSweepArgs) -> Vec<u64> {
    (0..args.repeats)
        .map(|r| match args.common.seed {
            Some(s) => derive(s, &format!("vvi/sweep/repeat/{r}")).next_u64(),
            None => Seed::Os.rng("vvi/sweep/seed").next_u64(),
        })
        .collect()
}

fn sweep(args: &VerticalViSweepArgs, out: &OutDir) -> Result<Vec<PathBuf>, String> {
    let c = &args.common;
    let data = c.load()?;
    let records = data.train[0].rows;
    let target = data.target(c.target.as_deref());
    check_target(&data, target.as_ref())?;
    let mut sigmas = Vec::new();
    for &eps in &args.epsilons {
        let z = c.calibrate_sigma(eps, records, "--epsilons")?;
        sigmas.push((Some(eps), z.sigma));
    }
    let modes: Vec<Mode> = args.modes.iter().map(|m| m.mode()).collect();
    // The noise-free reference of the modes that cost little (mpc is fixed's numerics to 2^−20).
    let reference: Vec<Mode> = modes.iter().copied().filter(|m| *m != Mode::Mpc).collect();
    let seeds = seeds(args);
    let mut plan: Vec<(Option<f64>, f64, Mode)> = Vec::new();
    for &(eps, sigma) in &sigmas {
        plan.extend(modes.iter().map(|&m| (eps, sigma, m)));
    }
    plan.extend(reference.iter().map(|&m| (None, 0.0, m)));

    let total = (plan.len() * seeds.len() * c.steps) as u64;
    let progress = Progress::new("vertical-vi-sweep", "step", total);
    let mut rows = Vec::new();
    let mut done = 0u64;
    for &(eps, sigma, mode) in &plan {
        for (repeat, &seed) in seeds.iter().enumerate() {
            let label = eps.map_or("no noise".into(), |e| format!("ε = {e}"));
            progress.set_message(format!("{} at {label}, run {}", mode.name(), repeat + 1));
            let mut config = c.run_config(mode, sigma, records)?;
            config.seed = Seed::Fixed(seed);
            config.eval_every = c.steps;
            let result = run_mode(&data.schema, &data.train, &data.test, &config, &mut |p| {
                progress.set_position(done + p.step as u64)
            })
            .map_err(|e| format!("{} at {label}: {e}", mode.name()))?;
            done += c.steps as u64;
            let epsilon = result.privacy.iter().flatten().find_map(|g| {
                (g.viewer == Viewer::Analyst && g.adjacency == Adjacency::AddRemove)
                    .then_some((g.epsilon.pld, g.epsilon.rdp.epsilon))
            });
            let report = synthetic_report(
                &data,
                &result.posterior,
                None,
                Seed::Fixed(seed),
                target.clone(),
            )?;
            rows.push(Row {
                target: eps,
                sigma,
                mode,
                repeat,
                seed,
                epsilon,
                test_nll: result.final_test_nll,
                mean_tv: report.mean_tv,
                max_tv: report.max_tv,
                tstr: report.tstr.as_ref().map(|t| t.tstr_accuracy),
                trtr: report.tstr.as_ref().and_then(|t| t.trtr_accuracy),
                seconds: result.train_seconds,
            });
        }
    }
    progress.finish();
    write(args, out, &data.name, &modes, &rows)
}

fn csv(rows: &[Row]) -> String {
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    let mut out = String::from(
        "epsilon_target_pld,sigma,mode,repeat,seed,epsilon_analyst_pld,epsilon_analyst_rdp,\
         test_nll,mean_tv,max_tv,tstr_accuracy,trtr_accuracy,train_seconds\n",
    );
    for r in rows {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            opt(r.target),
            r.sigma,
            r.mode.name(),
            r.repeat,
            r.seed,
            opt(r.epsilon.map(|e| e.0)),
            opt(r.epsilon.map(|e| e.1)),
            r.test_nll,
            r.mean_tv,
            r.max_tv,
            opt(r.tstr),
            opt(r.trtr),
            r.seconds
        ));
    }
    out
}

/// Mean and range over the repeats of each (mode, ε): one line per mode, with a band when there
/// are several repeats, and the noise-free mean as a dashed line across the ε range.
fn series(modes: &[Mode], rows: &[Row], value: &dyn Fn(&Row) -> Option<f64>) -> Vec<Series> {
    let xs: Vec<f64> = {
        let mut xs: Vec<f64> = rows.iter().filter_map(|r| r.target).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        xs
    };
    let stats = |mode: Mode, target: Option<f64>| -> Option<(f64, f64, f64)> {
        let v: Vec<f64> = rows
            .iter()
            .filter(|r| r.mode == mode && r.target == target)
            .filter_map(value)
            .filter(|v| v.is_finite())
            .collect();
        (!v.is_empty()).then(|| {
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (mean, lo, hi)
        })
    };
    let mut out = Vec::new();
    for (k, &mode) in modes.iter().enumerate() {
        let pts: Vec<(f64, (f64, f64, f64))> =
            xs.iter().filter_map(|&x| stats(mode, Some(x)).map(|s| (x, s))).collect();
        out.push(Series {
            label: mode.name().to_string(),
            points: pts.iter().map(|&(x, (m, _, _))| (x, m)).collect(),
            band: if rows.iter().any(|r| r.repeat > 0) {
                pts.iter().map(|&(x, (_, lo, hi))| (x, lo, hi)).collect()
            } else {
                Vec::new()
            },
            colour: Some(k),
            ..Default::default()
        });
    }
    // One reference: the noise-free runs of every mode agree to fixed point's precision.
    let reference = [Mode::Plain, Mode::NonPartitioned, Mode::Fixed]
        .into_iter()
        .find_map(|m| stats(m, None).map(|s| (m, s)));
    if let (Some((mode, (m, _, _))), Some(&first), Some(&last)) = (reference, xs.first(), xs.last())
    {
        out.push(Series {
            label: format!("no noise ({}, clipped)", mode.name()),
            points: vec![(first, m), (last, m)],
            dashed: true,
            colour: Some(8),
            ..Default::default()
        });
    }
    out
}

fn write(
    args: &VerticalViSweepArgs,
    out: &OutDir,
    data: &str,
    modes: &[Mode],
    rows: &[Row],
) -> Result<Vec<PathBuf>, String> {
    let c = &args.common;
    let stem = format!("vertical-vi-{}-vs-epsilon", slug(data));
    let csv_path = out.join(format!("{stem}.csv"));
    std::fs::write(&csv_path, csv(rows))
        .map_err(|e| format!("writing {}: {e}", csv_path.display()))?;
    let title = format!(
        "DP-VI on {data}: K = {}, C = {}, B = {}, T = {}, δ = {:e}",
        c.components, c.clip, c.batch, c.steps, c.delta
    );
    let nll = LineChart {
        title: title.clone(),
        x_label: X_LABEL.into(),
        y_label: "test NLL per record (nats)".into(),
        x_log: true,
        y_log: false,
        series: series(modes, rows, &|r| Some(r.test_nll)),
        y_range: None,
        legend: Legend::UpperRight,
    };
    let tv = LineChart {
        title,
        x_label: X_LABEL.into(),
        y_label: "largest per-column TV, twin vs real test".into(),
        x_log: true,
        y_log: false,
        series: series(modes, rows, &|r| Some(r.max_tv)),
        y_range: None,
        legend: Legend::UpperRight,
    };
    let mut files = vec![csv_path];
    files.extend(nll.write(&out.join(format!("{stem}-nll"))).map_err(|e| e.to_string())?);
    files.extend(tv.write(&out.join(format!("{stem}-tv"))).map_err(|e| e.to_string())?);
    Ok(files)
}

/// The figures' ε axis: the target every run's σ was calibrated to, and by which accountant.
const X_LABEL: &str = "ε of the outside analyst (add/remove; PLD accountant, σ calibrated per ε)";

/// "CPS1988" → "cps1988"; anything else to lowercase letters, digits and dashes.
fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|ch| if ch.is_ascii_alphanumeric() { ch.to_ascii_lowercase() } else { '-' })
        .collect();
    s.split('-').filter(|p| !p.is_empty()).take(3).collect::<Vec<_>>().join("-")
}

pub fn run(args: VerticalViSweepArgs) -> ExitCode {
    let result = check(&args)
        .and_then(|()| with_out(args.out.as_deref(), "vertical-vi-sweep", |out| sweep(&args, out)));
    crate::exit::files_or_fail(result)
}
