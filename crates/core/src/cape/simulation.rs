/*!
One CAPE round, or one conventional round, run in process: every site's steps, a [`SecureSum`]
and the aggregator, with scripted dropouts (spec §2 Algorithms 1–2, Remark 4). For Monte Carlo
tests, simulations and the CLI; a deployment drives [`super::site`] and [`super::estimator`] over
the network instead.

Each site draws from its own generator `derive(seed, "cape/round/{round}/site/{id}")`, so adding a
site or a dropout never changes another site's numbers.
*/

use crate::fixed::FixedPoint;
use crate::rng::{CapeRng, derive};
use crate::wire::ParticipantId;

use super::conventional::{conventional_estimate, conventional_release};
use super::error::{EstimateError, SiteError};
use super::estimator::CapeEstimator;
use super::secure_sum::{NoiseSum, SecureSum};
use super::site::{SiteNoise, SiteRelease, draw_noise};

/// A simulated site: its id, its local value f(x_s) and how it draws noise.
#[derive(Clone, Debug, PartialEq)]
pub struct SimSite {
    pub id: ParticipantId,
    pub value: Vec<f64>,
    pub noise: SiteNoise,
}

/// Who leaves the round, and when.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dropouts {
    /// Gone before sending noise: not in U, the round goes on with |U| sites.
    pub before_noise: Vec<ParticipantId>,
    /// Gone after their noise entered the sum, before releasing: breaks the zero sum.
    pub after_noise: Vec<ParticipantId>,
}

/// What one site did in a simulated round (for checking the protocol's internals).
#[derive(Clone, Debug, PartialEq)]
pub struct SiteTrace {
    pub site: ParticipantId,
    /// ê_s as quantised for the secure sum.
    pub quantised_noise: Vec<f64>,
    /// e_s from Algorithm 1.
    pub zero_sum_noise: Vec<f64>,
    /// â_s, or `None` for a site that dropped out after its noise entered the sum.
    pub release: Option<SiteRelease>,
}

/// The outcome of a simulated CAPE round.
#[derive(Clone, Debug, PartialEq)]
pub struct CapeRound {
    pub noise_sum: NoiseSum,
    /// One trace per site in U, in the order of U.
    pub traces: Vec<SiteTrace>,
    /// The aggregator's answer: the estimate, or its refusal (e.g. a broken zero sum).
    pub estimate: Result<Vec<f64>, EstimateError>,
}

impl CapeRound {
    pub fn releases(&self) -> Vec<SiteRelease> {
        self.traces.iter().filter_map(|t| t.release.clone()).collect()
    }
}

/// Why a simulated round could not finish (the aggregator's refusal is not one of these: it is
/// part of [`CapeRound::estimate`]).
#[derive(Debug, thiserror::Error)]
pub enum SimulationError<E: std::error::Error> {
    #[error("site {site}: {source}")]
    Site { site: ParticipantId, source: SiteError },
    #[error("secure sum: {0}")]
    SecureSum(E),
    #[error("aggregator: {0}")]
    Estimate(EstimateError),
}

fn site_rng(seed: u64, round: u64, site: ParticipantId) -> CapeRng {
    derive(seed, &format!("cape/round/{round}/site/{site}"))
}

/// Runs Algorithms 1 and 2 for `sites` with the shared noise `format`, the secure sum
/// `secure_sum` and the aggregator `estimator`.
pub fn run_cape_round<S: SecureSum>(
    sites: &[SimSite],
    format: &FixedPoint,
    secure_sum: &mut S,
    estimator: &CapeEstimator,
    dropouts: &Dropouts,
    seed: u64,
    round: u64,
) -> Result<CapeRound, SimulationError<S::Error>> {
    let mut shares = Vec::new();
    let mut pending = Vec::new();
    for site in sites.iter().filter(|s| !dropouts.before_noise.contains(&s.id)) {
        let mut rng = site_rng(seed, round, site.id);
        let (share, state) = draw_noise(site.id, &site.noise, format, site.value.len(), &mut rng)
            .map_err(|source| SimulationError::Site { site: site.id, source })?;
        shares.push(share);
        pending.push((site, state, rng));
    }
    let noise_sum = secure_sum.sum(&shares).map_err(SimulationError::SecureSum)?;
    let mut traces = Vec::new();
    for (site, mut state, mut rng) in pending {
        let fail = |source| SimulationError::Site { site: site.id, source };
        let zero_sum_noise = state.zero_sum_noise(&noise_sum).map_err(fail)?;
        let release = if dropouts.after_noise.contains(&site.id) {
            None
        } else {
            Some(state.release(&noise_sum, &site.value, &mut rng).map_err(fail)?)
        };
        traces.push(SiteTrace {
            site: site.id,
            quantised_noise: state.quantised_noise(),
            zero_sum_noise,
            release,
        });
    }
    traces.sort_by_key(|t| t.site);
    let releases: Vec<SiteRelease> = traces.iter().filter_map(|t| t.release.clone()).collect();
    let estimate = estimator.estimate(&noise_sum.contributors, &releases);
    Ok(CapeRound { noise_sum, traces, estimate })
}

/// The outcome of a simulated conventional round.
#[derive(Clone, Debug, PartialEq)]
pub struct ConventionalRound {
    pub releases: Vec<SiteRelease>,
    pub estimate: Vec<f64>,
}

/// The baseline: each site of `sites` (id, value, τ_s) releases f(x_s) + N(0, τ_s²); the mean.
pub fn run_conventional_round(
    sites: &[(ParticipantId, Vec<f64>, f64)],
    seed: u64,
    round: u64,
) -> Result<ConventionalRound, SimulationError<std::convert::Infallible>> {
    let mut releases = Vec::with_capacity(sites.len());
    for (id, value, local_sd) in sites {
        let mut rng = derive(seed, &format!("conventional/round/{round}/site/{id}"));
        let release = conventional_release(*id, value, *local_sd, &mut rng)
            .map_err(|source| SimulationError::Site { site: *id, source })?;
        releases.push(release);
    }
    let estimate = conventional_estimate(&releases).map_err(SimulationError::Estimate)?;
    Ok(ConventionalRound { releases, estimate })
}
