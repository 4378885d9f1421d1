/*!
The aggregator's half of capePCA: the top-R eigenvectors of the (symmetric, possibly indefinite)
noisy average Ĉ, and the projection capeDJICA uses (spec §4 "Projection", §9.2).
*/

use crate::djica::calibration::GaussianLevel;
use crate::djica::noise::NoiseError;
use faer::{MatRef, Side};
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Why capePCA failed.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum PcaError {
    /// No site took part.
    #[error("capePCA needs at least one site")]
    NoSites,
    /// Sites disagree on D.
    #[error(
        "site {site} has {got} voxels but site 0 has {expected}: all sites must use the same voxel set (mask)"
    )]
    VoxelMismatch {
        /// The first disagreeing site.
        site: usize,
        /// Its D.
        got: usize,
        /// Site 0's D.
        expected: usize,
    },
    /// R is 0 or larger than D.
    #[error(
        "cannot keep {components} components of a {voxels}-dimensional covariance: choose 1 ≤ R ≤ D"
    )]
    Components {
        /// R asked for.
        components: usize,
        /// D.
        voxels: usize,
    },
    /// (ε, δ) out of range.
    #[error("privacy level ε = {}, δ = {} is out of range: need ε > 0 and 0 < δ < 1", .0.epsilon, .0.delta)]
    BadLevel(GaussianLevel),
    /// The eigen-solver did not converge (non-finite input).
    #[error(
        "the eigendecomposition of the aggregated covariance did not converge (does it hold NaN or infinite values?)"
    )]
    NoConvergence,
    /// The noise seam failed.
    #[error(transparent)]
    Noise(#[from] NoiseError),
    /// Whitening needs eigenvalues the noise has made non-positive.
    #[error(
        "cannot whiten: the largest kept eigenvalue is {largest}, not positive (noise dominates the covariance)"
    )]
    NotPositive {
        /// λ_1 of Ĉ.
        largest: f64,
    },
}

/// How capeDJICA's input is formed from V_R (spec §4 "Projection", §9.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Whitening {
    /// X^r = V_Rᵀ·X, the paper's projection.
    None,
    /// X^r = 2·Λ_R^{−1/2}·V_Rᵀ·X, runica's sphering convention (§9.2: without whitening q stays
    /// near 0.25). Uses only released eigenvalues, so it costs no privacy.
    Runica,
}

/// Eigenvalues below this fraction of λ_1 are raised to it before whitening, so a noise
/// direction with λ ≈ 0 (or < 0) is not amplified without bound.
pub const WHITENING_FLOOR: f64 = 1e-3;

/// The R leading eigenpairs of the aggregated covariance.
#[derive(Clone, Debug, PartialEq)]
pub struct PrincipalSubspace {
    /// V_R, D×R with orthonormal columns, ordered by eigenvalue, largest first.
    pub v: DMatrix<f64>,
    /// λ_1 ≥ … ≥ λ_R, the R largest algebraic eigenvalues (may be ≤ 0 under heavy noise).
    pub eigenvalues: Vec<f64>,
}

impl PrincipalSubspace {
    /// The eigenvectors of the R largest algebraic eigenvalues of the symmetric matrix `c`
    /// (only its lower triangle is read).
    pub fn from_covariance(c: &DMatrix<f64>, components: usize) -> Result<Self, PcaError> {
        let d = c.nrows();
        if components == 0 || components > d {
            return Err(PcaError::Components { components, voxels: d });
        }
        // faer's blocked tridiagonalisation and divide-and-conquer solver: ~5× nalgebra's
        // unblocked QR iteration at D = 900 (issue 14). Sequential, so results do not depend
        // on the machine's cores.
        let eig = MatRef::from_column_major_slice(c.as_slice(), d, d)
            .self_adjoint_eigen(Side::Lower)
            .map_err(|_| PcaError::NoConvergence)?;
        let (values, vectors) = (eig.S().column_vector(), eig.U());
        if values.iter().any(|v| !v.is_finite()) {
            return Err(PcaError::NoConvergence);
        }
        // faer sorts ascending; take the R largest algebraic eigenvalues, largest first (a large
        // negative eigenvalue is noise, not signal).
        let order: Vec<usize> = (d - components..d).rev().collect();
        let mut v = DMatrix::zeros(d, components);
        for (k, &i) in order.iter().enumerate() {
            let mut col = nalgebra::DVector::from_fn(d, |r, _| vectors[(r, i)]);
            // Fix the sign (largest-magnitude entry positive) so results do not depend on the
            // solver's arbitrary choice.
            let pivot = col.iamax();
            if col[pivot] < 0.0 {
                col.neg_mut();
            }
            v.set_column(k, &col);
        }
        Ok(PrincipalSubspace { v, eigenvalues: order.iter().map(|&i| values[i]).collect() })
    }

    /// R.
    pub fn components(&self) -> usize {
        self.v.ncols()
    }

    /// The R×D matrix K that maps a time point x to capeDJICA's input K·x: V_Rᵀ, or
    /// 2·Λ_R^{−1/2}·V_Rᵀ with eigenvalues floored at [`WHITENING_FLOOR`]·λ_1.
    pub fn projection(&self, whitening: Whitening) -> Result<DMatrix<f64>, PcaError> {
        let mut k = self.v.transpose();
        if whitening == Whitening::Runica {
            let largest = self.eigenvalues[0];
            if largest.is_nan() || largest <= 0.0 {
                return Err(PcaError::NotPositive { largest });
            }
            let floor = WHITENING_FLOOR * largest;
            for (i, &lambda) in self.eigenvalues.iter().enumerate() {
                let mut row = k.row_mut(i);
                row *= 2.0 / lambda.max(floor).sqrt();
            }
        }
        Ok(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::SymmetricEigen;

    /// faer's solver against nalgebra's (the previous implementation) on an indefinite matrix
    /// with well-separated top eigenvalues: the same R largest eigenvalues to 1e−12 relative, the
    /// same vectors (up to the sign convention), and C·v = λ·v.
    #[test]
    fn the_subspace_matches_nalgebra_and_solves_the_eigenproblem() {
        let (d, r) = (120, 6);
        let x = DMatrix::<f64>::from_fn(d, 300, |i, j| {
            ((i * 7919 + j * 104_729) % 997) as f64 / 997.0 - 0.5
        });
        let mut c = &x * x.transpose() / 300.0;
        for i in 0..d {
            c[(i, i)] -= 0.05; // indefinite, as a noisy Ĉ is
        }
        let ours = PrincipalSubspace::from_covariance(&c, r).unwrap();
        let reference = SymmetricEigen::new(c.clone());
        let mut values: Vec<f64> = reference.eigenvalues.iter().copied().collect();
        values.sort_by(|a, b| b.total_cmp(a));
        let scale = values[0].abs();
        for (k, &expected) in values.iter().take(r).enumerate() {
            let lambda = ours.eigenvalues[k];
            assert!((lambda - expected).abs() <= 1e-12 * scale, "λ_{k}: {lambda} vs {expected}");
            let v = ours.v.column(k);
            assert!((&c * v - v * lambda).norm() <= 1e-10 * scale, "residual of v_{k}");
            let i = (0..d)
                .min_by(|&i, &j| {
                    (reference.eigenvalues[i] - lambda)
                        .abs()
                        .total_cmp(&(reference.eigenvalues[j] - lambda).abs())
                })
                .unwrap();
            let cosine = reference.eigenvectors.column(i).dot(&v).abs();
            assert!((cosine - 1.0).abs() < 1e-10, "v_{k}: |cos| = {cosine}");
        }
        assert!(ours.eigenvalues.windows(2).all(|w| w[0] >= w[1]), "largest first");
    }
}
