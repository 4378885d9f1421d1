/*!
The infomax nonlinearity ŷ = 1 − 2g(z) = −tanh(z/2), elementwise and fast.

This is the hot loop of capeDJICA (spec §9.8: the numpy reference is dominated by it). The
function is written with only +, −, ×, ÷ and bit operations, branch-free, so that

- the compiler vectorises it (2 lanes with baseline SSE2; [`neg_tanh_half_in_place`] also has an
  AVX2 path chosen at run time on x86-64), and
- every path, native or wasm32, gives the same bits: no libm call whose last bit differs between
  platforms, and no fused multiply–add (Rust never contracts a·b + c on its own).

Accuracy: the absolute error against `-(z/2).tanh()` is below 3e-16 for all finite z (tested);
the relative error near z = 0 is larger (1 − e^{−|z|} cancels), which is irrelevant here because
ŷ enters the gradient additively next to terms of order 1.
*/

/// ln 2 split as in fdlibm: the high part has trailing zero bits so k·LN2_HI is exact.
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
const INV_LN2: f64 = std::f64::consts::LOG2_E;
/// 1.5·2^52: adding it rounds a float of magnitude < 2^51 to the nearest integer, and the
/// integer then sits in the low bits of the sum.
const ROUNDING_MAGIC: f64 = 6_755_399_441_055_744.0;
/// Below this e^x is < 4.3e-18 and (1 − e)/(1 + e) rounds to exactly 1.
const EXP_FLOOR: f64 = -40.0;

/// e^x for x ∈ [−40, 0] (callers clamp), with error well below one ulp of the results used.
#[inline(always)]
fn exp_nonpositive(x: f64) -> f64 {
    let shifted = x * INV_LN2 + ROUNDING_MAGIC;
    let k = shifted - ROUNDING_MAGIC;
    // |r| ≤ ln2/2: Cody–Waite reduction with a two-part ln 2.
    let r = (x - k * LN2_HI) - k * LN2_LO;
    // Taylor series of e^r to degree 13: remainder ≤ 0.347^14/14! ≈ 4e-18.
    let mut p = 1.0 / 6_227_020_800.0;
    p = p * r + 1.0 / 479_001_600.0;
    p = p * r + 1.0 / 39_916_800.0;
    p = p * r + 1.0 / 3_628_800.0;
    p = p * r + 1.0 / 362_880.0;
    p = p * r + 1.0 / 40_320.0;
    p = p * r + 1.0 / 5_040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    // 2^k with k ∈ [−58, 0]: the integer k is in the low bits of `shifted`.
    let k_int = shifted.to_bits().wrapping_sub(ROUNDING_MAGIC.to_bits());
    let two_to_k = f64::from_bits(k_int.wrapping_add(1023) << 52);
    p * two_to_k
}

/// ŷ = 1 − 2/(1 + e^{−z}) = −tanh(z/2) for one value.
#[inline(always)]
pub fn neg_tanh_half(z: f64) -> f64 {
    let a = z.abs();
    let clamped = if -a < EXP_FLOOR { EXP_FLOOR } else { -a };
    let e = exp_nonpositive(clamped);
    let t = (1.0 - e) / (1.0 + e);
    // tanh is odd: ŷ has the opposite sign of z. NaN stays NaN (it propagates to the blow-up
    // check of the learning-rate controller).
    let y = -t.copysign(z);
    if z.is_nan() { z } else { y }
}

/// Maps every value v to −tanh(v/2) in place.
pub fn neg_tanh_half_in_place(values: &mut [f64]) {
    #[cfg(all(target_arch = "x86_64", not(target_feature = "avx2")))]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above); the function only does
            // safe slice arithmetic compiled with AVX2 enabled.
            unsafe { in_place_avx2(values) };
            return;
        }
    }
    in_place_portable(values);
}

fn in_place_portable(values: &mut [f64]) {
    for v in values.iter_mut() {
        *v = neg_tanh_half(*v);
    }
}

#[cfg(all(target_arch = "x86_64", not(target_feature = "avx2")))]
#[target_feature(enable = "avx2")]
fn in_place_avx2(values: &mut [f64]) {
    for v in values.iter_mut() {
        *v = neg_tanh_half(*v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_std_tanh_to_a_few_ulp_of_one() {
        let mut worst: f64 = 0.0;
        let mut z = -60.0;
        while z <= 60.0 {
            let err = (neg_tanh_half(z) - (-(z / 2.0).tanh())).abs();
            worst = worst.max(err);
            z += 0.001_7;
        }
        assert!(worst < 3e-16, "worst absolute error {worst}");
        for z in [0.0, -0.0, 1e-300, -1e-300, 1e-12, 745.0, -745.0, 1e300, f64::MAX] {
            let err = (neg_tanh_half(z) - (-(z / 2.0).tanh())).abs();
            assert!(err < 3e-16, "z = {z}: error {err}");
        }
        assert_eq!(neg_tanh_half(f64::INFINITY), -1.0);
        assert_eq!(neg_tanh_half(f64::NEG_INFINITY), 1.0);
        assert!(neg_tanh_half(f64::NAN).is_nan());
    }

    #[test]
    fn in_place_agrees_with_scalar_bit_for_bit() {
        let mut values: Vec<f64> = (0..1001).map(|i| (i as f64 - 500.0) * 0.037).collect();
        let expected: Vec<f64> = values.iter().map(|&z| neg_tanh_half(z)).collect();
        neg_tanh_half_in_place(&mut values);
        assert_eq!(values, expected);
    }
}
