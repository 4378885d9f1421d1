/*!
Algorithm 2, site side (spec §2; Section III-C for weighted rounds).

Call order, per site and round:
1. [`draw_noise`]: draw ê_s, encode it for the secure sum, keep the *quantised* value (spec §3,
   §8 pitfall 3). The [`NoiseShare`] goes into the secure sum (SecureAgg); the [`PendingRelease`]
   stays at the site.
2. When the [`NoiseSum`] over the set U comes back: [`PendingRelease::release`] sets
   e_s = ê_s − (1/|U|)Σê exactly ([`super::zero_sum`]), draws g_s ~ N(0, τ_s²/|U|) and returns
   â_s = f(x_s) + e_s + g_s. |U| is the number of sites whose noise entered the sum, never the
   planned S (Remark 4).

In a weighted round (Section III-C) the site encodes μ_s·S·ê_s, sets
e_s = ê_s − (1/(μ_s S))Σμ_iê_i and draws g_s ~ N(0, τ_gs²); the plan fixes S and U must equal it.
*/

use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use crate::fixed::FixedPoint;
use crate::rng::CapeRng;
use crate::wire::ParticipantId;

use super::error::SiteError;
use super::secure_sum::{NoiseShare, NoiseSum};
use super::zero_sum;

/// How a site draws its noise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SiteNoise {
    /// Algorithm 2: ê_s ~ N(0, τ_s²) and g_s ~ N(0, τ_s²/|U|); the aggregate is the plain mean.
    /// `local_sd` is τ_s, the noise the site's message must carry (e.g. Δ_s·c(δ)/ε).
    Symmetric { local_sd: f64 },
    /// Section III-C: ê_s ~ N(0, σ_s²) and g_s ~ N(0, τ_gs²) with weight μ_s among the `planned`
    /// sites (sorted). Build it with [`super::AsymmetricPlan::site_noise`].
    Weighted { noise_sd: f64, correction_sd: f64, weight: f64, planned: Vec<ParticipantId> },
}

impl SiteNoise {
    fn validate(&self, site: ParticipantId) -> Result<(), SiteError> {
        let positive = |what, value: f64| {
            if value.is_finite() && value > 0.0 {
                Ok(())
            } else {
                Err(SiteError::InvalidSd { what, value })
            }
        };
        match self {
            SiteNoise::Symmetric { local_sd } => positive("local noise τ_s", *local_sd),
            SiteNoise::Weighted { noise_sd, correction_sd, weight, planned } => {
                positive("zero-sum noise σ_s", *noise_sd)?;
                positive("independent noise τ_gs", *correction_sd)?;
                if !(*weight > 0.0 && *weight <= 1.0) {
                    return Err(SiteError::InvalidWeight { weight: *weight });
                }
                if planned.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(SiteError::MalformedPlan { planned: planned.clone() });
                }
                if !planned.contains(&site) {
                    return Err(SiteError::NotPlanned { site, planned: planned.clone() });
                }
                Ok(())
            }
        }
    }

    /// The standard deviation of ê_s.
    fn noise_sd(&self) -> f64 {
        match self {
            SiteNoise::Symmetric { local_sd } => *local_sd,
            SiteNoise::Weighted { noise_sd, .. } => *noise_sd,
        }
    }

    /// c_s, the factor the site's ê_s is multiplied by before encoding: 1, or μ_s·S so that the
    /// secure sum is S·Σμ_iê_i.
    fn encoding_factor(&self) -> f64 {
        match self {
            SiteNoise::Symmetric { .. } => 1.0,
            SiteNoise::Weighted { weight, planned, .. } => weight * planned.len() as f64,
        }
    }

    /// The standard deviation of what the site puts into the secure sum, for [`super::noise_format`].
    pub fn encoded_sd(&self) -> f64 {
        self.encoding_factor() * self.noise_sd()
    }
}

/// A site's message to the aggregator: â_s, one value per coordinate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SiteRelease {
    pub site: ParticipantId,
    pub values: Vec<f64>,
}

/// What a site keeps between sending its noise share and releasing: its quantised noise.
#[derive(Clone, Debug)]
pub struct PendingRelease {
    site: ParticipantId,
    noise: SiteNoise,
    format: FixedPoint,
    /// The encoded noise k_s = c_s·ê_s·2^l as integers, exactly what entered the sum.
    encoded: Vec<i64>,
    released: bool,
}

/// Algorithm 1 step 1 (and Section III-C step 1): draws `len` coordinates of ê_s, encodes them with
/// `format` (shared by the whole round, see [`super::noise_format`]).
///
/// Returns the share for the secure sum and the state to release from.
pub fn draw_noise(
    site: ParticipantId,
    noise: &SiteNoise,
    format: &FixedPoint,
    len: usize,
    rng: &mut CapeRng,
) -> Result<(NoiseShare, PendingRelease), SiteError> {
    noise.validate(site)?;
    let scale = noise.encoding_factor() * noise.noise_sd();
    let draws: Vec<f64> = (0..len)
        .map(|_| {
            let z: f64 = StandardNormal.sample(rng);
            scale * z
        })
        .collect();
    let (ring, _) = format.encode(&draws, rng)?;
    let encoded = ring.iter().map(|&v| v as i64).collect();
    let pending =
        PendingRelease { site, noise: noise.clone(), format: *format, encoded, released: false };
    Ok((NoiseShare { site, ring }, pending))
}

impl PendingRelease {
    pub fn site(&self) -> ParticipantId {
        self.site
    }

    pub fn len(&self) -> usize {
        self.encoded.len()
    }

    pub fn is_empty(&self) -> bool {
        self.encoded.is_empty()
    }

    /// The site's ê_s as quantised for the secure sum (remap(map(c_s·ê_s))/c_s): the value the
    /// zero-sum step subtracts from.
    pub fn quantised_noise(&self) -> Vec<f64> {
        let grid = self.grid();
        self.encoded.iter().map(|&k| k as f64 * grid).collect()
    }

    /// 2^−l / c_s: one integer unit of the encoding, as a value of ê_s.
    fn grid(&self) -> f64 {
        self.format.resolution() / self.noise.encoding_factor()
    }

    /// Algorithm 1 step 3: e_s from the sum over U, exact as described in [`super::zero_sum`].
    /// In a symmetric round Σ_{s∈U} e_s is exactly 0.0; in a weighted one Σμ_s e_s is 0 up to
    /// one rounding per site.
    pub fn zero_sum_noise(&self, sum: &NoiseSum) -> Result<Vec<f64>, SiteError> {
        let rank = self.check_sum(sum)?;
        let n = sum.contributors.len();
        let residuals = zero_sum::residuals(&self.format, &self.encoded, &sum.ring_sum, rank, n)?;
        let grid = self.grid();
        Ok(residuals.into_iter().map(|d| d as f64 * grid).collect())
    }

    /// Algorithm 2 steps 1–2: â_s = f(x_s) + e_s + g_s for the local value `value` (one entry per
    /// noise coordinate). g_s ~ N(0, τ_s²/|U|) in a symmetric round, N(0, τ_gs²) in a weighted one.
    ///
    /// A site releases at most once per noise draw. If this returns an error nothing was released
    /// and it may be called again with corrected input.
    pub fn release(
        &mut self,
        sum: &NoiseSum,
        value: &[f64],
        rng: &mut CapeRng,
    ) -> Result<SiteRelease, SiteError> {
        if self.released {
            return Err(SiteError::AlreadyReleased { site: self.site });
        }
        if value.len() != self.encoded.len() {
            return Err(SiteError::LengthMismatch {
                what: "the local value",
                expected: self.encoded.len(),
                got: value.len(),
            });
        }
        if let Some((index, &value)) = value.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(SiteError::NotFinite { index, value });
        }
        let zero_sum = self.zero_sum_noise(sum)?;
        let correction_sd = match &self.noise {
            SiteNoise::Symmetric { local_sd } => local_sd / (sum.contributors.len() as f64).sqrt(),
            SiteNoise::Weighted { correction_sd, .. } => *correction_sd,
        };
        let values = value
            .iter()
            .zip(&zero_sum)
            .map(|(f, e)| {
                let g: f64 = StandardNormal.sample(rng);
                f + e + correction_sd * g
            })
            .collect();
        self.released = true;
        Ok(SiteRelease { site: self.site, values })
    }

    /// Validates the sum and returns this site's rank in U.
    fn check_sum(&self, sum: &NoiseSum) -> Result<usize, SiteError> {
        let contributors = &sum.contributors;
        if contributors.is_empty() {
            return Err(SiteError::MalformedNoiseSum { reason: "no contributors".into() });
        }
        if contributors.windows(2).any(|w| w[0] >= w[1]) {
            return Err(SiteError::MalformedNoiseSum {
                reason: format!("contributors {contributors:?} are not sorted and distinct"),
            });
        }
        if sum.ring_sum.len() != self.encoded.len() {
            return Err(SiteError::LengthMismatch {
                what: "the noise sum",
                expected: self.encoded.len(),
                got: sum.ring_sum.len(),
            });
        }
        let Ok(rank) = contributors.binary_search(&self.site) else {
            return Err(SiteError::NotInNoiseSum {
                site: self.site,
                contributors: contributors.clone(),
            });
        };
        if let SiteNoise::Weighted { planned, .. } = &self.noise
            && planned != contributors
        {
            return Err(SiteError::WeightedRoundChanged {
                planned: planned.clone(),
                contributors: contributors.clone(),
            });
        }
        if !zero_sum::is_exact(&self.format, contributors.len()) {
            return Err(SiteError::NotExact {
                parties: contributors.len(),
                frac_bits: self.format.frac_bits(),
                bound: self.format.bound(),
            });
        }
        Ok(rank)
    }
}
