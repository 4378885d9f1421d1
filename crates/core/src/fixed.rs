/*!
Fixed-point encoding of reals into the masking ring Z_{2^64} (spec cape-secagg-pca-djica §3,
"Quantisation" and "Concrete choices").

- `map(x)` = stochastic rounding of 2^l·x (floor, plus one with probability equal to the fractional
  part), stored in two's complement. It is unbiased: E[remap(map(x))] = x.
- `remap(v)` = (v read as a signed integer) / 2^l.
- Sums are taken with wrapping `u64` addition, which is exact as long as the true sum stays within
  ±2^62. That is guaranteed up front, never detected after the fact: every value carries a public
  bound B, and [`FixedPoint::check_capacity`] refuses a configuration with S·B·2^l ≥ 2^62.

CAPE subtracts the mean of the *quantised* noise (`remap(map(ê))`), not of ê itself, so that the
zero sum holds exactly (spec §8 pitfall 3): [`FixedPoint::encode`] returns both.
*/

use rand::RngExt;

use crate::rng::CapeRng;

/// The headroom the ring keeps: sums stay strictly inside ±2^62 (one spare bit below the sign).
const CAPACITY: f64 = (1u64 << 62) as f64;

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FixedPointError {
    #[error("{frac_bits} fractional bits is outside 1..=52")]
    FracBits { frac_bits: u32 },
    #[error("value bound {bound} must be positive and finite")]
    Bound { bound: f64 },
    #[error(
        "{parties} parties × bound {bound} × 2^{frac_bits} ≥ 2^62: the sum could overflow the ring; \
         lower the fractional bits or the bound"
    )]
    Capacity { parties: usize, bound: f64, frac_bits: u32 },
    #[error("value at index {index} is {value}, not a finite number")]
    NotFinite { index: usize, value: f64 },
    #[error("value at index {index} is {value}, outside the declared bound ±{bound}")]
    OutOfBound { index: usize, value: f64, bound: f64 },
}

/// A fixed-point format with `frac_bits` fractional bits and a public bound on |x|.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FixedPoint {
    frac_bits: u32,
    bound: f64,
}

impl FixedPoint {
    /// l = 32 fractional bits (spec §3 proposal): resolution 2.3e-10.
    pub const DEFAULT_FRAC_BITS: u32 = 32;

    pub fn new(frac_bits: u32, bound: f64) -> Result<Self, FixedPointError> {
        if !(1..=52).contains(&frac_bits) {
            return Err(FixedPointError::FracBits { frac_bits });
        }
        if !(bound.is_finite() && bound > 0.0) {
            return Err(FixedPointError::Bound { bound });
        }
        Ok(Self { frac_bits, bound })
    }

    pub fn frac_bits(&self) -> u32 {
        self.frac_bits
    }

    pub fn bound(&self) -> f64 {
        self.bound
    }

    /// The spacing between representable values, 2^-l.
    pub fn resolution(&self) -> f64 {
        (-(self.frac_bits as f64)).exp2()
    }

    /// Refuses a configuration whose sum over `parties` values could leave ±2^62.
    pub fn check_capacity(&self, parties: usize) -> Result<(), FixedPointError> {
        if parties as f64 * self.bound * (self.frac_bits as f64).exp2() >= CAPACITY {
            return Err(FixedPointError::Capacity {
                parties,
                bound: self.bound,
                frac_bits: self.frac_bits,
            });
        }
        Ok(())
    }

    /// Encodes `values` with stochastic rounding. Returns the ring elements and the reals they
    /// stand for (`remap(map(x))`), which is what a CAPE site must use afterwards.
    pub fn encode(
        &self,
        values: &[f64],
        rng: &mut CapeRng,
    ) -> Result<(Vec<u64>, Vec<f64>), FixedPointError> {
        let scale = (self.frac_bits as f64).exp2();
        let mut ring = Vec::with_capacity(values.len());
        let mut quantised = Vec::with_capacity(values.len());
        for (index, &value) in values.iter().enumerate() {
            if !value.is_finite() {
                return Err(FixedPointError::NotFinite { index, value });
            }
            if value.abs() > self.bound {
                return Err(FixedPointError::OutOfBound { index, value, bound: self.bound });
            }
            let scaled = value * scale;
            let floor = scaled.floor();
            let up = rng.random::<f64>() < scaled - floor;
            // |scaled| ≤ B·2^l < 2^62, so the cast is exact and cannot saturate.
            let integer = floor as i64 + i64::from(up);
            ring.push(integer as u64);
            quantised.push(integer as f64 / scale);
        }
        Ok((ring, quantised))
    }

    /// Reads a ring element (e.g. a sum) back as a real.
    pub fn decode(&self, v: u64) -> f64 {
        v as i64 as f64 / (self.frac_bits as f64).exp2()
    }

    pub fn decode_vec(&self, v: &[u64]) -> Vec<f64> {
        v.iter().map(|&x| self.decode(x)).collect()
    }
}

/// Element-wise wrapping sum in Z_{2^64}: `acc += x`.
pub fn add_assign(acc: &mut [u64], x: &[u64]) {
    debug_assert_eq!(acc.len(), x.len());
    for (a, b) in acc.iter_mut().zip(x) {
        *a = a.wrapping_add(*b);
    }
}

/// Element-wise wrapping difference in Z_{2^64}: `acc -= x`.
pub fn sub_assign(acc: &mut [u64], x: &[u64]) {
    debug_assert_eq!(acc.len(), x.len());
    for (a, b) in acc.iter_mut().zip(x) {
        *a = a.wrapping_sub(*b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::derive;

    #[test]
    fn negative_and_positive_values_round_trip_within_one_step() {
        let fp = FixedPoint::new(32, 100.0).unwrap();
        let mut rng = derive(1, "fixed");
        let xs = [-99.5, -1e-9, 0.0, 3.25, 1.0 / 3.0, 99.999];
        let (ring, q) = fp.encode(&xs, &mut rng).unwrap();
        for ((x, v), qx) in xs.iter().zip(&ring).zip(&q) {
            assert_eq!(fp.decode(*v), *qx);
            assert!((x - qx).abs() <= fp.resolution(), "{x} vs {qx}");
        }
        // exactly representable values are never moved
        assert_eq!(q[2], 0.0);
        assert_eq!(q[3], 3.25);
    }

    #[test]
    fn stochastic_rounding_is_unbiased() {
        // With 4 fractional bits, x = 0.3 lies between 0.25 and 0.3125: it rounds up with
        // probability 0.8. The mean over n draws has standard error 0.0625·0.4/√n.
        let fp = FixedPoint::new(4, 1.0).unwrap();
        let mut rng = derive(2, "fixed");
        let n = 20_000;
        let xs = vec![0.3; n];
        let (_, q) = fp.encode(&xs, &mut rng).unwrap();
        let mean = q.iter().sum::<f64>() / n as f64;
        let se = 0.0625 * 0.4 / (n as f64).sqrt();
        assert!((mean - 0.3).abs() < 5.0 * se, "mean {mean}");
    }

    #[test]
    fn wrapping_sums_of_signed_values_are_exact() {
        let fp = FixedPoint::new(32, 10.0).unwrap();
        fp.check_capacity(1000).unwrap();
        let mut rng = derive(3, "fixed");
        let parties: Vec<Vec<f64>> =
            (0..50).map(|i| vec![(i as f64 - 25.0) / 3.0, -9.9, 9.9]).collect();
        let mut acc = vec![0u64; 3];
        let mut exact = [0f64; 3];
        for p in &parties {
            let (ring, q) = fp.encode(p, &mut rng).unwrap();
            add_assign(&mut acc, &ring);
            for (e, x) in exact.iter_mut().zip(q) {
                *e += x;
            }
        }
        for (a, e) in fp.decode_vec(&acc).iter().zip(exact) {
            assert!((a - e).abs() < 1e-9, "{a} vs {e}");
        }
        let mut back = acc.clone();
        let (ring, _) = fp.encode(&parties[0], &mut derive(3, "fixed")).unwrap();
        sub_assign(&mut back, &ring);
        add_assign(&mut back, &ring);
        assert_eq!(back, acc);
    }

    #[test]
    fn bad_inputs_are_named() {
        assert_eq!(FixedPoint::new(0, 1.0), Err(FixedPointError::FracBits { frac_bits: 0 }));
        assert!(matches!(FixedPoint::new(32, f64::NAN), Err(FixedPointError::Bound { .. })));
        let fp = FixedPoint::new(32, 1e6).unwrap();
        assert!(matches!(fp.check_capacity(2000), Err(FixedPointError::Capacity { .. })));
        let mut rng = derive(4, "fixed");
        assert!(matches!(
            fp.encode(&[1.0, f64::NAN], &mut rng),
            Err(FixedPointError::NotFinite { index: 1, value }) if value.is_nan()
        ));
        assert!(matches!(
            fp.encode(&[2e6], &mut rng),
            Err(FixedPointError::OutOfBound { index: 0, .. })
        ));
    }
}
