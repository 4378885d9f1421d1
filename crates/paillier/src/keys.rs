//! Key generation, encryption, homomorphic addition and CRT decryption.

use core::cmp::Ordering;
use core::fmt;

use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
use crypto_bigint::{
    BoxedUint, ConcatenatingMul, ConcatenatingSquare, Gcd, NonZero, Odd, RandomMod, Resize,
};
use crypto_primes::{Flavor, random_prime};
use rand_core::CryptoRng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use zeroize::Zeroize;

use crate::ciphertext::Ciphertext;
use crate::error::PaillierError;
use crate::packing::Packing;

/// The labelled demo size: fast in a browser, **not** a secure modulus today.
pub const DEMO_BITS: u32 = 1024;
/// The smallest secure size capelab accepts.
pub const MIN_BITS: u32 = 2048;
pub const MAX_BITS: u32 = 4096;

/// The modulus sizes capelab generates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeySize {
    /// 1024 bits: for classroom demos only (factorable with large resources).
    Demo1024,
    /// 2048 bits: the standard size.
    #[default]
    Standard2048,
}

impl KeySize {
    pub fn bits(self) -> u32 {
        match self {
            KeySize::Demo1024 => DEMO_BITS,
            KeySize::Standard2048 => MIN_BITS,
        }
    }
}

impl fmt::Display for KeySize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeySize::Demo1024 => f.write_str("1024-bit (demo only, not secure)"),
            KeySize::Standard2048 => f.write_str("2048-bit"),
        }
    }
}

/// A public key: n = p·q and g = n + 1.
#[derive(Clone)]
pub struct PublicKey {
    n: Odd<BoxedUint>,
    /// n at the precision of n² (for encoding plaintexts mod n²).
    n_wide: BoxedUint,
    n_squared: NonZero<BoxedUint>,
    params: BoxedMontyParams,
    bits: u32,
}

/// A secret key: p, q and the CRT constants of Paillier (1999) §7 with g = n + 1.
pub struct SecretKey {
    public: PublicKey,
    pub(crate) p: BoxedUint,
    q: BoxedUint,
    p_squared: BoxedMontyParams,
    q_squared: BoxedMontyParams,
    /// h_p = L_p(g^{p−1} mod p²)^{−1} mod p = (−q)^{−1} mod p, and h_q likewise.
    h_p: BoxedUint,
    h_q: BoxedUint,
    /// q^{−1} mod p, for recombination.
    q_inv: BoxedUint,
}

/// A key pair.
pub struct Keypair {
    pub public: PublicKey,
    pub secret: SecretKey,
}

/// r^n mod n² computed ahead of time for one fresh random r: the offline half of an encryption.
/// Use it once ([`PublicKey::encrypt_i64_with`] consumes it) and keep it secret until then.
pub struct Randomizer(BoxedUint);

impl Randomizer {
    /// A randomizer made elsewhere in the crate (an n-th residue mod n², e.g. [`crate::DjnEncryptor`]'s).
    pub(crate) fn from_residue(r: BoxedUint) -> Self {
        Randomizer(r)
    }
}

fn odd(x: BoxedUint) -> Odd<BoxedUint> {
    Odd::new(x).expect("an odd modulus")
}

fn nonzero(x: BoxedUint) -> NonZero<BoxedUint> {
    NonZero::new(x).expect("a non-zero modulus")
}

impl Keypair {
    /// Generates p, q with crypto-primes (sieve plus Baillie–PSW) until n = p·q has exactly the
    /// key's bit length and p ≠ q.
    pub fn generate<R: CryptoRng + ?Sized>(size: KeySize, rng: &mut R) -> Keypair {
        let bits = size.bits();
        loop {
            let p: BoxedUint = random_prime(rng, Flavor::Any, bits / 2);
            let q: BoxedUint = random_prime(rng, Flavor::Any, bits / 2);
            if p.cmp_vartime(&q) == Ordering::Equal {
                continue;
            }
            let n = p.concatenating_mul(&q);
            if n.bit_width_vartime() != bits {
                continue;
            }
            return Keypair::from_primes(p, q).expect("generated primes make a valid key");
        }
    }

    /// A key pair from the decimal digits of its two primes (interoperability tests: a key made
    /// by another implementation).
    pub fn from_primes_decimal(p: &str, q: &str) -> Result<Keypair, PaillierError> {
        let parse = |t: &str| {
            crate::serde_big::parse_decimal(t.trim(), MAX_BITS / 2)
                .map_err(PaillierError::ModulusNotDecimal)
        };
        Keypair::from_primes(parse(p)?, parse(q)?)
    }

    /// The secret primes in decimal: for interoperability tests only.
    pub fn primes_decimal(&self) -> (String, String) {
        (self.secret.p.to_string_radix_vartime(10), self.secret.q.to_string_radix_vartime(10))
    }

    /// A key pair from two distinct odd primes of equal length (interoperability tests).
    pub fn from_primes(p: BoxedUint, q: BoxedUint) -> Result<Keypair, PaillierError> {
        let half = p.bit_width_vartime().max(q.bit_width_vartime());
        let p = p.resize(half);
        let q = q.resize(half);
        let n = p.concatenating_mul(&q);
        let public = PublicKey::from_modulus(n)?;
        let p_squared = BoxedMontyParams::new(odd(p.concatenating_square()));
        let q_squared = BoxedMontyParams::new(odd(q.concatenating_square()));
        let p_nz = nonzero(p.clone());
        let q_nz = nonzero(q.clone());
        // −q mod p and −p mod q, then their inverses.
        let minus_q = p.wrapping_sub(q.rem_vartime(&p_nz));
        let minus_p = q.wrapping_sub(p.rem_vartime(&q_nz));
        let h_p = Option::from(minus_q.invert_mod(&p_nz))
            .ok_or(PaillierError::BadPrimes("p and q are not coprime"))?;
        let h_q = Option::from(minus_p.invert_mod(&q_nz))
            .ok_or(PaillierError::BadPrimes("p and q are not coprime"))?;
        let q_inv = Option::from(q.rem_vartime(&p_nz).invert_mod(&p_nz))
            .ok_or(PaillierError::BadPrimes("p and q are not coprime"))?;
        Ok(Keypair {
            secret: SecretKey {
                public: public.clone(),
                p,
                q,
                p_squared,
                q_squared,
                h_p,
                h_q,
                q_inv,
            },
            public,
        })
    }
}

impl PublicKey {
    fn from_modulus(n: BoxedUint) -> Result<PublicKey, PaillierError> {
        let bits = n.bit_width_vartime();
        if bits != DEMO_BITS && !(MIN_BITS..=MAX_BITS).contains(&bits) {
            return Err(PaillierError::KeySize { bits });
        }
        let n = n.resize(bits);
        let n = Option::<Odd<BoxedUint>>::from(Odd::new(n)).ok_or(PaillierError::EvenModulus)?;
        let n_squared = n.as_ref().concatenating_square();
        let n_wide = n.as_ref().resize(2 * bits);
        let params = BoxedMontyParams::new(odd(n_squared.clone()));
        Ok(PublicKey { n, n_wide, n_squared: nonzero(n_squared), params, bits })
    }

    /// The public key with modulus `n` (decimal digits); g = n + 1.
    pub fn from_modulus_decimal(n: &str) -> Result<PublicKey, PaillierError> {
        let n = crate::serde_big::parse_decimal(n.trim(), MAX_BITS)
            .map_err(PaillierError::ModulusNotDecimal)?;
        Self::from_modulus(n)
    }

    pub fn modulus_decimal(&self) -> String {
        self.n.as_ref().to_string_radix_vartime(10)
    }

    pub fn bits(&self) -> u32 {
        self.bits
    }

    pub(crate) fn modulus(&self) -> &Odd<BoxedUint> {
        &self.n
    }

    /// `x` (below n²) as an element mod n² in Montgomery form.
    pub(crate) fn monty(&self, x: BoxedUint) -> BoxedMontyForm {
        BoxedMontyForm::new(x.resize(2 * self.bits), &self.params)
    }

    pub(crate) fn monty_one(&self) -> BoxedMontyForm {
        BoxedMontyForm::one(&self.params)
    }

    /// r^n mod n² for a fresh uniform r ∈ Z*_n (the expensive part of an encryption).
    pub fn precompute<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> Randomizer {
        let n_nz = self.n.as_nz_ref();
        loop {
            let r = BoxedUint::random_mod_vartime(rng, n_nz);
            // r = 0 or sharing a factor with n happens with probability ~2^{−1023}; redraw.
            if bool::from(r.is_zero())
                || r.gcd(self.n.as_ref()).cmp_vartime(BoxedUint::one()) != Ordering::Equal
            {
                continue;
            }
            let r = BoxedMontyForm::new(r.resize(2 * self.bits), &self.params);
            return Randomizer(r.pow(self.n.as_ref()).retrieve());
        }
    }

    /// Enc(m) for m given as a residue mod n.
    fn encrypt_residue(&self, m: &BoxedUint, randomizer: Randomizer) -> Ciphertext {
        // g^m = (1 + n)^m = 1 + m·n mod n².
        let m = m.resize(2 * self.bits);
        let gm = m
            .mul_mod(&self.n_wide, &self.n_squared)
            .wrapping_add(BoxedUint::one_with_precision(2 * self.bits));
        let gm = BoxedMontyForm::new(gm.rem_vartime(&self.n_squared), &self.params);
        let rn = BoxedMontyForm::new(randomizer.0, &self.params);
        Ciphertext(gm.mul(&rn).retrieve())
    }

    /// m mod n for a signed m (the centred encoding).
    fn centred(&self, m: i64) -> BoxedUint {
        let magnitude = BoxedUint::from(m.unsigned_abs()).resize(self.bits);
        if m >= 0 { magnitude } else { self.n.as_ref().wrapping_sub(&magnitude) }
    }

    /// Enc(m) for a signed m, with fresh randomness.
    pub fn encrypt_i64<R: CryptoRng + ?Sized>(&self, m: i64, rng: &mut R) -> Ciphertext {
        let randomizer = self.precompute(rng);
        self.encrypt_i64_with(m, randomizer)
    }

    /// Enc(m) with a precomputed randomizer (consumed: never used twice).
    pub fn encrypt_i64_with(&self, m: i64, randomizer: Randomizer) -> Ciphertext {
        self.encrypt_residue(&self.centred(m), randomizer)
    }

    /// Several bounded values in one plaintext ([`Packing`]).
    pub fn encrypt_packed<R: CryptoRng + ?Sized>(
        &self,
        slots: &[i64],
        packing: &Packing,
        rng: &mut R,
    ) -> Result<Ciphertext, PaillierError> {
        let plaintext = packing.pack(slots, self.bits)?;
        Ok(self.encrypt_residue(&plaintext, self.precompute(rng)))
    }

    /// The homomorphic sum: Enc(a)·Enc(b) mod n² = Enc(a + b mod n).
    pub fn add(&self, a: &Ciphertext, b: &Ciphertext) -> Ciphertext {
        let a = BoxedMontyForm::new(self.reduce(a), &self.params);
        let b = BoxedMontyForm::new(self.reduce(b), &self.params);
        Ciphertext(a.mul(&b).retrieve())
    }

    /// The homomorphic sum of several ciphertexts (Enc(0) with r = 1 for none).
    pub fn sum<'a>(&self, cts: impl IntoIterator<Item = &'a Ciphertext>) -> Ciphertext {
        let mut acc = BoxedMontyForm::one(&self.params);
        for c in cts {
            acc = acc.mul(&BoxedMontyForm::new(self.reduce(c), &self.params));
        }
        Ciphertext(acc.retrieve())
    }

    /// c at the precision of n², reduced (a checked ciphertext already is).
    fn reduce(&self, c: &Ciphertext) -> BoxedUint {
        match (&c.0).try_resize(2 * self.bits) {
            Some(v) => v.rem_vartime(&self.n_squared),
            None => c.0.rem_vartime(&self.n_squared).resize(2 * self.bits),
        }
    }

    /// Whether `c` can be a ciphertext under this key: 0 < c < n² and gcd(c, n) = 1. Refuses
    /// what is malformed or made for a key of another size; cannot detect a forgery.
    pub fn check(&self, c: &Ciphertext) -> Result<(), PaillierError> {
        if bool::from(c.0.is_zero()) {
            return Err(PaillierError::NotACiphertext { reason: "it is 0" });
        }
        if c.0.cmp_vartime(self.n_squared.as_ref()) != Ordering::Less {
            return Err(PaillierError::NotACiphertext { reason: "it is not below n²" });
        }
        let c = (&c.0).resize(2 * self.bits);
        let g = c.gcd(&self.n_wide);
        if g.cmp_vartime(BoxedUint::one()) != Ordering::Equal {
            return Err(PaillierError::NotACiphertext { reason: "it shares a factor with n" });
        }
        Ok(())
    }
}

impl SecretKey {
    pub fn public(&self) -> &PublicKey {
        &self.public
    }

    /// m mod n by CRT: m_p = L_p(c^{p−1} mod p²)·h_p mod p, likewise m_q, recombined.
    fn decrypt_residue(&self, c: &Ciphertext) -> Result<BoxedUint, PaillierError> {
        self.public.check(c)?;
        let half = |prime: &BoxedUint, params: &BoxedMontyParams, h: &BoxedUint| -> BoxedUint {
            let width = params.bits_precision();
            let base = c.0.rem_vartime(params.modulus().as_nz_ref()).resize(width);
            let exponent = prime.wrapping_sub(BoxedUint::one());
            let u = BoxedMontyForm::new(base, params).pow(&exponent).retrieve();
            // L_p(u) = (u − 1)/p, exact.
            let l = u
                .wrapping_sub(BoxedUint::one())
                .wrapping_div_vartime(&nonzero(prime.resize(width)));
            let prime_nz = nonzero(prime.clone());
            l.rem_vartime(&prime_nz).resize(prime.bits_precision()).mul_mod(h, &prime_nz)
        };
        let m_p = half(&self.p, &self.p_squared, &self.h_p);
        let m_q = half(&self.q, &self.q_squared, &self.h_q);
        // m = m_q + q·((m_p − m_q)·q^{−1} mod p).
        let p_nz = nonzero(self.p.clone());
        let m_q_mod_p = m_q.rem_vartime(&p_nz);
        let diff = m_p.sub_mod(&m_q_mod_p, &p_nz);
        let t = diff.mul_mod(&self.q_inv, &p_nz);
        let bits = self.public.bits;
        let m = t.concatenating_mul(&self.q).resize(bits).wrapping_add(m_q.resize(bits));
        Ok(m)
    }

    /// The signed plaintext (centred: above n/2 means negative).
    pub fn decrypt_i64(&self, c: &Ciphertext) -> Result<i64, PaillierError> {
        let m = self.decrypt_residue(c)?;
        let n = self.public.n.as_ref();
        let half_n = n.shr_vartime(1).expect("shift below the width");
        let (magnitude, negative) = if m.cmp_vartime(&half_n) == Ordering::Greater {
            (n.wrapping_sub(&m), true)
        } else {
            (m, false)
        };
        let log2 = magnitude.bit_width_vartime().saturating_sub(1);
        if magnitude.bit_width_vartime() > 63 {
            return Err(PaillierError::PlaintextOverflow { log2, negative });
        }
        let bytes = magnitude.to_be_bytes();
        let mut low = [0u8; 8];
        low.copy_from_slice(&bytes[bytes.len() - 8..]);
        let v = u64::from_be_bytes(low) as i64;
        Ok(if negative { -v } else { v })
    }

    /// The slots of a sum of `summands` packed ciphertexts.
    pub fn decrypt_packed(
        &self,
        c: &Ciphertext,
        packing: &Packing,
        summands: u32,
    ) -> Result<Vec<i64>, PaillierError> {
        let m = self.decrypt_residue(c)?;
        packing.unpack(&m, self.public.bits, summands)
    }
}

impl Drop for SecretKey {
    fn drop(&mut self) {
        self.p.zeroize();
        self.q.zeroize();
        self.h_p.zeroize();
        self.h_q.zeroize();
        self.q_inv.zeroize();
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretKey({} bits, redacted)", self.public.bits)
    }
}

impl fmt::Debug for Keypair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keypair")
            .field("public", &self.public)
            .field("secret", &self.secret)
            .finish()
    }
}

impl Clone for Keypair {
    fn clone(&self) -> Self {
        Keypair::from_primes(self.secret.p.clone(), self.secret.q.clone())
            .expect("a valid key stays valid")
    }
}

impl PartialEq for PublicKey {
    fn eq(&self, other: &Self) -> bool {
        self.n.as_ref().cmp_vartime(other.n.as_ref()) == Ordering::Equal
    }
}

impl Eq for PublicKey {}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.modulus_decimal();
        write!(
            f,
            "PublicKey({} bits, n = {}…{})",
            self.bits,
            &digits[..6],
            &digits[digits.len() - 6..]
        )
    }
}

impl Serialize for PublicKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        crate::serde_big::serialize(self.n.as_ref(), s)
    }
}

impl<'de> Deserialize<'de> for PublicKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = crate::serde_big::deserialize(d, MAX_BITS)?;
        PublicKey::from_modulus(n).map_err(serde::de::Error::custom)
    }
}
