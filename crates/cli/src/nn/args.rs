//! The flags of `cape nn` and `cape nn-sweep`, and the data and [`NnConfig`] they describe.

use std::path::PathBuf;

use capelab_core::data::TargetKind;
use capelab_core::nn::{NnConfig, NnMechanism};

use crate::fm::{CalibrationArg, DataArgs, Loaded, load};

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
    /// Calibrate for a total instead: the ε per iteration (analytic Gaussian) at which the whole
    /// run is (E, --delta)-DP in its guarantee view, by PLD accounting (overrides --epsilon and
    /// --calibration).
    #[arg(long, value_name = "E", allow_negative_numbers = true)]
    pub target_epsilon: Option<f64>,
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

pub(super) fn load_nn(common: &NnCommon, seed: u64) -> Result<Loaded, String> {
    let mut data = common.data.clone();
    if data.data == "synthetic" {
        data.features = Some(data.features.unwrap_or(50)); // seed 002 §5.1
        let total = data.samples.take().unwrap_or(10_000);
        return load(&data, TargetKind::Binary, 0.3, seed, Some(total));
    }
    load(&data, TargetKind::Binary, 0.3, seed, None)
}

pub(super) fn config(
    common: &NnCommon,
    mechanism: NnMechanism,
    epsilon: f64,
    seed: u64,
) -> NnConfig {
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
    /// Where the CSV and figures go [default: a new folder cape-out/nn-sweep-NNN in the working
    /// directory].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[arg(long)]
    pub name: Option<String>,
}
