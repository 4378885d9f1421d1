/*!
The noise seam: where capePCA and capeDJICA get CAPE's zero-sum noise, and how a site adds its
share of noise to a release (spec §2, Algorithms 1 and 2).

The zero-sum part e_s (Algorithm 1) needs the sites to cooperate: ê_s is private to site s and
only the sum Σ ê_s may be revealed, which is what SecureAgg is for. This module defines the one
seam the algorithms need, [`ZeroSumNoise`], and an in-process implementation,
[`IdealZeroSumNoise`], that draws exactly the distribution Algorithm 1 produces. The lead backs
the seam with the real SecureAgg protocol at merge; the algorithms do not change.

Merge note: this seam belongs with `crate::cape` (the CAPE module written in parallel); it lives
here until then.
*/

use crate::rng::{CapeRng, Seed};
use rand::RngExt;
use rand_distr::StandardNormal;
use thiserror::Error;

/// Why zero-sum noise could not be produced.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum NoiseError {
    /// The caller asked for noise for a different number of sites than the source serves.
    #[error(
        "zero-sum noise was asked for {asked} sites but this source serves {serves}: build it for the sites present"
    )]
    SiteCount {
        /// Sites asked for.
        asked: usize,
        /// Sites the source was built for.
        serves: usize,
    },
    /// A standard deviation is negative or not finite.
    #[error("noise standard deviation {tau} for site {site} is not a finite non-negative number")]
    BadScale {
        /// The site index.
        site: usize,
        /// The offending value.
        tau: f64,
    },
    /// The protocol behind the seam (SecureAgg) failed, e.g. too many dropouts.
    #[error("the zero-sum noise protocol failed: {0}")]
    Protocol(String),
}

/// A source of CAPE's zero-sum noise (Algorithm 1), one release at a time.
///
/// `draw(taus, len)` returns one vector of `len` entries per site present (`taus.len()` sites, in
/// site order). Site s's vector is e_s = ê_s − (1/|U|)·Σ_{s'∈U} ê_{s'} with ê_s ~ N(0, τ_s²) i.i.d.
/// per entry, where U is the set of sites present, so the vectors sum to zero entrywise (up to
/// rounding in the ideal source, exactly after quantisation in SecureAgg) and
/// Var(e_s) = (1 − 1/|U|)·τ_s² when all τ are equal.
///
/// Each call must use fresh randomness: reusing noise across iterations or across the W and b
/// releases is pitfall 3 of spec §8.
pub trait ZeroSumNoise {
    /// One zero-sum draw for a release of `len` entries.
    fn draw(&mut self, taus: &[f64], len: usize) -> Result<Vec<Vec<f64>>, NoiseError>;
}

/// Algorithm 1 computed in one process: every site's ê_s comes from that site's own generator
/// (so adding a site does not change the others' draws) and the mean is subtracted directly.
/// The distribution is exactly Algorithm 1's; what it lacks is the privacy of ê_s from the
/// other sites, which SecureAgg provides.
pub struct IdealZeroSumNoise {
    site_rngs: Vec<CapeRng>,
}

impl IdealZeroSumNoise {
    /// A source for `sites` sites under the run seed `seed` (labels `site/{s}/zero-sum`).
    pub fn new(seed: Seed, sites: usize) -> Self {
        IdealZeroSumNoise {
            site_rngs: (0..sites).map(|s| seed.rng(&format!("site/{s}/zero-sum"))).collect(),
        }
    }
}

impl ZeroSumNoise for IdealZeroSumNoise {
    fn draw(&mut self, taus: &[f64], len: usize) -> Result<Vec<Vec<f64>>, NoiseError> {
        if taus.len() != self.site_rngs.len() {
            return Err(NoiseError::SiteCount { asked: taus.len(), serves: self.site_rngs.len() });
        }
        check_scales(taus)?;
        let mut draws: Vec<Vec<f64>> = taus
            .iter()
            .zip(self.site_rngs.iter_mut())
            .map(|(&tau, rng)| gaussian_vec(rng, tau, len))
            .collect();
        let sites = draws.len() as f64;
        for k in 0..len {
            let mean = draws.iter().map(|d| d[k]).sum::<f64>() / sites;
            for d in draws.iter_mut() {
                d[k] -= mean;
            }
        }
        Ok(draws)
    }
}

/// `len` i.i.d. N(0, τ²) values.
pub fn gaussian_vec(rng: &mut CapeRng, tau: f64, len: usize) -> Vec<f64> {
    (0..len).map(|_| tau * rng.sample::<f64, _>(StandardNormal)).collect()
}

/// Adds i.i.d. N(0, τ²) to every entry of `values`.
pub fn add_gaussian(rng: &mut CapeRng, tau: f64, values: &mut [f64]) {
    if tau == 0.0 {
        return;
    }
    for v in values.iter_mut() {
        *v += tau * rng.sample::<f64, _>(StandardNormal);
    }
}

pub(crate) fn check_scales(taus: &[f64]) -> Result<(), NoiseError> {
    for (site, &tau) in taus.iter().enumerate() {
        if !(tau.is_finite() && tau >= 0.0) {
            return Err(NoiseError::BadScale { site, tau });
        }
    }
    Ok(())
}

/// How a decentralized release is protected: the noise each site adds, and what the
/// aggregator's average then carries (spec §2, §6 baselines).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseScheme {
    /// No noise.
    None,
    /// CAPE (Algorithm 2): site s adds e_s (zero-sum, variance (1 − 1/S)τ_s²) plus a local
    /// g_s ~ N(0, τ_s²/S). Each release carries τ_s² in total; the average carries only the
    /// g_s, (1/S²)·Σ τ_s²/S.
    Cape,
    /// Conventional distributed DP: site s adds N(0, τ_s²) and the average carries
    /// (1/S²)·Σ τ_s², S times CAPE's variance (Proposition 1).
    Conventional,
}

/// Site s's share of the noise for one release under `scheme`: the vector to add to its value.
/// `zero_sum` is e_s from a [`ZeroSumNoise`] draw (ignored unless `scheme` is CAPE), `tau` is
/// τ_s, `sites` the number of sites present |U| (the "S" of τ_g² = τ_s²/S, spec §2 Remark 4).
pub fn site_noise(
    scheme: NoiseScheme,
    zero_sum: Option<&[f64]>,
    tau: f64,
    sites: usize,
    len: usize,
    local_rng: &mut CapeRng,
) -> Vec<f64> {
    match scheme {
        NoiseScheme::None => vec![0.0; len],
        NoiseScheme::Conventional => gaussian_vec(local_rng, tau, len),
        NoiseScheme::Cape => {
            let mut noise = gaussian_vec(local_rng, tau / (sites as f64).sqrt(), len);
            if let Some(e) = zero_sum {
                for (n, e) in noise.iter_mut().zip(e) {
                    *n += e;
                }
            }
            noise
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ideal_noise_sums_to_zero_and_has_the_algorithm_1_variance() {
        let sites = 4;
        let tau = 2.0;
        let mut source = IdealZeroSumNoise::new(Seed::Fixed(3), sites);
        let n = 20_000;
        let draws = source.draw(&[tau; 4], n).unwrap();
        for k in 0..n {
            let sum: f64 = draws.iter().map(|d| d[k]).sum();
            assert!(sum.abs() < 1e-12, "entry {k} sums to {sum}");
        }
        // Var(e_s) = (1 − 1/S)τ² = 3; the sample variance of 20,000 normals has relative
        // standard error sqrt(2/n) = 1%, so 5% is a 5-sigma tolerance.
        let expected = (1.0 - 1.0 / sites as f64) * tau * tau;
        for d in &draws {
            let var = d.iter().map(|v| v * v).sum::<f64>() / n as f64;
            assert!((var / expected - 1.0).abs() < 0.05, "variance {var}");
        }
    }

    #[test]
    fn cape_site_noise_has_total_variance_tau_squared() {
        let sites = 4;
        let tau = 1.5;
        let n = 20_000;
        let mut source = IdealZeroSumNoise::new(Seed::Fixed(4), sites);
        let draws = source.draw(&[tau; 4], n).unwrap();
        let mut rng = Seed::Fixed(5).rng("local");
        let noise = site_noise(NoiseScheme::Cape, Some(&draws[0]), tau, sites, n, &mut rng);
        let var = noise.iter().map(|v| v * v).sum::<f64>() / n as f64;
        assert!((var / (tau * tau) - 1.0).abs() < 0.05, "variance {var}");
    }

    #[test]
    fn wrong_site_count_is_an_error() {
        let mut source = IdealZeroSumNoise::new(Seed::Fixed(1), 3);
        assert_eq!(source.draw(&[1.0; 4], 2), Err(NoiseError::SiteCount { asked: 4, serves: 3 }));
        assert!(matches!(
            source.draw(&[1.0, f64::NAN, 1.0], 2),
            Err(NoiseError::BadScale { site: 1, .. })
        ));
    }
}
