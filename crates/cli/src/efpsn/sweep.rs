//! `cape efpsn-sweep`: the paper's γ sweep (seed 003 §V, Figs. 3–4): ‖x̄ − x*‖ and test accuracy
//! against γ for EFPSN (DSGD and gradient tracking), the non-zero-sum baseline (both optimisers)
//! and the noise-free runs, as CSV and figures (PNG + SVG).

use std::path::PathBuf;
use std::process::ExitCode;

use capelab_core::efpsn::epsilon::theorem_epsilon;
use capelab_core::efpsn::optimizer::Optimizer;
use capelab_core::efpsn::sim::Method;

use super::args::{EfpsnSweepArgs, ModelArg};
use super::run::{generate_keys, run_one};
use crate::fm::parse_list;
use crate::outdir::{OutDir, with_out};
use crate::plot::{Legend, LineChart, Series};
use crate::progress::Progress;

struct Row {
    gamma: f64,
    method: Method,
    optimizer: Optimizer,
    deviation: f64,
    score: f64,
    /// Theorem IV.1's ε at this γ (∞ without noise).
    epsilon: f64,
    /// EFPSN only: whether Σ_i η̄_i was exactly 0; None where no zero-sum mask exists (the
    /// baseline's independent noise, the noise-free run).
    residual_zero: Option<bool>,
}

fn sweep(args: &EfpsnSweepArgs, out: &OutDir) -> Result<Vec<PathBuf>, String> {
    let c = &args.common;
    let gammas = parse_list(&args.gammas, "--gammas")?;
    if let Some(g) = gammas.iter().find(|g| g.is_nan() || **g <= 0.0) {
        return Err(format!("--gammas: γ = {g} must be positive"));
    }
    let (problem, name) = c.problem()?;
    let graph = c.graph()?;
    // Keys do not depend on γ: one set serves every EFPSN run of the sweep.
    let (keys, _) = generate_keys(c)?;
    let optimizers = [Optimizer::Dsgd, Optimizer::Tracking];
    let runs = (gammas.len() * 4 + 2) as u64;
    let progress = Progress::new("efpsn-sweep", "run", runs);
    let mut rows = Vec::new();
    for &optimizer in &optimizers {
        progress.set_message(format!("noise-free ({})", optimizer.name()));
        let config = c.run_config(&problem, Method::NoiseFree, optimizer, 1.0)?;
        let t = run_one(&problem, &config, None, true)?;
        let last = t.report.last();
        for &gamma in &gammas {
            rows.push(Row {
                gamma,
                method: Method::NoiseFree,
                optimizer,
                deviation: last.deviation,
                score: last.score,
                epsilon: f64::INFINITY,
                residual_zero: None,
            });
        }
        progress.inc(1);
    }
    for &gamma in &gammas {
        let epsilon =
            theorem_epsilon(&graph, &c.theorem(gamma)).map_err(|e| e.to_string())?.epsilon;
        for method in [Method::Efpsn, Method::Baseline] {
            for &optimizer in &optimizers {
                progress.set_message(format!(
                    "{} ({}) at γ = {gamma}",
                    method.name(),
                    optimizer.name()
                ));
                let config = c.run_config(&problem, method, optimizer, gamma)?;
                let k = (method == Method::Efpsn).then(|| keys.clone());
                let t = run_one(&problem, &config, k, true)
                    .map_err(|e| format!("γ = {gamma}, {}: {e}", method.name()))?;
                let last = t.report.last();
                let residual_zero =
                    t.report.zero_sum_residual.as_ref().map(|r| r.iter().all(|&v| v == 0));
                rows.push(Row {
                    gamma,
                    method,
                    optimizer,
                    deviation: last.deviation,
                    score: last.score,
                    epsilon,
                    residual_zero,
                });
                progress.inc(1);
            }
        }
    }
    progress.finish();

    let stem = format!("efpsn-{}-{}-vs-gamma", c.model_kind().name(), c.topology().name());
    let score_col = if c.model == ModelArg::Logistic { "test_accuracy" } else { "test_rmse" };
    let mut csv = format!(
        "gamma,method,optimizer,deviation,{score_col},epsilon_theorem_iv1,zero_sum_exact\n"
    );
    for r in &rows {
        csv.push_str(&format!(
            "{},{},{},{},{},{},{}\n",
            r.gamma,
            r.method.name(),
            r.optimizer.name(),
            r.deviation,
            r.score,
            r.epsilon,
            r.residual_zero.map_or("".into(), |z| z.to_string())
        ));
    }
    let csv_path = out.join(format!("{stem}.csv"));
    std::fs::write(&csv_path, csv).map_err(|e| format!("writing {}: {e}", csv_path.display()))?;

    let series = |value: &dyn Fn(&Row) -> f64| -> Vec<Series> {
        let mut out = Vec::new();
        for (k, method) in
            [Method::Efpsn, Method::Baseline, Method::NoiseFree].into_iter().enumerate()
        {
            for &optimizer in &optimizers {
                let points: Vec<(f64, f64)> = rows
                    .iter()
                    .filter(|r| r.method == method && r.optimizer == optimizer)
                    .map(|r| (r.gamma, value(r)))
                    .collect();
                out.push(Series {
                    label: format!("{} ({})", method.name(), optimizer.name()),
                    points,
                    dashed: optimizer == Optimizer::Dsgd,
                    colour: Some(k),
                    ..Default::default()
                });
            }
        }
        out
    };
    let title = format!(
        "EFPSN on {name}, {} of {}, T = {}, α = {}",
        c.topology().name(),
        c.agents,
        c.iterations,
        c.step
    );
    let deviation = LineChart {
        title: title.clone(),
        x_label: "γ (noise scale of σ_k² = γ/k^p)".into(),
        y_label: "‖x̄ − x*‖ at the end".into(),
        x_log: true,
        y_log: true,
        series: series(&|r| r.deviation.max(1e-12)),
        y_range: None,
        legend: Legend::UpperLeft,
    };
    let score = LineChart {
        title,
        x_label: "γ".into(),
        y_label: if c.model == ModelArg::Logistic {
            "test accuracy, %".into()
        } else {
            "test RMSE".into()
        },
        x_log: true,
        y_log: false,
        series: series(&|r| if c.model == ModelArg::Logistic { 100.0 * r.score } else { r.score }),
        y_range: None,
        legend: Legend::LowerLeft,
    };
    let mut files = vec![csv_path];
    files.extend(
        deviation.write(&out.join(format!("{stem}-deviation"))).map_err(|e| e.to_string())?,
    );
    files.extend(score.write(&out.join(format!("{stem}-score"))).map_err(|e| e.to_string())?);
    Ok(files)
}

pub fn run_sweep(args: EfpsnSweepArgs) -> ExitCode {
    crate::exit::files_or_fail(with_out(args.out.as_deref(), "efpsn-sweep", |out| {
        sweep(&args, out)
    }))
}
