/*!
The infomax nonlinearity ŷ = 1 − 2g(z) = −tanh(z/2), elementwise and fast, in f64 and f32.

This is the hot loop of capeDJICA (spec §9.8: the numpy reference is dominated by it). The
functions are written with only +, −, ×, ÷ and bit operations, branch-free, so that

- the compiler vectorises them (baseline SSE2; the in-place versions also have AVX2 and AVX-512
  paths chosen at run time on x86-64), and
- every path, native or wasm32, gives the same bits: no libm call whose last bit differs between
  platforms, and no fused multiply–add (Rust never contracts a·b + c on its own).

Accuracy (tested against `-(z/2).tanh()` in f64): absolute error below 4e-16 (two ulps of 1) for the f64 version
and below 2.5e-7 (two f32 ulps of 1) for the f32 one, for all finite z. The relative error near
z = 0 is larger (1 − e^{−|z|} cancels), which is irrelevant here because ŷ enters the gradient
next to terms of order 1.
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
    // Taylor series of e^r to degree 13 (remainder ≤ 0.347^14/14! ≈ 4e-18), evaluated by
    // Estrin's scheme: the same polynomial as Horner's rule with a dependency chain of 4
    // multiply–add levels instead of 13, which is what limits this loop's speed.
    let r2 = r * r;
    let r4 = r2 * r2;
    let r8 = r4 * r4;
    let a0 = 1.0 + r;
    let a1 = 0.5 + r * (1.0 / 6.0);
    let a2 = 1.0 / 24.0 + r * (1.0 / 120.0);
    let a3 = 1.0 / 720.0 + r * (1.0 / 5_040.0);
    let a4 = 1.0 / 40_320.0 + r * (1.0 / 362_880.0);
    let a5 = 1.0 / 3_628_800.0 + r * (1.0 / 39_916_800.0);
    let a6 = 1.0 / 479_001_600.0 + r * (1.0 / 6_227_020_800.0);
    let b0 = a0 + a1 * r2;
    let b1 = a2 + a3 * r2;
    let b2 = a4 + a5 * r2;
    let c0 = b0 + b1 * r4;
    let c1 = b2 + a6 * r4;
    let p = c0 + c1 * r8;
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

const LN2_HI_F32: f32 = f32::from_bits(0x3f31_8000);
const LN2_LO_F32: f32 = -2.121_944_4e-4;
const ROUNDING_MAGIC_F32: f32 = 12_582_912.0;
/// Below this e^x < 2.1e-9 and (1 − e)/(1 + e) rounds to exactly 1 in f32.
const EXP_FLOOR_F32: f32 = -20.0;

/// e^x for x ∈ [−20, 0] in f32: degree-7 Taylor series (remainder ≤ 0.347^8/8! ≈ 5.6e-9).
#[inline(always)]
fn exp_nonpositive_f32(x: f32) -> f32 {
    let shifted = x * std::f32::consts::LOG2_E + ROUNDING_MAGIC_F32;
    let k = shifted - ROUNDING_MAGIC_F32;
    let r = (x - k * LN2_HI_F32) - k * LN2_LO_F32;
    let r2 = r * r;
    let r4 = r2 * r2;
    let a0 = 1.0 + r;
    let a1 = 0.5 + r * (1.0 / 6.0);
    let a2 = 1.0 / 24.0 + r * (1.0 / 120.0);
    let a3 = 1.0 / 720.0 + r * (1.0 / 5_040.0);
    let p = (a0 + a1 * r2) + (a2 + a3 * r2) * r4;
    let k_int = shifted.to_bits().wrapping_sub(ROUNDING_MAGIC_F32.to_bits());
    p * f32::from_bits(k_int.wrapping_add(127) << 23)
}

/// ŷ = −tanh(z/2) for one f32 value.
#[inline(always)]
pub fn neg_tanh_half_f32(z: f32) -> f32 {
    let a = z.abs();
    let clamped = if -a < EXP_FLOOR_F32 { EXP_FLOOR_F32 } else { -a };
    let e = exp_nonpositive_f32(clamped);
    let t = (1.0 - e) / (1.0 + e);
    let y = -t.copysign(z);
    if z.is_nan() { z } else { y }
}

macro_rules! in_place_with_dispatch {
    ($name:ident, $t:ty, $scalar:ident, $doc:literal) => {
        #[doc = $doc]
        pub fn $name(values: &mut [$t]) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn avx512(values: &mut [$t]) {
                    for v in values.iter_mut() {
                        *v = $scalar(*v);
                    }
                }
                #[target_feature(enable = "avx2")]
                fn avx2(values: &mut [$t]) {
                    for v in values.iter_mut() {
                        *v = $scalar(*v);
                    }
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU supports AVX-512F (checked just above); the function
                    // only does safe slice arithmetic compiled with it enabled.
                    unsafe { avx512(values) };
                    return;
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: as above, for AVX2.
                    unsafe { avx2(values) };
                    return;
                }
            }
            for v in values.iter_mut() {
                *v = $scalar(*v);
            }
        }
    };
}

in_place_with_dispatch!(
    neg_tanh_half_in_place,
    f64,
    neg_tanh_half,
    "Maps every f64 value v to −tanh(v/2) in place."
);
in_place_with_dispatch!(
    neg_tanh_half_in_place_f32,
    f32,
    neg_tanh_half_f32,
    "Maps every f32 value v to −tanh(v/2) in place."
);

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
        assert!(worst < 4e-16, "worst absolute error {worst}");
        for z in [0.0, -0.0, 1e-300, -1e-300, 1e-12, 745.0, -745.0, 1e300, f64::MAX] {
            let err = (neg_tanh_half(z) - (-(z / 2.0).tanh())).abs();
            assert!(err < 4e-16, "z = {z}: error {err}");
        }
        assert_eq!(neg_tanh_half(f64::INFINITY), -1.0);
        assert_eq!(neg_tanh_half(f64::NEG_INFINITY), 1.0);
        assert!(neg_tanh_half(f64::NAN).is_nan());
    }

    #[test]
    fn f32_version_is_within_two_ulps_of_one() {
        let mut worst: f64 = 0.0;
        let mut z = -60.0f32;
        while z <= 60.0 {
            let err = (neg_tanh_half_f32(z) as f64 - (-(z as f64 / 2.0).tanh())).abs();
            worst = worst.max(err);
            z += 0.000_7;
        }
        assert!(worst < 2.5e-7, "worst absolute error {worst}");
        assert_eq!(neg_tanh_half_f32(f32::INFINITY), -1.0);
        assert_eq!(neg_tanh_half_f32(-1e30), 1.0);
        assert!(neg_tanh_half_f32(f32::NAN).is_nan());
        let mut values: Vec<f32> = (0..1001).map(|i| (i as f32 - 500.0) * 0.037).collect();
        let expected: Vec<f32> = values.iter().map(|&z| neg_tanh_half_f32(z)).collect();
        neg_tanh_half_in_place_f32(&mut values);
        assert_eq!(values, expected);
    }

    #[test]
    fn in_place_agrees_with_scalar_bit_for_bit() {
        let mut values: Vec<f64> = (0..1001).map(|i| (i as f64 - 500.0) * 0.037).collect();
        let expected: Vec<f64> = values.iter().map(|&z| neg_tanh_half(z)).collect();
        neg_tanh_half_in_place(&mut values);
        assert_eq!(values, expected);
    }
}
