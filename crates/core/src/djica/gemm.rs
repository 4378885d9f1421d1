/*!
C ← α·A·B + β·C on strided operands, without copies: the two matrix products of the gradient
loop and the covariance of capePCA need transposed views (Xᵀ, Zᵀ), which nalgebra's `gemm`
accepts but mishandles when a dimension is ≤ 5 (its small-matrix fallback reads a strided column
as if it were contiguous and runs off the slice). This calls `matrixmultiply` directly, for every
size, after checking that every index the product touches lies inside its slice.
*/

/// The element types `matrixmultiply` multiplies (f32 and f64).
pub trait GemmScalar: Copy {
    /// # Safety
    /// As `matrixmultiply::dgemm`/`sgemm`: every element addressed must be inside its
    /// allocation and the output elements must not alias each other or the inputs.
    #[allow(clippy::too_many_arguments)]
    unsafe fn raw_gemm(
        m: usize,
        k: usize,
        n: usize,
        alpha: Self,
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        beta: Self,
        c: *mut Self,
        rsc: isize,
        csc: isize,
    );
}

impl GemmScalar for f64 {
    unsafe fn raw_gemm(
        m: usize,
        k: usize,
        n: usize,
        alpha: f64,
        a: *const f64,
        rsa: isize,
        csa: isize,
        b: *const f64,
        rsb: isize,
        csb: isize,
        beta: f64,
        c: *mut f64,
        rsc: isize,
        csc: isize,
    ) {
        // SAFETY: forwarded precondition.
        unsafe {
            matrixmultiply::dgemm(m, k, n, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc)
        }
    }
}

impl GemmScalar for f32 {
    unsafe fn raw_gemm(
        m: usize,
        k: usize,
        n: usize,
        alpha: f32,
        a: *const f32,
        rsa: isize,
        csa: isize,
        b: *const f32,
        rsb: isize,
        csb: isize,
        beta: f32,
        c: *mut f32,
        rsc: isize,
        csc: isize,
    ) {
        // SAFETY: forwarded precondition.
        unsafe {
            matrixmultiply::sgemm(m, k, n, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc)
        }
    }
}

/// A read-only operand: element (i, j) is `data[i·row_stride + j·col_stride]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Operand<'a, T> {
    pub data: &'a [T],
    pub rows: usize,
    pub cols: usize,
    pub row_stride: usize,
    pub col_stride: usize,
}

impl<'a, T> Operand<'a, T> {
    /// A column-major matrix stored contiguously.
    pub fn col_major(data: &'a [T], rows: usize, cols: usize) -> Self {
        Operand { data, rows, cols, row_stride: 1, col_stride: rows }
    }

    /// The transpose of a contiguous column-major `rows`×`cols` matrix, seen as `cols`×`rows`.
    pub fn transposed(data: &'a [T], rows: usize, cols: usize) -> Self {
        Operand { data, rows: cols, cols: rows, row_stride: rows, col_stride: 1 }
    }

    fn fits(&self) -> bool {
        self.rows == 0
            || self.cols == 0
            || (self.rows - 1) * self.row_stride + (self.cols - 1) * self.col_stride
                < self.data.len()
    }
}

/// The output: element (i, j) is `data[i·row_stride + j·col_stride]`; distinct (i, j) must map
/// to distinct elements.
#[derive(Debug)]
pub(crate) struct Output<'a, T> {
    pub data: &'a mut [T],
    pub rows: usize,
    pub cols: usize,
    pub row_stride: usize,
    pub col_stride: usize,
}

impl<'a, T> Output<'a, T> {
    /// A column-major matrix stored contiguously, or the top `rows` rows of a column-major
    /// matrix with leading dimension `ld`.
    pub fn col_major(data: &'a mut [T], rows: usize, cols: usize, ld: usize) -> Self {
        Output { data, rows, cols, row_stride: 1, col_stride: ld }
    }
}

/// C ← α·A·B + β·C.
///
/// # Panics
/// If the shapes do not chain, an operand's strides reach outside its slice, or the output's
/// strides could map two elements to one place: all are programming errors of this crate.
pub(crate) fn gemm<T: GemmScalar>(
    alpha: T,
    a: Operand<'_, T>,
    b: Operand<'_, T>,
    beta: T,
    c: Output<'_, T>,
) {
    assert!(
        a.cols == b.rows && a.rows == c.rows && b.cols == c.cols,
        "gemm shapes: ({}×{})·({}×{}) into {}×{}",
        a.rows,
        a.cols,
        b.rows,
        b.cols,
        c.rows,
        c.cols
    );
    assert!(a.fits() && b.fits(), "gemm operand strides reach outside its data");
    let c_fits = c.rows == 0
        || c.cols == 0
        || (c.rows - 1) * c.row_stride + (c.cols - 1) * c.col_stride < c.data.len();
    // Column-major-like outputs (unit row stride, columns at least `rows` apart) never alias.
    let c_distinct = c.cols <= 1 || (c.row_stride == 1 && c.col_stride >= c.rows) || c.rows <= 1;
    assert!(c_fits && c_distinct, "gemm output strides are invalid");
    if c.rows == 0 || c.cols == 0 {
        return;
    }
    // SAFETY: the asserts above guarantee that every (i, k), (k, j) and (i, j) the product reads
    // or writes lies inside `a.data`, `b.data` and `c.data` respectively, that no two output
    // elements share a location, and `c.data` is borrowed mutably (no overlap with a or b).
    // matrixmultiply reads only those elements (and, if β = 0, does not read C).
    unsafe {
        T::raw_gemm(
            c.rows,
            a.cols,
            c.cols,
            alpha,
            a.data.as_ptr(),
            a.row_stride as isize,
            a.col_stride as isize,
            b.data.as_ptr(),
            b.row_stride as isize,
            b.col_stride as isize,
            beta,
            c.data.as_mut_ptr(),
            c.row_stride as isize,
            c.col_stride as isize,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::DMatrix;

    #[test]
    fn strided_products_match_nalgebra_for_small_and_large_shapes() {
        for (m, k, n) in [(1, 1, 1), (3, 2, 4), (2, 7, 3), (9, 6, 11)] {
            let a = DMatrix::from_fn(m, k, |i, j| (i * 7 + j * 3) as f64 * 0.1 - 1.0);
            let b = DMatrix::from_fn(n, k, |i, j| (i + 2 * j) as f64 * 0.05 - 0.3);
            // C (in the top m rows of an (m+2)×n buffer) = 2·A·Bᵀ + 0.5·C.
            let ld = m + 2;
            let mut buf = vec![1.0; ld * n];
            gemm(
                2.0,
                Operand::col_major(a.as_slice(), m, k),
                Operand::transposed(b.as_slice(), n, k),
                0.5,
                Output::col_major(&mut buf, m, n, ld),
            );
            let expected = (&a * b.transpose()) * 2.0 + DMatrix::from_element(m, n, 0.5);
            for i in 0..m {
                for j in 0..n {
                    assert!((buf[i + j * ld] - expected[(i, j)]).abs() < 1e-12);
                }
            }
            for j in 0..n {
                assert_eq!(buf[m + j * ld], 1.0, "rows below the output are untouched");
            }
        }
    }
}
