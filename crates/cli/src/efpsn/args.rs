//! The flags of `cape efpsn` and `cape efpsn-sweep`, and the problem and run they describe.

use std::path::{Path, PathBuf};

use capelab_core::efpsn::basis::BasisSpec;
use capelab_core::efpsn::epsilon::TheoremInputs;
use capelab_core::efpsn::graph::{Graph, Topology};
use capelab_core::efpsn::mask::NoiseLaw;
use capelab_core::efpsn::messages::Phase1Setup;
use capelab_core::efpsn::models::ModelKind;
use capelab_core::efpsn::optimizer::{Optimizer, Phase2Settings};
use capelab_core::efpsn::problem::{Problem, labelled_csv};
use capelab_core::efpsn::sim::{Method, RunConfig};
use capelab_paillier::KeySize;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphArg {
    Ring,
    Path,
    Star,
    Complete,
    Geometric,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptimizerArg {
    Dsgd,
    Tracking,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelArg {
    Logistic,
    LeastSquares,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerturbArg {
    /// The paper's choice: the 10 class biases of softmax regression.
    Biases,
    /// Every parameter (650 for digits): needs a basis in that many variables.
    All,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MethodArg {
    Efpsn,
    Baseline,
    NoiseFree,
    /// EFPSN, the baseline and the noise-free run, side by side.
    All,
}

/// Settings shared by `efpsn` and `efpsn-sweep`.
#[derive(clap::Args, Clone, Debug)]
pub struct EfpsnCommon {
    #[arg(long, value_enum, default_value = "ring")]
    pub graph: GraphArg,
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub agents: usize,
    #[arg(long, value_enum, default_value = "tracking")]
    pub optimizer: OptimizerArg,
    #[arg(long, value_enum, default_value = "logistic")]
    pub model: ModelArg,
    /// Decay exponent p of σ_k² = γ/k^p (k counted from 1).
    #[arg(long, value_name = "P", default_value_t = 1.0)]
    pub decay: f64,
    /// P_prec: decimal digits kept of each noise value.
    #[arg(long, value_name = "P_PREC", default_value_t = 6)]
    pub precision: u32,
    /// (K_deg, m, N_b); m defaults to the number of perturbed variables and N_b to m (+ 1 when
    /// K_deg = 1 is not enough for the paper's (1, 10, 10)).
    #[arg(long, value_name = "K_DEG,M,N_B", default_value = "1,10,10")]
    pub basis: String,
    /// The public seed that picks the basis monomials (the same on every agent).
    #[arg(long, default_value_t = 0)]
    pub basis_seed: u64,
    #[arg(long, value_enum, default_value = "biases")]
    pub perturb: PerturbArg,
    /// Phase-2 iterations per agent.
    #[arg(long, value_name = "T", default_value_t = 1000)]
    pub iterations: u32,
    /// Step α₀; α_t = α₀ / (1 + decay·t).
    #[arg(long, value_name = "ALPHA", default_value_t = 2.0)]
    pub step: f64,
    #[arg(long, value_name = "D", default_value_t = 0.0)]
    pub step_decay: f64,
    /// Rows per stochastic gradient; 0 for the full local gradient.
    #[arg(long, value_name = "B", default_value_t = 0)]
    pub batch: u32,
    /// Ridge λ of every local cost (gives F one minimiser x*).
    #[arg(long, value_name = "LAMBDA", default_value_t = 1e-3)]
    pub ridge: f64,
    /// Paillier modulus size: 2048 (standard) or 1024 (demo only: not a secure size).
    #[arg(long, value_name = "BITS", default_value_t = 2048)]
    pub key_bits: u32,
    /// δ of Theorem IV.1's ε.
    #[arg(long, value_name = "D", default_value_t = 1e-5)]
    pub delta: f64,
    /// q of the theorem's adjacency class V_q (q > 1, p < q − 1/2).
    #[arg(long, default_value_t = 2.0)]
    pub q: f64,
    /// ‖f_I − f′_I‖²_{V_q}, the squared distance of two neighbouring local costs.
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub sensitivity: f64,
    /// A labelled CSV with a `target` column (softmax regression); features divided by
    /// --feature-bound [default: data/digits.csv in the working directory, which scripts/setup.sh
    /// writes].
    #[arg(long, visible_alias = "data-file", value_name = "PATH")]
    pub data: Option<PathBuf>,
    #[arg(long, value_name = "B", default_value_t = 16.0)]
    pub feature_bound: f64,
    #[arg(long, value_name = "F", default_value_t = 0.2)]
    pub test_fraction: f64,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

#[derive(clap::Args, Debug)]
pub struct EfpsnArgs {
    #[command(flatten)]
    pub common: EfpsnCommon,
    /// The noise scale γ of σ_k² = γ/k^p.
    #[arg(long, value_name = "G", default_value_t = 1e3)]
    pub gamma: f64,
    #[arg(long, value_enum, default_value = "all")]
    pub method: MethodArg,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct EfpsnSweepArgs {
    #[command(flatten)]
    pub common: EfpsnCommon,
    /// The γ values (the paper's 1e−2 … 1e4 by default).
    #[arg(long, value_name = "LIST", default_value = "0.01,0.1,1,10,100,1000,10000")]
    pub gammas: String,
    /// Where the CSV and figures go [default: a new folder cape-out/efpsn-sweep-NNN in the
    /// working directory].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Where scripts/setup.sh writes scikit-learn's digits.
pub const DIGITS: &str = "data/digits.csv";

impl EfpsnCommon {
    pub fn topology(&self) -> Topology {
        match self.graph {
            GraphArg::Ring => Topology::Ring,
            GraphArg::Path => Topology::Path,
            GraphArg::Star => Topology::Star,
            GraphArg::Complete => Topology::Complete,
            GraphArg::Geometric => Topology::Geometric,
        }
    }

    pub fn optimizer(&self) -> Optimizer {
        match self.optimizer {
            OptimizerArg::Dsgd => Optimizer::Dsgd,
            OptimizerArg::Tracking => Optimizer::Tracking,
        }
    }

    pub fn model_kind(&self) -> ModelKind {
        match self.model {
            ModelArg::Logistic => ModelKind::Logistic,
            ModelArg::LeastSquares => ModelKind::LeastSquares,
        }
    }

    pub fn key_size(&self) -> Result<KeySize, String> {
        match self.key_bits {
            1024 => Ok(KeySize::Demo1024),
            2048 => Ok(KeySize::Standard2048),
            b => Err(format!(
                "--key-bits {b}: capelab's Paillier keys are 2048 bits (or 1024 for demos)"
            )),
        }
    }

    pub fn graph(&self) -> Result<Graph, String> {
        Graph::build(self.topology(), self.agents, self.seed).map_err(|e| e.to_string())
    }

    /// The problem: softmax regression on the CSV, or generated least squares.
    pub fn problem(&self) -> Result<(Problem, String), String> {
        match self.model {
            ModelArg::Logistic => {
                let (text, path) =
                    crate::data_file::read(self.data.as_deref(), Path::new(DIGITS), "--data-file")?;
                let (data, classes) =
                    labelled_csv(&text).map_err(|e| format!("{}: {e}", path.display()))?;
                let problem = Problem::classification(
                    &data,
                    classes,
                    self.agents,
                    self.feature_bound,
                    self.ridge,
                    self.test_fraction,
                    self.seed,
                )
                .map_err(|e| e.to_string())?;
                let name =
                    path.file_stem().map_or("data".into(), |s| s.to_string_lossy().into_owned());
                Ok((problem, format!("{name} (softmax, {classes} classes)")))
            }
            ModelArg::LeastSquares => {
                let problem = Problem::least_squares(self.agents, 200, 10, self.ridge, self.seed)
                    .map_err(|e| e.to_string())?;
                Ok((problem, "generated least squares (10 features, 200 rows per agent)".into()))
            }
        }
    }

    /// The perturbed entries of x.
    pub fn variables(&self, problem: &Problem) -> Vec<usize> {
        match (self.perturb, self.model) {
            (PerturbArg::All, _) | (_, ModelArg::LeastSquares) => (0..problem.dim()).collect(),
            (PerturbArg::Biases, ModelArg::Logistic) => {
                problem.model.bias_indices(problem.test.features)
            }
        }
    }

    pub fn basis(&self, variables: usize) -> Result<BasisSpec, String> {
        let parts: Vec<&str> = self.basis.split(',').map(str::trim).collect();
        let bad = || format!("--basis {:?}: expected K_DEG,M,N_B such as 1,10,10", self.basis);
        if parts.len() != 3 {
            return Err(bad());
        }
        let k: u32 = parts[0].parse().map_err(|_| bad())?;
        let m: u32 = parts[1].parse().map_err(|_| bad())?;
        let n_b: u32 = parts[2].parse().map_err(|_| bad())?;
        if m as usize != variables {
            return Err(format!(
                "--basis m = {m} but {variables} variables are perturbed (--perturb); use --basis {k},{variables},{}",
                n_b.min(variables as u32 + 1)
            ));
        }
        Ok(BasisSpec { max_degree: k, variables: m, size: n_b, seed: self.basis_seed })
    }

    pub fn run_config(
        &self,
        problem: &Problem,
        method: Method,
        optimizer: Optimizer,
        gamma: f64,
    ) -> Result<RunConfig, String> {
        let variables = self.variables(problem);
        let basis = self.basis(variables.len())?;
        let law = NoiseLaw { gamma, decay: self.decay, precision: self.precision };
        law.check().map_err(|e| e.to_string())?;
        let phase2 = Phase2Settings {
            optimizer,
            iterations: self.iterations,
            step: self.step,
            decay: self.step_decay,
            batch: (self.batch > 0).then_some(self.batch),
        };
        phase2.check().map_err(|e| e.to_string())?;
        Ok(RunConfig {
            method,
            graph: self.graph()?,
            setup: Phase1Setup { basis, law },
            phase2,
            variables,
            key_size: self.key_size()?,
            record_every: (self.iterations / 100).max(1),
            seed: self.seed,
        })
    }

    pub fn theorem(&self, gamma: f64) -> TheoremInputs {
        TheoremInputs {
            gamma,
            p: self.decay,
            q: self.q,
            sensitivity_squared: self.sensitivity,
            delta: self.delta,
        }
    }
}
