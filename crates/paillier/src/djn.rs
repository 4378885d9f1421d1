/*!
Bulk encryption under one public key with the Damgård–Jurik–Nielsen randomizer and a fixed-base
table: an **opt-in** speed-up that rests on an assumption beyond DCR.

Standard Paillier draws r uniformly from Z*_n and computes r^n mod n² per ciphertext (a 2048-bit
exponent on a 4096-bit modulus). Here the encryptor draws, once, x uniformly from Z*_n and sets
h_s = (−x²)^n mod n² (an n-th residue, so every h_s^α is a valid Paillier randomizer and any
Paillier implementation decrypts the ciphertexts, python-phe included); each encryption then
draws α uniformly from [0, 2^⌈k/2⌉) (k = |n|) and uses h_s^α. With a table of h_s^{j·16^i}
(i < ⌈k/8⌉, 1 ≤ j ≤ 15: about 2 MB at k = 2048, built in the time of a few standard
encryptions) h_s^α costs ⌈k/8⌉ multiplications instead of k squarings and k/4 multiplications.

**Security assumption.** This is the variant of Damgård, Jurik & Nielsen ("A generalization of
Paillier's public-key system with applications to electronic voting", IJIS 2010, §4.1), the one
Intel's ipcl and SecretFlow's HEU ship as "DJN". Its IND-CPA security needs, besides DCR, that
h_s^α for a k/2-bit α cannot be told from a uniform n-th residue (a short-exponent assumption on
the group of n-th residues; DJN argue it from the hardness of factoring for moduli with
p ≡ q ≡ 3 mod 4, which capelab's keys are not restricted to). The table lookups are constant-time
in α (every entry of a window is read); h_s may be public (DJN publish it), x is dropped at once. capelab's protocols keep using [`PublicKey::encrypt_i64`] (DCR only); this is for callers who
encrypt many values under one key and accept the assumption.
*/

use core::cmp::Ordering;

use crypto_bigint::modular::BoxedMontyForm;
use crypto_bigint::{BoxedUint, CtAssign, CtEq, Gcd, RandomMod, Word};
use rand_core::CryptoRng;
use zeroize::Zeroize;

use crate::ciphertext::Ciphertext;
use crate::keys::{PublicKey, Randomizer};

/// Bits of α per table row.
const WINDOW: u32 = 4;
const ENTRIES: usize = (1 << WINDOW) - 1;

/// Encrypts under one public key with DJN randomizers (see the module doc for the assumption).
pub struct DjnEncryptor {
    key: PublicKey,
    /// ⌈k/2⌉.
    alpha_bits: u32,
    /// table[i][j − 1] = h_s^{j·16^i} in Montgomery form.
    table: Vec<Vec<BoxedUint>>,
}

impl DjnEncryptor {
    /// Draws x, computes h_s = (−x²)^n mod n² and its table (about three standard encryptions of
    /// work).
    pub fn new<R: CryptoRng + ?Sized>(key: &PublicKey, rng: &mut R) -> Self {
        let n = key.modulus();
        let n_nz = n.as_nz_ref();
        let x = loop {
            let x = BoxedUint::random_mod_vartime(rng, n_nz);
            let unit = x.gcd(n.as_ref()).cmp_vartime(BoxedUint::one()) == Ordering::Equal;
            if !bool::from(x.is_zero()) && unit {
                break x;
            }
        };
        let minus_x2 = n.as_ref().wrapping_sub(x.mul_mod(&x, n_nz));
        let h_s = key.monty(minus_x2).pow(n.as_ref());
        let alpha_bits = key.bits().div_ceil(2);
        let rows = alpha_bits.div_ceil(WINDOW) as usize;
        let mut table = Vec::with_capacity(rows);
        let mut base = h_s;
        for _ in 0..rows {
            let mut row: Vec<BoxedMontyForm> = Vec::with_capacity(ENTRIES);
            row.push(base.clone());
            for j in 1..ENTRIES {
                row.push(row[j - 1].mul(&base));
            }
            base = row[ENTRIES - 1].mul(&base); // base^16
            table.push(row.into_iter().map(|e| e.as_montgomery().clone()).collect());
        }
        DjnEncryptor { key: key.clone(), alpha_bits, table }
    }

    pub fn public_key(&self) -> &PublicKey {
        &self.key
    }

    /// h_s^α for a fresh uniform α of ⌈k/2⌉ bits, read from the table in constant time in α.
    pub fn randomizer<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> Randomizer {
        let mut alpha = vec![0u8; self.alpha_bits.div_ceil(8) as usize];
        rng.fill_bytes(&mut alpha);
        if !self.alpha_bits.is_multiple_of(8) {
            alpha[0] &= (1u8 << (self.alpha_bits % 8)) - 1;
        }
        let mut acc = self.key.monty_one();
        let one = acc.as_montgomery().clone();
        let mut pick = one.clone();
        for (i, row) in self.table.iter().enumerate() {
            // nibble i of α, counting from the least significant end of the big-endian bytes
            let byte = alpha[alpha.len() - 1 - i / 2];
            let nibble = Word::from(if i % 2 == 0 { byte & 0xf } else { byte >> 4 });
            // 1 (Montgomery form) when the nibble is 0, else row[nibble − 1]
            pick.clone_from(&one);
            for (j, entry) in row.iter().enumerate() {
                pick.ct_assign(entry, (j as Word + 1).ct_eq(&nibble));
            }
            acc = acc.mul(&BoxedMontyForm::from_montgomery(pick.clone(), acc.params()));
        }
        alpha.zeroize();
        Randomizer::from_residue(acc.retrieve())
    }

    /// Enc(m) for a signed m with a fresh DJN randomizer.
    pub fn encrypt_i64<R: CryptoRng + ?Sized>(&self, m: i64, rng: &mut R) -> Ciphertext {
        let r = self.randomizer(rng);
        self.key.encrypt_i64_with(m, r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KeySize, Keypair};
    use chacha20::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn rng(seed: u64) -> ChaCha20Rng {
        ChaCha20Rng::seed_from_u64(seed)
    }

    #[test]
    fn ciphertexts_decrypt_add_and_are_fresh_each_time() {
        let mut r = rng(7);
        let k = Keypair::generate(KeySize::Demo1024, &mut r);
        let djn = DjnEncryptor::new(&k.public, &mut r);
        let values = [0i64, 1, -1, 123_456_789, -(1 << 60), i64::MAX / 3];
        let cts: Vec<Ciphertext> = values.iter().map(|&m| djn.encrypt_i64(m, &mut r)).collect();
        for (c, &m) in cts.iter().zip(&values) {
            k.public.check(c).unwrap();
            assert_eq!(k.secret.decrypt_i64(c).unwrap(), m);
        }
        let sum = k.public.sum(&cts);
        assert_eq!(k.secret.decrypt_i64(&sum).unwrap(), values.iter().sum::<i64>());
        let (a, b) = (djn.encrypt_i64(5, &mut r), djn.encrypt_i64(5, &mut r));
        assert_ne!(a, b, "a fresh α per ciphertext");
    }
}
