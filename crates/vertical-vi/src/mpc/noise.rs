//! The exact discrete Gaussian N_Z(0, σ²) of Canonne, Kamath and Steinke (NeurIPS 2020, Alg. 1–3):
//! rejection sampling from a discrete Laplace, with every Bernoulli(exp(−γ)) and Bernoulli(p)
//! decided by exact integer comparisons against uniform integers from the CSPRNG: no floating
//! point touches a sample (spec C, D13).
//!
//! σ² is taken as the exact rational an f64 stands for (m·2^e), so the sampler is exact for the
//! variance it is given. In the protocol (spec B3 "Noise") each of the P parties adds
//! N_Z(0, (2^f·C·σ)²/P) in ring units (2^{−f}) to its share of the clipped sum.

use rand_core::Rng;

use crate::mpc::MpcError;

/// A 256-bit unsigned integer, just what the acceptance test needs: (|Y|·t·d − n)² does not fit
/// in 128 bits once σ² ≈ 2^65 (the protocol's scale).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct U256 {
    hi: u128,
    lo: u128,
}

impl U256 {
    const fn from(v: u128) -> Self {
        Self { hi: 0, lo: v }
    }

    /// a·b exactly.
    fn mul_wide(a: u128, b: u128) -> Self {
        let m = u64::MAX as u128;
        let (a1, a0, b1, b0) = (a >> 64, a & m, b >> 64, b & m);
        let (p00, p01, p10, p11) = (a0 * b0, a0 * b1, a1 * b0, a1 * b1);
        let mid = (p00 >> 64) + (p01 & m) + (p10 & m);
        let lo = (p00 & m) | (mid << 64);
        let hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
        Self { hi, lo }
    }

    fn checked_mul_u128(self, k: u128) -> Option<Self> {
        let lo = Self::mul_wide(self.lo, k);
        let hi = Self::mul_wide(self.hi, k);
        if hi.hi != 0 {
            return None;
        }
        Some(Self { hi: lo.hi.checked_add(hi.lo)?, lo: lo.lo })
    }

    fn sub(self, o: Self) -> Self {
        let (lo, borrow) = self.lo.overflowing_sub(o.lo);
        Self { hi: self.hi - o.hi - borrow as u128, lo }
    }

    fn bits(self) -> u32 {
        if self.hi != 0 { 256 - self.hi.leading_zeros() } else { 128 - self.lo.leading_zeros() }
    }

    /// Uniform in [0, self) (self > 0), by rejection from bits(self) random bits.
    fn uniform_below(self, rng: &mut impl Rng) -> Self {
        let b = self.bits();
        loop {
            let lo = crate::mpc::ring::random(rng);
            let hi = crate::mpc::ring::random(rng);
            let v = if b > 128 {
                Self { hi: hi >> (256 - b), lo }
            } else {
                Self { hi: 0, lo: if b == 0 { 0 } else { lo >> (128 - b) } }
            };
            if v < self {
                return v;
            }
        }
    }
}

/// Bernoulli(num/den), num ≤ den, den > 0.
fn bernoulli(num: U256, den: U256, rng: &mut impl Rng) -> bool {
    den.uniform_below(rng) < num
}

/// Bernoulli(exp(−num/den)) (CKS Alg. 1).
fn bernoulli_exp(mut num: U256, den: U256, rng: &mut impl Rng) -> bool {
    let one = U256::from(1);
    while num > den {
        if !bernoulli_exp_le1(one, one, rng) {
            return false;
        }
        num = num.sub(den);
    }
    bernoulli_exp_le1(num, den, rng)
}

/// Bernoulli(exp(−γ)) for γ = num/den ∈ [0, 1].
fn bernoulli_exp_le1(num: U256, den: U256, rng: &mut impl Rng) -> bool {
    let mut k: u128 = 1;
    loop {
        let dk = den.checked_mul_u128(k).expect("den·k fits: den < 2^210, k small");
        if !bernoulli(num, dk, rng) {
            break;
        }
        k += 1;
    }
    k % 2 == 1
}

fn uniform_u128(n: u128, rng: &mut impl Rng) -> u128 {
    U256::from(n).uniform_below(rng).lo
}

/// The discrete Laplace with scale t, P(y) ∝ exp(−|y|/t) (CKS Alg. 2 with s = 1).
fn discrete_laplace(t: u128, rng: &mut impl Rng) -> i128 {
    let one = U256::from(1);
    loop {
        let u = uniform_u128(t, rng);
        if !bernoulli_exp(U256::from(u), U256::from(t), rng) {
            continue;
        }
        let mut v: u128 = 0;
        while bernoulli_exp(one, one, rng) {
            v += 1;
        }
        let x = u + t * v;
        let neg = rng.next_u32() & 1 == 1;
        if neg && x == 0 {
            continue;
        }
        return if neg { -(x as i128) } else { x as i128 };
    }
}

/// σ² as an exact rational n/d, d = 2^k.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Rational {
    n: u128,
    log_d: u32,
}

fn exact_rational(var: f64) -> Result<Rational, MpcError> {
    let bad = || MpcError::NoiseVariance { variance: var };
    if !(var.is_finite() && var > 0.0) {
        return Err(bad());
    }
    let bits = var.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (mut m, mut e) =
        if exp == 0 { (frac as u128, -1074) } else { ((frac | (1u64 << 52)) as u128, exp - 1075) };
    while e < 0 && m % 2 == 0 {
        m /= 2;
        e += 1;
    }
    if e >= 0 {
        if e > 46 {
            return Err(bad());
        }
        Ok(Rational { n: m << e, log_d: 0 })
    } else if -e > 62 {
        Err(bad())
    } else {
        Ok(Rational { n: m, log_d: (-e) as u32 })
    }
}

fn isqrt(n: u128) -> u128 {
    if n < 2 {
        return n;
    }
    let mut x = (n as f64).sqrt() as u128;
    while x * x > n {
        x -= 1;
    }
    while (x + 1) * (x + 1) <= n {
        x += 1;
    }
    x
}

/// Samples from N_Z(0, σ²) exactly (CKS Alg. 3); `variance` = σ² must be 0 (then 0 is returned,
/// the test-only "noise off") or a positive f64 below 2^99 whose exact binary value has at most
/// 62 fractional bits (every σ² ≥ 2^{−9} qualifies).
pub fn sample_discrete_gaussian(variance: f64, rng: &mut impl Rng) -> Result<i128, MpcError> {
    if variance == 0.0 {
        return Ok(0);
    }
    let Rational { n, log_d } = exact_rational(variance)?;
    let d: u128 = 1 << log_d;
    let t = isqrt(n >> log_d) + 1; // ⌊σ⌋ + 1
    loop {
        let y = discrete_laplace(t, rng);
        // γ = (|y| − σ²/t)² / (2σ²) = (|y|·t·d − n)² / (2·n·d·t²)
        let Some(ytd) = y.unsigned_abs().checked_mul(t).and_then(|v| v.checked_mul(d)) else {
            continue; // |y| ≥ 2^60 or so: exp(−γ) < 2^{−1000}, reject
        };
        let diff = ytd.abs_diff(n);
        let num = U256::mul_wide(diff, diff);
        let den = U256::mul_wide(n * d, t * t).checked_mul_u128(2).expect("2·n·d·t² < 2^256");
        if bernoulli_exp(num, den, rng) {
            return Ok(y);
        }
    }
}

/// `len` independent draws of N_Z(0, σ²).
pub fn sample_vec(len: usize, variance: f64, rng: &mut impl Rng) -> Result<Vec<i128>, MpcError> {
    (0..len).map(|_| sample_discrete_gaussian(variance, rng)).collect()
}

/// The per-party variance in ring units for clip C, noise multiplier σ and P parties:
/// (2^f·C·σ)²/P (spec B3 "Noise": at scale 2^f, not in real units, spec D4).
pub fn party_variance(clip: f64, sigma: f64, parties: usize) -> f64 {
    let s = crate::mpc::ring::SCALE * clip * sigma;
    s * s / parties as f64
}

/// Whether the parties' noise for clip C, multiplier σ and P parties is what the exact sampler
/// draws: a positive [`party_variance`] that [`sample_discrete_gaussian`] represents exactly.
/// The check every tab makes before a run ([`crate::study::VviTask::check`]), so a σ or C the
/// sampler would refuse at the first step is refused before anything is charged. (A variance
/// that underflows to 0 would be the test-only "noise off": refused here too.)
pub fn check_party_noise(clip: f64, sigma: f64, parties: usize) -> Result<(), MpcError> {
    let variance = party_variance(clip, sigma, parties);
    if variance == 0.0 {
        return Err(MpcError::NoiseVariance { variance });
    }
    exact_rational(variance).map(|_| ())
}

/// The noise std C·σ (in the data's units) below which the exact sampler represents the
/// per-party variance for P parties: the variance (2^f·C·σ)²/P must stay below 2^99.
pub fn max_noise_std(parties: usize) -> f64 {
    (2f64.powi(99) * parties as f64).sqrt() / crate::mpc::ring::SCALE
}

#[cfg(test)]
mod tests {
    use super::*;
    use capelab_core::rng::derive;

    #[test]
    fn wide_arithmetic() {
        let a = U256::mul_wide(u128::MAX, u128::MAX);
        assert_eq!(a, U256 { hi: u128::MAX - 1, lo: 1 });
        assert_eq!(U256::from(5).checked_mul_u128(7), Some(U256::from(35)));
        assert_eq!(U256 { hi: 1, lo: 0 }.sub(U256::from(1)), U256::from(u128::MAX));
        assert_eq!(U256 { hi: 1, lo: 0 }.bits(), 129);
    }

    #[test]
    fn the_noise_check_is_the_samplers_own_limit() {
        for parties in [2, 3, 5] {
            let top = max_noise_std(parties) * (1.0 - 1e-9);
            assert!(check_party_noise(top, 1.0, parties).is_ok(), "{parties}: {top}");
            assert!(check_party_noise(1.0, top, parties).is_ok());
            assert!(check_party_noise(top * 1.001, 1.0, parties).is_err());
            // what passes the check, the sampler draws
            let v = party_variance(top, 1.0, parties);
            assert!(
                sample_discrete_gaussian(v, &mut capelab_core::rng::Seed::Fixed(1).rng("t"))
                    .is_ok()
            );
        }
        assert_eq!(max_noise_std(2), 262_144.0);
        assert!(check_party_noise(1.0, 1.0, 2).is_ok());
        assert!(check_party_noise(1e12, 1.0, 2).is_err(), "issue 30: σ or C = 1e12");
        assert!(check_party_noise(1.0, 1e-320, 2).is_err(), "no noise is no study");
    }

    #[test]
    fn exact_rationals() {
        assert_eq!(exact_rational(0.5).unwrap(), Rational { n: 1, log_d: 1 });
        assert_eq!(exact_rational(10.0).unwrap(), Rational { n: 10, log_d: 0 });
        assert_eq!(exact_rational(2f64.powi(40)).unwrap(), Rational { n: 1 << 40, log_d: 0 });
        assert!(exact_rational(f64::NAN).is_err());
        assert!(exact_rational(-1.0).is_err());
        assert_eq!(isqrt(99), 9);
        assert_eq!(isqrt(1 << 80), 1 << 40);
    }

    #[test]
    fn bernoulli_exp_frequency() {
        let mut rng = derive(3, "bexp");
        let n = 40_000;
        let hits = (0..n).filter(|_| bernoulli_exp(U256::from(3), U256::from(2), &mut rng)).count();
        let p = hits as f64 / n as f64;
        let want = (-1.5f64).exp();
        assert!((p - want).abs() < 4.0 * (want * (1.0 - want) / n as f64).sqrt(), "{p} vs {want}");
    }
}
