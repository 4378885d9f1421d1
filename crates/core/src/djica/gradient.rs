/*!
The site side of one capeDJICA iteration: the clipped, averaged infomax natural gradient
(spec §5, Algorithm 4 steps 2–5).

For site data X (R×N_s, already projected by capePCA) and the current (W, b):

- z_n = W·x_n + b, ŷ_n = 1 − 2g(z_n) = −tanh(z_n/2),
- G_n = (I + ŷ_n z_nᵀ)·W = W + ŷ_n u_nᵀ with u_n = Wᵀz_n, clipped to ‖G_n‖_F ≤ B_G,
- h_n = ŷ_n, clipped to ‖h_n‖₂ ≤ B_h,
- G = (1/N_s)·Σ G_n and h = (1/N_s)·Σ h_n.

Nothing R×R is formed per sample. The per-sample norm comes from
‖W + ŷuᵀ‖_F² = ‖W‖_F² + 2·ŷᵀWu + ‖ŷ‖²‖u‖², with ŷᵀWu = ŷᵀ(WWᵀ)z and ‖u‖² = zᵀ(WWᵀ)z, so one
product q_n = (WWᵀ)z_n gives both in O(R) per sample. With clip factors c_n,
Σ c_n G_n = (Σ c_n · I + Σ c_n ŷ_n z_nᵀ)·W, and the middle sum is one matrix product. Per block of
samples the work is three R×R×n_b products plus the nonlinearity, in preallocated buffers.
*/

use super::logistic::neg_tanh_half_in_place;
use nalgebra::{DMatrix, DMatrixView, DVector};
use serde::{Deserialize, Serialize};

/// The per-sample clipping bounds of Algorithm 4.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClipBounds {
    /// B_G: the largest Frobenius norm of one sample's gradient G_{s,n} (paper: 30).
    pub gradient: f64,
    /// B_h: the largest L2 norm of one sample's bias gradient h_{s,n} (paper: √30).
    pub bias: f64,
}

impl Default for ClipBounds {
    /// The paper's bounds, B_G = 30 and B_h = √B_G (spec §5).
    fn default() -> Self {
        ClipBounds { gradient: 30.0, bias: 30f64.sqrt() }
    }
}

/// A site's clipped mean gradient for one iteration, before any noise.
#[derive(Clone, Debug, PartialEq)]
pub struct SiteGradient {
    /// G_s = (1/N_s)·Σ_n clip(G_{s,n}), R×R.
    pub g: DMatrix<f64>,
    /// h_s = (1/N_s)·Σ_n clip(h_{s,n}), length R.
    pub h: DVector<f64>,
    /// N_s, the number of samples averaged.
    pub samples: usize,
    /// How many samples had their G_{s,n} scaled down by the clip (a diagnostic; not released).
    pub clipped: usize,
}

/// Buffers reused across iterations so that the hot loop never allocates.
#[derive(Clone, Debug)]
pub struct GradientWorkspace {
    block: usize,
    z: DMatrix<f64>,
    q: DMatrix<f64>,
    y: DMatrix<f64>,
    wwt: DMatrix<f64>,
    outer: DMatrix<f64>,
}

impl GradientWorkspace {
    /// Samples processed per block: small enough that the R×block buffers stay in cache.
    pub const DEFAULT_BLOCK: usize = 256;

    /// Buffers for R components.
    pub fn new(components: usize) -> Self {
        Self::with_block(components, Self::DEFAULT_BLOCK)
    }

    /// Buffers for R components and a chosen block size (at least 1).
    pub fn with_block(components: usize, block: usize) -> Self {
        let block = block.max(1);
        GradientWorkspace {
            block,
            z: DMatrix::zeros(components, block),
            q: DMatrix::zeros(components, block),
            y: DMatrix::zeros(components, block),
            wwt: DMatrix::zeros(components, components),
            outer: DMatrix::zeros(components, components),
        }
    }
}

/// Algorithm 4 steps 2–5 at one site: the clipped mean gradient of the infomax objective at
/// (W, b) over the columns of `x` (R×N_s).
///
/// # Panics
/// If the shapes disagree (W must be R×R, b of length R, x with R rows) or `x` has no columns:
/// the caller owns all three and checks them once per run.
pub fn site_gradient(
    x: &DMatrix<f64>,
    w: &DMatrix<f64>,
    b: &DVector<f64>,
    bounds: ClipBounds,
    ws: &mut GradientWorkspace,
) -> SiteGradient {
    let r = w.nrows();
    let samples = x.ncols();
    assert!(
        w.ncols() == r && b.len() == r && x.nrows() == r && samples > 0,
        "site_gradient: W is {}×{}, b has {} entries, X is {}×{}",
        w.nrows(),
        w.ncols(),
        b.len(),
        x.nrows(),
        samples
    );
    if ws.z.nrows() != r {
        *ws = GradientWorkspace::with_block(r, ws.block);
    }
    let GradientWorkspace { block, z, q, y, wwt, outer } = ws;
    wwt.gemm(1.0, w, &w.transpose(), 0.0);
    outer.fill(0.0);
    let w_norm_sq = w.norm_squared();
    let clip_sq = bounds.gradient * bounds.gradient;
    let bias_clip_sq = bounds.bias * bounds.bias;
    let mut clip_sum = 0.0;
    let mut clipped = 0usize;
    let mut h = DVector::zeros(r);

    let mut start = 0;
    while start < samples {
        let n = (*block).min(samples - start);
        let xb = x.columns(start, n);
        let mut zb = z.columns_mut(0, n);
        zb.gemm(1.0, w, &xb, 0.0);
        for mut col in zb.column_iter_mut() {
            col += b;
        }
        q.columns_mut(0, n).gemm(1.0, wwt, &z.columns(0, n), 0.0);

        let z_data = &z.as_slice()[..r * n];
        let q_data = &q.as_slice()[..r * n];
        let y_data = &mut y.as_mut_slice()[..r * n];
        y_data.copy_from_slice(z_data);
        neg_tanh_half_in_place(y_data);

        for ((z_n, q_n), y_n) in
            z_data.chunks_exact(r).zip(q_data.chunks_exact(r)).zip(y_data.chunks_exact_mut(r))
        {
            let (mut u_sq, mut cross, mut y_sq) = (0.0, 0.0, 0.0);
            for ((zi, qi), yi) in z_n.iter().zip(q_n).zip(y_n.iter()) {
                u_sq += zi * qi;
                cross += yi * qi;
                y_sq += yi * yi;
            }
            // ‖W + ŷuᵀ‖² = ‖W‖² + 2ŷᵀWWᵀz + ‖ŷ‖²·zᵀWWᵀz (module docs).
            let norm_sq = w_norm_sq + 2.0 * cross + y_sq * u_sq;
            let c = if norm_sq > clip_sq {
                clipped += 1;
                bounds.gradient / norm_sq.sqrt()
            } else {
                1.0
            };
            let d = if y_sq > bias_clip_sq { bounds.bias / y_sq.sqrt() } else { 1.0 };
            for (hi, yi) in h.iter_mut().zip(y_n.iter_mut()) {
                *hi += d * *yi;
                *yi *= c;
            }
            clip_sum += c;
        }
        // Σ c_n ŷ_n z_nᵀ for the block: zᵀ is a strided view, no copy.
        let z_t = DMatrixView::from_slice_with_strides(z_data, n, r, r, 1);
        outer.gemm(1.0, &y.columns(0, n), &z_t, 1.0);
        start += n;
    }

    for i in 0..r {
        outer[(i, i)] += clip_sum;
    }
    let inv = 1.0 / samples as f64;
    let mut g = DMatrix::zeros(r, r);
    g.gemm(inv, outer, w, 0.0);
    h *= inv;
    SiteGradient { g, h, samples, clipped }
}
