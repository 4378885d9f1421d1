/*!
`cape djica` and `cape djica-sweep`: capePCA + capeDJICA on synthetic fMRI (seed 000 §IV–V, spec
cape-secagg-pca-djica §4–§9), with the baselines on the same data and seeds.

`cape djica` writes DIR/result.json (q_NGI, overall ε under every view at J* and J_max, J*, the
parameters, capePCA's principal cosines, the per-iteration history), DIR/W.csv (R×R: the
estimated sources are W·V_Rᵀ·x, whitening included), DIR/V.csv (D×R, the PCA subspace), DIR/A.csv
(D×R, the true maps) and DIR/maps.png (+ .svg: true maps above the matched recovered maps).

`cape djica-sweep` draws seed 000 Figs. 1 and 2 as we measure them: mean q_NGI and overall ε
against ε_i (or against M) for every method, averaged over runs, as CSV, PNG and SVG, plus each
method's threshold ε_i (the smallest grid ε_i with mean q ≤ 0.1) and their ratios (spec §9.4
predicts about 1 : √S : S for cape : conventional : local).

Every run uses the run seed for the data, the noise and the algorithm, so methods compared at one
seed see the same subjects (common random numbers).
*/

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use capelab_core::djica::accounting::StudyAccount;
use capelab_core::djica::{
    CapeZeroSumNoise, DjicaConfig, DjicaResult, GaussianLevel, IterationReport, Method,
    NoiseScheme, PcaSettings, PrivacyUnit, ProjectedSite, REPORT_DELTA, Schedule, account,
    ledger_releases, run_djica,
};
use capelab_core::fmri::maps::condition_number;
use capelab_core::fmri::matrix_io::{parse_csv_bytes, parse_npy, to_csv};
use capelab_core::fmri::normalise::normalise_site;
use capelab_core::fmri::{SiteData, SyntheticConfig, generate};
use capelab_core::ica_quality::{align_maps, estimated_maps, match_components, principal_cosines};
use capelab_core::pca::{CovarianceSensitivity, PcaConfig, PcaResult, Whitening, cape_pca};
use capelab_core::rng::Seed;
use indicatif::{ProgressBar, ProgressStyle};
use nalgebra::DMatrix;
use serde_json::{Value, json};

use crate::fm::{parse_list, stats};
use crate::plot::{Colours, HeatmapGrid, Legend, LineChart, Series, Tile};

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

fn method_name(m: Method) -> &'static str {
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
    /// Output directory (result.json, W.csv, V.csv, A.csv, maps.png).
    #[arg(long, value_name = "DIR", default_value = "djica-out")]
    pub out: PathBuf,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Real data instead of the generator: one matrix per site (CSV, or `.npy` by extension),
    /// D voxels × N_s time points, subjects of --timepoints columns each; comma-separated. There
    /// is no ground truth, so no q_NGI, A.csv or maps.
    #[arg(long, value_name = "FILES", value_delimiter = ',')]
    pub data: Vec<PathBuf>,
    /// The public scale applied to --data after demeaning, before the clip at ‖x‖ = 1 (choose
    /// it from units, not from the data).
    #[arg(long, value_name = "K", default_value_t = 1.0)]
    pub data_scale: f64,
}

/// Checks the flags; the message names the flag and the bad value.
fn validate(c: &DjicaCommon, method: Method) -> Result<(), String> {
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

fn synthetic(c: &DjicaCommon, subjects: usize) -> SyntheticConfig {
    let base = match c.preset {
        PresetArg::Default => SyntheticConfig::well_conditioned(subjects, c.sites),
        PresetArg::Paper => SyntheticConfig::paper_like(subjects, c.sites),
    };
    SyntheticConfig { grid: c.grid, components: c.components, timepoints: c.timepoints, ..base }
}

/// What a run works on: the sites' normalised data and, for synthetic data, the true maps.
struct Study {
    sites: Vec<SiteData>,
    /// A (D×R), when known.
    truth: Option<DMatrix<f64>>,
    clipped_fraction: f64,
    /// "synthetic (default preset)" or the files.
    source: String,
}

fn synthetic_study(c: &DjicaCommon, subjects: usize, seed: u64) -> Result<Study, String> {
    let study = generate(&synthetic(c, subjects), seed).map_err(|e| e.to_string())?;
    Ok(Study {
        sites: study.sites,
        truth: Some(study.mixing),
        clipped_fraction: study.clipped_fraction,
        source: format!("synthetic ({} preset)", format!("{:?}", c.preset).to_lowercase()),
    })
}

/// One site per file: a D×N_s matrix (voxels × time points) as CSV or `.npy`, subjects of
/// `timepoints` columns each, demeaned per subject, scaled by the public `scale` and clipped to
/// ‖x‖ ≤ 1 (spec §6). No ground truth, so no q_NGI.
fn load_study(files: &[PathBuf], timepoints: usize, scale: f64) -> Result<Study, String> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(format!("--data-scale {scale} must be positive and finite"));
    }
    let mut sites = vec![];
    let (mut clipped, mut samples) = (0usize, 0usize);
    for (s, path) in files.iter().enumerate() {
        let bytes = std::fs::read(path).map_err(|e| format!("--data {}: {e}", path.display()))?;
        let x = if path.extension().is_some_and(|e| e == "npy") {
            parse_npy(&bytes)
        } else {
            parse_csv_bytes(&bytes)
        }
        .map_err(|e| format!("--data {}: {e}", path.display()))?;
        if timepoints == 0 || x.ncols() == 0 || !x.ncols().is_multiple_of(timepoints) {
            return Err(format!(
                "--data {}: {} time points (columns) are not a whole number of subjects of \
                 --timepoints {timepoints}",
                path.display(),
                x.ncols()
            ));
        }
        if let Some(first) = sites.first().map(|f: &SiteData| f.voxels())
            && first != x.nrows()
        {
            return Err(format!(
                "--data {}: {} voxels (rows), but site 1 has {first}",
                path.display(),
                x.nrows()
            ));
        }
        let lengths = vec![timepoints; x.ncols() / timepoints];
        let mut site = SiteData::new(x, lengths).map_err(|e| format!("site {}: {e}", s + 1))?;
        let report = normalise_site(&mut site, scale);
        clipped += report.clipped;
        samples += report.samples;
        sites.push(site);
    }
    Ok(Study {
        sites,
        truth: None,
        clipped_fraction: clipped as f64 / samples.max(1) as f64,
        source: files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", "),
    })
}

fn djica_config(c: &DjicaCommon, method: Method, eps: f64) -> DjicaConfig {
    let schedule = match c.schedule {
        ScheduleArg::Auto => None,
        ScheduleArg::Anneal => Some(Schedule::RUNICA),
        ScheduleArg::Decay => Some(Schedule::Decay { half_life: c.half_life }),
        ScheduleArg::Constant => Some(Schedule::Constant),
    };
    DjicaConfig {
        method,
        unit: c.privacy_unit.into(),
        level: GaussianLevel { epsilon: eps, delta: c.delta_iter },
        bounds: capelab_core::djica::ClipBounds { gradient: c.clip, bias: c.clip.sqrt() },
        initial_rate: c.rate,
        max_iterations: c.max_iterations,
        schedule,
        average_tail: c.average_tail,
        ..DjicaConfig::default()
    }
}

fn pca_settings(c: &DjicaCommon) -> PcaSettings {
    PcaSettings {
        private: c.pca == PcaArg::Cape,
        level: GaussianLevel { epsilon: c.eps_pca, delta: c.delta_pca },
        sensitivity: CovarianceSensitivity {
            unit: c.privacy_unit.into(),
            rigorous: c.pca_rigorous,
        },
        whitening: Whitening::Runica,
    }
}

/// capePCA for `method` on `study` (the sites the method uses) and the projected data.
#[derive(Clone)]
struct Projected {
    pca: PcaResult,
    /// K, R×D.
    projection: DMatrix<f64>,
    sites: Vec<ProjectedSite>,
    /// Against the true maps, when known.
    principal_cosines: Option<Vec<f64>>,
}

fn pca_scheme(private: bool, method: Method) -> NoiseScheme {
    match (private, method) {
        (false, _) => NoiseScheme::None,
        // One site: CAPE's zero-sum part vanishes, so its noise is plain N(0, τ²).
        (true, Method::Local) => NoiseScheme::Conventional,
        (true, Method::Conventional) => NoiseScheme::Conventional,
        (true, _) => NoiseScheme::Cape,
    }
}

fn used_sites(study: &Study, method: Method) -> &[SiteData] {
    match method {
        Method::Local => &study.sites[..1],
        _ => &study.sites,
    }
}

fn project(
    study: &Study,
    c: &DjicaCommon,
    method: Method,
    noise: &mut CapeZeroSumNoise<capelab_core::cape::IdealSecureSum>,
) -> Result<Projected, String> {
    let settings = pca_settings(c);
    let sites = used_sites(study, method);
    let config = PcaConfig {
        components: c.components,
        scheme: pca_scheme(settings.private, method),
        level: settings.level,
        sensitivity: settings.sensitivity,
    };
    let pca = cape_pca(sites, &config, Seed::Fixed(c.seed), noise)
        .map_err(|e| format!("capePCA: {e}"))?;
    let projection =
        pca.subspace.projection(settings.whitening).map_err(|e| format!("capePCA: {e}"))?;
    let projected = sites
        .iter()
        .map(|s| ProjectedSite { x: &projection * &s.x, max_subject_len: s.max_subject_len() })
        .collect();
    let principal_cosines = study.truth.as_ref().map(|a| principal_cosines(&pca.subspace.v, a));
    Ok(Projected { pca, projection, sites: projected, principal_cosines })
}

/// One finished run with everything the outputs need.
struct Run {
    method: Method,
    djica: DjicaResult,
    projected: Projected,
    account: StudyAccount,
    /// W·K, R×D.
    unmixing: DMatrix<f64>,
}

fn run_once(
    study: &Study,
    c: &DjicaCommon,
    method: Method,
    eps: f64,
    projected: Projected,
    observer: &mut dyn FnMut(&IterationReport<'_>),
) -> Result<Run, String> {
    let config = djica_config(c, method, eps);
    let a_eff = study.truth.as_ref().map(|a| &projected.projection * a);
    let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(c.seed), projected.sites.len());
    let djica = run_djica(
        projected.sites.clone(),
        &config,
        Seed::Fixed(c.seed),
        &mut noise,
        a_eff.as_ref(),
        observer,
    )
    .map_err(|e| format!("capeDJICA: {e}"))?;
    let account = account(&djica.privacy, Some(&projected.pca.privacy), REPORT_DELTA)
        .map_err(|e| format!("accounting: {e}"))?;
    let unmixing = &djica.w * &projected.projection;
    Ok(Run { method, djica, projected, account, unmixing })
}

fn views_json(composition: Option<&capelab_core::djica::accounting::Composition>) -> Value {
    match composition {
        None => Value::Null,
        Some(c) => {
            let mut m = serde_json::Map::new();
            m.insert("iterations".into(), json!(c.iterations));
            for v in &c.views {
                m.insert(v.view.clone(), json!(v.epsilon_exact));
            }
            Value::Object(m)
        }
    }
}

fn overall_epsilon_json(a: &StudyAccount) -> Value {
    let Some(ica) = &a.ica else {
        return json!({
            "delta": a.delta,
            "note": "non-private: no privacy guarantee (ε = ∞)",
            "aggregator_view": null, "full_view": null, "at_realised": null, "at_max": null,
            "pca": a.pca.as_ref().map(|p| views_json(Some(&p.release))),
        });
    };
    json!({
        "delta": a.delta,
        "composition": "exact Gaussian composition; RDP figures under privacy.ica",
        "guarantee_view": a.guarantee_view,
        "aggregator_view": ica.at_realised.exact("aggregator"),
        "full_view": ica.at_realised.exact(&a.guarantee_view),
        "aggregator_view_at_max": ica.at_max.exact("aggregator"),
        "full_view_at_max": ica.at_max.exact(&a.guarantee_view),
        "at_realised": views_json(Some(&ica.at_realised)),
        "at_max": views_json(Some(&ica.at_max)),
        "pca": a.pca.as_ref().map(|p| views_json(Some(&p.release))),
    })
}

fn parameters_json(c: &DjicaCommon, method: Method, eps: f64, subjects: usize) -> Value {
    json!({
        "method": method_name(method),
        "sites": c.sites,
        "subjects": subjects,
        "components": c.components,
        "grid": c.grid,
        "voxels": c.grid * c.grid,
        "timepoints_per_subject": c.timepoints,
        "preset": format!("{:?}", c.preset).to_lowercase(),
        "eps_iter": eps,
        "delta_iter": c.delta_iter,
        "privacy_unit": match c.privacy_unit { UnitArg::Subject => "subject", UnitArg::Timepoint => "timepoint" },
        "pca": match c.pca { PcaArg::Cape => "cape", PcaArg::Nonprivate => "nonprivate" },
        "eps_pca": c.eps_pca,
        "delta_pca": c.delta_pca,
        "pca_rigorous_sensitivity": c.pca_rigorous,
        "whitening": "runica (2·Λ^(-1/2)·V_Rᵀ)",
        "rate": c.rate,
        "max_iterations": c.max_iterations,
        "schedule": format!("{:?}", c.schedule).to_lowercase(),
        "half_life": c.half_life,
        "average_tail": c.average_tail,
        "clip_gradient": c.clip,
        "clip_bias": c.clip.sqrt(),
        "seed": c.seed,
    })
}

fn result_json(run: &Run, c: &DjicaCommon, study: &Study) -> Value {
    let d = &run.djica;
    let cos = run.projected.principal_cosines.clone().unwrap_or_default();
    let mut warnings = vec![];
    if c.privacy_unit == UnitArg::Timepoint && run.method.is_private() {
        warnings.push(
            "time-point privacy protects one time point, not one subject: a subject's 250 time \
             points are correlated, so this is a weaker guarantee than the paper states"
                .to_string(),
        );
    }
    if c.privacy_unit == UnitArg::Subject && run.method.is_private() && c.eps_iter <= 1.0 {
        warnings.push(
            "at subject level and ε_i ≤ 1 the noise swamps the gradient at M ≤ 1024 (spec §9.4): \
             expect q_NGI near that of W = I"
                .to_string(),
        );
    }
    if c.eps_iter >= 1.0 && run.method.is_private() {
        warnings.push(format!(
            "ε_i = {} ≥ 1: the classical calibration is applied as in the paper; it labels the \
             noise level, the guarantee is overall_epsilon",
            c.eps_iter
        ));
    }
    json!({
        "method": method_name(run.method),
        "q_ngi": d.q,
        "iterations": d.privacy.iterations,
        "max_iterations": d.privacy.max_iterations,
        "stop": d.stop,
        "restarts": d.restarts,
        "final_rate": d.final_rate,
        "overall_epsilon": overall_epsilon_json(&run.account),
        "parameters": parameters_json(
            c,
            run.method,
            c.eps_iter,
            study.sites.iter().map(SiteData::subjects).sum(),
        ),
        "pca": {
            "private": c.pca == PcaArg::Cape,
            "principal_cosines": cos,
            "mean_principal_cosine": (!cos.is_empty())
                .then(|| cos.iter().sum::<f64>() / cos.len() as f64),
            "min_principal_cosine": cos.iter().copied().reduce(f64::min),
            "eigenvalues": run.projected.pca.subspace.eigenvalues.as_slice(),
            "noise": run.projected.pca.privacy,
        },
        "privacy": run.account,
        // What a site's ledger records for this run (guarantee view; time 0 here), so a study
        // driver can gate on it (accountant::ledger).
        "ledger_releases": ledger_releases(&run.account, &format!("djica seed {}", c.seed), 0)
            .map_err(|e| e.to_string())
            .ok(),
        "noise_scales": d.privacy.scales,
        "data": {
            "source": study.source,
            "subjects_per_site": study.sites.iter().map(SiteData::subjects).collect::<Vec<_>>(),
            "voxels": study.sites[0].voxels(),
            "condition_number_a": study.truth.as_ref().map(condition_number),
            "clipped_fraction": study.clipped_fraction,
        },
        "history": d.history,
        "warnings": warnings,
    })
}

/// The true maps and the matched recovered ones as a heatmap grid: rows of true maps, each
/// followed by a row of the recovered maps matched to them (permutation and sign).
fn maps_figure(
    run: &Run,
    truth: &DMatrix<f64>,
    c: &DjicaCommon,
    path: &Path,
) -> Result<Vec<PathBuf>, String> {
    let r = c.components;
    let g = c.grid;
    let p = &run.unmixing * truth;
    let matching = match_components(&p);
    let Some(est) = estimated_maps(&run.unmixing) else {
        return Err("the recovered unmixing is not finite; no maps to draw".into());
    };
    let aligned = align_maps(&est, &matching);
    // Which estimated component went to true j, for its match strength.
    let mut strength = vec![0.0; r];
    for (i, &j) in matching.true_index.iter().enumerate() {
        strength[j] = matching.strength[i];
    }
    let columns = r.min(10);
    let mut tiles = vec![];
    for block in (0..r).step_by(columns) {
        let range = block..(block + columns).min(r);
        for j in range.clone() {
            let col = truth.column(j);
            tiles.push(tile(format!("true {}", j + 1), g, col.iter().copied()));
        }
        for j in range.clone() {
            tiles.push(tile(
                format!("est. ({:.2})", strength[j]),
                g,
                aligned.column(j).iter().copied(),
            ));
        }
    }
    let grid = HeatmapGrid {
        title: format!(
            "{}: true / recovered, q = {:.3}",
            method_name(run.method),
            run.djica.q.unwrap_or(f64::NAN)
        ),
        tiles,
        columns,
        tile_px: 90,
        colours: Colours::Diverging,
        shared_scale: false,
    };
    grid.write(path).map_err(|e| e.to_string())
}

/// A G×G tile from a column-major D vector (voxel v = row·G + col, as the generator lays out).
fn tile(title: String, g: usize, values: impl Iterator<Item = f64>) -> Tile {
    Tile { title, width: g, height: g, values: values.collect() }
}

fn write(path: &Path, text: String) -> Result<PathBuf, String> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(path.to_path_buf())
}

fn progress_bar(len: u64, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    ProgressBar::new(len).with_style(
        ProgressStyle::default_bar()
            .template("{spinner} iteration {pos}/{len} [{bar:30}] {elapsed} (eta {eta}) {msg}")
            .expect("a valid template"),
    )
}

fn djica(args: &DjicaArgs) -> Result<(Value, Vec<PathBuf>), String> {
    let c = &args.common;
    let method: Method = args.method.into();
    let c = &if args.data.is_empty() {
        c.clone()
    } else {
        // The data decide S and M; the checks below see them.
        let subjects = args.data.len().max(1);
        DjicaCommon { sites: args.data.len(), subjects, ..c.clone() }
    };
    validate(c, method)?;
    let study = if args.data.is_empty() {
        synthetic_study(c, c.subjects, c.seed)?
    } else {
        load_study(&args.data, c.timepoints, args.data_scale)?
    };
    if c.components > study.sites[0].voxels() {
        return Err(format!(
            "--components {} exceeds the data's {} voxels",
            c.components,
            study.sites[0].voxels()
        ));
    }
    let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(c.seed), used_sites(&study, method).len());
    let projected = project(&study, c, method, &mut noise)?;
    let bar = progress_bar(c.max_iterations as u64, args.quiet);
    let mut observer = |r: &IterationReport<'_>| {
        bar.set_position(r.iteration as u64);
        if r.iteration.is_multiple_of(10) {
            bar.set_message(format!("q = {:.3}, ρ = {:.3}", r.q.unwrap_or(f64::NAN), r.rate));
        }
    };
    let run = run_once(&study, c, method, c.eps_iter, projected, &mut observer)?;
    bar.finish_and_clear();
    std::fs::create_dir_all(&args.out).map_err(|e| format!("--out {}: {e}", args.out.display()))?;
    let result = result_json(&run, c, &study);
    let mut files = vec![write(
        &args.out.join("result.json"),
        serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?,
    )?];
    // W (R×R) with sources = W·V_Rᵀ·x: the whitening K = 2Λ^(-1/2)V_Rᵀ lies in span(V_Rᵀ).
    let w_full = &run.unmixing * &run.projected.pca.subspace.v;
    files.push(write(&args.out.join("W.csv"), to_csv(&w_full))?);
    files.push(write(&args.out.join("V.csv"), to_csv(&run.projected.pca.subspace.v))?);
    if let Some(truth) = &study.truth {
        files.push(write(&args.out.join("A.csv"), to_csv(truth))?);
        files.extend(maps_figure(&run, truth, c, &args.out.join("maps"))?);
    }
    Ok((result, files))
}

fn fmt_opt(v: &Value) -> String {
    v.as_f64().map_or("—".into(), |x| format!("{x:.3}"))
}

pub fn run(args: DjicaArgs) -> ExitCode {
    match djica(&args) {
        Ok((v, files)) => {
            let e = &v["overall_epsilon"];
            println!("method                  {}", v["method"].as_str().unwrap_or(""));
            println!("q_NGI                   {}", fmt_opt(&v["q_ngi"]));
            println!("iterations J*           {} (stop: {})", v["iterations"], v["stop"]);
            println!(
                "overall ε (δ = {:e})    aggregator view {}, full view {} at J*; {} / {} at J_max",
                REPORT_DELTA,
                fmt_opt(&e["aggregator_view"]),
                fmt_opt(&e["full_view"]),
                fmt_opt(&e["aggregator_view_at_max"]),
                fmt_opt(&e["full_view_at_max"])
            );
            println!("PCA mean principal cos  {}", fmt_opt(&v["pca"]["mean_principal_cosine"]));
            for w in v["warnings"].as_array().into_iter().flatten() {
                println!("warning                 {}", w.as_str().unwrap_or(""));
            }
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

// -- the sweep ---------------------------------------------------------------------------------

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
    #[arg(long, value_name = "DIR", default_value = "figures")]
    pub out: PathBuf,
    /// File stem (default djica-<unit>-vs-<axis>).
    #[arg(long)]
    pub name: Option<String>,
    /// The q_NGI level that defines the threshold ε_i.
    #[arg(long, value_name = "Q", default_value_t = 0.1)]
    pub threshold_q: f64,
}

fn parse_methods(list: &str) -> Result<Vec<Method>, String> {
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

fn sweep(args: &DjicaSweepArgs) -> Result<(Value, Vec<PathBuf>), String> {
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
    let bar = progress_bar(total_runs as u64, false);
    bar.set_style(
        ProgressStyle::default_bar()
            .template("{spinner} run {pos}/{len} [{bar:30}] {elapsed} (eta {eta}) {msg}")
            .expect("a valid template"),
    );
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
    bar.finish_and_clear();

    let axis = match args.sweep {
        SweepAxis::Epsilon => "eps_iter",
        SweepAxis::Subjects => "subjects",
    };
    let unit_name = match unit {
        UnitArg::Subject => "subject",
        UnitArg::Timepoint => "timepoint",
    };
    let stem = args.name.clone().unwrap_or_else(|| format!("djica-{unit_name}-vs-{axis}"));
    std::fs::create_dir_all(&args.out).map_err(|e| format!("--out: {e}"))?;
    let mut csv = format!(
        "{axis},method,runs,q_mean,q_se,epsilon_full_view,epsilon_aggregator_view,\
         epsilon_full_view_at_jmax,iterations_mean,pca_mean_principal_cosine\n"
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
    let csv_path = args.out.join(format!("{stem}.csv"));
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
    files.extend(chart.write(&args.out.join(&stem)).map_err(|e| e.to_string())?);
    if !eps_series.is_empty() {
        let chart = LineChart {
            title: format!("Overall ε at J* (δ = {REPORT_DELTA:e}, exact composition, full view)"),
            x_label,
            y_label: "overall ε".into(),
            x_log: true,
            y_log: true,
            series: eps_series,
            y_range: None,
            legend: Legend::UpperLeft,
        };
        files.extend(
            chart
                .write(&args.out.join(format!("{stem}-overall-epsilon")))
                .map_err(|e| e.to_string())?,
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
        &args.out.join(format!("{stem}.json")),
        serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?,
    )?);
    Ok((summary, files))
}

pub fn run_sweep(args: DjicaSweepArgs) -> ExitCode {
    match sweep(&args) {
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
