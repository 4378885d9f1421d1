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
product q_n = (WWᵀ)z_n gives both. Most samples are far from the clip, and for them even that is
skipped: ‖G_n‖_F ≤ ‖W‖_F + ‖ŷ_n‖·σ_max(W)·‖z_n‖ needs only the two norms, and when this bound is
below B_G the clip cannot bind (c_n = 1). Only the remaining samples pay O(R²) for q_n.

With clip factors c_n, Σ c_n G_n = (Σ c_n · I + Σ c_n ŷ_n z_nᵀ)·W, and the middle sum is one
matrix product. Per block of samples the work is two R×R×n_b products (Z = WX + b and
Ŷ_c·Zᵀ) plus the nonlinearity, in preallocated buffers laid out samples × components, so the
per-sample norms, clip factors and scalings are vector operations over the samples.
*/

use super::gemm::{GemmScalar, Operand, Output, gemm};
use super::logistic::{neg_tanh_half_in_place, neg_tanh_half_in_place_f32};
use nalgebra::{DMatrix, DVector};
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
    /// How many samples needed the exact O(R²) norm because the cheap bound exceeded B_G
    /// (a diagnostic of the fast path).
    pub exact_norms: usize,
}

/// The element type of the per-block buffers (and of the site's stored samples): f64, or f32
/// for speed. Whatever the block type, the accumulation across blocks, W, b, the exact clip
/// norms and the released gradient are f64.
pub trait BlockFloat:
    GemmScalar
    + Copy
    + Default
    + PartialOrd
    + std::fmt::Debug
    + std::ops::Add<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::AddAssign
    + std::ops::MulAssign
    + Into<f64>
    + nalgebra::Scalar
    + 'static
{
    /// The cheap clip bound must stay below B_G by this relative margin, more than the rounding
    /// of a block-precision sum of R squares can reach.
    const BOUND_MARGIN: f64;
    /// Clip factors are multiplied by (1 − this) so that rounding the scaled ŷ to the block
    /// precision cannot push a clipped gradient above B_G.
    const CLIP_SHRINK: f64;
    /// The nearest value of this type.
    fn from_f64(v: f64) -> Self;
    /// −tanh(v/2) in place.
    fn neg_tanh_half_in_place(values: &mut [Self]);
    /// True for NaN (the marker of "needs the exact norm").
    fn is_nan_like(self) -> bool;
}

impl BlockFloat for f64 {
    const BOUND_MARGIN: f64 = 1e-12;
    const CLIP_SHRINK: f64 = 0.0;
    fn from_f64(v: f64) -> Self {
        v
    }
    fn neg_tanh_half_in_place(values: &mut [Self]) {
        neg_tanh_half_in_place(values);
    }
    fn is_nan_like(self) -> bool {
        self.is_nan()
    }
}

impl BlockFloat for f32 {
    const BOUND_MARGIN: f64 = 1e-4;
    const CLIP_SHRINK: f64 = 1e-6;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn neg_tanh_half_in_place(values: &mut [Self]) {
        neg_tanh_half_in_place_f32(values);
    }
    fn is_nan_like(self) -> bool {
        self.is_nan()
    }
}

/// Buffers reused across iterations so that the hot loop never allocates. Blocks are stored
/// transposed (samples × components, column-major) so that every per-sample quantity is a
/// contiguous vector operation over the samples of a block.
#[derive(Clone, Debug)]
pub struct GradientWorkspace<T: BlockFloat = f64> {
    block: usize,
    components: usize,
    /// Zᵀ for a block: block × R, column i holds z_i over the block's samples.
    zt: Vec<T>,
    /// Ŷᵀ for a block, then scaled by the clip factors.
    yt: Vec<T>,
    y_sq: Vec<T>,
    z_sq: Vec<T>,
    clip: Vec<T>,
    bias_clip: Vec<T>,
    scratch: Vec<f64>,
    w_t: Vec<T>,
    wwt: DMatrix<f64>,
    outer_block: Vec<T>,
    outer: DMatrix<f64>,
    exact: ExactBuffers,
}

/// f64 buffers for computing many exact clip norms of a block at once.
#[derive(Clone, Debug)]
struct ExactBuffers {
    z64: Vec<f64>,
    y64: Vec<f64>,
    q64: Vec<f64>,
    u_sq: Vec<f64>,
    cross: Vec<f64>,
    y_sq64: Vec<f64>,
}

impl<T: BlockFloat> GradientWorkspace<T> {
    /// Samples processed per block: small enough that the block buffers stay in cache.
    pub const DEFAULT_BLOCK: usize = 256;

    /// Buffers for R components.
    pub fn new(components: usize) -> Self {
        Self::with_block(components, Self::DEFAULT_BLOCK)
    }

    /// Buffers for R components and a chosen block size (at least 1).
    pub fn with_block(components: usize, block: usize) -> Self {
        let block = block.max(1);
        let zeros = |len| vec![T::default(); len];
        GradientWorkspace {
            block,
            components,
            zt: zeros(block * components),
            yt: zeros(block * components),
            y_sq: zeros(block),
            z_sq: zeros(block),
            clip: zeros(block),
            bias_clip: zeros(block),
            scratch: vec![0.0; 3 * components],
            w_t: zeros(components * components),
            wwt: DMatrix::zeros(components, components),
            outer_block: zeros(components * components),
            outer: DMatrix::zeros(components, components),
            exact: ExactBuffers {
                z64: vec![0.0; block * components],
                y64: vec![0.0; block * components],
                q64: vec![0.0; block * components],
                u_sq: vec![0.0; block],
                cross: vec![0.0; block],
                y_sq64: vec![0.0; block],
            },
        }
    }
}

/// Algorithm 4 steps 2–5 at one site: the clipped mean gradient of the infomax objective at
/// (W, b) over the columns of `x` (R×N_s), with block buffers of `x`'s element type.
///
/// # Panics
/// If the shapes disagree (W must be R×R, b of length R, x with R rows) or `x` has no columns:
/// the caller owns all three and checks them once per run.
pub fn site_gradient<T: BlockFloat>(
    x: &DMatrix<T>,
    w: &DMatrix<f64>,
    b: &DVector<f64>,
    bounds: ClipBounds,
    ws: &mut GradientWorkspace<T>,
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
    if ws.components != r {
        *ws = GradientWorkspace::with_block(r, ws.block);
    }
    let GradientWorkspace {
        block,
        zt,
        yt,
        y_sq,
        z_sq,
        clip,
        bias_clip,
        scratch,
        w_t,
        wwt,
        outer_block,
        outer,
        exact,
        ..
    } = ws;
    let block = *block;
    wwt.gemm(1.0, w, &w.transpose(), 0.0);
    outer.fill(0.0);
    // Wᵀ in block precision, column-major: element (k, i) = W[i, k].
    for i in 0..r {
        for k in 0..r {
            w_t[k + i * r] = T::from_f64(w[(i, k)]);
        }
    }
    let b_block: Vec<T> = b.iter().map(|&v| T::from_f64(v)).collect();
    let w_norm_sq = w.norm_squared();
    let w_norm = w_norm_sq.sqrt();
    let spectral_sq = largest_eigenvalue_bound(wwt);
    let clip_sq = bounds.gradient * bounds.gradient;
    let shrink = 1.0 - T::CLIP_SHRINK;
    // The cheap bound must clear B_G by more than the rounding of its inputs could.
    let safe_bound = bounds.gradient * (1.0 - T::BOUND_MARGIN);
    let bias_check_sq = bounds.bias * bounds.bias * (1.0 - T::BOUND_MARGIN);
    let one = T::from_f64(1.0);
    let mut clip_sum = 0.0;
    let mut clipped = 0usize;
    let mut exact_norms = 0usize;
    let mut h = DVector::<f64>::zeros(r);
    let x_data = x.as_slice();

    let mut start = 0;
    while start < samples {
        let n = block.min(samples - start);
        // Zᵀ = Xᵀ·Wᵀ for the block (Xᵀ is a strided view of X's columns), then + b.
        gemm(
            one,
            Operand::transposed(&x_data[start * r..(start + n) * r], r, n),
            Operand::col_major(w_t, r, r),
            T::default(),
            Output::col_major(zt, n, r, block),
        );
        y_sq[..n].fill(T::default());
        z_sq[..n].fill(T::default());
        for i in 0..r {
            let z_col = &mut zt[i * block..i * block + n];
            let bi = b_block[i];
            for (zv, zs) in z_col.iter_mut().zip(&mut z_sq[..n]) {
                *zv += bi;
                *zs += *zv * *zv;
            }
            let y_col = &mut yt[i * block..i * block + n];
            y_col.copy_from_slice(z_col);
            T::neg_tanh_half_in_place(y_col);
            for (yv, ys) in y_col.iter().zip(&mut y_sq[..n]) {
                *ys += *yv * *yv;
            }
        }
        // Clip factors: the cheap bound first (vectorised); NaN marks samples that need the
        // exact norm. The bias clip never binds for R < B_h² (|ŷ_i| < 1), hence the rare path.
        for k in 0..n {
            let (ys, zs): (f64, f64) = (y_sq[k].into(), z_sq[k].into());
            let bound = w_norm + (ys * spectral_sq * zs).sqrt();
            clip[k] = T::from_f64(if bound <= safe_bound { 1.0 } else { f64::NAN });
            bias_clip[k] = one;
            if ys > bias_check_sq {
                let exact: f64 = (0..r).map(|i| yt[i * block + k].into().powi(2)).sum();
                if exact > bounds.bias * bounds.bias {
                    bias_clip[k] = T::from_f64(bounds.bias / exact.sqrt() * shrink);
                }
            }
        }
        let flagged = clip[..n].iter().filter(|c| c.is_nan_like()).count();
        exact_norms += flagged;
        if flagged * 8 > n {
            // Many samples need the exact norm (large W, heavy clipping): one f64 product
            // Qᵀ = Zᵀ·WWᵀ for the whole block, then vectorised per-sample dot products.
            let ExactBuffers { z64, y64, q64, u_sq, cross, y_sq64 } = &mut *exact;
            for i in 0..r {
                for k in 0..n {
                    z64[i * n + k] = zt[i * block + k].into();
                    y64[i * n + k] = yt[i * block + k].into();
                }
            }
            gemm(
                1.0,
                Operand::col_major(&z64[..r * n], n, r),
                Operand::col_major(wwt.as_slice(), r, r),
                0.0,
                Output::col_major(&mut q64[..r * n], n, r, n),
            );
            u_sq[..n].fill(0.0);
            cross[..n].fill(0.0);
            y_sq64[..n].fill(0.0);
            for i in 0..r {
                let (zc, yc, qc) = (&z64[i * n..][..n], &y64[i * n..][..n], &q64[i * n..][..n]);
                for k in 0..n {
                    u_sq[k] += zc[k] * qc[k];
                    cross[k] += yc[k] * qc[k];
                    y_sq64[k] += yc[k] * yc[k];
                }
            }
            for k in 0..n {
                if clip[k].is_nan_like() {
                    // ‖W + ŷuᵀ‖² = ‖W‖² + 2ŷᵀWWᵀz + ‖ŷ‖²·zᵀWWᵀz (module docs).
                    let norm_sq = w_norm_sq + 2.0 * cross[k] + y_sq64[k] * u_sq[k];
                    clip[k] = if norm_sq > clip_sq {
                        clipped += 1;
                        T::from_f64(bounds.gradient / norm_sq.sqrt() * shrink)
                    } else {
                        one
                    };
                }
            }
        } else {
            for k in 0..n {
                if !clip[k].is_nan_like() {
                    continue;
                }
                let (z_n, rest) = scratch.split_at_mut(r);
                let (y_n, q) = rest.split_at_mut(r);
                for i in 0..r {
                    z_n[i] = zt[i * block + k].into();
                    y_n[i] = yt[i * block + k].into();
                }
                // q = WWᵀz, column by column of the symmetric WWᵀ.
                q.fill(0.0);
                for (col, &zk) in wwt.as_slice().chunks_exact(r).zip(z_n.iter()) {
                    for (qi, pik) in q.iter_mut().zip(col) {
                        *qi += pik * zk;
                    }
                }
                // ‖W + ŷuᵀ‖² = ‖W‖² + 2ŷᵀWWᵀz + ‖ŷ‖²·zᵀWWᵀz (module docs), all in f64.
                let norm_sq = w_norm_sq + 2.0 * dot(y_n, q) + dot(y_n, y_n) * dot(z_n, q);
                clip[k] = if norm_sq > clip_sq {
                    clipped += 1;
                    T::from_f64(bounds.gradient / norm_sq.sqrt() * shrink)
                } else {
                    one
                };
            }
        }
        clip_sum += lane_sum(&clip[..n], None);
        for i in 0..r {
            let y_col = &mut yt[i * block..i * block + n];
            h[i] += lane_sum(y_col, Some(&bias_clip[..n]));
            for (yv, c) in y_col.iter_mut().zip(&clip[..n]) {
                *yv *= *c;
            }
        }
        // Σ c_n ŷ_n z_nᵀ for the block = (Ŷ_cᵀ)ᵀ·Zᵀ, both strided views of the block buffers;
        // each block's sum is added to the f64 accumulator.
        gemm(
            one,
            Operand { data: yt.as_slice(), rows: r, cols: n, row_stride: block, col_stride: 1 },
            Operand { data: zt.as_slice(), rows: n, cols: r, row_stride: 1, col_stride: block },
            T::default(),
            Output::col_major(outer_block, r, r, r),
        );
        for (acc, &v) in outer.iter_mut().zip(outer_block.iter()) {
            *acc += v.into();
        }
        start += n;
    }

    for i in 0..r {
        outer[(i, i)] += clip_sum;
    }
    let inv = 1.0 / samples as f64;
    let mut g = DMatrix::zeros(r, r);
    g.gemm(inv, outer, w, 0.0);
    h *= inv;
    SiteGradient { g, h, samples, clipped, exact_norms }
}

/// A rigorous upper bound on λ_max(WWᵀ) = σ_max(W)² that costs three R×R products: for the
/// symmetric positive semi-definite P = WWᵀ and Q = P/‖P‖_F, ‖Q⁸‖_F = (Σ μ_i¹⁶)^{1/2} ≥ μ_max⁸, so
/// λ_max ≤ ‖P‖_F·‖Q⁸‖_F^{1/8}, at most R^{1/16} (1.2 for R = 20) above the true value. A small
/// relative margin covers rounding; non-finite input gives +∞ (every sample then takes the exact
/// path, which is correct, and the controller restarts the run).
fn largest_eigenvalue_bound(wwt: &DMatrix<f64>) -> f64 {
    let scale = wwt.norm();
    if !scale.is_finite() {
        return f64::INFINITY;
    }
    if scale == 0.0 {
        return 0.0;
    }
    let q = wwt / scale;
    let q2 = &q * &q;
    let q4 = &q2 * &q2;
    let q8 = &q4 * &q4;
    scale * q8.norm().powf(0.125) * (1.0 + 1e-9)
}

/// Σ_k a_k (or Σ_k a_k·b_k) in f64 with eight interleaved partial sums: a fixed order (the
/// same bits everywhere) that the compiler can vectorise, unlike one running sum.
#[inline(always)]
fn lane_sum<T: BlockFloat>(a: &[T], b: Option<&[T]>) -> f64 {
    let mut acc = [0.0f64; 8];
    let chunks = a.len() / 8;
    match b {
        Some(b) => {
            for c in 0..chunks {
                for k in 0..8 {
                    acc[k] += a[c * 8 + k].into() * b[c * 8 + k].into();
                }
            }
        }
        None => {
            for c in 0..chunks {
                for k in 0..8 {
                    acc[k] += a[c * 8 + k].into();
                }
            }
        }
    }
    let mut tail = 0.0;
    for j in chunks * 8..a.len() {
        tail += a[j].into() * b.map_or(1.0, |b| b[j].into());
    }
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail
}

/// a·b with four interleaved partial sums: a fixed summation order (so every platform gets the
/// same bits) that does not serialise on one accumulator.
#[inline(always)]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 4];
    let mut chunks_a = a.chunks_exact(4);
    let mut chunks_b = b.chunks_exact(4);
    for (ca, cb) in (&mut chunks_a).zip(&mut chunks_b) {
        for k in 0..4 {
            acc[k] += ca[k] * cb[k];
        }
    }
    let mut tail = 0.0;
    for (x, y) in chunks_a.remainder().iter().zip(chunks_b.remainder()) {
        tail += x * y;
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eigenvalue_bound_is_above_and_close_to_the_true_value() {
        for seed in 0..30u64 {
            let r = 2 + (seed as usize % 19);
            let w = DMatrix::from_fn(r, r, |i, j| {
                (((i * 131 + j * 71 + seed as usize * 17) % 97) as f64 / 48.5 - 1.0)
                    * if i == 0 { 10.0 } else { 1.0 }
            });
            let p = &w * w.transpose();
            let exact = p.clone().symmetric_eigen().eigenvalues.max();
            let bound = largest_eigenvalue_bound(&p);
            assert!(bound >= exact, "r = {r}: {bound} < {exact}");
            assert!(bound <= exact * (r as f64).powf(1.0 / 16.0) * 1.000_001, "r = {r}");
        }
        assert_eq!(largest_eigenvalue_bound(&DMatrix::zeros(3, 3)), 0.0);
        let nan = DMatrix::from_element(2, 2, f64::NAN);
        assert_eq!(largest_eigenvalue_bound(&nan), f64::INFINITY);
    }
}
