//! The flags of `cape fm` and `cape fm-sweep` (and the data flags `nn` shares), and the
//! [`FmConfig`] they describe.

use std::path::PathBuf;

use capelab_core::fm::{
    Calibration, Constraint, EigenFloor, FmConfig, Mechanism, MinimiserConfig, Model,
};

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
    /// synthetic, diabetes, breast-cancer (read from --data-file), or a path to a CSV file.
    #[arg(long, default_value = "synthetic")]
    pub data: String,
    /// The CSV of `--data diabetes` or `breast-cancer` [default: DIR/diabetes.csv or
    /// DIR/breast_cancer.csv, DIR = --data-dir].
    #[arg(long, value_name = "PATH")]
    pub data_file: Option<PathBuf>,
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
    /// Output directory for the CSV and figures [default: a new folder cape-out/fm-sweep-NNN in
    /// the working directory].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// File name stem (default: fm-MODEL-DATA-vs-AXIS).
    #[arg(long)]
    pub name: Option<String>,
}

/// Parses "1e-3,0.5,10" into numbers.
pub fn parse_list(s: &str, flag: &str) -> Result<Vec<f64>, String> {
    s.split(',')
        .map(|t| t.trim().parse::<f64>().map_err(|_| format!("{flag}: '{t}' is not a number")))
        .collect()
}
