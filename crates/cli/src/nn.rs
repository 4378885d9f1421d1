/*!
`cape nn` and `cape nn-sweep`: the two-layer network trained by distributed gradient descent with
CAPE, the conventional scheme, or without privacy (seed 002 §5.1, spec cape-fm §5), with the
privacy of all iterations accounted (`capelab_core::nn::privacy`).

Synthetic data: two Gaussian classes (D = 50, means ±0.25), N = 10 000 records in all, split 70/30
as in the authors' code; `--samples` is that total. Real data (e.g. `breast-cancer`) are split
70/30 and need `--bounds` or `--data-dependent-scaling`, as for `cape fm`.
*/

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use capelab_core::data::TargetKind;
use capelab_core::nn::{NnConfig, NnMechanism, NnReport, train};
use serde_json::{Value, json};

use crate::fm::{CalibrationArg, DataArgs, Loaded, load, parse_list, stats};
use crate::plot::{Legend, LineChart, Series};

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum NnMechanismArg {
    Cape,
    Conventional,
    Nonprivate,
}

impl From<NnMechanismArg> for NnMechanism {
    fn from(m: NnMechanismArg) -> Self {
        match m {
            NnMechanismArg::Cape => NnMechanism::Cape,
            NnMechanismArg::Conventional => NnMechanism::Conventional,
            NnMechanismArg::Nonprivate => NnMechanism::NonPrivate,
        }
    }
}

/// Settings shared by `nn` and `nn-sweep`.
#[derive(clap::Args, Clone, Debug)]
pub struct NnCommon {
    /// ε of each iteration's release (the papers' x axis).
    #[arg(long, value_name = "E", default_value_t = 0.5, allow_negative_numbers = true)]
    pub epsilon: f64,
    /// δ of each iteration (0.01 in seed 002) and of the overall accounting.
    #[arg(long, value_name = "D", default_value_t = 1e-2, allow_negative_numbers = true)]
    pub delta: f64,
    #[arg(long, value_name = "S", default_value_t = 4)]
    pub sites: usize,
    /// Colluding sites S_C for CAPE's views (default ⌈S/3⌉ − 1).
    #[arg(long, value_name = "C")]
    pub colluders: Option<usize>,
    #[arg(long, default_value_t = 5)]
    pub hidden: usize,
    /// Full-batch gradient steps T (every one is accounted).
    #[arg(long, value_name = "T", default_value_t = 200)]
    pub iterations: usize,
    #[arg(long, value_name = "LR", default_value_t = 0.01)]
    pub learning_rate: f64,
    /// Per-example clipping norm C (Δ = 2C/N_s).
    #[arg(long, value_name = "C", default_value_t = 1.0)]
    pub clip: f64,
    #[arg(long, value_enum, default_value = "classical-analytic")]
    pub calibration: CalibrationArg,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub data: DataArgs,
}

#[derive(clap::Args, Debug)]
pub struct NnArgs {
    #[command(flatten)]
    pub common: NnCommon,
    #[arg(long, value_enum, default_value = "cape")]
    pub mechanism: NnMechanismArg,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

fn load_nn(common: &NnCommon, seed: u64) -> Result<Loaded, String> {
    let mut data = common.data.clone();
    if data.data == "synthetic" {
        data.features = Some(data.features.unwrap_or(50)); // seed 002 §5.1
        let total = data.samples.take().unwrap_or(10_000);
        return load(&data, TargetKind::Binary, 0.3, seed, Some(total));
    }
    load(&data, TargetKind::Binary, 0.3, seed, None)
}

fn config(common: &NnCommon, mechanism: NnMechanism, epsilon: f64, seed: u64) -> NnConfig {
    NnConfig {
        mechanism,
        epsilon_per_iteration: epsilon,
        delta: common.delta,
        sites: common.sites,
        colluders: common.colluders,
        calibration: common.calibration.into(),
        hidden: common.hidden,
        iterations: common.iterations,
        learning_rate: common.learning_rate,
        clip: common.clip,
        seed,
    }
}

fn report(args: &NnArgs) -> Result<Value, String> {
    let c = &args.common;
    let data = load_nn(c, c.seed)?;
    let cfg = config(c, args.mechanism.into(), c.epsilon, c.seed);
    let r = train(&cfg, &data.train, &data.test).map_err(|e| e.to_string())?;
    let np = train(&config(c, NnMechanism::NonPrivate, c.epsilon, c.seed), &data.train, &data.test)
        .map_err(|e| e.to_string())?;
    let mut warnings = vec![];
    if let Some(w) = &data.normalisation.warning {
        warnings.push(w.clone());
    }
    Ok(json!({
        "mechanism": r.mechanism,
        "data": {
            "name": data.name,
            "features": data.train.features(),
            "train": data.train.len(),
            "test": data.test.len(),
            "records_used": r.records_used,
            "normalisation": data.normalisation,
        },
        "sites": c.sites,
        "hidden": c.hidden,
        "iterations": c.iterations,
        "clip": c.clip,
        "epsilon_per_iteration": c.epsilon,
        "delta": c.delta,
        "accuracy": r.test_accuracy,
        "train_accuracy": r.train_accuracy,
        "train_loss": r.train_loss,
        "nonprivate_accuracy": np.test_accuracy,
        "epsilon_overall": r.privacy.as_ref().map(|p| p.epsilon),
        "epsilon_overall_view": r.privacy.as_ref().map(|p| p.guarantee_view.clone()),
        "privacy": r.privacy,
        "site_noise_sd": r.site_noise_sd,
        "aggregate_noise_sd": r.aggregate_noise_sd,
        "clipped_share": r.clipped_share,
        "loss_history": r.loss_history,
        "warnings": warnings,
    }))
}

fn human(v: &Value) -> String {
    let mut out = String::new();
    let mut line = |k: &str, val: String| out.push_str(&format!("{k:<24} {val}\n"));
    line("mechanism", v["mechanism"].as_str().unwrap_or("").into());
    line(
        "data",
        format!(
            "{} (D = {}, {} train, {} test)",
            v["data"]["name"].as_str().unwrap_or(""),
            v["data"]["features"],
            v["data"]["train"],
            v["data"]["test"]
        ),
    );
    let pct = |k: &str| 100.0 * v[k].as_f64().unwrap_or(f64::NAN);
    line(
        "test accuracy",
        format!(
            "{:.2}% (train {:.2}%, non-private {:.2}%)",
            pct("accuracy"),
            pct("train_accuracy"),
            pct("nonprivate_accuracy")
        ),
    );
    line("ε per iteration, δ", format!("{}, {}", v["epsilon_per_iteration"], v["delta"]));
    if let Some(p) = v["privacy"].as_object() {
        line("iterations T", p["iterations"].to_string());
        line(
            "noise multiplier z",
            format!("{:.4}", p["noise_multiplier"].as_f64().unwrap_or(f64::NAN)),
        );
        for view in p["views"].as_array().into_iter().flatten() {
            line(
                "overall ε",
                format!(
                    "{:.3} exact, {:.3} RDP (standard), {:.3} RDP (improved): {} (c_S = {:.4})",
                    view["epsilon_exact"].as_f64().unwrap_or(f64::NAN),
                    view["epsilon_rdp"].as_f64().unwrap_or(f64::NAN),
                    view["epsilon_rdp_improved"].as_f64().unwrap_or(f64::NAN),
                    view["view"].as_str().unwrap_or(""),
                    view["collusion_factor"].as_f64().unwrap_or(f64::NAN),
                ),
            );
        }
        if let Some(t) = p["per_iteration_theorem1"].as_object() {
            line(
                "per iteration (paper)",
                format!(
                    "Theorem 1 δ = {} at ε = {} (c_S = {:.4})",
                    t["delta_phi_bound"]
                        .as_f64()
                        .map_or("none (ε ≤ μ_z)".into(), |d| format!("{d:.3e}")),
                    v["epsilon_per_iteration"],
                    t["c_s"].as_f64().unwrap_or(f64::NAN)
                ),
            );
        }
    }
    for w in v["warnings"].as_array().into_iter().flatten() {
        line("warning", w.as_str().unwrap_or("").into());
    }
    out
}

pub fn run(args: NnArgs) -> ExitCode {
    match report(&args) {
        Ok(v) if args.json => match serde_json::to_string_pretty(&v) {
            Ok(s) => {
                println!("{s}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: could not encode the report as JSON: {e}");
                ExitCode::FAILURE
            }
        },
        Ok(v) => {
            print!("{}", human(&v));
            ExitCode::SUCCESS
        }
        Err(m) => {
            eprintln!("error: {m}");
            ExitCode::from(2)
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum NnSweepAxis {
    Epsilon,
    Samples,
}

#[derive(clap::Args, Debug)]
pub struct NnSweepArgs {
    #[command(flatten)]
    pub common: NnCommon,
    #[arg(long, value_enum, default_value = "epsilon")]
    pub sweep: NnSweepAxis,
    /// x values, comma-separated (default: the papers' grid).
    #[arg(long, value_name = "LIST")]
    pub values: Option<String>,
    #[arg(long, default_value_t = 5)]
    pub runs: u64,
    #[arg(long, value_name = "DIR", default_value = "figures")]
    pub out: PathBuf,
    #[arg(long)]
    pub name: Option<String>,
}

fn sweep(args: &NnSweepArgs) -> Result<Vec<PathBuf>, String> {
    let c = &args.common;
    let xs = match &args.values {
        Some(v) => parse_list(v, "--values")?,
        None => match args.sweep {
            NnSweepAxis::Epsilon => vec![1e-3, 5e-3, 1e-2, 5e-2, 0.1, 0.5, 1.0, 5.0, 10.0],
            NnSweepAxis::Samples => (1..=10).map(|k| 1000.0 * k as f64).collect(),
        },
    };
    let mut rows: Vec<(f64, NnMechanism, Vec<NnReport>)> = vec![];
    for &x in &xs {
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
            }
        }
        for (k, reps) in per {
            rows.push((x, NnMechanism::ALL[k], reps));
        }
        eprintln!("  x = {x}: done");
    }
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
    std::fs::create_dir_all(&args.out).map_err(|e| format!("--out: {e}"))?;
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
    let csv_path = args.out.join(format!("{stem}.csv"));
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
    files.extend(chart.write(&args.out.join(&stem)).map_err(|e| e.to_string())?);
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
                "Overall ε of all {} iterations (exact; ε = 0 not drawn), δ = {}",
                c.iterations, c.delta
            ),
            x_label: "ε per iteration".into(),
            y_label: "overall ε".into(),
            x_log: true,
            y_log: true,
            series,
            y_range: None,
            legend: Legend::UpperLeft,
        };
        files.extend(
            chart
                .write(&args.out.join(format!("{stem}-overall-epsilon")))
                .map_err(|e| e.to_string())?,
        );
    }
    Ok(files)
}

pub fn run_sweep(args: NnSweepArgs) -> ExitCode {
    match sweep(&args) {
        Ok(files) => {
            for f in files {
                println!("wrote {}", f.display());
            }
            ExitCode::SUCCESS
        }
        Err(m) => {
            eprintln!("error: {m}");
            ExitCode::from(2)
        }
    }
}
