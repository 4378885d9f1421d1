//! The flags of `cape vertical-vi` and `cape vertical-vi-sweep` (the shared ones in
//! [`VviCommon`]), and the data and run they describe.

use std::path::{Path, PathBuf};

use capelab_core::accountant::pld::{
    Calibration, DEFAULT_INTERVAL, calibrate_noise_multiplier, calibrate_noise_multiplier_rdp,
};
use capelab_core::rng::Seed;
use capelab_vertical_vi::cps1988;
use capelab_vertical_vi::model::Sampling;
use capelab_vertical_vi::model::generate::adult_like;
use capelab_vertical_vi::modes::{Mode, RunConfig};
use capelab_vertical_vi::report::{TargetRule, TargetSpec, Threshold, cps1988_wage_target};
use capelab_vertical_vi::schema::{PartyBlock, Schema};
use capelab_vertical_vi::table::{self, select_rows, train_test_split};

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeArg {
    /// Real additive secret sharing among the parties, with a dealer; noise in shares.
    Mpc,
    /// The same circuit in plaintext fixed point (the paper's main mode), same noise law.
    Fixed,
    /// f64 clipped sum, one Gaussian from a trusted noise source.
    Plain,
    /// Plain on the joined table: the non-partitioned DPVI baseline.
    Nonpartitioned,
}

impl ModeArg {
    pub fn mode(self) -> Mode {
        match self {
            ModeArg::Mpc => Mode::Mpc,
            ModeArg::Fixed => Mode::Fixed,
            ModeArg::Plain => Mode::Plain,
            ModeArg::Nonpartitioned => Mode::NonPartitioned,
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SamplingArg {
    /// Each record with rate q = B/N (what the accountant matches).
    Poisson,
    /// Exactly B records without replacement (the paper's runs; accounted as Poisson).
    Fixed,
}

/// The flags both commands share: the data, the model and the DP-SGD run.
#[derive(clap::Args, Debug)]
pub struct VviCommon {
    /// `cps1988` (CPS1988's default two-party split, read from --data-file), `synthetic` (the
    /// generated Adult-like table) or one CSV of columns per party, in schema order (with
    /// --schema).
    #[arg(long, value_name = "DATA", num_args = 1.., default_value = "cps1988")]
    pub data: Vec<String>,
    /// CPS1988's CSV for `--data cps1988` [default: data/cps1988.csv in the working directory,
    /// which scripts/setup.sh writes].
    #[arg(long, value_name = "PATH")]
    pub data_file: Option<PathBuf>,
    /// The public schema as JSON (needed with party CSV files).
    #[arg(long, value_name = "FILE")]
    pub schema: Option<PathBuf>,
    /// P: checked against the data's parties (cps1988 and synthetic have 2).
    #[arg(long, value_name = "P")]
    pub parties: Option<usize>,
    /// K, the mixture components.
    #[arg(long, value_name = "K", default_value_t = 20)]
    pub components: usize,
    /// C, the joint clip bound of each example's gradient.
    #[arg(long, value_name = "C", default_value_t = 1.0)]
    pub clip: f64,
    /// B: the batch size (Poisson: the expected one, q = B/N).
    #[arg(long, value_name = "B", default_value_t = 100)]
    pub batch: usize,
    #[arg(long, value_enum, default_value = "poisson")]
    pub sampling: SamplingArg,
    /// T, the DP-SGD steps.
    #[arg(long, value_name = "T", default_value_t = 1000)]
    pub steps: usize,
    /// Adam's learning rate.
    #[arg(long, value_name = "LR", default_value_t = 0.01)]
    pub learning_rate: f64,
    /// Test NLL every this many steps; 0 = once per epoch (⌈N/B⌉ steps).
    #[arg(long, value_name = "STEPS", default_value_t = 0)]
    pub eval_every: usize,
    /// δ of the privacy table.
    #[arg(long, value_name = "D", default_value_t = 1e-5)]
    pub delta: f64,
    /// A reproducible run (not private against anyone who knows the seed); without it every
    /// random draw comes from the operating system.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Rows of the generated table for `--data synthetic` (80/20 train/test).
    #[arg(long, value_name = "N", default_value_t = 3000)]
    pub generated_rows: usize,
    /// The synthetic-data report's prediction task: `COLUMN` (a continuous column, positive
    /// above its real training median) or `COLUMN=LABEL[|LABEL…]` (a categorical one). Default:
    /// wage for cps1988, income=>50K for synthetic, none for party files.
    #[arg(long, value_name = "COLUMN[=LABELS]")]
    pub target: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct VerticalViArgs {
    #[command(flatten)]
    pub common: VviCommon,
    #[arg(long, value_enum, default_value = "fixed")]
    pub mode: ModeArg,
    /// σ, the noise multiplier (noise std C·σ); 0 turns the noise off (not private).
    #[arg(long, value_name = "S", default_value_t = 2.042)]
    pub sigma: f64,
    /// Calibrate σ instead: the smallest σ for which the outside analyst's ε (add/remove, at
    /// --delta, over the T steps at q = B/N) is at most E by the PLD accountant.
    #[arg(long, value_name = "E", conflicts_with = "sigma", allow_negative_numbers = true)]
    pub target_epsilon: Option<f64>,
    /// Write a synthetic twin sampled from the released posterior here (CSV, all columns).
    #[arg(long, value_name = "FILE.csv")]
    pub synthetic_out: Option<PathBuf>,
    /// Rows of the synthetic twin (default: the training rows; the report's: the test rows).
    #[arg(long, value_name = "N")]
    pub rows: Option<usize>,
    /// Compare a synthetic twin with the real test set: per-column total variation, pairwise
    /// association (Cramér's V), and train-on-synthetic/test-on-real accuracy (see --target).
    #[arg(long)]
    pub report: bool,
    /// Write the report as CSV here (implies --report).
    #[arg(long, value_name = "FILE.csv")]
    pub report_out: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct VerticalViSweepArgs {
    #[command(flatten)]
    pub common: VviCommon,
    /// The outside analyst's target ε values; σ for each is calibrated by the PLD accountant
    /// (Poisson, add/remove, δ = --delta, the run's q and T).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "0.5,1,2,4,8")]
    pub epsilons: Vec<f64>,
    /// The modes to run at each ε (comma-separated).
    #[arg(
        long,
        value_enum,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "mpc,fixed,plain,nonpartitioned"
    )]
    pub modes: Vec<ModeArg>,
    /// Runs per (ε, mode), each with its own seed; the figure shows their mean.
    #[arg(long, value_name = "R", default_value_t = 1)]
    pub repeats: usize,
    /// Where the CSV and the figures go [default: a new folder
    /// cape-out/vertical-vi-sweep-NNN in the working directory].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// σ calibrated for a target ε of the outside analyst, and what RDP would have needed.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct SigmaCalibration {
    pub target_epsilon: f64,
    /// "pld": the accountant σ was calibrated with.
    pub accountant: &'static str,
    pub sigma: f64,
    /// The analyst's ε by PLD at that σ (≤ the target).
    pub epsilon_pld: f64,
    /// The σ RDP (Balle et al. 2020 conversion) would need for the same target.
    pub sigma_rdp: Option<f64>,
}

/// The loaded data: train and test blocks over one schema.
pub struct Data {
    pub name: String,
    pub schema: Schema,
    pub train: Vec<PartyBlock>,
    pub test: Vec<PartyBlock>,
    /// The report's prediction task when --target is not given.
    pub default_target: Option<TargetSpec>,
}

fn split_blocks(blocks: &[PartyBlock], split: &table::Split) -> (Vec<PartyBlock>, Vec<PartyBlock>) {
    (
        blocks.iter().map(|b| select_rows(b, &split.train)).collect(),
        blocks.iter().map(|b| select_rows(b, &split.test)).collect(),
    )
}

impl VviCommon {
    pub fn seed(&self) -> Seed {
        self.seed.map_or(Seed::Os, Seed::Fixed)
    }

    pub fn load(&self) -> Result<Data, String> {
        let names = self.data.iter().map(String::as_str).collect::<Vec<_>>();
        if let (Some(file), false) = (&self.data_file, names[..] == ["cps1988"]) {
            return Err(format!(
                "--data-file {}: names CPS1988's CSV, for --data cps1988 (--data {} reads {})",
                file.display(),
                names.join(" "),
                if names[..] == ["synthetic"] { "no file" } else { "the files it names" }
            ));
        }
        let data = match names[..] {
            ["cps1988"] => {
                let (csv, path) = crate::data_file::read(
                    self.data_file.as_deref(),
                    Path::new(cps1988::DATA_PATH),
                    "--data-file",
                )?;
                let (tables, _) =
                    cps1988::load(&csv).map_err(|e| format!("{}: {e}", path.display()))?;
                let blocks: Vec<PartyBlock> = tables.into_iter().map(|t| t.block).collect();
                let (train, test) = split_blocks(&blocks, &cps1988::split(blocks[0].rows));
                Data {
                    name: "CPS1988".into(),
                    schema: cps1988::schema(),
                    train,
                    test,
                    default_target: Some(cps1988_wage_target()),
                }
            }
            ["synthetic"] => {
                if self.generated_rows < 10 {
                    return Err(format!(
                        "--generated-rows {}: need at least 10 rows",
                        self.generated_rows
                    ));
                }
                let g = adult_like(self.generated_rows, self.seed.unwrap_or(0));
                let split = train_test_split(cps1988::SPLIT_SEED, self.generated_rows, 0.2);
                let (train, test) = split_blocks(&g.blocks, &split);
                Data {
                    name: format!("generated Adult-like table ({} rows)", self.generated_rows),
                    schema: g.schema,
                    train,
                    test,
                    default_target: Some(TargetSpec {
                        column: "income".into(),
                        rule: TargetRule::Labels(vec![">50K".into()]),
                    }),
                }
            }
            ref files => {
                let path = self.schema.as_ref().ok_or_else(|| {
                    format!(
                        "--data {}: party CSV files need --schema schema.json (or use cps1988 or synthetic)",
                        files.join(" ")
                    )
                })?;
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("--schema {}: {e}", path.display()))?;
                let schema: Schema = serde_json::from_str(&text)
                    .map_err(|e| format!("--schema {}: {e}", path.display()))?;
                let texts = files
                    .iter()
                    .map(|f| std::fs::read_to_string(f).map_err(|e| format!("--data {f}: {e}")))
                    .collect::<Result<Vec<_>, _>>()?;
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                let tables = table::read_parties(&schema, &refs).map_err(|e| e.to_string())?;
                let blocks: Vec<PartyBlock> = tables.into_iter().map(|t| t.block).collect();
                let rows = blocks[0].rows;
                if rows < 2 {
                    return Err(format!("--data: {rows} rows cannot be split into train and test"));
                }
                let (train, test) =
                    split_blocks(&blocks, &train_test_split(cps1988::SPLIT_SEED, rows, 0.2));
                Data { name: files.join(" + "), schema, train, test, default_target: None }
            }
        };
        if let Some(p) = self.parties
            && p != data.schema.parties.len()
        {
            return Err(format!(
                "--parties {p}: the data {} has {} parties",
                data.name,
                data.schema.parties.len()
            ));
        }
        Ok(data)
    }

    /// The smallest σ whose outside-analyst ε (Poisson at q = B/N, add/remove, T steps, --delta)
    /// is at most `epsilon` by PLD, as every run's privacy table computes it; and RDP's σ beside.
    pub fn calibrate_sigma(
        &self,
        epsilon: f64,
        records: usize,
        flag: &str,
    ) -> Result<SigmaCalibration, String> {
        if !(epsilon.is_finite() && epsilon > 0.0) {
            return Err(format!("{flag} {epsilon}: ε must be positive and finite"));
        }
        if self.batch == 0 || self.batch > records {
            return Err(format!(
                "--batch {}: need 1 ≤ B ≤ N = {records} training rows",
                self.batch
            ));
        }
        let rate = self.batch as f64 / records as f64;
        let steps = self.steps as u64;
        let progress =
            crate::progress::Progress::spinner(&format!("calibrating σ for ε = {epsilon} by PLD"));
        let pld: Calibration =
            calibrate_noise_multiplier(epsilon, self.delta, steps, rate, DEFAULT_INTERVAL)
                .map_err(|e| format!("{flag} {epsilon}: {e}"))?;
        let rdp = calibrate_noise_multiplier_rdp(epsilon, self.delta, steps, rate).ok();
        progress.finish();
        Ok(SigmaCalibration {
            target_epsilon: epsilon,
            accountant: "pld",
            sigma: pld.noise_multiplier,
            epsilon_pld: pld.epsilon,
            sigma_rdp: rdp.map(|r| r.noise_multiplier),
        })
    }

    /// The run of `mode` at noise multiplier `sigma` on N = `records` training rows.
    pub fn run_config(&self, mode: Mode, sigma: f64, records: usize) -> Result<RunConfig, String> {
        if self.batch == 0 || self.batch > records {
            return Err(format!(
                "--batch {}: need 1 ≤ B ≤ N = {records} training rows",
                self.batch
            ));
        }
        let sampling = match self.sampling {
            SamplingArg::Poisson => Sampling::Poisson { rate: self.batch as f64 / records as f64 },
            SamplingArg::Fixed => Sampling::Fixed { size: self.batch },
        };
        Ok(RunConfig {
            components: self.components,
            sigma,
            clip: self.clip,
            sampling,
            learning_rate: self.learning_rate,
            eval_every: self.eval_every,
            delta: self.delta,
            ..RunConfig::paper(mode, records, self.steps, self.seed())
        })
    }
}

impl Data {
    /// The report's task: --target or the data's default. A continuous column is positive above
    /// its real training median; `COLUMN=A|B` is positive on those labels. The rule is checked
    /// against the schema by [`super::report::check_target`] before any training.
    pub fn target(&self, flag: Option<&str>) -> Option<TargetSpec> {
        let Some(flag) = flag else { return self.default_target.clone() };
        Some(match flag.split_once('=') {
            Some((column, labels)) => TargetSpec {
                column: column.trim().to_string(),
                rule: TargetRule::Labels(labels.split('|').map(|l| l.trim().to_string()).collect()),
            },
            None => TargetSpec {
                column: flag.trim().to_string(),
                rule: TargetRule::Above(Threshold::RealTrainMedian),
            },
        })
    }
}
