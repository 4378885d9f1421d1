/*!
fMRI data for joint ICA: a seeded synthetic generator with ground truth, the normalisation every
site applies before capePCA, and plain-matrix loading so a site can bring its own data.

- [`synthetic`]: R sources per subject (GARCH(1,1), optionally heavy-tailed) mixed by spatial
  maps on a G×G grid, M subjects split over S sites; a paper-like preset and a well-conditioned
  default (spec §6, §9.7). The true mixing matrix A is kept for q_NGI.
- [`normalise`]: demean each subject, scale, clip every time point to ‖x‖₂ ≤ 1 (spec §6). The clip
  is what bounds the sensitivities of capePCA and capeDJICA.
- [`matrix_io`]: a D×N matrix (voxels × time points) from CSV or `.npy` bytes, and back.
- [`nifti`]: a subject's D×N matrix from a 4-D NIfTI-1 image (`.nii`, `.nii.gz`) and a brain mask.

Data layout: a site's data X_s is D×N_s, its columns time points, subjects concatenated in time
([`SiteData`]). It is stored transposed (N_s×D, each voxel's time course contiguous), because
that is the layout in which capePCA's covariance, nearly all of its arithmetic, runs fastest;
loaders and the generator build D×N matrices per subject and write them in.
*/

pub mod garch;
pub mod maps;
pub mod matrix_io;
pub mod nifti;
pub mod normalise;
pub mod synthetic;

use nalgebra::{DMatrix, Dyn, MatrixView};
use thiserror::Error;

pub use synthetic::{Innovations, MapLayout, SyntheticConfig, SyntheticStudy, generate};

/// One site's fMRI data: D voxels × N_s time points, its subjects concatenated in time.
#[derive(Clone, Debug, PartialEq)]
pub struct SiteData {
    /// X_sᵀ, N_s×D: row n is time point n, column v voxel v's time course (contiguous).
    /// Voxel-major because capePCA's X_s·X_sᵀ then reads both factors contiguously: faer runs it
    /// at 57 GFLOP/s against 45 with the time-point-major layout (one thread, D = 900), with the
    /// same bits (issue 14). [`SiteData::x`] is the D×N_s view.
    pub xt: DMatrix<f64>,
    /// N_m of each subject, in the order of the rows of `xt`; they sum to N_s.
    pub subject_lengths: Vec<usize>,
}

impl SiteData {
    /// Wraps a D×N_s matrix holding `subject_lengths.len()` subjects (stored transposed); checks
    /// that the lengths add up and that no subject is empty.
    pub fn new(x: DMatrix<f64>, subject_lengths: Vec<usize>) -> Result<Self, FmriError> {
        Self::check(x.ncols(), &subject_lengths)?;
        Ok(SiteData { xt: x.transpose(), subject_lengths })
    }

    /// Wraps X_sᵀ, an N_s×D matrix (rows are time points), without copying; the same checks as
    /// [`SiteData::new`].
    pub fn from_transposed(
        xt: DMatrix<f64>,
        subject_lengths: Vec<usize>,
    ) -> Result<Self, FmriError> {
        Self::check(xt.nrows(), &subject_lengths)?;
        Ok(SiteData { xt, subject_lengths })
    }

    fn check(samples: usize, subject_lengths: &[usize]) -> Result<(), FmriError> {
        let total: usize = subject_lengths.iter().sum();
        if subject_lengths.is_empty() || subject_lengths.contains(&0) || total != samples {
            return Err(FmriError::SubjectLengths {
                lengths_sum: total,
                subjects: subject_lengths.len(),
                columns: samples,
            });
        }
        Ok(())
    }

    /// X_s as a D×N_s view of the stored transpose (no copy; strided, so for reading a few
    /// entries or for tests, not for products).
    pub fn x(&self) -> MatrixView<'_, f64, Dyn, Dyn, Dyn, Dyn> {
        let (n, d) = self.xt.shape();
        MatrixView::from_slice_with_strides_generic(
            self.xt.as_slice(),
            Dyn(d),
            Dyn(n),
            Dyn(n),
            Dyn(1),
        )
    }

    /// M_s, the number of subjects.
    pub fn subjects(&self) -> usize {
        self.subject_lengths.len()
    }

    /// N_s, the number of time points.
    pub fn samples(&self) -> usize {
        self.xt.nrows()
    }

    /// max_m N_m: the number of samples one subject can change (spec §5, ragged subjects).
    pub fn max_subject_len(&self) -> usize {
        self.subject_lengths.iter().copied().max().unwrap_or(0)
    }

    /// D, the number of voxels.
    pub fn voxels(&self) -> usize {
        self.xt.ncols()
    }
}

/// A site's samples as capePCA reads them (spec §4): X_sᵀ, N_s×D column-major (each voxel's time
/// course contiguous), and its subjects' lengths. [`SiteData`] owns them; [`SiteView`] borrows
/// them, so a caller that already holds the data in that layout (the Python package: a C-order
/// (D, N_s) numpy array) runs capePCA without copying them.
pub trait SiteSamples: Sync {
    /// X_sᵀ as N_s·D values, column-major.
    fn xt_values(&self) -> &[f64];
    /// N_s.
    fn sample_count(&self) -> usize;
    /// D.
    fn voxel_count(&self) -> usize;
    /// max_m N_m.
    fn longest_subject(&self) -> usize;
}

impl SiteSamples for SiteData {
    fn xt_values(&self) -> &[f64] {
        self.xt.as_slice()
    }
    fn sample_count(&self) -> usize {
        self.samples()
    }
    fn voxel_count(&self) -> usize {
        self.voxels()
    }
    fn longest_subject(&self) -> usize {
        self.max_subject_len()
    }
}

/// A site's data borrowed from elsewhere: X_sᵀ (N_s×D, column-major) and its subjects' lengths,
/// checked as [`SiteData::from_transposed`] checks them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SiteView<'a> {
    xt: &'a [f64],
    samples: usize,
    voxels: usize,
    subject_lengths: &'a [usize],
}

impl<'a> SiteView<'a> {
    /// `xt` holds N_s·D values, column-major N_s×D; `subject_lengths` must tile the N_s samples.
    pub fn new(
        xt: &'a [f64],
        samples: usize,
        voxels: usize,
        subject_lengths: &'a [usize],
    ) -> Result<Self, FmriError> {
        SiteData::check(samples, subject_lengths)?;
        if xt.len() != samples * voxels {
            return Err(FmriError::Config(format!(
                "{} values do not make {samples} time points × {voxels} voxels",
                xt.len()
            )));
        }
        Ok(SiteView { xt, samples, voxels, subject_lengths })
    }
}

impl SiteSamples for SiteView<'_> {
    fn xt_values(&self) -> &[f64] {
        self.xt
    }
    fn sample_count(&self) -> usize {
        self.samples
    }
    fn voxel_count(&self) -> usize {
        self.voxels
    }
    fn longest_subject(&self) -> usize {
        self.subject_lengths.iter().copied().max().unwrap_or(0)
    }
}

/// What went wrong building or loading fMRI data.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum FmriError {
    /// The subject lengths do not describe the columns of the matrix.
    #[error(
        "{subjects} subjects with lengths summing to {lengths_sum} do not tile {columns} time points: give one positive length per subject, summing to the number of columns"
    )]
    SubjectLengths {
        /// Σ N_m.
        lengths_sum: usize,
        /// Number of subjects given.
        subjects: usize,
        /// Columns of the data matrix.
        columns: usize,
    },
    /// A generator parameter is out of range.
    #[error("synthetic data: {0}")]
    Config(String),
}
