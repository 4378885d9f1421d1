/*!
The small dense kernels of the gradient loop, written as plain loops over contiguous columns.

They replace general GEMM calls for the gradient's skinny shapes (R×R times R×n_b with R ≈ 20):
a general library spends much of its time packing such operands, while these loops stream each
column once. They also fix the order of every floating-point operation, so the result is the
same bit for bit on every target (native with or without AVX, wasm32), which a general GEMM
does not promise (its kernels sum in a CPU-dependent order).

Layouts: a "column set" is `count` columns of length `len` starting every `stride` elements of
one slice (column-major with leading dimension `stride`).
*/

/// Output columns per register tile: the accumulators of one tile stay in vector registers.
const TILE: usize = 32;
/// Independent partial sums in [`column_dots`]; a fixed number, so results do not depend on the
/// machine's vector width.
const LANES: usize = 16;

/// The element types of the kernels.
pub trait KernelFloat:
    Copy
    + Default
    + std::ops::Add<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::AddAssign
    + Into<f64>
{
}

impl KernelFloat for f32 {}
impl KernelFloat for f64 {}

/// out[·, i] = offset[i] + Σ_j coeff[i + j·r]·src[·, j] for i < r, over `len` rows.
///
/// `coeff` is an r×r column-major matrix (so row i of it weights the source columns), `src` has
/// r columns with leading dimension `src_stride` starting at `src_offset`, `out` r columns with
/// leading dimension `out_stride`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn combine_columns<T: KernelFloat>(
    out: &mut [T],
    out_stride: usize,
    src: &[T],
    src_offset: usize,
    src_stride: usize,
    coeff: &[T],
    offset: Option<&[T]>,
    r: usize,
    len: usize,
) {
    assert!(coeff.len() >= r * r && offset.is_none_or(|o| o.len() >= r));
    assert!(r == 0 || len == 0 || (r - 1) * out_stride + len <= out.len());
    assert!(r == 0 || len == 0 || src_offset + (r - 1) * src_stride + len <= src.len());
    for i in 0..r {
        let base = offset.map_or(T::default(), |o| o[i]);
        let out_col = &mut out[i * out_stride..i * out_stride + len];
        let mut t = 0;
        while t + TILE <= len {
            let mut acc = [base; TILE];
            for j in 0..r {
                let c = coeff[i + j * r];
                let s = &src[src_offset + j * src_stride + t..][..TILE];
                for (a, &v) in acc.iter_mut().zip(s) {
                    *a += c * v;
                }
            }
            out_col[t..t + TILE].copy_from_slice(&acc);
            t += TILE;
        }
        if t < len {
            let rest = len - t;
            let mut acc = [base; TILE];
            for j in 0..r {
                let c = coeff[i + j * r];
                let s = &src[src_offset + j * src_stride + t..][..rest];
                for (a, &v) in acc[..rest].iter_mut().zip(s) {
                    *a += c * v;
                }
            }
            out_col[t..].copy_from_slice(&acc[..rest]);
        }
    }
}

/// Partial dot products for a block: for i, j < r, lane k of `acc[(i + j·r)·LANES ..]` gains
/// Σ_{m ≡ k (mod LANES)} a[·, i]_m·b[·, j]_m over the whole chunks of LANES rows (lane 0 also
/// gains the tail), computed in block precision over `len` rows and added in f64. [`reduce_lanes`] turns the lanes into the dot products once all blocks are in.
/// `a` and `b` have leading dimension `stride`.
#[inline(always)]
pub(crate) fn column_dots<T: KernelFloat>(
    acc: &mut [f64],
    a: &[T],
    b: &[T],
    stride: usize,
    r: usize,
    len: usize,
) {
    assert!(acc.len() >= r * r * LANES);
    assert!(r == 0 || len == 0 || ((r - 1) * stride + len <= a.len().min(b.len())));
    for j in 0..r {
        let b_col = column(b, j, stride, len);
        for i in 0..r {
            let lanes = dot_lanes(column(a, i, stride, len), b_col);
            add_lanes(acc, i + j * r, &lanes);
        }
    }
}

/// Lane sums of a·b over whole chunks of LANES rows; the tail (fewer than LANES rows) is added
/// to lane 0 afterwards, so the lane array is only indexed by constants and stays in registers.
#[inline(always)]
fn dot_lanes<T: KernelFloat>(a: &[T], b: &[T]) -> [T; LANES] {
    let len = a.len();
    let full = len / LANES;
    let mut lanes = [T::default(); LANES];
    for c in 0..full {
        let xa: &[T; LANES] = a[c * LANES..(c + 1) * LANES].try_into().expect("chunk");
        let xb: &[T; LANES] = b[c * LANES..(c + 1) * LANES].try_into().expect("chunk");
        for k in 0..LANES {
            lanes[k] += xa[k] * xb[k];
        }
    }
    let mut tail = T::default();
    for m in full * LANES..len {
        tail += a[m] * b[m];
    }
    lanes[0] += tail;
    lanes
}

#[inline(always)]
fn column<T>(m: &[T], i: usize, stride: usize, len: usize) -> &[T] {
    &m[i * stride..i * stride + len]
}

#[inline(always)]
fn add_lanes<T: KernelFloat>(acc: &mut [f64], entry: usize, lanes: &[T; LANES]) {
    let dst: &mut [f64; LANES] =
        (&mut acc[entry * LANES..(entry + 1) * LANES]).try_into().expect("lanes");
    for k in 0..LANES {
        dst[k] += lanes[k].into();
    }
}

/// out[p] = the sum of the LANES partial sums of entry p, combined in a fixed tree.
pub(crate) fn reduce_lanes(acc: &[f64], out: &mut [f64]) {
    for (o, lanes) in out.iter_mut().zip(acc.chunks_exact(LANES)) {
        let mut v: [f64; LANES] = lanes.try_into().expect("lanes");
        let mut width = LANES;
        while width > 1 {
            width /= 2;
            for k in 0..width {
                v[k] += v[k + width];
            }
        }
        *o = v[0];
    }
}

/// Σ_k a_k (or Σ_k a_k·b_k) in f64 with LANES interleaved partial sums combined in a fixed tree:
/// the same bits everywhere, and vectorisable unlike one running sum.
#[inline(always)]
pub(crate) fn lane_sum<T: KernelFloat>(a: &[T], b: Option<&[T]>) -> f64 {
    let mut lanes = [0.0f64; LANES];
    let full = a.len() / LANES;
    for c in 0..full {
        let xa: &[T; LANES] = a[c * LANES..(c + 1) * LANES].try_into().expect("chunk");
        match b {
            Some(b) => {
                let xb: &[T; LANES] = b[c * LANES..(c + 1) * LANES].try_into().expect("chunk");
                for k in 0..LANES {
                    lanes[k] += xa[k].into() * xb[k].into();
                }
            }
            None => {
                for k in 0..LANES {
                    lanes[k] += xa[k].into();
                }
            }
        }
    }
    let mut tail = 0.0;
    for m in full * LANES..a.len() {
        tail += a[m].into() * b.map_or(1.0, |b| b[m].into());
    }
    lanes[0] += tail;
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for k in 0..width {
            lanes[k] += lanes[k + width];
        }
    }
    lanes[0]
}

/// Lanes per dot product in the accumulator of [`column_dots`].
pub(crate) const DOT_LANES: usize = LANES;

/// The product of two small column-major square matrices of order r, with a fixed summation
/// order (row i of `a` against column j of `b`, k ascending).
pub(crate) fn small_product(a: &[f64], b: &[f64], r: usize) -> Vec<f64> {
    let mut out = vec![0.0; r * r];
    for j in 0..r {
        for i in 0..r {
            let mut s = 0.0;
            for k in 0..r {
                s += a[i + k * r] * b[k + j * r];
            }
            out[i + j * r] = s;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::DMatrix;

    #[test]
    fn kernels_match_plain_matrix_products() {
        let (r, len, stride) = (5, 77, 80);
        let src: Vec<f64> =
            (0..stride * r + 3).map(|v| ((v * 37) % 101) as f64 / 50.0 - 1.0).collect();
        let coeff: Vec<f64> = (0..r * r).map(|v| ((v * 13) % 17) as f64 / 8.0 - 1.0).collect();
        let offset: Vec<f64> = (0..r).map(|v| v as f64 * 0.1).collect();
        let mut out = vec![0.0; stride * r];
        combine_columns(&mut out, stride, &src, 3, stride, &coeff, Some(&offset), r, len);
        let x = DMatrix::from_fn(len, r, |k, j| src[3 + j * stride + k]);
        let c = DMatrix::from_column_slice(r, r, &coeff);
        let expected = &x * c.transpose();
        for i in 0..r {
            for k in 0..len {
                assert!((out[i * stride + k] - expected[(k, i)] - offset[i]).abs() < 1e-12);
            }
        }

        let mut lanes = vec![0.0; r * r * LANES];
        column_dots(&mut lanes, &out, &src, stride, r, len / 2);
        column_dots(&mut lanes, &out[len / 2..], &src[len / 2..], stride, r, len - len / 2);
        let mut acc = vec![0.0; r * r];
        reduce_lanes(&lanes, &mut acc);
        acc.iter_mut().for_each(|v| *v += 1.0);
        let a = DMatrix::from_fn(len, r, |k, i| out[i * stride + k]);
        let b = DMatrix::from_fn(len, r, |k, j| src[j * stride + k]);
        let dots = a.transpose() * b;
        for i in 0..r {
            for j in 0..r {
                assert!((acc[i + j * r] - 1.0 - dots[(i, j)]).abs() < 1e-11);
            }
        }

        let p = small_product(&coeff, &coeff, r);
        let expected = &c * &c;
        assert!(p.iter().zip(expected.iter()).all(|(x, y)| (x - y).abs() < 1e-12));
    }
}
