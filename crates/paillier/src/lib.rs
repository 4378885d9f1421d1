/*!
Paillier encryption for capelab's EFPSN protocol (spec `efpsn-vertical-dpvi` §A2, seed 003).

What it offers: key generation ([`Keypair::generate`], 2048-bit moduli by default and a labelled
1024-bit demo size), encryption of signed 64-bit integers with fresh randomness per ciphertext
([`PublicKey::encrypt_i64`]), several bounded fixed-point values packed into one plaintext
([`PublicKey::encrypt_packed`], [`Packing`]), homomorphic addition ([`PublicKey::add`],
[`PublicKey::sum`]) and CRT decryption ([`SecretKey::decrypt_i64`], [`SecretKey::decrypt_packed`]).

# The scheme

Public key: `n = p·q` with `p`, `q` random primes of equal length (`n` has exactly the key's bit
length), `g = n + 1`. Encryption of `m ∈ Z_n`: `c = g^m · r^n mod n²` with `g^m = 1 + m·n mod n²`
and `r` drawn **fresh and uniformly from Z*_n for every ciphertext** from the caller's CSPRNG.
The paper's Algorithm 1 reuses one `r` per agent; with `g = n + 1` the ratio of two such
ciphertexts is `1 + (m₁ − m₂)·n`, which leaks the difference of the plaintexts to anyone
(spec §D pitfall 1). Nothing in this crate can reuse an `r`.

Signed values use the centred encoding of the spec: `m` is encrypted as `m mod n`; a decrypted
value above `n/2` means `m − n` (spec §D pitfall 2). Decryption goes through the Chinese remainder
theorem, modulo `p²` and `q²` (Paillier 1999, §7), about four times faster than with `λ` mod `n²`.

Homomorphic addition is the product of ciphertexts mod `n²`; the sum is taken mod `n`, so a sum of
i64 values decodes correctly as long as its magnitude stays below `n/2` and fits in i64.

# Threat model

Passive adversaries only, like EFPSN itself (spec §A1): an eavesdropper and honest-but-curious
agents. The scheme is IND-CPA under the decisional composite residuosity (DCR) assumption. It is
malleable by design (that is the homomorphism) and nothing is authenticated: a party that replaces
a ciphertext or a public key in transit is outside the model. [`PublicKey::check`] refuses what
is not a ciphertext under a key (`0`, values ≥ `n²`, values sharing a factor with `n`), which
catches mistakes and foreign keys of other sizes, not forgeries. A receiver can decrypt every
ciphertext sent to it alone (spec §D pitfall 11): summing before decryption saves time, it does
not hide the summands from the key owner.

# Speed and its assumptions

Encryption costs one exponentiation `r^n mod n²` (a 2·|n|-bit modulus with an |n|-bit exponent),
done by crypto-bigint's constant-time windowed Montgomery exponentiation. The one optional speed-up
is the standard offline/online split [`PublicKey::precompute`] → [`Randomizer`]: `r^n mod n²` is
computed ahead of time (e.g. while a tab waits for its neighbours) for a fresh uniform `r`, and
[`PublicKey::encrypt_i64_with`] then costs one multiplication. It keeps IND-CPA under DCR unchanged
**provided each randomizer is used once and kept secret until used**; the type is consumed on use,
not `Clone`, and not serialisable, so the compiler enforces the first half. capelab's protocols use
nothing else. For callers who encrypt many values under one key, [`DjnEncryptor`] offers the
Damgård–Jurik–Nielsen short-exponent randomizer with a fixed-base table, several times faster per
ciphertext, under an assumption beyond DCR that its doc states.

Decryption is by the key owner only and uses `p` and `q` (CRT); that needs no assumption.

Keys: primes come from crypto-primes (sieve plus Baillie–PSW). crypto-primes draws different
primes on wasm32 and natively for the same seed (32- vs 64-bit limbs), so key generation is
reproducible per target only; nothing here assumes otherwise.

`SecretKey` zeroizes `p`, `q` and its CRT constants on drop. The Montgomery parameters for `p²`
and `q²` are kept in the key inside crypto-bigint's reference-counted parameter type, which
crypto-bigint does not zeroize.
*/

#![forbid(unsafe_code)]

mod ciphertext;
mod djn;
mod error;
mod keys;
mod packing;
mod serde_big;

pub use ciphertext::Ciphertext;
pub use djn::DjnEncryptor;
pub use error::PaillierError;
pub use keys::{KeySize, Keypair, PublicKey, Randomizer, SecretKey};
pub use packing::Packing;

#[cfg(test)]
mod tests;
