//! `capelab.djica`: capePCA + capeDJICA (seed 000; spec cape-secagg-pca-djica §4–§5) on one
//! numpy array per site, and the synthetic fMRI generator with its ground truth.
//!
//! A site's array is D×N_s (voxels × time points, subjects concatenated in time), as the CLI's
//! `--data` files. C-order (D, N_s) float64 memory is exactly the layout capePCA reads, X_sᵀ
//! N_s×D column-major (`fmri::SiteSamples`), so the arrays are lent to the core as they are
//! (`fmri::SiteView`), checked in one read-only pass and never copied; only `normalise=True`
//! copies them, to rewrite them.
//!
//! The steps are `cape djica`'s (crates/cli/src/djica/pipeline.rs): capePCA with its own seeded
//! zero-sum noise source, the projection (runica whitening), capeDJICA with a fresh one, then the
//! account; the same seed gives the CLI's numbers bit for bit (tests/test_djica.py checks it).

use capelab_core::djica::{
    CapeZeroSumNoise, ClipBounds, DjicaConfig, GaussianLevel, Method, NoiseScheme, PrivacyUnit,
    ProjectedSite, REPORT_DELTA, Schedule, account, ledger_releases, level_for_target, run_djica,
};
use capelab_core::fmri::normalise::normalise_site;
use capelab_core::fmri::{SiteData, SiteSamples, SiteView, SyntheticConfig, generate};
use capelab_core::ica_quality::{align_maps, estimated_maps, match_components, principal_cosines};
use capelab_core::par;
use capelab_core::pca::{self, CovarianceSensitivity, PcaConfig, PcaResult, Whitening, cape_pca};
use capelab_core::rng::Seed;
use nalgebra::DMatrix;
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::json;

use crate::common::{Progress, bad, detached, to_numpy, to_py};

/// A site's stored X_sᵀ as a C-order (D, N_s) array: the same memory, copied once.
fn site_array<'py>(py: Python<'py>, site: &SiteData) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let (n, d) = site.xt.shape();
    PyArray1::from_slice(py, site.xt.as_slice()).reshape([d, n])
}

/// The seeded synthetic study of `cape djica` (its `--preset`, `--grid`, … flags): every site's
/// normalised data, the true maps A (D×R) and the subjects' lengths.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn djica_synthetic<'py>(
    py: Python<'py>,
    sites: usize,
    subjects: usize,
    components: usize,
    grid: usize,
    timepoints: usize,
    preset: &str,
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let base = match preset {
        "default" => SyntheticConfig::well_conditioned(subjects, sites),
        "paper" => SyntheticConfig::paper_like(subjects, sites),
        other => return Err(bad("preset", format!("'{other}' is not 'default' or 'paper'"))),
    };
    let config = SyntheticConfig { grid, components, timepoints, ..base };
    let study = detached(py, || generate(&config, seed).map_err(|e| bad("sites", e)))?;
    let out = PyDict::new(py);
    let arrays = PyList::empty(py);
    for site in &study.sites {
        arrays.append(site_array(py, site)?)?;
    }
    out.set_item("sites", arrays)?;
    out.set_item("truth", to_numpy(py, &study.mixing))?;
    out.set_item(
        "subject_lengths",
        study.sites.iter().map(|s| s.subject_lengths.clone()).collect::<Vec<_>>(),
    )?;
    out.set_item("clipped_fraction", study.clipped_fraction)?;
    Ok(out)
}

/// Demeans each subject, scales by the public `scale` and clips every time point to ‖x‖ ≤ 1
/// (spec §6): the normalisation every site applies before capePCA. Returns the new array and
/// how many time points the clip scaled down.
#[pyfunction]
pub fn djica_normalise<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    subject_lengths: Vec<usize>,
    scale: f64,
) -> PyResult<(Bound<'py, PyArray2<f64>>, usize)> {
    let array = site_array_of("x", &x)?;
    let (site, report) = detached(py, || {
        let mut site = owned_site("x", &array, subject_lengths)?;
        let report = normalise_site(&mut site, scale);
        Ok((site, report))
    })?;
    Ok((site_array(py, &site)?, report.clipped))
}

/// A borrowed site array: C-order (D, N_s) float64 memory, which is X_sᵀ column-major.
struct SiteArray<'a> {
    values: &'a [f64],
    voxels: usize,
    samples: usize,
}

fn site_array_of<'a>(argument: &str, x: &'a PyReadonlyArray2<'_, f64>) -> PyResult<SiteArray<'a>> {
    let values = x.as_slice().map_err(|_| bad(argument, "must be a C-contiguous array"))?;
    let (voxels, samples) = x.as_array().dim();
    Ok(SiteArray { values, voxels, samples })
}

/// Checks one site's values in one read-only pass: every value finite and, when `in_ball`, every
/// time point inside the clip ball ‖x‖ ≤ 1 the sensitivities need (the squared norms accumulate
/// voxel row by voxel row, each row contiguous).
fn check_site(argument: &str, a: &SiteArray<'_>, in_ball: bool) -> PyResult<()> {
    let mut norms = vec![0.0f64; if in_ball { a.samples } else { 0 }];
    for (v, row) in a.values.chunks_exact(a.samples.max(1)).enumerate() {
        if let Some(n) = row.iter().position(|x| !x.is_finite()) {
            return Err(bad(
                argument,
                format!("contains NaN or infinite values (first at [{v}, {n}])"),
            ));
        }
        for (acc, x) in norms.iter_mut().zip(row) {
            *acc += x * x;
        }
    }
    if let Some((n, norm2)) =
        norms.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).filter(|(_, v)| **v > BALL)
    {
        return Err(bad(
            argument,
            format!(
                "time point {n} has norm {:.6} > 1; the privacy guarantee needs every ‖x‖ ≤ 1: \
                 pass normalise=True (with a public data_scale) or use capelab.djica.normalise",
                norm2.sqrt()
            ),
        ));
    }
    Ok(())
}

/// (1 + 1e−9)²: the clip leaves norms of 1 up to rounding.
const BALL: f64 = (1.0 + 1e-9) * (1.0 + 1e-9);

/// A copy of one site's array as the core's owned `SiteData` (for normalising, which rewrites it).
fn owned_site(
    argument: &str,
    a: &SiteArray<'_>,
    subject_lengths: Vec<usize>,
) -> PyResult<SiteData> {
    check_site(argument, a, false)?;
    let xt = DMatrix::from_column_slice(a.samples, a.voxels, a.values);
    SiteData::from_transposed(xt, subject_lengths).map_err(|e| bad("subject_lengths", e))
}

/// The sites capePCA reads: the caller's arrays themselves, borrowed without a copy, when they are
/// already in the clip ball; normalised copies when a public scale is given.
enum Sites<'a> {
    Borrowed(Vec<SiteView<'a>>),
    Owned(Vec<SiteData>),
}

/// Every site checked (and, with `scale`, copied and normalised), one site per task on the thread
/// pool (`capelab_core::par`).
fn load_sites<'a>(
    arrays: &[SiteArray<'a>],
    subject_lengths: &'a [Vec<usize>],
    scale: Option<f64>,
) -> PyResult<Sites<'a>> {
    let n = arrays.len();
    let argument = |i: usize| format!("sites[{i}]");
    match scale {
        None => {
            let checked = par::map_indices(n, |i| check_site(&argument(i), &arrays[i], true));
            checked.into_iter().collect::<PyResult<()>>()?;
            let views = arrays
                .iter()
                .zip(subject_lengths)
                .map(|(a, lengths)| {
                    SiteView::new(a.values, a.samples, a.voxels, lengths)
                        .map_err(|e| bad("subject_lengths", e))
                })
                .collect::<PyResult<_>>()?;
            Ok(Sites::Borrowed(views))
        }
        Some(scale) => {
            let loaded = par::map_indices(n, |i| {
                let mut site = owned_site(&argument(i), &arrays[i], subject_lengths[i].clone())?;
                normalise_site(&mut site, scale);
                Ok(site)
            });
            Ok(Sites::Owned(loaded.into_iter().collect::<PyResult<_>>()?))
        }
    }
}

fn method(name: &str) -> PyResult<Method> {
    Ok(match name {
        "cape" => Method::Cape,
        "conventional" => Method::Conventional,
        "local" => Method::Local,
        "nonprivate" => Method::NonPrivate,
        "pooled" => Method::PooledNonPrivate,
        other => {
            return Err(bad(
                "method",
                format!("'{other}' is not cape, conventional, local, nonprivate or pooled"),
            ));
        }
    })
}

/// capePCA's settings (`cape djica`'s `--pca`, `--eps-pca`, `--delta-pca`, `--pca-rigorous`).
struct PcaSettings {
    components: usize,
    private: bool,
    epsilon: f64,
    delta: f64,
    unit: PrivacyUnit,
    rigorous: bool,
}

/// capePCA over `sites` (the ones `method` uses) with its own seeded zero-sum noise source, and
/// the runica-whitened projection K (R×D): the first half of `cape djica`.
fn pca_step<S: SiteSamples>(
    sites: &[S],
    p: &PcaSettings,
    method: Method,
    seed: u64,
) -> PyResult<(PcaResult, DMatrix<f64>)> {
    let config = PcaConfig {
        components: p.components,
        scheme: match (p.private, method) {
            (false, _) => NoiseScheme::None,
            // One site: CAPE's zero-sum part vanishes, so its noise is plain N(0, τ²).
            (true, Method::Local | Method::Conventional) => NoiseScheme::Conventional,
            (true, _) => NoiseScheme::Cape,
        },
        level: GaussianLevel { epsilon: p.epsilon, delta: p.delta },
        sensitivity: CovarianceSensitivity { unit: p.unit, rigorous: p.rigorous },
    };
    let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(seed), sites.len());
    let result = cape_pca(sites, &config, Seed::Fixed(seed), &mut noise)
        .map_err(|e| bad("sites", format!("capePCA: {e}")))?;
    let projection = result
        .subspace
        .projection(Whitening::Runica)
        .map_err(|e| bad("sites", format!("capePCA: {e}")))?;
    Ok((result, projection))
}

/// capePCA and every used site projected by K (R×N_s each).
fn pca_and_project<S: SiteSamples>(
    sites: &[S],
    p: &PcaSettings,
    method: Method,
    seed: u64,
) -> PyResult<(PcaResult, DMatrix<f64>, Vec<ProjectedSite>)> {
    let (result, projection) = pca_step(sites, p, method, seed)?;
    let projected = sites
        .iter()
        .map(|site| ProjectedSite {
            x: pca::project(&projection, site),
            max_subject_len: site.longest_subject(),
        })
        .collect();
    Ok((result, projection, projected))
}

fn unit(name: &str) -> PyResult<PrivacyUnit> {
    match name {
        "subject" => Ok(PrivacyUnit::Subject),
        "timepoint" => Ok(PrivacyUnit::TimePoint),
        other => Err(bad("privacy_unit", format!("'{other}' is not subject or timepoint"))),
    }
}

/// The sites' arrays, checked for count and shape (their values are checked while loading).
fn site_arrays<'a>(
    sites: &'a [PyReadonlyArray2<'_, f64>],
    subject_lengths: &[Vec<usize>],
) -> PyResult<Vec<SiteArray<'a>>> {
    if sites.is_empty() {
        return Err(bad("sites", "no site: give one array per site"));
    }
    if sites.len() != subject_lengths.len() {
        return Err(bad("subject_lengths", "one list per site"));
    }
    let arrays: Vec<SiteArray<'_>> = sites
        .iter()
        .enumerate()
        .map(|(i, x)| site_array_of(&format!("sites[{i}]"), x))
        .collect::<PyResult<_>>()?;
    let voxels = arrays[0].voxels;
    if let Some(i) = arrays.iter().position(|a| a.voxels != voxels || a.samples == 0) {
        return Err(bad(
            &format!("sites[{i}]"),
            format!(
                "{} voxels × {} time points, but sites[0] has {voxels} voxels",
                arrays[i].voxels, arrays[i].samples
            ),
        ));
    }
    Ok(arrays)
}

/// capePCA alone: V_R (D×R), its eigenvalues, the whitened projection K (R×D) and the noise's
/// privacy record, over every site (`method` "cape" or "conventional"; "local" uses site 0).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn djica_pca<'py>(
    py: Python<'py>,
    sites: Vec<PyReadonlyArray2<'py, f64>>,
    subject_lengths: Vec<Vec<usize>>,
    components: usize,
    private: bool,
    epsilon: f64,
    delta: f64,
    privacy_unit: &str,
    rigorous: bool,
    method_name: &str,
    normalise_scale: Option<f64>,
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let method = method(method_name)?;
    let arrays = site_arrays(&sites, &subject_lengths)?;
    if components < 2 || components > arrays[0].voxels {
        return Err(bad(
            "components",
            format!("R = {components} must be between 2 and D = {}", arrays[0].voxels),
        ));
    }
    let settings =
        PcaSettings { components, private, epsilon, delta, unit: unit(privacy_unit)?, rigorous };
    let used = if method == Method::Local { &arrays[..1] } else { &arrays[..] };
    let (result, projection) =
        detached(py, || match load_sites(used, &subject_lengths, normalise_scale)? {
            Sites::Borrowed(views) => pca_step(&views, &settings, method, seed),
            Sites::Owned(data) => pca_step(&data, &settings, method, seed),
        })?;
    let out = PyDict::new(py);
    out.set_item("V", to_numpy(py, &result.subspace.v))?;
    out.set_item("eigenvalues", result.subspace.eigenvalues.clone())?;
    out.set_item("projection", to_numpy(py, &projection))?;
    out.set_item("privacy", to_py(py, &result.privacy)?)?;
    Ok(out)
}

/// The settings of one run, as `cape djica`'s flags.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct RunSettings {
    method: String,
    components: usize,
    eps_iter: f64,
    delta_iter: f64,
    privacy_unit: String,
    pca_private: bool,
    eps_pca: f64,
    delta_pca: f64,
    pca_rigorous: bool,
    rate: f64,
    max_iterations: usize,
    schedule: String,
    half_life: f64,
    average_tail: f64,
    clip: f64,
    target_epsilon: Option<f64>,
    /// Normalise the sites with this public scale first (`normalise=True`), or check the ball.
    normalise_scale: Option<f64>,
    seed: u64,
}

/// capePCA then capeDJICA on `sites` (each (D, N_s), already in the clip ball ‖x‖ ≤ 1; the
/// Python layer normalises or checks), with `truth` A (D×R) for q_NGI when known.
#[pyfunction]
#[pyo3(signature = (sites, subject_lengths, truth, settings, progress=None))]
pub fn djica_run<'py>(
    py: Python<'py>,
    sites: Vec<PyReadonlyArray2<'py, f64>>,
    subject_lengths: Vec<Vec<usize>>,
    truth: Option<PyReadonlyArray2<'py, f64>>,
    settings: RunSettings,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let s = &settings;
    let method = method(&s.method)?;
    let arrays = site_arrays(&sites, &subject_lengths)?;
    let voxels = arrays[0].voxels;
    if s.components < 2 || s.components > voxels {
        return Err(bad(
            "components",
            format!("R = {} must be between 2 and D = {voxels}", s.components),
        ));
    }
    let truth = truth.map(|t| crate::common::matrix("truth", &t)).transpose()?;
    if let Some(a) = &truth
        && a.shape() != (voxels, s.components)
    {
        return Err(bad(
            "truth",
            format!("shape {:?}, expected (D, R) = ({voxels}, {})", a.shape(), s.components),
        ));
    }
    let unit = unit(&s.privacy_unit)?;
    let schedule = match s.schedule.as_str() {
        "auto" => None,
        "anneal" => Some(Schedule::RUNICA),
        "decay" => Some(Schedule::Decay { half_life: s.half_life }),
        "constant" => Some(Schedule::Constant),
        other => {
            return Err(bad(
                "schedule",
                format!("'{other}' is not auto, anneal, decay or constant"),
            ));
        }
    };
    let releasing = if method == Method::Local { 1 } else { arrays.len() };
    let target = s
        .target_epsilon
        .map(|e| {
            level_for_target(e, REPORT_DELTA, s.delta_iter, s.max_iterations, method, releasing)
        })
        .transpose()
        .map_err(|e| bad("target_epsilon", e))?;
    let eps_iter = target.map_or(s.eps_iter, |t| t.level.epsilon);
    let mut progress = Progress::new(progress);
    let total = s.max_iterations as u64;
    let (result, progress) = detached(py, move || {
        progress.report(0, total);
        let pca_settings = PcaSettings {
            components: s.components,
            private: s.pca_private,
            epsilon: s.eps_pca,
            delta: s.delta_pca,
            unit,
            rigorous: s.pca_rigorous,
        };
        // Every site is checked (as the CLI loads every file); the method uses `releasing`.
        let (pca_result, projection, projected) =
            match load_sites(&arrays, &subject_lengths, s.normalise_scale)? {
                Sites::Borrowed(views) => {
                    pca_and_project(&views[..releasing], &pca_settings, method, s.seed)?
                }
                Sites::Owned(data) => {
                    pca_and_project(&data[..releasing], &pca_settings, method, s.seed)?
                }
            };
        let cosines = truth.as_ref().map(|a| principal_cosines(&pca_result.subspace.v, a));
        let config = DjicaConfig {
            method,
            unit,
            level: GaussianLevel { epsilon: eps_iter, delta: s.delta_iter },
            bounds: ClipBounds { gradient: s.clip, bias: s.clip.sqrt() },
            initial_rate: s.rate,
            max_iterations: s.max_iterations,
            schedule,
            average_tail: s.average_tail,
            ..DjicaConfig::default()
        };
        let a_eff = truth.as_ref().map(|a| &projection * a);
        let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(s.seed), projected.len());
        let mut observer = |r: &capelab_core::djica::IterationReport<'_>| {
            progress.report(r.iteration as u64, total);
        };
        let djica = run_djica(
            projected,
            &config,
            Seed::Fixed(s.seed),
            &mut noise,
            a_eff.as_ref(),
            &mut observer,
        )
        .map_err(|e| bad("sites", format!("capeDJICA: {e}")))?;
        progress.report(total, total);
        let study_account = account(&djica.privacy, Some(&pca_result.privacy), REPORT_DELTA)
            .map_err(|e| bad("eps_iter", e))?;
        let unmixing = &djica.w * &projection;
        // W (R×R) with sources = W·V_Rᵀ·x, as the CLI's W.csv.
        let w_full = &unmixing * &pca_result.subspace.v;
        let maps = estimated_maps(&unmixing);
        let aligned = match (&truth, &maps) {
            (Some(a), Some(m)) => {
                let matching = match_components(&(&unmixing * a));
                Some((align_maps(m, &matching), matching))
            }
            _ => None,
        };
        let releases = ledger_releases(&study_account, &format!("djica seed {}", s.seed), 0).ok();
        let summary = json!({
            "q_ngi": djica.q,
            "iterations": djica.privacy.iterations,
            "max_iterations": djica.privacy.max_iterations,
            "stop": djica.stop,
            "restarts": djica.restarts,
            "final_rate": djica.final_rate,
            "eps_iter": eps_iter,
            "guarantee_view": study_account.guarantee_view,
            "epsilon": study_account.ica_epsilon(),
            "epsilon_at_max": study_account.ica_epsilon_at_max(),
            "delta": REPORT_DELTA,
            "privacy": study_account,
            "ledger_releases": releases,
            "noise_scales": djica.privacy.scales,
            "history": djica.history,
            "pca": {
                "private": s.pca_private,
                "principal_cosines": cosines,
                "eigenvalues": pca_result.subspace.eigenvalues,
                "noise": pca_result.privacy,
            },
            "target": target.map(|t| json!({
                "epsilon": s.target_epsilon,
                "delta": REPORT_DELTA,
                "accountant": "pld",
                "eps_iter": t.level.epsilon,
                "noise_multiplier": t.noise_multiplier,
                "noise_multiplier_rdp": t.noise_multiplier_rdp,
                "noise_saved": 1.0 - t.noise_multiplier / t.noise_multiplier_rdp,
                "collusion_factor": t.collusion_factor,
            })),
            "matching": aligned.as_ref().map(|(_, m)| json!({
                "true_index": m.true_index, "sign": m.sign, "strength": m.strength,
            })),
        });
        let matrices = Matrices {
            w: w_full,
            unmixing,
            v: pca_result.subspace.v,
            projection,
            maps,
            aligned_maps: aligned.map(|(m, _)| m),
        };
        Ok(((summary, matrices), progress))
    })?;
    progress.finish()?;
    let (summary, m) = result;
    let out = to_py(py, &summary)?;
    let dict = out.cast::<PyDict>()?;
    dict.set_item("W", to_numpy(py, &m.w))?;
    dict.set_item("unmixing", to_numpy(py, &m.unmixing))?;
    dict.set_item("V", to_numpy(py, &m.v))?;
    dict.set_item("projection", to_numpy(py, &m.projection))?;
    dict.set_item("maps", m.maps.as_ref().map(|x| to_numpy(py, x)))?;
    dict.set_item("aligned_maps", m.aligned_maps.as_ref().map(|x| to_numpy(py, x)))?;
    Ok(out)
}

struct Matrices {
    w: DMatrix<f64>,
    unmixing: DMatrix<f64>,
    v: DMatrix<f64>,
    projection: DMatrix<f64>,
    maps: Option<DMatrix<f64>>,
    aligned_maps: Option<DMatrix<f64>>,
}
