//! `capelab.cape`: CAPE's privacy (c_S and δ under Theorem 1's and the full adversary view,
//! `cape::privacy`), one round of zero-sum noise draws and releases (`cape::simulation`, an ideal
//! secure sum), and the aggregator's estimator (`cape::estimator`).
//!
//! Sites are numbered 0..S in Python; the core's participant ids are index + 1.

use capelab_core::cape::privacy::{
    Collusion, PrivacyError, c_s_closed_form, c_s_full_view, c_s_paper_eq1,
    classical_noise_multiplier, release_privacy,
};
use capelab_core::cape::simulation::{Dropouts, SimSite, run_cape_round, run_conventional_round};
use capelab_core::cape::{CapeEstimator, IdealSecureSum, SiteNoise, SiteRelease, noise_format};
use numpy::PyReadonlyArray2;
use pyo3::prelude::*;
use serde_json::json;

use crate::common::{bad, detached, rows, to_py};

fn privacy_error(e: PrivacyError) -> PyErr {
    let argument = match &e {
        PrivacyError::TooFewSites { .. } => "sites",
        PrivacyError::TooManyColluders { .. } | PrivacyError::NoHonestSite { .. } => "colluders",
        PrivacyError::Epsilon(_) | PrivacyError::EpsilonNotAboveMean { .. } => "epsilon",
        PrivacyError::Delta(_) => "delta",
        PrivacyError::NoiseMultiplier(_)
        | PrivacyError::LossMean(_)
        | PrivacyError::NotPositiveDefinite => "noise_multiplier",
    };
    bad(argument, &e)
}

fn collusion(sites: usize, colluders: Option<usize>, beyond: bool) -> PyResult<Collusion> {
    let colluders = colluders.unwrap_or_else(|| Collusion::max_colluders(sites));
    if beyond {
        Collusion::beyond_trust_model(sites, colluders)
    } else {
        Collusion::new(sites, colluders)
    }
    .map_err(privacy_error)
}

/// c_S under one view: "full" (the guarantee), "theorem1" (the paper's, with the erratum) or
/// "paper_eq1" (eq. (1) as printed; `None` where undefined).
#[pyfunction]
pub fn cape_collusion_factor(
    sites: usize,
    colluders: Option<usize>,
    beyond_trust_model: bool,
    view: &str,
) -> PyResult<Option<f64>> {
    let c = collusion(sites, colluders, beyond_trust_model)?;
    match view {
        "full" => Ok(Some(c_s_full_view(&c))),
        "theorem1" => Ok(Some(c_s_closed_form(&c))),
        "paper_eq1" => Ok(c_s_paper_eq1(&c)),
        other => {
            Err(bad("view", format!("'{other}' is not one of 'full', 'theorem1', 'paper_eq1'")))
        }
    }
}

/// Theorem 1 for one release at noise multiplier z = τ/Δ and ε, under both views, with δ_conv
/// and δ_pool (`cape::privacy::release_privacy`).
#[pyfunction]
pub fn cape_release_privacy<'py>(
    py: Python<'py>,
    sites: usize,
    colluders: Option<usize>,
    beyond_trust_model: bool,
    noise_multiplier: f64,
    epsilon: f64,
) -> PyResult<Bound<'py, PyAny>> {
    let c = collusion(sites, colluders, beyond_trust_model)?;
    let r = release_privacy(&c, noise_multiplier, epsilon).map_err(privacy_error)?;
    let mut v = serde_json::to_value(&r).map_err(|e| bad("epsilon", e))?;
    v["within_trust_model"] = json!(c.within_trust_model());
    to_py(py, &v)
}

/// z = c(δ)/ε of the classical calibration τ = Δ·c(δ)/ε, as the papers use it at any ε.
#[pyfunction]
pub fn cape_classical_noise_multiplier(epsilon: f64, delta: f64) -> PyResult<f64> {
    classical_noise_multiplier(epsilon, delta).map_err(privacy_error)
}

fn id(index: usize) -> u32 {
    index as u32 + 1
}

fn index(id: u32) -> usize {
    id as usize - 1
}

fn check_sites(argument: &str, sites: &[usize], count: usize) -> PyResult<()> {
    match sites.iter().find(|&&s| s >= count) {
        Some(s) => Err(bad(argument, format!("site {s} does not exist (sites are 0..{count})"))),
        None => Ok(()),
    }
}

/// One CAPE round among the rows of `values` (site s holds row s), each site with local noise
/// τ_s = `local_sd[s]`, through an ideal secure sum, with sites that leave before their noise
/// enters the sum (`drop_before`) or after (`drop_after`, which breaks the zero sum).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn cape_round<'py>(
    py: Python<'py>,
    values: PyReadonlyArray2<'py, f64>,
    local_sd: Vec<f64>,
    seed: u64,
    round: u64,
    drop_before: Vec<usize>,
    drop_after: Vec<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let values = rows("values", &values)?;
    let count = values.len();
    if count < 2 {
        return Err(bad("values", format!("CAPE needs at least 2 sites (rows), got {count}")));
    }
    if local_sd.len() != count {
        return Err(bad("local_sd", format!("{} values for {count} sites", local_sd.len())));
    }
    if let Some(sd) = local_sd.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
        return Err(bad("local_sd", format!("τ = {sd} must be positive and finite")));
    }
    check_sites("drop_before", &drop_before, count)?;
    check_sites("drop_after", &drop_after, count)?;
    if drop_before.len() >= count {
        return Err(bad("drop_before", "every site left before the noise sum: nothing to run"));
    }
    let max_sd = local_sd.iter().copied().fold(0.0, f64::max);
    let format = noise_format(max_sd, count).map_err(|e| bad("local_sd", e))?;
    let sites: Vec<SimSite> = values
        .into_iter()
        .zip(&local_sd)
        .enumerate()
        .map(|(i, (value, &sd))| SimSite {
            id: id(i),
            value,
            noise: SiteNoise::Symmetric { local_sd: sd },
        })
        .collect();
    let dropouts = Dropouts {
        before_noise: drop_before.iter().map(|&s| id(s)).collect(),
        after_noise: drop_after.iter().map(|&s| id(s)).collect(),
    };
    let round = detached(py, || {
        run_cape_round(
            &sites,
            &format,
            &mut IdealSecureSum::new(),
            &CapeEstimator::Mean,
            &dropouts,
            seed,
            round,
        )
        .map_err(|e| bad("values", e))
    })?;
    let out = json!({
        "contributors": round.noise_sum.contributors.iter().map(|&c| index(c)).collect::<Vec<_>>(),
        "sites": round.traces.iter().map(|t| index(t.site)).collect::<Vec<_>>(),
        "quantised_noise": round.traces.iter().map(|t| &t.quantised_noise).collect::<Vec<_>>(),
        "zero_sum_noise": round.traces.iter().map(|t| &t.zero_sum_noise).collect::<Vec<_>>(),
        "releases": round.traces.iter().map(|t| t.release.as_ref().map(|r| &r.values)).collect::<Vec<_>>(),
        "estimate": round.estimate.as_ref().ok(),
        "refusal": round.estimate.as_ref().err().map(|e| e.to_string()),
        "frac_bits": format.frac_bits(),
        "bound": format.bound(),
    });
    to_py(py, &out)
}

/// The conventional baseline: every site releases its value plus N(0, τ_s²); the mean.
#[pyfunction]
pub fn cape_conventional_round<'py>(
    py: Python<'py>,
    values: PyReadonlyArray2<'py, f64>,
    local_sd: Vec<f64>,
    seed: u64,
    round: u64,
) -> PyResult<Bound<'py, PyAny>> {
    let values = rows("values", &values)?;
    if local_sd.len() != values.len() {
        return Err(bad(
            "local_sd",
            format!("{} values for {} sites", local_sd.len(), values.len()),
        ));
    }
    if values.is_empty() {
        return Err(bad("values", "no sites (rows)"));
    }
    let sites: Vec<(u32, Vec<f64>, f64)> =
        values.into_iter().zip(local_sd).enumerate().map(|(i, (v, sd))| (id(i), v, sd)).collect();
    let r = run_conventional_round(&sites, seed, round).map_err(|e| bad("local_sd", e))?;
    let out = json!({
        "releases": r.releases.iter().map(|r| &r.values).collect::<Vec<_>>(),
        "estimate": r.estimate,
    });
    to_py(py, &out)
}

/// Algorithm 2's aggregator: the mean of the releases if every contributor released, else the
/// refusal (a site whose noise is in the sum but whose release is missing breaks the zero sum).
#[pyfunction]
pub fn cape_estimate(
    releases: PyReadonlyArray2<'_, f64>,
    senders: Vec<usize>,
    contributors: Vec<usize>,
) -> PyResult<Vec<f64>> {
    let releases = rows("releases", &releases)?;
    if senders.len() != releases.len() {
        return Err(bad(
            "senders",
            format!("{} senders for {} releases (one per row)", senders.len(), releases.len()),
        ));
    }
    let mut sorted = contributors.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != contributors.len() {
        return Err(bad("contributors", "a site is listed twice"));
    }
    if let Some(s) = senders.iter().chain(&sorted).find(|&&s| s >= u32::MAX as usize) {
        return Err(bad("senders", format!("site {s} is not a valid site number")));
    }
    let releases: Vec<SiteRelease> = senders
        .iter()
        .zip(releases)
        .map(|(&s, values)| SiteRelease { site: id(s), values })
        .collect();
    let contributors: Vec<u32> = sorted.into_iter().map(id).collect();
    CapeEstimator::Mean.estimate(&contributors, &releases).map_err(|e| bad("releases", e))
}
