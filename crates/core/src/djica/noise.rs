/*!
The noise seam: where capePCA and capeDJICA get CAPE's zero-sum noise, and how a site adds its
share of noise to a release (spec §2, Algorithms 1 and 2).

The zero-sum part e_s (Algorithm 1) needs the sites to cooperate: ê_s is private to site s and
only the sum Σ ê_s may be revealed, which is what SecureAgg is for. The algorithms see one seam,
[`ZeroSumNoise`]; its implementation [`CapeZeroSumNoise`] runs Algorithm 1 through
[`crate::cape`], the same code path as the other studies (capeFM, the CAPE network, the mean):
each site draws and quantises ê_s ([`crate::cape::draw_noise`]), a [`SecureSum`] adds the
fixed-point shares, and each site splits the ring sum exactly
([`crate::cape::PendingRelease::zero_sum_noise`]), so Σ e_s is exactly 0.0. Simulations pass
[`IdealSecureSum`]; a SecureAgg round implementing [`SecureSum`] runs the same code.
*/

use crate::cape::{IdealSecureSum, SecureSum, SiteNoise, draw_noise, noise_format};
use crate::rng::{CapeRng, Seed};
use crate::wire::ParticipantId;
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
    /// A standard deviation is not a finite positive number.
    #[error("noise standard deviation {tau} for site {site} is not a finite positive number")]
    BadScale {
        /// The site index.
        site: usize,
        /// The offending value.
        tau: f64,
    },
    /// The protocol behind the seam (a site's CAPE step or the secure sum) failed.
    #[error("the zero-sum noise protocol failed: {0}")]
    Protocol(String),
}

/// A source of CAPE's zero-sum noise (Algorithm 1), one release at a time.
///
/// `draw(taus, len)` returns one vector of `len` entries per site present (`taus.len()` sites, in
/// site order). Site s's vector is e_s = ê_s − (1/|U|)·Σ_{s'∈U} ê_{s'} with ê_s ~ N(0, τ_s²) i.i.d.
/// per entry (quantised to the round's fixed-point grid), where U is the set of sites present, so
/// the vectors sum to exactly zero entrywise and Var(e_s) = (1 − 1/|U|)·τ_s² when all τ are equal.
///
/// Each call must use fresh randomness: reusing noise across iterations or across the W and b
/// releases is pitfall 3 of spec §8.
pub trait ZeroSumNoise {
    /// One zero-sum draw for a release of `len` entries.
    fn draw(&mut self, taus: &[f64], len: usize) -> Result<Vec<Vec<f64>>, NoiseError>;
}

/// Algorithm 1 through [`crate::cape`] over the secure sum `S`, for a fixed set of sites (ids
/// 1..=S). Every site's ê_s comes from that site's own generator (label `site/{s}/zero-sum`, s
/// from 0), so adding a site does not change the others' draws.
pub struct CapeZeroSumNoise<S: SecureSum> {
    secure_sum: S,
    site_rngs: Vec<CapeRng>,
}

impl CapeZeroSumNoise<IdealSecureSum> {
    /// A source for `sites` sites over the in-process ideal secure sum (simulations, the CLI).
    pub fn ideal(seed: Seed, sites: usize) -> Self {
        Self::new(IdealSecureSum::new(), seed, sites)
    }
}

impl<S: SecureSum> CapeZeroSumNoise<S> {
    /// A source for `sites` sites under the run seed `seed`, summing through `secure_sum`.
    pub fn new(secure_sum: S, seed: Seed, sites: usize) -> Self {
        CapeZeroSumNoise {
            secure_sum,
            site_rngs: (0..sites).map(|s| seed.rng(&format!("site/{s}/zero-sum"))).collect(),
        }
    }

    /// The number of sites served.
    pub fn sites(&self) -> usize {
        self.site_rngs.len()
    }
}

/// The participant id of site index `s` in the zero-sum rounds (1-based, as the other studies).
fn site_id(s: usize) -> ParticipantId {
    s as ParticipantId + 1
}

impl<S: SecureSum> ZeroSumNoise for CapeZeroSumNoise<S> {
    fn draw(&mut self, taus: &[f64], len: usize) -> Result<Vec<Vec<f64>>, NoiseError> {
        if taus.len() != self.site_rngs.len() {
            return Err(NoiseError::SiteCount { asked: taus.len(), serves: self.site_rngs.len() });
        }
        check_scales(taus)?;
        // One fixed-point format for the whole round, from public values (the τ's and S).
        let max_tau = taus.iter().copied().fold(0.0, f64::max);
        let format =
            noise_format(max_tau, taus.len()).map_err(|e| NoiseError::Protocol(e.to_string()))?;
        let mut shares = Vec::with_capacity(taus.len());
        let mut pending = Vec::with_capacity(taus.len());
        for (s, (&tau, rng)) in taus.iter().zip(self.site_rngs.iter_mut()).enumerate() {
            let noise = SiteNoise::Symmetric { local_sd: tau };
            let (share, state) = draw_noise(site_id(s), &noise, &format, len, rng)
                .map_err(|e| NoiseError::Protocol(format!("site {}: {e}", site_id(s))))?;
            shares.push(share);
            pending.push(state);
        }
        let sum = self
            .secure_sum
            .sum(&shares)
            .map_err(|e| NoiseError::Protocol(format!("secure sum: {e}")))?;
        pending
            .iter()
            .map(|state| {
                state
                    .zero_sum_noise(&sum)
                    .map_err(|e| NoiseError::Protocol(format!("site {}: {e}", state.site())))
            })
            .collect()
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

fn check_scales(taus: &[f64]) -> Result<(), NoiseError> {
    for (site, &tau) in taus.iter().enumerate() {
        if !(tau.is_finite() && tau > 0.0) {
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
    fn cape_noise_sums_to_exactly_zero_and_has_the_algorithm_1_variance() {
        let sites = 4;
        let tau = 2.0;
        let mut source = CapeZeroSumNoise::ideal(Seed::Fixed(3), sites);
        let n = 20_000;
        let draws = source.draw(&[tau; 4], n).unwrap();
        for k in 0..n {
            let sum: f64 = draws.iter().map(|d| d[k]).sum();
            assert_eq!(sum, 0.0, "entry {k}: the fixed-point split is exact");
        }
        // Var(e_s) = (1 − 1/S)τ² = 3; the sample variance of 20,000 normals has relative
        // standard error sqrt(2/n) = 1%, so 5% is a 5-sigma tolerance. (Quantisation to 2^-32
        // changes the variance by ~1e-20.)
        let expected = (1.0 - 1.0 / sites as f64) * tau * tau;
        for d in &draws {
            let var = d.iter().map(|v| v * v).sum::<f64>() / n as f64;
            assert!((var / expected - 1.0).abs() < 0.05, "variance {var}");
        }
    }

    #[test]
    fn successive_draws_are_fresh() {
        let mut source = CapeZeroSumNoise::ideal(Seed::Fixed(8), 3);
        let a = source.draw(&[1.0; 3], 16).unwrap();
        let b = source.draw(&[1.0; 3], 16).unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn cape_site_noise_has_total_variance_tau_squared() {
        let sites = 4;
        let tau = 1.5;
        let n = 20_000;
        let mut source = CapeZeroSumNoise::ideal(Seed::Fixed(4), sites);
        let draws = source.draw(&[tau; 4], n).unwrap();
        let mut rng = Seed::Fixed(5).rng("local");
        let noise = site_noise(NoiseScheme::Cape, Some(&draws[0]), tau, sites, n, &mut rng);
        let var = noise.iter().map(|v| v * v).sum::<f64>() / n as f64;
        assert!((var / (tau * tau) - 1.0).abs() < 0.05, "variance {var}");
    }

    #[test]
    fn wrong_site_count_and_bad_scales_are_errors() {
        let mut source = CapeZeroSumNoise::ideal(Seed::Fixed(1), 3);
        assert_eq!(source.draw(&[1.0; 4], 2), Err(NoiseError::SiteCount { asked: 4, serves: 3 }));
        assert!(matches!(
            source.draw(&[1.0, f64::NAN, 1.0], 2),
            Err(NoiseError::BadScale { site: 1, .. })
        ));
        assert!(matches!(
            source.draw(&[1.0, 0.0, 1.0], 2),
            Err(NoiseError::BadScale { site: 1, .. })
        ));
    }

    #[test]
    fn a_secure_sum_that_refuses_is_a_protocol_error() {
        let mut source =
            CapeZeroSumNoise::new(IdealSecureSum::with_threshold(5), Seed::Fixed(1), 4);
        assert!(matches!(source.draw(&[1.0; 4], 2), Err(NoiseError::Protocol(_))));
    }
}
