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
use crate::fmri::{SiteData, SyntheticStudy};
use crate::ica_quality::principal_cosines;
use crate::pca::{
    CovarianceSensitivity, PcaConfig, PcaError, PcaResult, Whitening, cape_pca, project,
};
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

/// What a study runs on: the sites' normalised data, R, and the true maps when known.
#[derive(Clone, Copy, Debug)]
pub struct StudyData<'a> {
    /// Every site's data (the `Local` method uses the first only).
    pub sites: &'a [SiteData],
    /// R, the number of components.
    pub components: usize,
    /// The true maps A (D×R) for q_NGI and the principal cosines, if known.
    pub truth: Option<&'a DMatrix<f64>>,
}

impl<'a> StudyData<'a> {
    /// A synthetic study, with its ground truth.
    pub fn synthetic(study: &'a SyntheticStudy) -> Self {
        StudyData {
            sites: &study.sites,
            components: study.mixing.ncols(),
            truth: Some(&study.mixing),
        }
    }
}

/// Runs capePCA then capeDJICA. `noise` serves all sites (it is only used by CAPE).
pub fn run_study(
    data: StudyData<'_>,
    pca: &PcaSettings,
    config: &DjicaConfig,
    seed: Seed,
    noise: &mut dyn ZeroSumNoise,
    observer: &mut dyn FnMut(&IterationReport<'_>),
) -> Result<StudyResult, StudyError> {
    let sites = match config.method {
        Method::Local => &data.sites[..data.sites.len().min(1)],
        _ => data.sites,
    };
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
            components: data.components,
            scheme: pca_scheme,
            level: pca.level,
            sensitivity: pca.sensitivity,
        },
        seed,
        noise,
    )?;
    let k = pca_result.subspace.projection(pca.whitening)?;
    let projected: Vec<ProjectedSite> = crate::par::map_sites(sites, |_, s| ProjectedSite {
        x: project(&k, s),
        max_subject_len: s.max_subject_len(),
    });
    let a_eff = data.truth.map(|a| &k * a);
    let principal = data.truth.map(|a| principal_cosines(&pca_result.subspace.v, a));
    let djica = run_djica(projected, config, seed, noise, a_eff.as_ref(), observer)?;
    Ok(StudyResult {
        unmixing: &djica.w * &k,
        projection: k,
        principal_cosines: principal,
        pca: pca_result,
        djica,
    })
}
