/*!
capePCA (spec §4, Algorithm 3): the R-dimensional subspace of the sites' pooled second-moment
matrix, released with CAPE noise, and the projection (optionally whitening) that capeDJICA works
in.

Per site s (the site side, [`site_covariance`] and [`site_release`]):
1. C_s = (1/N_s)·X_s·X_sᵀ (D×D), with ‖x_n‖₂ ≤ 1 after normalisation.
2. Noise: the zero-sum E_s of Algorithm 1 and a local Γ_s with variance τ_s²/S, both drawn for the
   upper triangle including the diagonal (D(D+1)/2 entries) and mirrored, so Ĉ_s is symmetric
   (pitfall 5 of spec §8: a non-symmetric E_s with a symmetric Γ_s).
3. Ĉ_s = C_s + E_s + Γ_s is released.

The aggregator ([`aggregate`], [`PrincipalSubspace::from_covariance`]) averages the Ĉ_s and takes
the eigenvectors of the R largest *algebraic* eigenvalues of the symmetric (possibly indefinite)
average, not the R largest |σ| of an SVD.

Sensitivity ([`CovarianceSensitivity`], spec §4): replacing one sample x by x' changes C_s by
(xxᵀ − x'x'ᵀ)/N_s. The paper's (as read from its ref. \[16\]) Analyze-Gauss bound counts this as
1/N_s; the L2 norm of the released upper triangle can reach √2/N_s, which is the rigorous option.
At subject level both are N_m times larger (1/M_s or √2/M_s). The default is subject level
without the √2, matching the ICA privacy unit and the paper's reading.
*/

mod subspace;

pub use subspace::{PcaError, PrincipalSubspace, WHITENING_FLOOR, Whitening};

use crate::djica::calibration::{GaussianLevel, PrivacyUnit};
use crate::djica::noise::{NoiseScheme, ZeroSumNoise, site_noise};
use crate::fmri::SiteSamples;
use crate::rng::{CapeRng, Seed};
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

/// The sensitivity model of a site's covariance release.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CovarianceSensitivity {
    /// Subject (default) or time point.
    pub unit: PrivacyUnit,
    /// Use the rigorous √2 factor for the upper triangle under replace-one neighbours.
    pub rigorous: bool,
}

impl Default for CovarianceSensitivity {
    fn default() -> Self {
        CovarianceSensitivity { unit: PrivacyUnit::Subject, rigorous: false }
    }
}

impl CovarianceSensitivity {
    /// Δ_C^s for a site with `samples` time points and subjects of at most `max_subject_len`:
    /// (√2 if rigorous, else 1)·(samples one unit changes)/N_s.
    pub fn delta(self, samples: usize, max_subject_len: usize) -> f64 {
        let factor = if self.rigorous { std::f64::consts::SQRT_2 } else { 1.0 };
        factor * self.unit.samples_per_unit(max_subject_len) as f64 / samples as f64
    }
}

/// How capePCA is run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PcaConfig {
    /// R, the dimension kept.
    pub components: usize,
    /// CAPE, conventional, or none (non-private).
    pub scheme: NoiseScheme,
    /// (ε_p, δ_p) of the one covariance release (ignored when `scheme` is none).
    pub level: GaussianLevel,
    /// The sensitivity model.
    pub sensitivity: CovarianceSensitivity,
}

/// What the accountant needs about the capePCA release (one Gaussian release per site).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PcaPrivacy {
    /// The noise scheme used.
    pub scheme: NoiseScheme,
    /// (ε_p, δ_p) per release, `None` when non-private.
    pub level: Option<GaussianLevel>,
    /// The sensitivity model.
    pub sensitivity: CovarianceSensitivity,
    /// Δ_C^s per site.
    pub deltas: Vec<f64>,
    /// τ_s per site (the standard deviation of each released entry's total noise).
    pub taus: Vec<f64>,
    /// The noise multiplier z = τ_s/Δ_C^s = c(δ_p)/ε_p (equal for all sites), if private.
    pub multiplier: Option<f64>,
}

/// capePCA's output.
#[derive(Clone, Debug)]
pub struct PcaResult {
    /// V_R and its eigenvalues.
    pub subspace: PrincipalSubspace,
    /// What accounting needs.
    pub privacy: PcaPrivacy,
}

/// C_s = (1/N_s)·X_s·X_sᵀ, D×D: faer's triangular product computes the lower half only (half
/// the multiply-adds of a full product), then it is mirrored. It reads the stored X_sᵀ for both
/// factors, each voxel's course contiguous (`SiteData::xt`). Sequential, so the result does not
/// depend on the machine's cores.
pub fn site_covariance(site: &impl SiteSamples) -> DMatrix<f64> {
    use faer::linalg::matmul::triangular::{BlockStructure, matmul};
    use faer::{Accum, MatMut, MatRef, Par};
    let (n, d) = (site.sample_count(), site.voxel_count());
    let mut c = DMatrix::zeros(d, d);
    let xt = MatRef::from_column_major_slice(site.xt_values(), n, d);
    matmul(
        MatMut::from_column_major_slice_mut(c.as_mut_slice(), d, d),
        BlockStructure::TriangularLower,
        Accum::Replace,
        xt.transpose(),
        BlockStructure::Rectangular,
        xt,
        BlockStructure::Rectangular,
        1.0 / n as f64,
        Par::Seq,
    );
    for j in 0..d {
        for i in 0..j {
            c[(i, j)] = c[(j, i)];
        }
    }
    c
}

/// K·X_s: a site's samples in the released subspace (R×N_s from the R×D projection K). faer's
/// product X_sᵀ·Kᵀ on the stored transpose, then turned: about twice nalgebra's K·X_s at R = 20,
/// D = 900 (issue 14). Sequential, so the result does not depend on the machine's cores.
///
/// # Panics
/// If K's columns and the site's voxels disagree (both come from the same study).
pub fn project(k: &DMatrix<f64>, site: &impl SiteSamples) -> DMatrix<f64> {
    use faer::{Accum, MatMut, MatRef, Par};
    let ((r, d), (n, voxels)) = (k.shape(), (site.sample_count(), site.voxel_count()));
    assert_eq!(d, voxels, "project: K is {r}×{d}, the site has {voxels} voxels");
    let mut out_t = DMatrix::zeros(n, r);
    faer::linalg::matmul::matmul(
        MatMut::from_column_major_slice_mut(out_t.as_mut_slice(), n, r),
        Accum::Replace,
        MatRef::from_column_major_slice(site.xt_values(), n, d),
        MatRef::from_column_major_slice(k.as_slice(), r, d).transpose(),
        1.0,
        Par::Seq,
    );
    out_t.transpose()
}

/// The number of entries in the upper triangle including the diagonal, D(D+1)/2.
pub fn upper_len(d: usize) -> usize {
    d * (d + 1) / 2
}

/// Adds a noise vector laid out as the upper triangle (row-major: (0,0), (0,1), …, (0,D−1),
/// (1,1), …) to a symmetric matrix, mirroring each off-diagonal value.
pub fn add_symmetric(c: &mut DMatrix<f64>, upper: &[f64]) {
    let d = c.nrows();
    assert_eq!(upper.len(), upper_len(d), "upper-triangle length");
    let mut k = 0;
    for i in 0..d {
        for j in i..d {
            c[(i, j)] += upper[k];
            if i != j {
                c[(j, i)] += upper[k];
            }
            k += 1;
        }
    }
}

/// Site side, steps 1–4: Ĉ_s = C_s + (mirrored noise). `zero_sum` is this site's share of a
/// [`ZeroSumNoise`] draw of length D(D+1)/2 (used by CAPE only), `tau` is τ_s and `sites` the
/// number of sites present.
pub fn site_release(
    covariance: &DMatrix<f64>,
    scheme: NoiseScheme,
    zero_sum: Option<&[f64]>,
    tau: f64,
    sites: usize,
    rng: &mut CapeRng,
) -> DMatrix<f64> {
    let d = covariance.nrows();
    let mut released = covariance.clone();
    if scheme != NoiseScheme::None {
        let noise = site_noise(scheme, zero_sum, tau, sites, upper_len(d), rng);
        add_symmetric(&mut released, &noise);
    }
    released
}

/// Aggregator side, step 5: Ĉ = (1/S)·Σ Ĉ_s.
///
/// # Panics
/// If `releases` is empty or the shapes differ (the aggregator checks messages before this).
pub fn aggregate(releases: &[DMatrix<f64>]) -> DMatrix<f64> {
    let mut sum = releases[0].clone();
    for r in &releases[1..] {
        sum += r;
    }
    sum / releases.len() as f64
}

/// The whole of Algorithm 3 in one process: every site's release, the aggregate and its
/// subspace. `noise` must serve `sites.len()` sites.
pub fn cape_pca<S: SiteSamples>(
    sites: &[S],
    config: &PcaConfig,
    seed: Seed,
    noise: &mut dyn ZeroSumNoise,
) -> Result<PcaResult, PcaError> {
    if sites.is_empty() {
        return Err(PcaError::NoSites);
    }
    let d = sites[0].voxel_count();
    if let Some(bad) = sites.iter().position(|s| s.voxel_count() != d) {
        return Err(PcaError::VoxelMismatch {
            site: bad,
            got: sites[bad].voxel_count(),
            expected: d,
        });
    }
    let private = config.scheme != NoiseScheme::None;
    if private && !config.level.is_valid() {
        return Err(PcaError::BadLevel(config.level));
    }
    let deltas: Vec<f64> = sites
        .iter()
        .map(|s| config.sensitivity.delta(s.sample_count(), s.longest_subject()))
        .collect();
    let multiplier = if private { config.level.multiplier().ok() } else { None };
    let taus: Vec<f64> = deltas.iter().map(|d| d * multiplier.unwrap_or(0.0)).collect();
    let zero_sum = match config.scheme {
        NoiseScheme::Cape => Some(noise.draw(&taus, upper_len(d))?),
        _ => None,
    };
    // Each site's covariance and noise in parallel (`crate::par`): its own RNG, its own share;
    // the releases come back in site order and are averaged sequentially below.
    let releases: Vec<DMatrix<f64>> = crate::par::map_sites(sites, |s, site| {
        let mut rng = seed.rng(&format!("site/{s}/pca-noise"));
        site_release(
            &site_covariance(site),
            config.scheme,
            zero_sum.as_ref().map(|z| z[s].as_slice()),
            taus[s],
            sites.len(),
            &mut rng,
        )
    });
    let subspace = PrincipalSubspace::from_covariance(&aggregate(&releases), config.components)?;
    Ok(PcaResult {
        subspace,
        privacy: PcaPrivacy {
            scheme: config.scheme,
            level: private.then_some(config.level),
            sensitivity: config.sensitivity,
            deltas,
            taus,
            multiplier,
        },
    })
}
