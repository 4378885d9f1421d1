/*!
Spatial maps: the columns of the mixing matrix A, one 2-D Gaussian blob per component on a G×G
grid (voxel index = row·G + column), each normalised to unit L2 norm.

Two layouts (spec §6 proposal and §9.7):
- [`MapLayout::RandomBlobs`]: centres uniform over the grid, widths 2–5 px. Blobs overlap, so A
  is ill-conditioned (cond(A) 22–69 in the numpy reference): the paper-like, hard case.
- [`MapLayout::JitteredLattice`]: centres on a lattice with a small jitter, narrower blobs; A is
  nearly orthogonal (cond(A) ≈ 2): the well-posed demo default.
*/

use crate::rng::CapeRng;
use nalgebra::DMatrix;
use rand::RngExt;
use serde::{Deserialize, Serialize};

/// How the blob centres and widths are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum MapLayout {
    /// Uniformly random centres; widths (standard deviations, in px) uniform in `width`.
    RandomBlobs {
        /// Range of the blob standard deviation in pixels.
        width: (f64, f64),
    },
    /// Centres on a ⌈√R⌉-column lattice, each moved by up to `jitter` of a cell in each
    /// direction; widths uniform in `width`.
    JitteredLattice {
        /// Range of the blob standard deviation in pixels.
        width: (f64, f64),
        /// Largest displacement as a fraction of the cell size, in [0, 0.5).
        jitter: f64,
    },
}

impl MapLayout {
    /// The paper-like layout: random centres, widths 2–5 px.
    pub fn paper_like() -> Self {
        MapLayout::RandomBlobs { width: (2.0, 5.0) }
    }

    /// The well-conditioned layout: jittered lattice, widths 1–2 px, jitter 15% of a cell.
    pub fn well_conditioned() -> Self {
        MapLayout::JitteredLattice { width: (1.0, 2.0), jitter: 0.15 }
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        let width = match *self {
            MapLayout::RandomBlobs { width } => width,
            MapLayout::JitteredLattice { width, jitter } => {
                if !(0.0..0.5).contains(&jitter) {
                    return Err(format!("lattice jitter {jitter} must be in [0, 0.5)"));
                }
                width
            }
        };
        if !(width.0 > 0.0 && width.0 <= width.1 && width.1.is_finite()) {
            return Err(format!(
                "blob width range {width:?} must be positive and ordered (low ≤ high)"
            ));
        }
        Ok(())
    }
}

/// The D×R matrix of `components` unit-norm blob maps on a `grid`×`grid` image.
pub fn blob_maps(
    rng: &mut CapeRng,
    grid: usize,
    components: usize,
    layout: MapLayout,
) -> DMatrix<f64> {
    let g = grid as f64;
    let mut a = DMatrix::zeros(grid * grid, components);
    let lattice_cols = (components as f64).sqrt().ceil().max(1.0) as usize;
    let lattice_rows = components.div_ceil(lattice_cols);
    for k in 0..components {
        let (cy, cx, width) = match layout {
            MapLayout::RandomBlobs { width } => {
                (rng.random_range(0.0..g), rng.random_range(0.0..g), draw(rng, width))
            }
            MapLayout::JitteredLattice { width, jitter } => {
                let cell_y = g / lattice_rows as f64;
                let cell_x = g / lattice_cols as f64;
                let (row, col) = (k / lattice_cols, k % lattice_cols);
                let jy = jitter_draw(rng, jitter) * cell_y;
                let jx = jitter_draw(rng, jitter) * cell_x;
                (
                    (row as f64 + 0.5) * cell_y + jy - 0.5,
                    (col as f64 + 0.5) * cell_x + jx - 0.5,
                    draw(rng, width),
                )
            }
        };
        let mut column = a.column_mut(k);
        for y in 0..grid {
            for x in 0..grid {
                let d2 = (y as f64 - cy).powi(2) + (x as f64 - cx).powi(2);
                column[y * grid + x] = (-d2 / (2.0 * width * width)).exp();
            }
        }
        let norm = column.norm();
        column /= norm;
    }
    a
}

fn draw(rng: &mut CapeRng, (lo, hi): (f64, f64)) -> f64 {
    if hi > lo { rng.random_range(lo..hi) } else { lo }
}

fn jitter_draw(rng: &mut CapeRng, jitter: f64) -> f64 {
    if jitter > 0.0 { rng.random_range(-jitter..jitter) } else { 0.0 }
}

/// The 2-norm condition number σ_max/σ_min of a matrix (∞ if it is rank deficient).
pub fn condition_number(a: &DMatrix<f64>) -> f64 {
    let s = a.clone().svd(false, false).singular_values;
    let max = s.max();
    let min = s.min();
    if min > 0.0 { max / min } else { f64::INFINITY }
}
