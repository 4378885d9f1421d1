/*!
The arithmetic ceiling of the target this runs on, as the benchmarks see it: the rate of faer's
matrix product on square operands that stay in cache ([`CEILING_ORDER`] = 256: three 512 KB
matrices in f64), on one thread, in f64 and in f32.

capePCA's covariances (f64) and capeDJICA's gradient products (f32 blocks) are arithmetic-bound,
so on each target they are capped by how many multiply–adds its vector units retire per second.
`cape bench djica` measures this ceiling natively, `tests/bench_wasm_djica.rs` in the browser and
`scripts/bench_djica_numpy.py` for numpy's OpenBLAS, all the same way; the ratios between the
ceilings separate what the code could still win from what the hardware withholds (wasm's simd128
has 2 f64 / 4 f32 lanes and no fused multiply–add; AVX-512 has 8 / 16 lanes with one).

The clock is the caller's (`Instant` natively, `performance.now()` in a browser), in seconds.
*/

use faer::traits::ComplexField;
use faer::{Accum, Mat, Par};

/// n of the n×n·n×n products timed.
pub const CEILING_ORDER: usize = 256;

/// GFLOP/s of faer's f64 product (2n³ operations each).
pub fn gemm_gflops_f64(now_s: &mut dyn FnMut() -> f64) -> f64 {
    gemm_gflops(|v| v, now_s)
}

/// GFLOP/s of faer's f32 product (2n³ operations each).
pub fn gemm_gflops_f32(now_s: &mut dyn FnMut() -> f64) -> f64 {
    gemm_gflops(|v| v as f32, now_s)
}

/// The product of two fixed n×n matrices in the precision `of` converts to, timed.
fn gemm_gflops<T: ComplexField>(of: fn(f64) -> T, now_s: &mut dyn FnMut() -> f64) -> f64 {
    let n = CEILING_ORDER;
    let a = Mat::<T>::from_fn(n, n, |i, j| of(((i * 7 + j * 3) % 11) as f64 * 0.1));
    let b = Mat::<T>::from_fn(n, n, |i, j| of(((i * 5 + j) % 13) as f64 * 0.1));
    let mut c = Mat::<T>::zeros(n, n);
    best_rate(n, now_s, &mut || {
        faer::linalg::matmul::matmul(&mut c, Accum::Replace, &a, &b, of(1.0), Par::Seq);
        std::hint::black_box(&c);
    })
}

/// The best of three batches of at least 0.2 s each, after one product to warm the caches and
/// size the batches: the ceiling is what the target can reach, not its average under load.
fn best_rate(n: usize, now_s: &mut dyn FnMut() -> f64, product: &mut dyn FnMut()) -> f64 {
    let flops = 2.0 * (n as f64).powi(3);
    let t = now_s();
    product();
    let once = (now_s() - t).max(1e-6);
    let reps = ((0.2 / once).ceil() as usize).max(3);
    (0..3)
        .map(|_| {
            let t = now_s();
            for _ in 0..reps {
                product();
            }
            flops * reps as f64 / (now_s() - t).max(1e-9) / 1e9
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ceiling_is_a_positive_finite_rate_and_the_product_is_right() {
        let start = std::time::Instant::now();
        let mut now = || start.elapsed().as_secs_f64();
        for rate in [gemm_gflops_f64(&mut now), gemm_gflops_f32(&mut now)] {
            assert!(rate.is_finite() && rate > 0.0, "rate {rate}");
        }
        // The timed product is the real one: one entry against a direct sum.
        let n = CEILING_ORDER;
        let a = Mat::<f64>::from_fn(n, n, |i, j| ((i * 7 + j * 3) % 11) as f64 * 0.1);
        let b = Mat::<f64>::from_fn(n, n, |i, j| ((i * 5 + j) % 13) as f64 * 0.1);
        let mut c = Mat::<f64>::zeros(n, n);
        faer::linalg::matmul::matmul(&mut c, Accum::Replace, &a, &b, 1.0, Par::Seq);
        let direct: f64 = (0..n).map(|k| a[(3, k)] * b[(k, 5)]).sum();
        assert!((c[(3, 5)] - direct).abs() < 1e-9 * direct.abs());
    }
}
