//! One run of a method: capePCA (or exact PCA) on the sites it uses, then djICA on the projected
//! data, and the privacy account of both.

use capelab_core::djica::accounting::StudyAccount;
use capelab_core::djica::{
    CapeZeroSumNoise, DjicaConfig, DjicaResult, GaussianLevel, IterationReport, Method,
    NoiseScheme, PcaSettings, ProjectedSite, REPORT_DELTA, Schedule, account, run_djica,
};
use capelab_core::fmri::SiteData;
use capelab_core::ica_quality::principal_cosines;
use capelab_core::pca::{self, CovarianceSensitivity, PcaConfig, PcaResult, Whitening, cape_pca};
use capelab_core::rng::Seed;
use nalgebra::DMatrix;

use super::args::{DjicaCommon, PcaArg, ScheduleArg};
use super::study::Study;

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
pub(super) struct Projected {
    pub(super) pca: PcaResult,
    /// K, R×D.
    pub(super) projection: DMatrix<f64>,
    pub(super) sites: Vec<ProjectedSite>,
    /// Against the true maps, when known.
    pub(super) principal_cosines: Option<Vec<f64>>,
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

pub(super) fn used_sites(study: &Study, method: Method) -> &[SiteData] {
    match method {
        Method::Local => &study.sites[..1],
        _ => &study.sites,
    }
}

pub(super) fn project(
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
        .map(|s| ProjectedSite {
            x: pca::project(&projection, s),
            max_subject_len: s.max_subject_len(),
        })
        .collect();
    let principal_cosines = study.truth.as_ref().map(|a| principal_cosines(&pca.subspace.v, a));
    Ok(Projected { pca, projection, sites: projected, principal_cosines })
}

/// One finished run with everything the outputs need.
pub(super) struct Run {
    pub(super) method: Method,
    pub(super) djica: DjicaResult,
    pub(super) projected: Projected,
    pub(super) account: StudyAccount,
    /// W·K, R×D.
    pub(super) unmixing: DMatrix<f64>,
}

pub(super) fn run_once(
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
