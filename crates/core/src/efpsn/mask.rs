//! The numbers of Phase 1 (spec efpsn-vertical-dpvi §A2, Alg. 1): the noise law σ_k², the integer
//! noise z_ijk = ⌊10^{P_prec}·η_ijk⌋ an agent sends each neighbour (encrypted), and the mask
//! η̄_ik = 10^{−P_prec}·(Σ_j z_ijk − Σ_j z_jik).
//!
//! Both sides are floored (spec [choice]): each z_ijk is added at i and subtracted at j, so
//! Σ_i η̄_ik = 0 exactly, in integers, whatever P_prec. The paper's form subtracts the received
//! integers from the unrounded sent reals and is zero-sum only as P_prec → ∞.

use rand_core::Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use super::EfpsnError;

/// The largest |z| an agent sends: sums of many stay far inside i64 and inside a Paillier
/// plaintext's centred range.
pub const MAX_NOISE_INTEGER: i64 = 1 << 52;

/// σ_k² = γ/(k + 1)^p for k = 0..N_b − 1, drawn in units of 10^{−P_prec}.
///
/// The paper writes σ_k² = γ/k^p with k from 0, where σ_0 is undefined (spec §D pitfall 5);
/// capelab indexes the decay from 1.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoiseLaw {
    pub gamma: f64,
    /// The decay exponent p.
    pub decay: f64,
    /// P_prec: decimal digits kept when the noise is made an integer.
    pub precision: u32,
}

impl NoiseLaw {
    pub fn check(&self) -> Result<(), EfpsnError> {
        if !(self.gamma > 0.0 && self.gamma.is_finite()) {
            return Err(EfpsnError::Parameter(format!(
                "γ = {}: the noise scale must be positive and finite",
                self.gamma
            )));
        }
        if !(self.decay >= 0.0 && self.decay.is_finite()) {
            return Err(EfpsnError::Parameter(format!(
                "p = {}: the decay must be ≥ 0",
                self.decay
            )));
        }
        if self.precision > 12 {
            return Err(EfpsnError::Parameter(format!(
                "P_prec = {}: at most 12 decimal digits fit the integer noise",
                self.precision
            )));
        }
        // 12 standard deviations of the largest σ must fit.
        let widest = 12.0 * self.gamma.sqrt() * self.scale();
        if widest >= MAX_NOISE_INTEGER as f64 {
            return Err(EfpsnError::Parameter(format!(
                "γ = {} with P_prec = {}: the integer noise would not fit in 2^52; lower P_prec",
                self.gamma, self.precision
            )));
        }
        Ok(())
    }

    pub fn sigma(&self, k: usize) -> f64 {
        (self.gamma / ((k + 1) as f64).powf(self.decay)).sqrt()
    }

    /// 10^{P_prec}.
    pub fn scale(&self) -> f64 {
        10f64.powi(self.precision as i32)
    }

    /// z_k = ⌊10^{P_prec}·η_k⌋ with η_k ~ N(0, σ_k²), k = 0..n_b − 1.
    pub fn draw_integers<R: Rng + ?Sized>(&self, n_b: usize, rng: &mut R) -> Vec<i64> {
        (0..n_b)
            .map(|k| {
                let eta: f64 = StandardNormal.sample(rng);
                let z = (eta * self.sigma(k) * self.scale()).floor();
                z.clamp(-(MAX_NOISE_INTEGER as f64), MAX_NOISE_INTEGER as f64) as i64
            })
            .collect()
    }

    /// The non-zero-sum functional perturbation of the baseline (Nozari et al.; spec §A4): each
    /// agent draws its own coefficients, with the same variance its EFPSN mask would have,
    /// 2·d_i·σ_k² (eq. 10: the diagonal of 2σ_k²·𝓛), so only the zero sum differs.
    pub fn draw_independent<R: Rng + ?Sized>(
        &self,
        n_b: usize,
        degree: usize,
        rng: &mut R,
    ) -> Vec<f64> {
        (0..n_b)
            .map(|k| {
                let eta: f64 = StandardNormal.sample(rng);
                eta * self.sigma(k) * (2.0 * degree as f64).sqrt()
            })
            .collect()
    }
}

/// An agent's mask η̄_i, kept as the integers 10^{P_prec}·η̄_ik so that sums are exact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mask {
    pub numerators: Vec<i64>,
    pub precision: u32,
}

impl Mask {
    /// The mask of a noise-free run.
    pub fn zero(n_b: usize, precision: u32) -> Self {
        Mask { numerators: vec![0; n_b], precision }
    }

    /// η̄_ik·10^{P_prec} = Σ_j z_ijk − D_ik, from what agent i sent each neighbour and the
    /// decrypted sum D_ik of what it received.
    pub fn from_exchange(
        sent: &[Vec<i64>],
        received_sums: &[i64],
        precision: u32,
    ) -> Result<Self, EfpsnError> {
        let n_b = received_sums.len();
        let mut numerators = Vec::with_capacity(n_b);
        for (k, &d) in received_sums.iter().enumerate() {
            let mut total: i64 = 0;
            for row in sent {
                let z = *row.get(k).ok_or_else(|| {
                    EfpsnError::Protocol(format!(
                        "noise vector of {} values, expected {n_b}",
                        row.len()
                    ))
                })?;
                total = total.checked_add(z).ok_or(EfpsnError::Overflow)?;
            }
            numerators.push(total.checked_sub(d).ok_or(EfpsnError::Overflow)?);
        }
        Ok(Mask { numerators, precision })
    }

    /// The coefficients η̄_ik as reals.
    pub fn coefficients(&self) -> Vec<f64> {
        let scale = 10f64.powi(self.precision as i32);
        self.numerators.iter().map(|&z| z as f64 / scale).collect()
    }

    /// Σ_i of the agents' numerators, per k: all zero for EFPSN's masks.
    pub fn residual(masks: &[Mask]) -> Vec<i128> {
        let n_b = masks.first().map_or(0, |m| m.numerators.len());
        (0..n_b).map(|k| masks.iter().map(|m| m.numerators[k] as i128).sum()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::efpsn::graph::{Graph, Topology};
    use crate::rng::derive;

    fn law(gamma: f64) -> NoiseLaw {
        NoiseLaw { gamma, decay: 1.0, precision: 6 }
    }

    /// Phase 1 without the encryption (which only carries the integers): the masks sum to zero
    /// exactly, and their covariance is 2σ_k²·𝓛 (spec eq. 10), by Monte Carlo.
    #[test]
    fn masks_sum_to_zero_and_have_covariance_two_sigma_squared_laplacian() {
        let g = Graph::build(Topology::Path, 4, 0).unwrap();
        let n = g.len();
        let l = law(2.0);
        let mut rng = derive(1, "test");
        let trials = 40_000;
        let mut cov = vec![vec![0.0; n]; n];
        for _ in 0..trials {
            // sent[i][j] = z_ij for neighbour j of i.
            let sent: Vec<Vec<Vec<i64>>> = (0..n)
                .map(|i| g.neighbours(i).iter().map(|_| l.draw_integers(1, &mut rng)).collect())
                .collect();
            let masks: Vec<Mask> = (0..n)
                .map(|i| {
                    let received: i64 = g
                        .neighbours(i)
                        .iter()
                        .map(|&j| {
                            let pos = g.neighbours(j).iter().position(|&x| x == i).unwrap();
                            sent[j][pos][0]
                        })
                        .sum();
                    Mask::from_exchange(&sent[i], &[received], 6).unwrap()
                })
                .collect();
            assert_eq!(Mask::residual(&masks), vec![0i128]);
            let c: Vec<f64> = masks.iter().map(|m| m.coefficients()[0]).collect();
            for a in 0..n {
                for b in 0..n {
                    cov[a][b] += c[a] * c[b] / trials as f64;
                }
            }
        }
        let lap = g.laplacian();
        for a in 0..n {
            for b in 0..n {
                let want = 2.0 * l.sigma(0).powi(2) * lap[(a, b)];
                // Standard error of a product moment with variances ~ 2σ²d ≤ 8: ~ 8/√trials.
                assert!((cov[a][b] - want).abs() < 0.25, "cov[{a}][{b}] = {} vs {want}", cov[a][b]);
            }
        }
    }

    #[test]
    fn the_noise_decays_from_index_one() {
        let l = NoiseLaw { gamma: 9.0, decay: 2.0, precision: 0 };
        assert_eq!(l.sigma(0), 3.0);
        assert_eq!(l.sigma(2), 1.0);
    }

    #[test]
    fn bad_laws_are_refused() {
        assert!(law(0.0).check().unwrap_err().to_string().contains("γ = 0"));
        assert!(law(-1.0).check().is_err());
        assert!(law(f64::NAN).check().is_err());
        assert!(
            NoiseLaw { precision: 9, ..law(1e12) }
                .check()
                .unwrap_err()
                .to_string()
                .contains("2^52")
        );
        assert!(law(1e4).check().is_ok());
    }
}
