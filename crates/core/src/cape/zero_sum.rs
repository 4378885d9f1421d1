/*!
Algorithm 1 (zero-sum noise, spec §2) in exact arithmetic.

A site's noise enters the secure sum as integers k_s (its value times 2^l, stochastically rounded:
[`crate::fixed::FixedPoint`]), and the sum comes back as the integer K = Σ_{s∈U} k_s. The textbook
step e_s = ê_s − K/(n·2^l), n = |U|, would leave a floating-point remainder in Σe_s. Instead the
integer K is split into n integer parts that add up to K exactly: ⌊K/n⌋ + 1 for r = K mod n of
the sites and ⌊K/n⌋ for the others (which sites get the +1 rotates with the coordinate, using each
site's rank in U). Site s keeps the residual d_s = k_s − part_s, so

- **Σ_{s∈U} d_s = 0 exactly** (an integer identity), and
- e_s = d_s·2^−l differs from the textbook ê_s − (1/n)Σê by less than one grid step 2^−l.

When [`is_exact`] holds (every |d_s| and every partial sum of them stays below 2^53), each e_s is
an exact `f64` and Σe_s evaluates to exactly 0.0 in any order. [`noise_format`] picks the number of
fractional bits so that it holds. The part_s shift is a function of public values (K and U), so it
changes nothing in the privacy analysis: the adversary could add it back.

Weighted rounds (Section III-C) encode c_s·ê_s with c_s = μ_s·S and set e_s = d_s·2^−l / c_s, so
Σμ_s·e_s = (1/S)Σd_s·2^−l = 0 up to one rounding of each division (relative 2^−53).
*/

use crate::fixed::FixedPoint;

use super::error::SiteError;

/// The fixed-point bound covers this many standard deviations of noise: P(|Z| > 20) ≈ 5.5e−89, so
/// the "abort, do not resample" rule of spec §3 never fires in practice.
pub const NOISE_BOUND_SDS: f64 = 20.0;

/// The most fractional bits a noise format uses (spec §3 proposal: l = 32).
pub const MAX_FRAC_BITS: u32 = 32;

const EXACT_F64: f64 = 9_007_199_254_740_992.0; // 2^53

/// The fixed-point format for CAPE noise whose encoded values have standard deviation at most
/// `max_sd`, summed over at most `parties` sites (spec §3 "Quantisation": S·max|ê|·2^l < 2^62).
///
/// The bound is [`NOISE_BOUND_SDS`]·`max_sd`; the fractional bits are l = 32, or fewer when the
/// exact zero-sum split ([`is_exact`]) needs it. Everyone in the round must use the same format, so
/// derive it from public values (the planned τ's and S).
pub fn noise_format(max_sd: f64, parties: usize) -> Result<FixedPoint, SiteError> {
    if !(max_sd.is_finite() && max_sd > 0.0) {
        return Err(SiteError::InvalidSd {
            what: "largest noise standard deviation",
            value: max_sd,
        });
    }
    let parties = parties.max(1);
    let bound = NOISE_BOUND_SDS * max_sd;
    for frac_bits in (1..=MAX_FRAC_BITS).rev() {
        let format = FixedPoint::new(frac_bits, bound)?;
        if is_exact(&format, parties) {
            format.check_capacity(parties)?;
            return Ok(format);
        }
    }
    Err(SiteError::NotExact { parties, frac_bits: 1, bound })
}

/// Whether the zero-sum split among `parties` sites is exact in `f64` with this format:
/// parties·(2·B·2^l + 3) ≤ 2^53.
///
/// Why: stochastic rounding gives |k_s| ≤ B·2^l + 1, so |K|/n ≤ B·2^l + 1, every part is within 1
/// of K/n and |d_s| ≤ 2B·2^l + 3; the sum of all |d_s| bounds every partial sum.
pub fn is_exact(format: &FixedPoint, parties: usize) -> bool {
    let scaled_bound = format.bound() * (format.frac_bits() as f64).exp2();
    parties as f64 * (2.0 * scaled_bound + 3.0) <= EXACT_F64
}

/// Algorithm 1 step 3 on integers: `own` − (this site's part of `ring_sum`), coordinate by
/// coordinate, for the site of rank `rank` (0-based) among `n` contributors. The residuals of all n
/// sites add up to exactly zero in every coordinate.
///
/// A sum no set of `n` honest shares within `format`'s bound could produce is refused.
pub fn residuals(
    format: &FixedPoint,
    own: &[i64],
    ring_sum: &[u64],
    rank: usize,
    n: usize,
) -> Result<Vec<i64>, SiteError> {
    debug_assert!(rank < n && own.len() == ring_sum.len());
    let most = n as f64 * (format.bound() * (format.frac_bits() as f64).exp2() + 1.0);
    let n_i = n as i64;
    own.iter()
        .zip(ring_sum)
        .enumerate()
        .map(|(index, (&k, &total))| {
            let total = total as i64;
            if (total as f64).abs() > most {
                return Err(SiteError::NoiseSumOutOfRange { index, parties: n });
            }
            let extra = i64::from((rank + index) % n < total.rem_euclid(n_i) as usize);
            Ok(k - (total.div_euclid(n_i) + extra))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_add_up_to_the_sum_for_every_remainder() {
        let format = FixedPoint::new(8, 1000.0).unwrap();
        for n in 1..=7usize {
            let own: Vec<Vec<i64>> =
                (0..n).map(|s| (0..9).map(|j| (s as i64 * 37 - 90) * (j - 4)).collect()).collect();
            let sum: Vec<u64> =
                (0..9).map(|j| own.iter().map(|o| o[j]).sum::<i64>() as u64).collect();
            let mut total = [0i64; 9];
            for (rank, o) in own.iter().enumerate() {
                let d = residuals(&format, o, &sum, rank, n).unwrap();
                for j in 0..9 {
                    total[j] += d[j];
                    // each part is within one grid step of the exact mean K/n
                    let k_sum = sum[j] as i64 as f64;
                    assert!(((o[j] - d[j]) as f64 - k_sum / n as f64).abs() < 1.0);
                }
            }
            assert_eq!(total, [0; 9], "n = {n}");
        }
    }

    #[test]
    fn formats_are_exact_and_fall_back_to_fewer_bits_for_large_noise() {
        let small = noise_format(1.0, 10).unwrap();
        assert_eq!(small.frac_bits(), 32);
        assert!(is_exact(&small, 10));
        let large = noise_format(1e5, 100).unwrap();
        assert!(large.frac_bits() < 32 && is_exact(&large, 100));
        assert!(!is_exact(&FixedPoint::new(32, 20e5).unwrap(), 100));
        assert!(matches!(noise_format(0.0, 3), Err(SiteError::InvalidSd { .. })));
        assert!(matches!(noise_format(1e300, 3), Err(SiteError::NotExact { .. })));
    }

    #[test]
    fn corrupt_sums_are_refused() {
        let format = FixedPoint::new(4, 1.0).unwrap();
        let err = residuals(&format, &[1, 2], &[3, u64::MAX / 2], 0, 2).unwrap_err();
        assert_eq!(err, SiteError::NoiseSumOutOfRange { index: 1, parties: 2 });
    }
}
