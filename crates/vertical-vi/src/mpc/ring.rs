//! Additive secret sharing over Z_{2^128} with f = 32 fractional bits (spec Part C, "DPVI-VPD demo
//! must implement": a 128-bit ring so that the product of two fixed-point values fits before it is
//! truncated, unlike the paper's 64-bit ring, spec D9).
//!
//! A real x is encoded as round(x·2^f) in two's complement; a sharing of v among P parties is P
//! ring elements, uniformly random subject to summing to v (mod 2^128). Any P − 1 of them are
//! independent of v.

use rand_core::Rng;

use crate::mpc::MpcError;

/// f, the fractional bits of the fixed-point encoding.
pub const FRAC_BITS: u32 = 32;

/// 2^f as a float.
pub const SCALE: f64 = (1u64 << FRAC_BITS) as f64;

/// The largest |x| [`encode`] accepts: 2^40, i.e. ring values below 2^72, leaving room for a
/// product of two inputs (≤ 2^144 would not fit; the circuits keep products below 2^86, see
/// [`crate::mpc::program::TRUNC_BITS`]).
pub const MAX_ABS: f64 = (1u64 << 40) as f64;

/// A uniformly random ring element.
pub fn random(rng: &mut impl Rng) -> u128 {
    ((rng.next_u64() as u128) << 64) | rng.next_u64() as u128
}

/// round(x · 2^f) in two's complement. Refuses NaN, ±∞ and |x| ≥ [`MAX_ABS`].
pub fn encode(x: f64) -> Result<u128, MpcError> {
    if !x.is_finite() {
        return Err(MpcError::NotFinite { value: x });
    }
    if x.abs() >= MAX_ABS {
        return Err(MpcError::OutOfRange { value: x, max: MAX_ABS });
    }
    Ok(((x * SCALE).round() as i128) as u128)
}

/// [`encode`] for every value of a slice.
pub fn encode_all(xs: &[f64]) -> Result<Vec<u128>, MpcError> {
    xs.iter().map(|&x| encode(x)).collect()
}

/// The real number a ring element stands for: (v read as a signed integer) / 2^f.
pub fn decode(v: u128) -> f64 {
    (v as i128) as f64 / SCALE
}

/// P ≥ 2 additive shares of `v`: P − 1 uniform, the last making the sum `v`.
pub fn share(v: u128, parties: usize, rng: &mut impl Rng) -> Result<Vec<u128>, MpcError> {
    if parties < 2 {
        return Err(MpcError::TooFewParties { parties });
    }
    Ok(share_unchecked(v, parties, rng))
}

/// [`share`] without the party-count check (P = 1 yields `[v]`).
pub(crate) fn share_unchecked(v: u128, parties: usize, rng: &mut impl Rng) -> Vec<u128> {
    let mut out = Vec::with_capacity(parties);
    let mut acc = 0u128;
    for _ in 1..parties {
        let s = random(rng);
        acc = acc.wrapping_add(s);
        out.push(s);
    }
    out.push(v.wrapping_sub(acc));
    out
}

/// Σ_p shares[p] (mod 2^128).
pub fn reconstruct(shares: &[u128]) -> u128 {
    shares.iter().fold(0u128, |a, &s| a.wrapping_add(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use capelab_core::rng::derive;

    #[test]
    fn encoding_is_signed_and_exact_on_dyadics() {
        assert_eq!(encode(-1.0).unwrap(), u128::MAX - (1u128 << 32) + 1);
        assert_eq!(decode(encode(-2.75).unwrap()), -2.75);
        assert_eq!(decode(encode(123456.5).unwrap()), 123456.5);
        assert!((decode(encode(0.1).unwrap()) - 0.1).abs() <= 0.5 / SCALE);
    }

    #[test]
    fn shares_reconstruct_for_two_to_five_parties() {
        let mut rng = derive(1, "ring");
        for p in 2..=5 {
            let v = encode(-3.25).unwrap();
            let s = share(v, p, &mut rng).unwrap();
            assert_eq!(s.len(), p);
            assert_eq!(reconstruct(&s), v);
        }
        assert!(matches!(share(1, 1, &mut rng), Err(MpcError::TooFewParties { parties: 1 })));
    }
}
