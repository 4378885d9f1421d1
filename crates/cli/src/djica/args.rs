//! The flags of `cape djica` and `cape djica-sweep`, their checks, and the methods' names.

use std::path::PathBuf;

use capelab_core::djica::{Method, PrivacyUnit};

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MethodArg {
    /// capeDJICA: CAPE noise at every site.
    Cape,
    /// Conventional decentralized DP: independent N(0, τ_s²) at every site.
    Conventional,
    /// Local DP-ICA: site 1 alone, with its own noise.
    Local,
    /// Decentralized djICA without noise.
    Nonprivate,
    /// All data pooled at one site, without noise.
    Pooled,
}

impl From<MethodArg> for Method {
    fn from(m: MethodArg) -> Self {
        match m {
            MethodArg::Cape => Method::Cape,
            MethodArg::Conventional => Method::Conventional,
            MethodArg::Local => Method::Local,
            MethodArg::Nonprivate => Method::NonPrivate,
            MethodArg::Pooled => Method::PooledNonPrivate,
        }
    }
}

pub(super) fn method_name(m: Method) -> &'static str {
    match m {
        Method::Cape => "cape",
        Method::Conventional => "conventional",
        Method::Local => "local",
        Method::NonPrivate => "nonprivate",
        Method::PooledNonPrivate => "pooled",
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitArg {
    /// One subject (the paper's notion, Δ_G = 2B_G/M_s).
    Subject,
    /// One time point (Δ_G = 2B_G/N_s): a weaker guarantee, a subject's time points are correlated.
    Timepoint,
}

impl From<UnitArg> for PrivacyUnit {
    fn from(u: UnitArg) -> Self {
        match u {
            UnitArg::Subject => PrivacyUnit::Subject,
            UnitArg::Timepoint => PrivacyUnit::TimePoint,
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PcaArg {
    /// capePCA with the method's noise (CAPE, conventional or local), budget --eps-pca.
    Cape,
    /// Exact PCA of the pooled second moments (no privacy for the subspace).
    Nonprivate,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PresetArg {
    /// Well-conditioned maps (jittered lattice, narrow blobs) and Laplace GARCH innovations
    /// (spec §9.7): the demo default.
    Default,
    /// Paper-like: random overlapping blobs of 2–5 px, Gaussian innovations (nearly the hardest
    /// case, spec §9.7).
    Paper,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScheduleArg {
    /// runica's 60° annealing without noise, a fixed decay with noise (spec §9.3).
    Auto,
    /// runica's 60° annealing (collapses under noise, spec §9.3).
    Anneal,
    /// ρ_j = ρ₀/(1 + j/half-life).
    Decay,
    /// ρ_j = ρ₀.
    Constant,
}

/// Settings shared by `djica` and `djica-sweep`.
#[derive(clap::Args, Clone, Debug)]
pub struct DjicaCommon {
    /// S, the number of sites.
    #[arg(long, value_name = "S", default_value_t = 4)]
    pub sites: usize,
    /// M, the number of subjects in all (split as evenly as possible over the sites).
    #[arg(long, value_name = "M", default_value_t = 256)]
    pub subjects: usize,
    /// R, the number of components.
    #[arg(long, value_name = "R", default_value_t = 20)]
    pub components: usize,
    /// G: maps are G×G images (D = G² voxels).
    #[arg(long, value_name = "G", default_value_t = 30)]
    pub grid: usize,
    /// N_m, time points per subject.
    #[arg(long, value_name = "N", default_value_t = 250)]
    pub timepoints: usize,
    /// Synthetic data preset.
    #[arg(long, value_enum, default_value = "default")]
    pub preset: PresetArg,
    /// ε_i of each iteration's release (the classical calibration τ = Δ·c(δ)/ε, applied at
    /// ε_i ≥ 1 as the paper does).
    #[arg(long, value_name = "E", default_value_t = 0.5, allow_negative_numbers = true)]
    pub eps_iter: f64,
    /// δ_i of each iteration's release (paper: 1e-2).
    #[arg(long, value_name = "D", default_value_t = 1e-2, allow_negative_numbers = true)]
    pub delta_iter: f64,
    /// Whose privacy: one subject (default, the paper's notion) or one time point (weaker).
    #[arg(long, value_enum, default_value = "subject")]
    pub privacy_unit: UnitArg,
    /// capePCA or exact PCA (default exact: at subject level capePCA cannot find 20 components,
    /// spec §9.6).
    #[arg(long, value_enum, default_value = "nonprivate")]
    pub pca: PcaArg,
    /// ε_p of the capePCA release (its own budget).
    #[arg(long, value_name = "E", default_value_t = 1.0, allow_negative_numbers = true)]
    pub eps_pca: f64,
    /// δ_p of the capePCA release.
    #[arg(long, value_name = "D", default_value_t = 1e-5, allow_negative_numbers = true)]
    pub delta_pca: f64,
    /// Use the rigorous √2 covariance sensitivity (upper triangle under replace-one).
    #[arg(long)]
    pub pca_rigorous: bool,
    /// ρ₀ (spec §9.1: the paper's 0.015/ln R is ~100× too small for averaged gradients).
    #[arg(long, value_name = "RHO", default_value_t = 0.5)]
    pub rate: f64,
    /// J_max.
    #[arg(long, value_name = "J", default_value_t = 1000)]
    pub max_iterations: usize,
    /// The learning-rate schedule.
    #[arg(long, value_enum, default_value = "auto")]
    pub schedule: ScheduleArg,
    /// Half-life of the decay schedule, in iterations.
    #[arg(long, value_name = "H", default_value_t = 100.0)]
    pub half_life: f64,
    /// Report the mean of the iterates over this final fraction of J_max (noisy runs).
    #[arg(long, value_name = "F", default_value_t = 0.5)]
    pub average_tail: f64,
    /// B_G, the per-sample gradient clip (B_h = √B_G).
    #[arg(long, value_name = "B", default_value_t = 30.0)]
    pub clip: f64,
    /// Seed of the data, the noise and the run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(clap::Args, Debug)]
pub struct DjicaArgs {
    #[command(flatten)]
    pub common: DjicaCommon,
    /// The algorithm.
    #[arg(long, value_enum, default_value = "cape")]
    pub method: MethodArg,
    /// Calibrate to a whole-study ε (at δ_r = 1e-5, the guarantee view, J_max iterations) by PLD
    /// accounting instead of --eps-iter; capePCA keeps --eps-pca.
    #[arg(long, value_name = "E", allow_negative_numbers = true)]
    pub target_epsilon: Option<f64>,
    /// Output directory (result.json, W.csv, V.csv, A.csv, maps.png) [default: a new folder
    /// cape-out/djica-NNN in the working directory].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Real data instead of the generator: one matrix per site (CSV, or `.npy` by extension),
    /// D voxels × N_s time points, subjects of --timepoints columns each; comma-separated. There
    /// is no ground truth, so no q_NGI, A.csv or maps.
    #[arg(long, value_name = "FILES", value_delimiter = ',')]
    pub data: Vec<PathBuf>,
    /// Real data as NIfTI-1: one directory per site (repeat the flag), every `*.nii` or
    /// `*.nii.gz` in it one subject's 4-D image (x, y, z, time), in name order; needs --mask.
    /// Subjects may have different numbers of volumes. No ground truth: no q_NGI, A.csv or maps.
    #[arg(long, value_name = "DIR", conflicts_with = "data", requires = "mask")]
    pub nifti_site: Vec<PathBuf>,
    /// The brain mask for --nifti-site: a 3-D NIfTI-1 image on the images' grid; the voxels with
    /// mask > 0 are the D rows.
    #[arg(long, value_name = "FILE", requires = "nifti_site")]
    pub mask: Option<PathBuf>,
    /// The public scale applied to --data or --nifti-site after demeaning, before the clip at ‖x‖ = 1 (choose
    /// it from units, not from the data).
    #[arg(long, value_name = "K", default_value_t = 1.0)]
    pub data_scale: f64,
}

/// Checks the flags; the message names the flag and the bad value.
pub(super) fn validate(c: &DjicaCommon, method: Method) -> Result<(), String> {
    let positive = |v: f64| v.is_finite() && v > 0.0;
    if method.is_private() && !positive(c.eps_iter) {
        return Err(format!("--eps-iter {} must be positive and finite", c.eps_iter));
    }
    if method.is_private() && !(c.delta_iter > 0.0 && c.delta_iter < 1.0) {
        return Err(format!("--delta-iter {} must lie strictly between 0 and 1", c.delta_iter));
    }
    if c.pca == PcaArg::Cape && !positive(c.eps_pca) {
        return Err(format!("--eps-pca {} must be positive and finite", c.eps_pca));
    }
    if c.pca == PcaArg::Cape && !(c.delta_pca > 0.0 && c.delta_pca < 1.0) {
        return Err(format!("--delta-pca {} must lie strictly between 0 and 1", c.delta_pca));
    }
    if c.sites == 0 {
        return Err("--sites 0: need at least one site".into());
    }
    if method == Method::Cape && c.sites < 2 {
        return Err(format!("--sites {}: CAPE needs at least 2 sites", c.sites));
    }
    if c.sites > c.subjects {
        return Err(format!(
            "--sites {} is more than --subjects {}: every site needs at least one subject",
            c.sites, c.subjects
        ));
    }
    if c.grid < 2 || c.components < 2 || c.components > c.grid * c.grid {
        return Err(format!(
            "--components {} must be between 2 and D = grid² = {}",
            c.components,
            c.grid * c.grid
        ));
    }
    if c.max_iterations == 0 {
        return Err("--max-iterations must be at least 1".into());
    }
    if !positive(c.rate) || !positive(c.clip) || !positive(c.half_life) {
        return Err(format!(
            "--rate {}, --clip {} and --half-life {} must be positive",
            c.rate, c.clip, c.half_life
        ));
    }
    if !(0.0..=1.0).contains(&c.average_tail) {
        return Err(format!("--average-tail {} must be a fraction in [0, 1]", c.average_tail));
    }
    Ok(())
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepAxis {
    /// ε_i (seed 000 Fig. 1).
    Epsilon,
    /// M, the number of subjects (Fig. 2), at --eps-iter.
    Subjects,
}

#[derive(clap::Args, Debug)]
pub struct DjicaSweepArgs {
    #[command(flatten)]
    pub common: DjicaCommon,
    #[arg(long, value_enum, default_value = "epsilon")]
    pub sweep: SweepAxis,
    /// x values, comma-separated (default ε_i: 0.5,1,2,4,…,256 at subject level and
    /// 0.05,0.1,0.2,0.5,1 at time-point level; M: 64,128,256,512).
    #[arg(long, value_name = "LIST")]
    pub values: Option<String>,
    /// Methods, comma-separated.
    #[arg(long, value_name = "LIST", default_value = "cape,conventional,local,nonprivate")]
    pub methods: String,
    /// Runs (seeds --seed, --seed + 1, …) averaged per point.
    #[arg(long, default_value_t = 2)]
    pub runs: u64,
    /// Where the CSV, JSON and figures go [default: a new folder cape-out/djica-sweep-NNN in
    /// the working directory].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// File stem (default djica-<unit>-vs-<axis>).
    #[arg(long)]
    pub name: Option<String>,
    /// The q_NGI level that defines the threshold ε_i.
    #[arg(long, value_name = "Q", default_value_t = 0.1)]
    pub threshold_q: f64,
}

pub(super) fn parse_methods(list: &str) -> Result<Vec<Method>, String> {
    list.split(',')
        .map(|m| match m.trim() {
            "cape" => Ok(Method::Cape),
            "conventional" => Ok(Method::Conventional),
            "local" => Ok(Method::Local),
            "nonprivate" => Ok(Method::NonPrivate),
            "pooled" => Ok(Method::PooledNonPrivate),
            other => Err(format!(
                "--methods: unknown method '{other}' (use cape, conventional, local, nonprivate, pooled)"
            )),
        })
        .collect()
}
