/*!
Convolutions of probability vectors by real FFT (`realfft` over `rustfft`, pure Rust, SIMD on
x86 and wasm32). Round-off leaves values of order 1e-17 where the true value is 0; they are
clamped to 0 (adding at most that much mass, which only raises δ).
*/

use std::cell::RefCell;

use realfft::RealFftPlanner;
use realfft::num_complex::Complex64;

thread_local! {
    /// Plans (twiddle tables) kept per transform length: an accountant recomputed as a slider
    /// moves, or a calibration's bisection, reuses them instead of recomputing n sines and
    /// cosines each time (software functions in wasm32). Lengths are restricted to 2^k and
    /// 3·2^k ([`fast_len`]), so the cache holds at most two plans per octave.
    static PLANNER: RefCell<RealFftPlanner<f64>> = RefCell::new(RealFftPlanner::new());
}

/// Below this many multiply-adds the direct sum is faster than two transforms.
const DIRECT_BELOW: usize = 1 << 14;
/// A factor this short is convolved directly at any length (O(n·len), cheaper than three
/// transforms; composing with the identity or a point mass is then a scaled copy).
const DIRECT_SHORT: usize = 16;

/// The full linear convolution of `a` and `b` (length `a.len() + b.len() − 1`).
pub(crate) fn convolve(a: &[f64], b: &[f64]) -> Vec<f64> {
    let out_len = a.len() + b.len() - 1;
    if a.len().min(b.len()) <= DIRECT_SHORT || a.len().saturating_mul(b.len()) <= DIRECT_BELOW {
        let mut out = vec![0.0; out_len];
        for (i, &x) in a.iter().enumerate() {
            for (j, &y) in b.iter().enumerate() {
                out[i + j] += x * y;
            }
        }
        return out;
    }
    let n = fast_len(out_len);
    let fa = forward(a, n);
    let fb = forward(b, n);
    let product: Vec<Complex64> = fa.iter().zip(&fb).map(|(x, y)| x * y).collect();
    let mut out = inverse(product, n);
    out.truncate(out_len);
    clamp_round_off(&mut out);
    out
}

/// Entries `lo .. lo + window` of the `times`-fold self-convolution of `probs`, computed modulo a
/// transform length of at least `window` (mass outside the window wraps around; the caller
/// bounds it and counts it at +∞).
pub(crate) fn self_convolve_window(probs: &[f64], times: u64, lo: i64, window: usize) -> Vec<f64> {
    let n = fast_len(window.max(probs.len()));
    let spectrum: Vec<Complex64> = forward(probs, n).into_iter().map(|c| power(c, times)).collect();
    let cyclic = inverse(spectrum, n);
    let start = lo.rem_euclid(n as i64) as usize;
    let mut out: Vec<f64> = (0..window).map(|k| cyclic[(start + k) % n]).collect();
    clamp_round_off(&mut out);
    out
}

/// c^k by repeated squaring (log₂ k complex products; |c| ≤ 1 here, so nothing overflows).
fn power(mut c: Complex64, mut k: u64) -> Complex64 {
    let mut acc = Complex64::new(1.0, 0.0);
    while k > 0 {
        if k & 1 == 1 {
            acc *= c;
        }
        c *= c;
        k >>= 1;
    }
    acc
}

fn forward(x: &[f64], n: usize) -> Vec<Complex64> {
    let fft = PLANNER.with_borrow_mut(|p| p.plan_fft_forward(n));
    let mut input = vec![0.0; n];
    input[..x.len()].copy_from_slice(x);
    let mut spectrum = fft.make_output_vec();
    fft.process(&mut input, &mut spectrum).expect("buffer lengths come from the plan");
    spectrum
}

fn inverse(mut spectrum: Vec<Complex64>, n: usize) -> Vec<f64> {
    let fft = PLANNER.with_borrow_mut(|p| p.plan_fft_inverse(n));
    // A real signal's spectrum has real DC and Nyquist terms; products keep that only up to
    // round-off, which realfft would refuse.
    spectrum[0].im = 0.0;
    if n.is_multiple_of(2) {
        spectrum[n / 2].im = 0.0;
    }
    let mut out = fft.make_output_vec();
    fft.process(&mut spectrum, &mut out).expect("buffer lengths come from the plan");
    let scale = 1.0 / n as f64;
    out.iter_mut().for_each(|v| *v *= scale);
    out
}

fn clamp_round_off(v: &mut [f64]) {
    v.iter_mut().for_each(|p| *p = p.max(0.0));
}

/// The smallest n ≥ `len` of the form 2^k or 3·2^k (k ≥ 1): radix-2/3 kernels, and few distinct
/// lengths for the plan cache, at most a third longer than needed.
fn fast_len(len: usize) -> usize {
    let power_of_two = len.max(2).next_power_of_two();
    let three_halves = power_of_two / 4 * 3;
    if three_halves >= len && three_halves.is_multiple_of(2) { three_halves } else { power_of_two }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fft_convolution_matches_the_direct_sum() {
        let a: Vec<f64> = (0..300).map(|i| ((i * 37 % 101) as f64) / 1e4).collect();
        let b: Vec<f64> = (0..200).map(|i| ((i * 53 % 97) as f64) / 1e4).collect();
        let fast = convolve(&a, &b);
        let mut direct = vec![0.0; a.len() + b.len() - 1];
        for (i, x) in a.iter().enumerate() {
            for (j, y) in b.iter().enumerate() {
                direct[i + j] += x * y;
            }
        }
        for (x, y) in fast.iter().zip(&direct) {
            assert!((x - y).abs() < 1e-15, "{x} vs {y}");
        }
    }

    #[test]
    fn power_and_fast_len() {
        let c = Complex64::from_polar(0.99, 0.3);
        let p = power(c, 1001);
        let expect = Complex64::from_polar(0.99f64.powi(1001), 0.3 * 1001.0);
        assert!((p - expect).norm() < 1e-14);
        assert_eq!(fast_len(1), 2);
        assert_eq!(fast_len(3), 4);
        assert_eq!(fast_len(5), 6);
        assert_eq!(fast_len(7), 8);
        assert_eq!(fast_len(48), 48);
        assert_eq!(fast_len(49), 64);
        assert_eq!(fast_len(1001), 1024);
        assert_eq!(fast_len(1201), 1536);
        assert_eq!(fast_len(41_006), 49_152);
    }
}
