/*!
`cape fm` and `cape fm-sweep`: private linear and logistic regression with the functional
mechanism (spec cape-fm §2–§4, §6), one run or averaged sweeps over ε, N or δ with CSV and figures.

The numbers come from `capelab_core::fm`; this file loads and normalises data, parses flags,
aggregates runs, and formats. Data sources (`--data`):
- `synthetic`: linear: spec §6.1's recipe with public normalisation; logistic: two Gaussian classes
  (means ±0.25, spec §5) clipped to a public radius. `--samples` is the training size; a further
  N/9 records form the test set (S1's 90:10).
- `diabetes`, `breast-cancer`: the CSVs that `scripts/fetch_datasets.py` writes into `data/`
  (from scikit-learn at set-up time, never downloaded here); or any `PATH.csv` with a header and a
  numeric target column (`--target`). Real data need `--bounds FILE.json` (public bounds) or
  `--data-dependent-scaling` (the papers' recipe, **not private**, reported with a warning).
  10% is held out; `--samples` subsamples the training part.
*/

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use capelab_core::data::{
    Bounds, Dataset, Normalisation, Normaliser, TargetKind, parse_csv, synthetic,
};
use capelab_core::fm::{
    Calibration, Constraint, EigenFloor, Evaluation, FmConfig, FmFit, Mechanism, MinimiserConfig,
    Model, evaluate, fit,
};
use nalgebra::DVector;
use serde::Serialize;
use serde_json::{Value, json};

use crate::plot::{Legend, LineChart, Series};

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelArg {
    Linear,
    Logistic,
}

impl From<ModelArg> for Model {
    fn from(m: ModelArg) -> Self {
        match m {
            ModelArg::Linear => Model::Linear,
            ModelArg::Logistic => Model::Logistic,
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MechanismArg {
    Gaussian,
    Laplace,
    Relaxed,
    Output,
    Cape,
    Conventional,
    Local,
    Nonprivate,
}

impl From<MechanismArg> for Mechanism {
    fn from(m: MechanismArg) -> Self {
        match m {
            MechanismArg::Gaussian => Mechanism::Gaussian,
            MechanismArg::Laplace => Mechanism::Laplace,
            MechanismArg::Relaxed => Mechanism::Relaxed,
            MechanismArg::Output => Mechanism::OutputPerturbation,
            MechanismArg::Cape => Mechanism::Cape,
            MechanismArg::Conventional => Mechanism::Conventional,
            MechanismArg::Local => Mechanism::Local,
            MechanismArg::Nonprivate => Mechanism::NonPrivate,
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CalibrationArg {
    /// Classical below ε = 1, analytic Gaussian at ε ≥ 1.
    ClassicalAnalytic,
    /// Classical below ε = 1, the papers' extrapolation at ε ≥ 1 (not a guarantee there).
    ClassicalPaper,
    /// The analytic Gaussian mechanism at every ε.
    Analytic,
}

impl From<CalibrationArg> for Calibration {
    fn from(c: CalibrationArg) -> Self {
        match c {
            CalibrationArg::ClassicalAnalytic => Calibration::ClassicalThenAnalytic,
            CalibrationArg::ClassicalPaper => Calibration::ClassicalThenPaper,
            CalibrationArg::Analytic => Calibration::Analytic,
        }
    }
}

/// Data selection and normalisation, shared by `fm`, `fm-sweep`, `nn` and `nn-sweep`.
#[derive(clap::Args, Clone, Debug)]
pub struct DataArgs {
    /// synthetic, diabetes, breast-cancer, or a path to a CSV file.
    #[arg(long, default_value = "synthetic")]
    pub data: String,
    /// Number of features D of the synthetic data (default 20 for fm, 50 for nn).
    #[arg(long = "features", value_name = "D")]
    pub features: Option<usize>,
    /// Records N. Synthetic data: fm generates N training records (default 10 000) plus N/9 for
    /// testing; nn generates N in all (default 10 000), split 70/30. Real data: a subsample of N
    /// training records.
    #[arg(long, value_name = "N")]
    pub samples: Option<usize>,
    /// The target column of a CSV.
    #[arg(long, default_value = "target")]
    pub target: String,
    /// Public bounds for a CSV's columns: {"features": {"name": [lo, hi], …}, "target": [lo, hi]}.
    #[arg(long, value_name = "FILE.json")]
    pub bounds: Option<PathBuf>,
    /// Scale real data from the data themselves (spec §2.4, as the papers do). NOT private.
    #[arg(long)]
    pub data_dependent_scaling: bool,
    /// Where `diabetes` and `breast-cancer` live (written by scripts/fetch_datasets.py).
    #[arg(long, value_name = "DIR", default_value = "data")]
    pub data_dir: PathBuf,
}

/// Everything `fm` and `fm-sweep` share.
#[derive(clap::Args, Clone, Debug)]
pub struct FmCommon {
    #[arg(long, value_enum, default_value = "linear")]
    pub model: ModelArg,
    /// Target ε (per site for the distributed mechanisms).
    #[arg(long, value_name = "E", default_value_t = 0.5, allow_negative_numbers = true)]
    pub epsilon: f64,
    /// Target δ (ignored by the pure ε-DP mechanisms).
    #[arg(long, value_name = "D", default_value_t = 1e-5, allow_negative_numbers = true)]
    pub delta: f64,
    /// Number of sites S for cape, conventional and local.
    #[arg(long, value_name = "S", default_value_t = 5)]
    pub sites: usize,
    /// Colluding sites S_C for CAPE's privacy views (default ⌈S/3⌉ − 1).
    #[arg(long, value_name = "C")]
    pub colluders: Option<usize>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub data: DataArgs,
    #[arg(long, value_enum, default_value = "classical-analytic")]
    pub calibration: CalibrationArg,
    /// Calibrate the joint release of the blocks (z = m·z_target, spec §7.1) rather than each
    /// block alone as the papers do.
    #[arg(long)]
    pub strict: bool,
    /// Do not release linear regression's Λ₀ (ŵ does not need it; m drops from 1.5 to 1.25).
    #[arg(long)]
    pub no_constant: bool,
    /// Eigenvalue floor of the minimiser as a multiple k of τ₂·√D (2: the noise's spectral norm).
    #[arg(long, value_name = "K", default_value_t = 2.0)]
    pub floor_noise_multiple: f64,
    /// An absolute eigenvalue floor instead (overrides --floor-noise-multiple).
    #[arg(long, value_name = "F")]
    pub floor: Option<f64>,
    /// Ridge λ added to Λ̂₂ before trimming.
    #[arg(long, value_name = "L", default_value_t = 0.0)]
    pub ridge: f64,
    /// Project ŵ onto the ball ‖w‖ ≤ R.
    #[arg(long, value_name = "R")]
    pub ball: Option<f64>,
    /// Project ŵ onto the box [−B, B]^D (the authors' code uses B = 1).
    #[arg(long = "box", value_name = "B")]
    pub box_half_width: Option<f64>,
    /// Output perturbation's public radius R.
    #[arg(long, value_name = "R", default_value_t = 1.0)]
    pub output_radius: f64,
}

#[derive(clap::Args, Debug)]
pub struct FmArgs {
    #[command(flatten)]
    pub common: FmCommon,
    #[arg(long, value_enum, default_value = "gaussian")]
    pub mechanism: MechanismArg,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// A loaded, normalised data set.
pub struct Loaded {
    pub name: String,
    pub train: Dataset,
    pub test: Dataset,
    pub w_star: Option<DVector<f64>>,
    pub normalisation: Normalisation,
}

/// Loads `args.data` for a task with targets `kind`, split with `test_fraction`, seeded.
/// `synthetic_total` overrides how many synthetic records are generated in all.
pub fn load(
    args: &DataArgs,
    kind: TargetKind,
    test_fraction: f64,
    seed: u64,
    synthetic_total: Option<usize>,
) -> Result<Loaded, String> {
    if args.data == "synthetic" {
        // Generated records are i.i.d., so the first ones are the training set: exactly N of them.
        let (total, n_train) = match synthetic_total {
            Some(total) => (total, ((1.0 - test_fraction) * total as f64).round() as usize),
            None => {
                let n = args.samples.unwrap_or(10_000);
                (n + (n as f64 * test_fraction / (1.0 - test_fraction)).round() as usize, n)
            }
        };
        let d = args.features.unwrap_or(20);
        if d == 0 || total < 4 {
            return Err(format!("--features {d} and --samples {n_train} are too small"));
        }
        let (raw, w_star, normaliser) = match kind {
            TargetKind::Regression => {
                let (data, w) = synthetic::regression(total, d, 0.0, seed);
                (data, Some(w), Normaliser::AlreadyNormalised)
            }
            TargetKind::Binary => {
                let data = synthetic::two_gaussians(total, d, 0.25, seed);
                let radius = synthetic::two_gaussians_radius(d, 0.25);
                (data, None, Normaliser::RowClip { radius, target: None })
            }
        };
        let idx: Vec<usize> = (0..total).collect();
        let (train, test) = (raw.select(&idx[..n_train]), raw.select(&idx[n_train..]));
        let fitted = normaliser.fit(&train, kind).map_err(|e| e.to_string())?;
        let name = match kind {
            TargetKind::Regression => "synthetic regression".to_string(),
            TargetKind::Binary => "synthetic two Gaussians".to_string(),
        };
        return Ok(Loaded {
            name,
            train: fitted.apply(&train).map_err(|e| e.to_string())?,
            test: fitted.apply(&test).map_err(|e| e.to_string())?,
            w_star,
            normalisation: fitted.description.clone(),
        });
    }
    let (name, path) = match args.data.as_str() {
        "diabetes" => ("diabetes".to_string(), args.data_dir.join("diabetes.csv")),
        "breast-cancer" => ("breast-cancer".to_string(), args.data_dir.join("breast_cancer.csv")),
        other => (other.to_string(), PathBuf::from(other)),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        let hint = if matches!(args.data.as_str(), "diabetes" | "breast-cancer") {
            " (run scripts/setup.sh test, or tools/venv/bin/python scripts/fetch_datasets.py)"
        } else {
            ""
        };
        format!("--data {}: cannot read {}: {e}{hint}", args.data, path.display())
    })?;
    let table = parse_csv(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let split = table.features_and_target(&args.target).map_err(|e| format!("--target: {e}"))?;
    let data = Dataset::from_rows(&split.features, &split.target).map_err(|e| e.to_string())?;
    let (mut train, test) = data.split(test_fraction, seed).map_err(|e| e.to_string())?;
    if let Some(n) = args.samples {
        if n > train.len() {
            return Err(format!(
                "--samples {n} is more than the {} training records of {name}",
                train.len()
            ));
        }
        train = train.head(n);
    }
    let normaliser = match (&args.bounds, args.data_dependent_scaling) {
        (Some(_), true) => {
            return Err("give either --bounds or --data-dependent-scaling, not both".into());
        }
        (Some(file), false) => Normaliser::PublicBounds(read_bounds(file, &split.feature_names)?),
        (None, true) => Normaliser::DataDependent,
        (None, false) => {
            return Err(format!(
                "{name} needs a normalisation into FM's domain: --bounds FILE.json with public \
                 bounds for {:?} (and the target), or --data-dependent-scaling (the papers' \
                 recipe, not private)",
                split.feature_names
            ));
        }
    };
    let fitted = normaliser.fit(&train, kind).map_err(|e| e.to_string())?;
    Ok(Loaded {
        name,
        train: fitted.apply(&train).map_err(|e| e.to_string())?,
        test: fitted.apply(&test).map_err(|e| e.to_string())?,
        w_star: None,
        normalisation: fitted.description.clone(),
    })
}

fn read_bounds(file: &Path, names: &[String]) -> Result<Bounds, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("--bounds: cannot read {}: {e}", file.display()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("--bounds: {e}"))?;
    let pair = |x: &Value, what: &str| -> Result<(f64, f64), String> {
        match x.as_array().map(|a| a.iter().map(Value::as_f64).collect::<Vec<_>>()) {
            Some(a) if a.len() == 2 && a[0].is_some() && a[1].is_some() => {
                Ok((a[0].unwrap_or(0.0), a[1].unwrap_or(0.0)))
            }
            _ => Err(format!("--bounds: {what} must be [lo, hi], got {x}")),
        }
    };
    let features = names
        .iter()
        .map(|n| {
            let b = v["features"].get(n).ok_or_else(|| format!("--bounds: no bounds for '{n}'"))?;
            pair(b, n)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let target = match v.get("target") {
        Some(t) => Some(pair(t, "target")?),
        None => None,
    };
    Ok(Bounds { features, target })
}

/// The configuration of one run from the shared flags.
pub fn config(
    common: &FmCommon,
    mechanism: Mechanism,
    epsilon: f64,
    delta: f64,
    seed: u64,
) -> FmConfig {
    let floor = match common.floor {
        Some(f) => EigenFloor::Absolute(f),
        None => EigenFloor::NoiseScaled(common.floor_noise_multiple),
    };
    let constraint = match (common.ball, common.box_half_width) {
        (Some(radius), _) => Constraint::Ball { radius },
        (None, Some(half_width)) => Constraint::Box { half_width },
        (None, None) => Constraint::None,
    };
    FmConfig {
        model: common.model.into(),
        mechanism,
        epsilon,
        delta,
        sites: common.sites,
        colluders: common.colluders,
        calibration: common.calibration.into(),
        strict: common.strict,
        release_constant: !common.no_constant,
        minimiser: MinimiserConfig { floor, ridge: common.ridge, constraint },
        output_radius: common.output_radius,
        seed,
    }
}

fn fail(message: String) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

fn print_json(v: &impl Serialize) -> ExitCode {
    match serde_json::to_string_pretty(v) {
        Ok(s) => {
            println!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(format!("could not encode the report as JSON: {e}")),
    }
}

/// The report of one `cape fm` run.
fn report(args: &FmArgs) -> Result<Value, String> {
    let c = &args.common;
    let model: Model = c.model.into();
    let data = load(&c.data, model.target_kind(), 0.1, c.seed, None)?;
    let mechanism: Mechanism = args.mechanism.into();
    let cfg = config(c, mechanism, c.epsilon, c.delta, c.seed);
    let result = fit(&cfg, &data.train).map_err(|e| e.to_string())?;
    let eval = evaluate(model, &result.w(), &data.train, &data.test, data.w_star.as_ref());
    let np_cfg = config(c, Mechanism::NonPrivate, c.epsilon, c.delta, c.seed);
    let np = fit(&np_cfg, &data.train).map_err(|e| e.to_string())?;
    let np_eval = evaluate(model, &np.w(), &data.train, &data.test, data.w_star.as_ref());
    Ok(run_json(&cfg, &data, &result, &eval, &np_eval))
}

fn run_json(
    cfg: &FmConfig,
    data: &Loaded,
    result: &FmFit,
    eval: &Evaluation,
    np: &Evaluation,
) -> Value {
    let mut warnings: Vec<String> = result.guarantee.warnings.clone();
    if let Some(w) = &data.normalisation.warning {
        warnings.push(w.clone());
    }
    let mut v = json!({
        "model": cfg.model.name(),
        "mechanism": cfg.mechanism.name(),
        "mechanism_label": cfg.mechanism.paper_label(),
        "data": {
            "name": data.name,
            "features": data.train.features(),
            "train": data.train.len(),
            "test": data.test.len(),
            "records_used": result.records_used,
            "normalisation": data.normalisation,
        },
        "epsilon": cfg.epsilon,
        "delta": cfg.delta,
        "sites": cfg.mechanism.is_distributed().then_some(cfg.sites),
        "seed": cfg.seed,
        "strict": cfg.strict,
        "train_loss": eval.train_loss,
        "err_w": eval.err_w,
        "epsilon_guaranteed": result.guarantee.epsilon,
        "delta_guaranteed": result.guarantee.delta,
        "guarantee": result.guarantee,
        "minimiser": result.minimiser,
        "noise": result.noise,
        "output_noise_scale": result.output_noise_scale,
        "weights": result.weights,
        "warnings": warnings,
    });
    match cfg.model {
        Model::Linear => {
            v["mse"] = json!(eval.mse);
            v["nonprivate_mse"] = json!(np.mse);
            let zero = data.test.y.norm_squared() / data.test.len() as f64;
            v["zero_predictor_mse"] = json!(zero);
        }
        Model::Logistic => {
            v["accuracy"] = json!(eval.accuracy);
            v["train_accuracy"] = json!(eval.train_accuracy);
            v["nonprivate_accuracy"] = json!(np.accuracy);
        }
    }
    v
}

fn human(v: &Value) -> String {
    let mut out = String::new();
    let line = |out: &mut String, k: &str, val: String| out.push_str(&format!("{k:<22} {val}\n"));
    line(
        &mut out,
        "model / mechanism",
        format!("{} / {} ({})", v["model"], v["mechanism"], v["mechanism_label"]).replace('"', ""),
    );
    line(
        &mut out,
        "data",
        format!(
            "{}, D = {}, {} train, {} test, {} used",
            v["data"]["name"],
            v["data"]["features"],
            v["data"]["train"],
            v["data"]["test"],
            v["data"]["records_used"]
        )
        .replace('"', ""),
    );
    line(
        &mut out,
        "normalisation",
        v["data"]["normalisation"]["method"].as_str().unwrap_or("").to_string(),
    );
    if let Some(m) = v["mse"].as_f64() {
        line(
            &mut out,
            "test MSE",
            format!(
                "{m:.4e}  (non-private {:.4e}, predicting 0: {:.4e})",
                v["nonprivate_mse"].as_f64().unwrap_or(f64::NAN),
                v["zero_predictor_mse"].as_f64().unwrap_or(f64::NAN)
            ),
        );
    }
    if let Some(a) = v["accuracy"].as_f64() {
        line(
            &mut out,
            "test accuracy",
            format!(
                "{:.2}%  (non-private {:.2}%)",
                100.0 * a,
                100.0 * v["nonprivate_accuracy"].as_f64().unwrap_or(f64::NAN)
            ),
        );
    }
    line(
        &mut out,
        "training loss",
        format!("{:.4e}", v["train_loss"].as_f64().unwrap_or(f64::NAN)),
    );
    if let Some(e) = v["err_w"].as_f64() {
        line(&mut out, "err_w", format!("{e:.4e}"));
    }
    let num = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    line(&mut out, "requested (ε, δ)", format!("({}, {:e})", num("epsilon"), num("delta")));
    line(
        &mut out,
        "guaranteed (ε, δ)",
        format!("({:.4}, {:e})", num("epsilon_guaranteed"), num("delta_guaranteed")),
    );
    line(&mut out, "how", v["guarantee"]["how"].as_str().unwrap_or("").to_string());
    if let Some(m) = v["minimiser"].as_object() {
        line(
            &mut out,
            "minimiser",
            format!(
                "{}; floor {:.3e}; kept {} eigenvalues, trimmed {} ({} negative){}",
                m["method"].as_str().unwrap_or(""),
                m["floor"].as_f64().unwrap_or(f64::NAN),
                m["kept_eigenvalues"],
                m["trimmed_eigenvalues"].as_array().map_or(0, Vec::len),
                m["negative_eigenvalues"],
                if m["all_trimmed"].as_bool() == Some(true) { "; ALL trimmed: ŵ = 0" } else { "" }
            ),
        );
    }
    for w in v["warnings"].as_array().into_iter().flatten() {
        line(&mut out, "warning", w.as_str().unwrap_or("").to_string());
    }
    out
}

pub fn run(args: FmArgs) -> ExitCode {
    match report(&args) {
        Ok(v) if args.json => print_json(&v),
        Ok(v) => {
            print!("{}", human(&v));
            ExitCode::SUCCESS
        }
        Err(m) => fail(m),
    }
}

// ---------------------------------------------------------------------------------------------
// fm-sweep

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepAxis {
    Epsilon,
    Samples,
    Delta,
}

#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    #[command(flatten)]
    pub common: FmCommon,
    /// What varies along the x axis.
    #[arg(long, value_enum, default_value = "epsilon")]
    pub sweep: SweepAxis,
    /// The x values, comma-separated (default: the papers' grid for the axis).
    #[arg(long, value_name = "LIST")]
    pub values: Option<String>,
    /// The mechanisms, comma-separated.
    #[arg(
        long,
        value_name = "LIST",
        default_value = "nonprivate,gaussian,cape,conventional,local,relaxed,laplace,output"
    )]
    pub mechanisms: String,
    /// Independent runs per point (new data draw or split, new noise).
    #[arg(long, default_value_t = 10)]
    pub runs: u64,
    /// Output directory for the CSV and figures.
    #[arg(long, value_name = "DIR", default_value = "figures")]
    pub out: PathBuf,
    /// File name stem (default: fm-MODEL-DATA-vs-AXIS).
    #[arg(long)]
    pub name: Option<String>,
}

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
    /// capeFM only: the exact ε at δ under Theorem 1's view (the guarantee is the full view's).
    pub epsilon_theorem1: Option<f64>,
    pub all_trimmed_runs: usize,
}

/// The name of the reference row "predict 0" (ŵ = 0) in linear sweeps.
const ZERO_PREDICTOR: &str = "zero_predictor";

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

/// Parses "1e-3,0.5,10" into numbers.
pub fn parse_list(s: &str, flag: &str) -> Result<Vec<f64>, String> {
    s.split(',')
        .map(|t| t.trim().parse::<f64>().map_err(|_| format!("{flag}: '{t}' is not a number")))
        .collect()
}

const EPSILON_GRID: [f64; 9] = [1e-3, 5e-3, 1e-2, 5e-2, 0.1, 0.5, 1.0, 5.0, 10.0];
const SAMPLES_GRID: [f64; 7] = [500.0, 1000.0, 2000.0, 5000.0, 10_000.0, 20_000.0, 30_000.0];
const DELTA_GRID: [f64; 10] = [1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2];

fn sweep(args: &SweepArgs) -> Result<(Vec<Point>, Vec<PathBuf>), String> {
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
    for &x in &xs {
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
                epsilon_theorem1: None,
                all_trimmed_runs: 0,
            });
        }
        eprintln!("  x = {x}: done ({} mechanisms × {} runs)", mechanisms.len(), args.runs);
    }
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
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("--out: cannot create {}: {e}", args.out.display()))?;
    let csv = args.out.join(format!("{stem}.csv"));
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
    files.extend(chart.write(&args.out.join(&stem)).map_err(|e| e.to_string())?);
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
            chart.write(&args.out.join(format!("{stem}-guarantee"))).map_err(|e| e.to_string())?,
        );
    }
    Ok((points, files))
}

/// A number for a CSV cell: plain decimals in the usual range, exponent notation outside it
/// (e.g. a non-private MSE of 1e-31), empty for a missing value.
pub fn csv_num(v: Option<f64>) -> String {
    match v {
        None => String::new(),
        Some(v) if v == 0.0 || !v.is_finite() || (1e-4..1e6).contains(&v.abs()) => v.to_string(),
        Some(v) => format!("{v:e}"),
    }
}

fn write_csv(path: &Path, axis: &str, points: &[Point]) -> std::io::Result<()> {
    let mut s = format!(
        "{axis},mechanism,runs,mean,sd,se,median,min,max,train_loss_mean,err_w_mean,\
         epsilon_guaranteed,delta_guaranteed,epsilon_theorem1,all_trimmed_runs\n"
    );
    for p in points {
        let cells = [
            csv_num(Some(p.x)),
            p.mechanism.clone(),
            p.runs.to_string(),
            csv_num(Some(p.mean)),
            csv_num(Some(p.sd)),
            csv_num(Some(p.se)),
            csv_num(Some(p.median)),
            csv_num(Some(p.min)),
            csv_num(Some(p.max)),
            csv_num(Some(p.train_loss_mean)),
            csv_num(p.err_w_mean),
            csv_num(Some(p.epsilon_guaranteed)),
            csv_num(Some(p.delta_guaranteed)),
            csv_num(p.epsilon_theorem1),
            p.all_trimmed_runs.to_string(),
        ];
        s.push_str(&cells.join(","));
        s.push('\n');
    }
    std::fs::write(path, s)
}

/// Mean ± one standard error per mechanism; on a log axis a band that would cross 0 is cut at the
/// smallest run instead. The y range is fitted to the FM mechanisms; the non-private fit (MSE ≈ 0
/// on noiseless synthetic data) and output perturbation (orders of magnitude worse, as the papers
/// note) are drawn at the edges when they fall outside, and their legend entries say so.
fn metric_chart(
    model: Model,
    axis: &str,
    title: &str,
    mechanisms: &[Mechanism],
    points: &[Point],
) -> LineChart {
    let log_y = model == Model::Linear;
    let outliers = [Mechanism::NonPrivate, Mechanism::OutputPerturbation];
    let core: Vec<f64> = points
        .iter()
        .filter(|p| !outliers.iter().any(|m| m.name() == p.mechanism))
        .flat_map(|p| [p.mean - p.se, p.mean + p.se, p.min])
        .map(|v| plot_value(model, v))
        .filter(|v| v.is_finite() && (!log_y || *v > 0.0))
        .collect();
    let y_range = (log_y && !core.is_empty()).then(|| {
        let lo = core.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = core.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo / 2.0, hi * 2.0)
    });
    let series = mechanisms
        .iter()
        .map(|m| {
            let mine: Vec<&Point> = points.iter().filter(|p| p.mechanism == m.name()).collect();
            let mut label = m.paper_label().to_string();
            if let Some((lo, hi)) = y_range {
                let means: Vec<f64> = mine.iter().map(|p| plot_value(model, p.mean)).collect();
                if means.iter().any(|v| *v < lo) {
                    label.push_str(" (below the axis: at its floor)");
                } else if means.iter().any(|v| *v > hi) {
                    label.push_str(" (above the axis: at its top)");
                }
            }
            Series {
                label,
                points: mine.iter().map(|p| (p.x, plot_value(model, p.mean))).collect(),
                band: mine
                    .iter()
                    .map(|p| {
                        let lo = p.mean - p.se;
                        let lo = if log_y && lo <= 0.0 { p.min } else { lo };
                        (p.x, plot_value(model, lo), plot_value(model, p.mean + p.se))
                    })
                    .collect(),
                dashed: *m == Mechanism::NonPrivate,
                colour: Some(mechanism_colour(*m)),
            }
        })
        .collect::<Vec<_>>();
    let mut series = series;
    let zero: Vec<&Point> = points.iter().filter(|p| p.mechanism == ZERO_PREDICTOR).collect();
    if !zero.is_empty() {
        series.push(Series {
            label: "predict 0 (ŵ = 0)".into(),
            points: zero.iter().map(|p| (p.x, p.mean)).collect(),
            band: vec![],
            dashed: true,
            colour: Some(8),
        });
    }
    let (x_label, x_log) = match axis {
        "epsilon" => ("ε (per site for cape / conv / local)", true),
        "samples" => ("training records N", true),
        _ => ("δ", true),
    };
    LineChart {
        title: title.into(),
        x_label: x_label.into(),
        y_label: match model {
            Model::Linear => "test MSE (mean ± 1 s.e.)".into(),
            Model::Logistic => "test accuracy, % (mean ± 1 s.e.)".into(),
        },
        x_log,
        y_log: log_y,
        series,
        y_range,
        legend: if model == Model::Linear { Legend::LowerLeft } else { Legend::LowerRight },
    }
}

fn plot_value(model: Model, v: f64) -> f64 {
    match model {
        Model::Linear => v,
        Model::Logistic => 100.0 * v,
    }
}

/// A fixed palette index per mechanism, so that every figure uses the same colours.
fn mechanism_colour(m: Mechanism) -> usize {
    // Indices into plot's Okabe–Ito palette; the pale yellow (7) goes to output perturbation,
    // which is usually off the chart.
    match m {
        Mechanism::NonPrivate => 0,
        Mechanism::Gaussian => 1,
        Mechanism::Cape => 2,
        Mechanism::Conventional => 3,
        Mechanism::Local => 4,
        Mechanism::Relaxed => 5,
        Mechanism::Laplace => 6,
        Mechanism::OutputPerturbation => 7,
    }
}

/// The ε each mechanism actually guarantees at the target δ, against the requested ε. Mechanisms
/// with the same curve share one line; capeFM adds Theorem 1's view next to its guarantee (the
/// full adversary view).
fn guarantee_chart(title: &str, mechanisms: &[Mechanism], points: &[Point]) -> LineChart {
    let mut series: Vec<Series> = Vec::new();
    for m in mechanisms.iter().filter(|m| **m != Mechanism::NonPrivate) {
        let mine: Vec<&Point> = points.iter().filter(|p| p.mechanism == m.name()).collect();
        let curve: Vec<(f64, f64)> = mine.iter().map(|p| (p.x, p.epsilon_guaranteed)).collect();
        let label = match m {
            Mechanism::Cape => "cape-fm (full adversary view)".to_string(),
            _ => m.paper_label().to_string(),
        };
        let same = |a: &[(f64, f64)], b: &[(f64, f64)]| {
            a.len() == b.len()
                && a.iter().zip(b).all(|(u, v)| (u.1 - v.1).abs() <= 1e-9 * u.1.abs().max(1e-300))
        };
        match series.iter_mut().find(|c| same(&c.points, &curve)) {
            Some(c) => c.label = format!("{} = {label}", c.label),
            None => series.push(Series {
                label,
                points: curve,
                colour: Some(mechanism_colour(*m)),
                ..Default::default()
            }),
        }
        if *m == Mechanism::Cape {
            let t1: Vec<(f64, f64)> =
                mine.iter().filter_map(|p| Some((p.x, p.epsilon_theorem1?))).collect();
            match series.iter_mut().find(|c| same(&c.points, &t1)) {
                // S_C = 0 (e.g. S = 3): the two views coincide.
                Some(c) => c.label = format!("{} = cape-fm (Theorem 1 view)", c.label),
                None => series.push(Series {
                    label: "cape-fm (Theorem 1 view)".into(),
                    points: t1,
                    colour: Some(9),
                    ..Default::default()
                }),
            }
        }
    }
    let mut xs: Vec<f64> = points.iter().map(|p| p.x).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    series.push(Series {
        label: "requested ε".into(),
        points: xs.iter().map(|&x| (x, x)).collect(),
        band: vec![],
        dashed: true,
        colour: Some(8),
    });
    LineChart {
        title: format!("Guaranteed ε: {title}"),
        x_label: "requested ε".into(),
        y_label: "ε guaranteed at the target δ".into(),
        x_log: true,
        y_log: true,
        series,
        y_range: None,
        legend: Legend::UpperLeft,
    }
}

pub fn run_sweep(args: SweepArgs) -> ExitCode {
    match sweep(&args) {
        Ok((points, files)) => {
            println!(
                "{:<8} {:<14} {:>12} {:>12} {:>12}",
                "x", "mechanism", "mean", "se", "ε guar."
            );
            for p in &points {
                println!(
                    "{:<8} {:<14} {:>12.4e} {:>12.2e} {:>12.4}",
                    p.x, p.mechanism, p.mean, p.se, p.epsilon_guaranteed
                );
            }
            for f in files {
                println!("wrote {}", f.display());
            }
            ExitCode::SUCCESS
        }
        Err(m) => fail(m),
    }
}
