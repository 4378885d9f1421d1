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
below B_G the clip cannot bind (c_n = 1). Only the remaining samples pay O(R²) for q_n, in f64
(so the clip decision is as exact as the f64 reference, whatever the block precision).

With clip factors c_n, Σ c_n G_n = (Σ c_n · I + Σ c_n ŷ_n z_nᵀ)·W, and the middle sum is one
matrix product. Per block of samples the work is two R×R×n_b products (Z = WX + b and
Ŷ_c·Zᵀ, see [`super::kernels`]) plus the nonlinearity, in preallocated buffers laid out
samples × components, so the per-sample norms, clip factors and scalings are vector operations
over the samples.

Precision ([`BlockFloat`]): the samples and block buffers are f32 or f64; the cross-block sums,
W, b, the exact norms and the released gradient are always f64. In f32 a clip factor is shrunk
by 1e-6 so that rounding ŷ cannot lift a clipped gradient above B_G. Measured on whitened
M = 256 data, the f32 gradient differs from the f64 one by 1e-7 to 1e-6 relative.

Speed (release build, one site, R = 20, CPU time on a loaded 2-core machine): about 1.2 ms at
N_s = 16,000 when few samples approach the clip and 2.0 ms when nearly all do (f32); the numpy
reference takes 4.4 ms.

Determinism: the whole body is compiled three times (baseline, AVX2, AVX-512F) with run-time
dispatch; the kernels fix the order of every operation, so all three give the same bits.
*/

use super::kernels::{
    DOT_LANES, KernelFloat, column_dots, combine_columns, lane_sum, reduce_lanes, small_product,
};
use super::logistic::{
    neg_tanh_half, neg_tanh_half_f32, neg_tanh_half_in_place, neg_tanh_half_in_place_f32,
};
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
    KernelFloat
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
    /// NaN of this type.
    fn nan() -> Self;
    /// −tanh(self/2) (inlined into the caller, so it vectorises with the caller's features).
    fn neg_tanh_half(self) -> Self;
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
    fn nan() -> Self {
        f64::NAN
    }
    #[inline(always)]
    fn neg_tanh_half(self) -> Self {
        neg_tanh_half(self)
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
    fn nan() -> Self {
        f32::NAN
    }
    #[inline(always)]
    fn neg_tanh_half(self) -> Self {
        neg_tanh_half_f32(self)
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
    w_block: Vec<T>,
    wwt: Vec<f64>,
    outer_lanes: Vec<f64>,
    outer: Vec<f64>,
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
            w_block: zeros(components * components),
            wwt: vec![0.0; components * components],
            outer_lanes: vec![0.0; components * components * DOT_LANES],
            outer: vec![0.0; components * components],
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

/// A site's projected samples X_s^r in the layout the gradient kernels read: component-major,
/// each component's time course contiguous (the transpose of the R×N_s matrix), in block
/// precision.
#[derive(Clone, Debug, PartialEq)]
pub struct SampleColumns<T> {
    data: Vec<T>,
    components: usize,
    samples: usize,
}

impl<T: BlockFloat> SampleColumns<T> {
    /// From the R×N_s matrix X_s^r (columns are time points).
    pub fn from_matrix(x: &DMatrix<f64>) -> Self {
        let (components, samples) = x.shape();
        let mut data = Vec::with_capacity(components * samples);
        for j in 0..components {
            data.extend(x.row(j).iter().map(|&v| T::from_f64(v)));
        }
        SampleColumns { data, components, samples }
    }

    /// R.
    pub fn components(&self) -> usize {
        self.components
    }

    /// N_s.
    pub fn samples(&self) -> usize {
        self.samples
    }
}

/// Algorithm 4 steps 2–5 at one site: the clipped mean gradient of the infomax objective at
/// (W, b) over the samples `x`, with block buffers of `x`'s element type.
///
/// On x86-64 the body is compiled a second and third time with AVX-512F and AVX2 enabled and the
/// widest one the CPU supports runs; all three perform the same operations in the same order,
/// so the result is the same bit for bit.
///
/// # Panics
/// If the shapes disagree (W must be R×R, b of length R, x with R rows) or `x` has no columns:
/// the caller owns all three and checks them once per run.
pub fn site_gradient<T: BlockFloat>(
    x: &SampleColumns<T>,
    w: &DMatrix<f64>,
    b: &DVector<f64>,
    bounds: ClipBounds,
    ws: &mut GradientWorkspace<T>,
) -> SiteGradient {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f")]
        fn avx512<T: BlockFloat>(
            x: &SampleColumns<T>,
            w: &DMatrix<f64>,
            b: &DVector<f64>,
            bounds: ClipBounds,
            ws: &mut GradientWorkspace<T>,
        ) -> SiteGradient {
            site_gradient_body(x, w, b, bounds, ws)
        }
        #[target_feature(enable = "avx2")]
        fn avx2<T: BlockFloat>(
            x: &SampleColumns<T>,
            w: &DMatrix<f64>,
            b: &DVector<f64>,
            bounds: ClipBounds,
            ws: &mut GradientWorkspace<T>,
        ) -> SiteGradient {
            site_gradient_body(x, w, b, bounds, ws)
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            return unsafe { avx512(x, w, b, bounds, ws) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { avx2(x, w, b, bounds, ws) };
        }
    }
    site_gradient_body(x, w, b, bounds, ws)
}

/// [`site_gradient`] compiled for the baseline target only (no run-time dispatch): the same
/// operations in the same order, so it must agree bit for bit; exposed so tests can check that.
#[doc(hidden)]
pub fn site_gradient_portable<T: BlockFloat>(
    x: &SampleColumns<T>,
    w: &DMatrix<f64>,
    b: &DVector<f64>,
    bounds: ClipBounds,
    ws: &mut GradientWorkspace<T>,
) -> SiteGradient {
    site_gradient_body(x, w, b, bounds, ws)
}

#[inline(always)]
fn site_gradient_body<T: BlockFloat>(
    x: &SampleColumns<T>,
    w: &DMatrix<f64>,
    b: &DVector<f64>,
    bounds: ClipBounds,
    ws: &mut GradientWorkspace<T>,
) -> SiteGradient {
    let r = w.nrows();
    let samples = x.samples;
    assert!(
        w.ncols() == r && b.len() == r && x.components == r && samples > 0,
        "site_gradient: W is {}×{}, b has {} entries, X is {}×{}",
        w.nrows(),
        w.ncols(),
        b.len(),
        x.components,
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
        w_block,
        wwt,
        outer_lanes,
        outer,
        exact,
        ..
    } = ws;
    let block = *block;
    let w_data = w.as_slice();
    let w_transposed = w.transpose();
    wwt.copy_from_slice(&small_product(w_data, w_transposed.as_slice(), r));
    outer_lanes.fill(0.0);
    for (wb, &v) in w_block.iter_mut().zip(w_data) {
        *wb = T::from_f64(v);
    }
    let b_block: Vec<T> = b.iter().map(|&v| T::from_f64(v)).collect();
    let w_norm_sq = w.norm_squared();
    let w_norm = w_norm_sq.sqrt();
    let spectral_sq = largest_eigenvalue_bound(wwt, r);
    let clip_sq = bounds.gradient * bounds.gradient;
    let shrink = 1.0 - T::CLIP_SHRINK;
    // The cheap bound must clear B_G by more than the rounding of its inputs could.
    let safe_bound = bounds.gradient * (1.0 - T::BOUND_MARGIN);
    let bias_check_sq = bounds.bias * bounds.bias * (1.0 - T::BOUND_MARGIN);
    let one = T::from_f64(1.0);
    let zero = T::default();
    let mut clip_sum = 0.0;
    let mut clipped = 0usize;
    let mut exact_norms = 0usize;
    let mut h = DVector::<f64>::zeros(r);

    let mut start = 0;
    while start < samples {
        let n = block.min(samples - start);
        // Zᵀ = Xᵀ·Wᵀ + 1·bᵀ for the block: column i is b_i + Σ_j W_ij·x_j.
        combine_columns(zt, block, &x.data, start, samples, w_block, Some(&b_block), r, n);
        let (y_sq, z_sq, clip, bias_clip) =
            (&mut y_sq[..n], &mut z_sq[..n], &mut clip[..n], &mut bias_clip[..n]);
        y_sq.fill(zero);
        z_sq.fill(zero);
        for (z_col, y_col) in zt.chunks_exact(block).zip(yt.chunks_exact_mut(block)) {
            let (z_col, y_col) = (&z_col[..n], &mut y_col[..n]);
            for ((&z, yv), (zs, ys)) in
                z_col.iter().zip(y_col.iter_mut()).zip(z_sq.iter_mut().zip(y_sq.iter_mut()))
            {
                let y = z.neg_tanh_half();
                *yv = y;
                *zs += z * z;
                *ys += y * y;
            }
        }
        // Clip factors: the cheap bound first; NaN marks samples that need the exact norm.
        let mut flagged = 0usize;
        let mut bias_near = false;
        for (((c, d), &ys), &zs) in
            clip.iter_mut().zip(bias_clip.iter_mut()).zip(y_sq.iter()).zip(z_sq.iter())
        {
            let (ys, zs): (f64, f64) = (ys.into(), zs.into());
            let proven = w_norm + (ys * spectral_sq * zs).sqrt() <= safe_bound;
            flagged += usize::from(!proven);
            *c = if proven { one } else { T::nan() };
            *d = one;
            bias_near |= ys > bias_check_sq;
        }
        if bias_near {
            // Only reachable when R ≥ B_h² (|ŷ_i| < 1): an exact f64 bias norm per sample.
            for k in 0..n {
                let exact: f64 = (0..r).map(|i| yt[i * block + k].into().powi(2)).sum();
                if exact > bounds.bias * bounds.bias {
                    bias_clip[k] = T::from_f64(bounds.bias / exact.sqrt() * shrink);
                }
            }
        }
        exact_norms += flagged;
        let exact_clip = |norm_sq: f64| {
            if norm_sq > clip_sq {
                (T::from_f64(bounds.gradient / norm_sq.sqrt() * shrink), 1usize)
            } else {
                (one, 0)
            }
        };
        if flagged * 8 > n {
            // Many samples need the exact norm (large W, heavy clipping): one f64 product
            // Qᵀ = Zᵀ·WWᵀ for the whole block, then per-sample dot products over the samples.
            let ExactBuffers { z64, y64, q64, u_sq, cross, y_sq64 } = &mut *exact;
            let (z64, y64, q64) = (&mut z64[..r * n], &mut y64[..r * n], &mut q64[..r * n]);
            for (((zd, yd), zs), ys) in z64
                .chunks_exact_mut(n)
                .zip(y64.chunks_exact_mut(n))
                .zip(zt.chunks_exact(block))
                .zip(yt.chunks_exact(block))
            {
                for ((zd, yd), (&zs, &ys)) in
                    zd.iter_mut().zip(yd.iter_mut()).zip(zs[..n].iter().zip(&ys[..n]))
                {
                    *zd = zs.into();
                    *yd = ys.into();
                }
            }
            combine_columns(q64, n, z64, 0, n, wwt, None, r, n);
            let (u_sq, cross, y_sq64) = (&mut u_sq[..n], &mut cross[..n], &mut y_sq64[..n]);
            u_sq.fill(0.0);
            cross.fill(0.0);
            y_sq64.fill(0.0);
            for ((zc, yc), qc) in
                z64.chunks_exact(n).zip(y64.chunks_exact(n)).zip(q64.chunks_exact(n))
            {
                for (((u, c), ys), ((&z, &y), &q)) in u_sq
                    .iter_mut()
                    .zip(cross.iter_mut())
                    .zip(y_sq64.iter_mut())
                    .zip(zc.iter().zip(yc).zip(qc))
                {
                    *u += z * q;
                    *c += y * q;
                    *ys += y * y;
                }
            }
            for (((c, &u), &x), &ys) in
                clip.iter_mut().zip(u_sq.iter()).zip(cross.iter()).zip(y_sq64.iter())
            {
                if c.is_nan_like() {
                    // ‖W + ŷuᵀ‖² = ‖W‖² + 2ŷᵀWWᵀz + ‖ŷ‖²·zᵀWWᵀz (module docs).
                    let (factor, hit) = exact_clip(w_norm_sq + 2.0 * x + ys * u);
                    *c = factor;
                    clipped += hit;
                }
            }
        } else if flagged > 0 {
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
                for (col, &zk) in wwt.chunks_exact(r).zip(z_n.iter()) {
                    for (qi, pik) in q.iter_mut().zip(col) {
                        *qi += pik * zk;
                    }
                }
                let (factor, hit) =
                    exact_clip(w_norm_sq + 2.0 * dot(y_n, q) + dot(y_n, y_n) * dot(z_n, q));
                clip[k] = factor;
                clipped += hit;
            }
        }
        clip_sum += lane_sum(clip, None);
        for (i, y_col) in yt.chunks_exact_mut(block).enumerate() {
            let y_col = &mut y_col[..n];
            h[i] += lane_sum(y_col, Some(bias_clip));
            for (yv, &c) in y_col.iter_mut().zip(clip.iter()) {
                *yv *= c;
            }
        }
        // Σ c_n ŷ_n z_nᵀ for the block: entry (i, j) is the dot product of the clipped ŷ_i and
        // z_j columns, added to the f64 accumulator.
        column_dots(outer_lanes, yt, zt, block, r, n);
        start += n;
    }

    reduce_lanes(outer_lanes, outer);
    for i in 0..r {
        outer[i + i * r] += clip_sum;
    }
    let inv = 1.0 / samples as f64;
    let g = DMatrix::from_vec(r, r, small_product(outer, w_data, r)) * inv;
    h *= inv;
    SiteGradient { g, h, samples, clipped, exact_norms }
}

/// A rigorous upper bound on λ_max(WWᵀ) = σ_max(W)² that costs three R×R products: for the
/// symmetric positive semi-definite P = WWᵀ and Q = P/‖P‖_F, ‖Q⁸‖_F = (Σ μ_i¹⁶)^{1/2} ≥ μ_max⁸, so
/// λ_max ≤ ‖P‖_F·‖Q⁸‖_F^{1/8}, at most R^{1/16} (1.2 for R = 20) above the true value. A small
/// relative margin covers rounding; non-finite input gives +∞ (every sample then takes the exact
/// path, which is correct, and the controller restarts the run).
fn largest_eigenvalue_bound(wwt: &[f64], r: usize) -> f64 {
    let scale = wwt.iter().map(|v| v * v).sum::<f64>().sqrt();
    if !scale.is_finite() {
        return f64::INFINITY;
    }
    if scale == 0.0 {
        return 0.0;
    }
    let q: Vec<f64> = wwt.iter().map(|v| v / scale).collect();
    let q2 = small_product(&q, &q, r);
    let q4 = small_product(&q2, &q2, r);
    let q8 = small_product(&q4, &q4, r);
    let q8_norm = q8.iter().map(|v| v * v).sum::<f64>().sqrt();
    scale * q8_norm.powf(0.125) * (1.0 + 1e-9)
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
            let bound = largest_eigenvalue_bound(p.as_slice(), r);
            assert!(bound >= exact, "r = {r}: {bound} < {exact}");
            assert!(bound <= exact * (r as f64).powf(1.0 / 16.0) * 1.000_001, "r = {r}");
        }
        assert_eq!(largest_eigenvalue_bound(&[0.0; 9], 3), 0.0);
        assert_eq!(largest_eigenvalue_bound(&[f64::NAN; 4], 2), f64::INFINITY);
    }
}
