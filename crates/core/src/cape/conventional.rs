/*!
The conventional decentralized scheme, CAPE's baseline (spec §2 Proposition 1; cape-fm §1.2).

Each site releases â_s = f(x_s) + n_s with independent n_s ~ N(0, τ_s²); the aggregator averages.
τ_conv² = (1/S²)Στ_s², S times the CAPE variance with the same local noise. No secure sum and no
zero sum, so a dropout only shrinks the average.
*/

use rand_distr::{Distribution, StandardNormal};

use crate::rng::CapeRng;
use crate::wire::ParticipantId;

use super::error::{EstimateError, SiteError};
use super::estimator::check_releases;
use super::site::SiteRelease;

/// One site's conventional release â_s = f(x_s) + N(0, `local_sd`²) per coordinate.
pub fn conventional_release(
    site: ParticipantId,
    value: &[f64],
    local_sd: f64,
    rng: &mut CapeRng,
) -> Result<SiteRelease, SiteError> {
    if !(local_sd.is_finite() && local_sd > 0.0) {
        return Err(SiteError::InvalidSd { what: "local noise τ_s", value: local_sd });
    }
    if let Some((index, &value)) = value.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(SiteError::NotFinite { index, value });
    }
    let values = value
        .iter()
        .map(|f| {
            let z: f64 = StandardNormal.sample(rng);
            f + local_sd * z
        })
        .collect();
    Ok(SiteRelease { site, values })
}

/// a_conv = (1/S)Σâ_s over the sites that released.
pub fn conventional_estimate(releases: &[SiteRelease]) -> Result<Vec<f64>, EstimateError> {
    let len = check_releases(releases)?;
    let share = 1.0 / releases.len() as f64;
    let mut estimate = vec![0.0; len];
    for release in releases {
        for (a, v) in estimate.iter_mut().zip(&release.values) {
            *a += share * v;
        }
    }
    Ok(estimate)
}
