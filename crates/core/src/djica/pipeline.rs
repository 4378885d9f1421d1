/*!
The whole study in one process: capePCA, projection (with optional whitening), capeDJICA, and the
quality figures spec §9 asks for with every run (q_NGI and the principal cosines of the PCA
subspace). The CLI and the tests drive this; the browser drives the same steps across tabs.

Which sites take part follows the method: `Local` uses site 0 alone for both PCA and ICA (CAPE
with one site is plain Gaussian noise), the others use all sites.
*/

use super::noise::{NoiseScheme, ZeroSumNoise};
use super::run::{
    DjicaConfig, DjicaError, DjicaResult, IterationReport, Method, ProjectedSite, run_djica,
};
use crate::djica::calibration::GaussianLevel;
use crate::fmri::SiteData;
use crate::ica_quality::principal_cosines;
use crate::pca::{CovarianceSensitivity, PcaConfig, PcaError, PcaResult, Whitening, cape_pca};
use crate::rng::Seed;
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// capePCA's settings within a study.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PcaSettings {
    /// Private (CAPE-style noise as the method uses) or non-private PCA.
    pub private: bool,
    /// (ε_p, δ_p).
    pub level: GaussianLevel,
    /// Δ_C model.
    pub sensitivity: CovarianceSensitivity,
    /// How the projected data are formed.
    pub whitening: Whitening,
}

impl Default for PcaSettings {
    /// Non-private PCA with runica whitening; if made private: ε_p = 1, δ_p = 1e-5, subject
    /// level.
    fn default() -> Self {
        PcaSettings {
            private: false,
            level: GaussianLevel { epsilon: 1.0, delta: 1e-5 },
            sensitivity: CovarianceSensitivity::default(),
            whitening: Whitening::Runica,
        }
    }
}

/// Why a study failed.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum StudyError {
    /// capePCA failed.
    #[error("capePCA: {0}")]
    Pca(#[from] PcaError),
    /// capeDJICA failed.
    #[error("capeDJICA: {0}")]
    Djica(#[from] DjicaError),
}

/// A finished study.
#[derive(Clone, Debug)]
pub struct StudyResult {
    /// capePCA's subspace and privacy record.
    pub pca: PcaResult,
    /// K (R×D): the map from a time point to capeDJICA's input (V_Rᵀ, whitened or not).
    pub projection: DMatrix<f64>,
    /// W·K (R×D): the estimated sources are (W·K)·x.
    pub unmixing: DMatrix<f64>,
    /// Cosines of the principal angles between span(V_R) and span(A), if A was given.
    pub principal_cosines: Option<Vec<f64>>,
    /// capeDJICA's result (its `q` is q_NGI on W·K·A).
    pub djica: DjicaResult,
}

/// Runs capePCA then capeDJICA on `sites`. `truth` is the true A (D×R) when known. `noise`
/// serves all sites (it is only used when the method is CAPE).
pub fn run_study(
    sites: &[SiteData],
    truth: Option<&DMatrix<f64>>,
    pca: &PcaSettings,
    config: &DjicaConfig,
    seed: Seed,
    noise: &mut dyn ZeroSumNoise,
    observer: &mut dyn FnMut(&IterationReport<'_>),
) -> Result<StudyResult, StudyError> {
    let used = match config.method {
        Method::Local => &sites[..sites.len().min(1)],
        _ => sites,
    };
    let components = match truth {
        Some(a) => a.ncols(),
        None => {
            return Err(StudyError::Djica(DjicaError::Setting(
                "run_study needs the number of components: pass the truth or use run_study_with"
                    .into(),
            )));
        }
    };
    run_study_with(used, truth, components, pca, config, seed, noise, observer)
}

/// [`run_study`] for data without ground truth: `components` is R.
#[allow(clippy::too_many_arguments)]
pub fn run_study_with(
    sites: &[SiteData],
    truth: Option<&DMatrix<f64>>,
    components: usize,
    pca: &PcaSettings,
    config: &DjicaConfig,
    seed: Seed,
    noise: &mut dyn ZeroSumNoise,
    observer: &mut dyn FnMut(&IterationReport<'_>),
) -> Result<StudyResult, StudyError> {
    let pca_scheme = match (pca.private, config.method) {
        (false, _) => NoiseScheme::None,
        // One site: CAPE's zero-sum part vanishes, so its noise is plain N(0, τ²).
        (true, Method::Local) => NoiseScheme::Conventional,
        (true, m) if m.is_private() => m.scheme(),
        (true, _) => NoiseScheme::Cape,
    };
    let pca_result = cape_pca(
        sites,
        &PcaConfig {
            components,
            scheme: pca_scheme,
            level: pca.level,
            sensitivity: pca.sensitivity,
        },
        seed,
        noise,
    )?;
    let k = pca_result.subspace.projection(pca.whitening)?;
    let projected: Vec<ProjectedSite> = sites
        .iter()
        .map(|s| ProjectedSite { x: &k * &s.x, max_subject_len: s.max_subject_len() })
        .collect();
    let a_eff = truth.map(|a| &k * a);
    let principal = truth.map(|a| principal_cosines(&pca_result.subspace.v, a));
    let djica = run_djica(projected, config, seed, noise, a_eff.as_ref(), observer)?;
    Ok(StudyResult {
        unmixing: &djica.w * &k,
        projection: k,
        principal_cosines: principal,
        pca: pca_result,
        djica,
    })
}
