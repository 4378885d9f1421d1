/*!
The aggregator's half of capePCA: the top-R eigenvectors of the (symmetric, possibly indefinite)
noisy average Ĉ, and the projection capeDJICA uses (spec §4 "Projection", §9.2).
*/

use crate::djica::calibration::GaussianLevel;
use crate::djica::noise::NoiseError;
use nalgebra::{DMatrix, SymmetricEigen};
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
        let eig = SymmetricEigen::try_new(c.clone(), f64::EPSILON, 0)
            .filter(|e| e.eigenvalues.iter().all(|v| v.is_finite()))
            .ok_or(PcaError::NoConvergence)?;
        let mut order: Vec<usize> = (0..d).collect();
        // Algebraic order, largest first: a large negative eigenvalue is noise, not signal.
        order.sort_by(|&i, &j| eig.eigenvalues[j].total_cmp(&eig.eigenvalues[i]));
        order.truncate(components);
        let mut v = DMatrix::zeros(d, components);
        for (k, &i) in order.iter().enumerate() {
            let mut col = eig.eigenvectors.column(i).clone_owned();
            // Fix the sign (largest-magnitude entry positive) so results do not depend on the
            // solver's arbitrary choice.
            let pivot = col.iamax();
            if col[pivot] < 0.0 {
                col.neg_mut();
            }
            v.set_column(k, &col);
        }
        Ok(PrincipalSubspace {
            v,
            eigenvalues: order.iter().map(|&i| eig.eigenvalues[i]).collect(),
        })
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
