/*!
Convolutions of probability vectors by real FFT (`realfft` over `rustfft`, pure Rust, SIMD on
x86 and wasm32). Round-off leaves values of order 1e-17 where the true value is 0; they are
clamped to 0 (adding at most that much mass, which only raises δ).
*/

use realfft::RealFftPlanner;
use realfft::num_complex::Complex64;

/// Below this many multiply-adds the direct sum is faster than two transforms.
const DIRECT_BELOW: usize = 1 << 14;

/// The full linear convolution of `a` and `b` (length `a.len() + b.len() − 1`).
pub(crate) fn convolve(a: &[f64], b: &[f64]) -> Vec<f64> {
    let out_len = a.len() + b.len() - 1;
    if a.len().saturating_mul(b.len()) <= DIRECT_BELOW {
        let mut out = vec![0.0; out_len];
        for (i, &x) in a.iter().enumerate() {
            for (j, &y) in b.iter().enumerate() {
                out[i + j] += x * y;
            }
        }
        return out;
    }
    let n = fast_len(out_len);
    let mut planner = RealFftPlanner::<f64>::new();
    let fa = forward(&mut planner, a, n);
    let fb = forward(&mut planner, b, n);
    let product: Vec<Complex64> = fa.iter().zip(&fb).map(|(x, y)| x * y).collect();
    let mut out = inverse(&mut planner, product, n);
    out.truncate(out_len);
    clamp_round_off(&mut out);
    out
}

/// Entries `lo .. lo + window` of the `times`-fold self-convolution of `probs`, computed modulo a
/// transform length of at least `window` (mass outside the window wraps around; the caller
/// bounds it and counts it at +∞).
pub(crate) fn self_convolve_window(probs: &[f64], times: u64, lo: i64, window: usize) -> Vec<f64> {
    let n = fast_len(window.max(probs.len()));
    let mut planner = RealFftPlanner::<f64>::new();
    let spectrum: Vec<Complex64> =
        forward(&mut planner, probs, n).into_iter().map(|c| power(c, times)).collect();
    let cyclic = inverse(&mut planner, spectrum, n);
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

fn forward(planner: &mut RealFftPlanner<f64>, x: &[f64], n: usize) -> Vec<Complex64> {
    let fft = planner.plan_fft_forward(n);
    let mut input = vec![0.0; n];
    input[..x.len()].copy_from_slice(x);
    let mut spectrum = fft.make_output_vec();
    fft.process(&mut input, &mut spectrum).expect("buffer lengths come from the plan");
    spectrum
}

fn inverse(planner: &mut RealFftPlanner<f64>, mut spectrum: Vec<Complex64>, n: usize) -> Vec<f64> {
    let fft = planner.plan_fft_inverse(n);
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

/// The smallest even n ≥ `len` whose only prime factors are 2, 3 and 5 (fast for rustfft).
fn fast_len(len: usize) -> usize {
    let mut n = len.max(2);
    loop {
        let mut m = n;
        for p in [2, 3, 5] {
            while m.is_multiple_of(p) {
                m /= p;
            }
        }
        if m == 1 && n.is_multiple_of(2) {
            return n;
        }
        n += 1;
    }
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
        assert_eq!(fast_len(7), 8);
        assert_eq!(fast_len(61), 64);
        assert_eq!(fast_len(1001), 1024);
        assert_eq!(fast_len(1201), 1250);
    }
}
