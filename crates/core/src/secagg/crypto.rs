//! The cryptographic primitives of SecureAgg (spec §3, "Concrete choices"), each from a
//! well-kept crate; only the composition is ours.
//!
//! - Key agreement: Ristretto255 Diffie–Hellman (curve25519-dalek). KA(a, B) = a·B, compressed.
//! - Key derivation: HKDF-SHA256 over the shared point, with
//!   info = label ‖ session ‖ round ‖ min(u, v) ‖ max(u, v), so u and v derive the same key and
//!   every (purpose, instance, round, pair) gets its own.
//! - Share encryption: ChaCha20-Poly1305, nonce = (round, from, to), associated data = session.
//!   Each (key, direction) seals exactly one message per instance, so nonces never repeat.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use curve25519_dalek::Scalar;
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::traits::Identity;
use hkdf::Hkdf;
use rand_core::Rng;
use sha2::Sha256;
use zeroize::Zeroize;

use super::messages::SessionId;
use crate::rng::CapeRng;
use crate::wire::ParticipantId;

/// Round numbers that enter key derivation and nonces.
pub const ROUND_SHARE_KEYS: u32 = 1;
pub const ROUND_MASKED_INPUT: u32 = 2;

/// What a derived key is for. Each label is length-prefixed in the HKDF info, so no label can
/// collide with another label followed by data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// "cape/enc": the ChaCha20-Poly1305 key between two sites.
    Encryption,
    /// "cape/mask": the PRG seed of a pairwise mask p_{u,v}.
    PairwiseMask,
    /// "cape/self-mask": the PRG seed of a self mask p_u, from b_u (our label: the spec names
    /// only the two above).
    SelfMask,
}

impl Purpose {
    fn label(self) -> &'static [u8] {
        match self {
            Purpose::Encryption => b"cape/enc",
            Purpose::PairwiseMask => b"cape/mask",
            Purpose::SelfMask => b"cape/self-mask",
        }
    }
}

/// A uniform scalar from 64 CSPRNG bytes (reduced mod ℓ: bias below 2^-250), which keeps us
/// independent of the rand_core version curve25519-dalek was built against.
pub fn random_scalar(rng: &mut CapeRng) -> Scalar {
    let mut wide = [0u8; 64];
    rng.fill_bytes(&mut wide);
    let s = Scalar::from_bytes_mod_order_wide(&wide);
    wide.zeroize();
    s
}

/// A Ristretto255 key pair, generated fresh for every SecureAgg instance.
pub struct KeyPair {
    pub secret: Scalar,
    pub public: [u8; 32],
}

impl KeyPair {
    pub fn generate(rng: &mut CapeRng) -> Self {
        Self::from_secret(random_scalar(rng))
    }

    pub fn from_secret(secret: Scalar) -> Self {
        Self { public: public_key(&secret), secret }
    }
}

impl Drop for KeyPair {
    fn drop(&mut self) {
        self.secret.zeroize();
    }
}

/// secret·G, compressed.
pub fn public_key(secret: &Scalar) -> [u8; 32] {
    RistrettoPoint::mul_base(secret).compress().to_bytes()
}

/// Decodes a public key; `None` if the bytes are not a canonical Ristretto point or are the
/// identity (whose "shared secret" would be public).
pub fn decode_public(bytes: &[u8; 32]) -> Option<RistrettoPoint> {
    let point = CompressedRistretto(*bytes).decompress()?;
    (point != RistrettoPoint::identity()).then_some(point)
}

/// KA(secret, peer): the shared point, compressed. Symmetric: KA(a, bG) = KA(b, aG).
pub fn agree(secret: &Scalar, peer: &RistrettoPoint) -> [u8; 32] {
    (secret * peer).compress().to_bytes()
}

/// HKDF-SHA256(ikm) with info = len(label) ‖ label ‖ session ‖ round ‖ min(u,v) ‖ max(u,v).
pub fn derive_key(
    purpose: Purpose,
    ikm: &[u8],
    session: &SessionId,
    round: u32,
    u: ParticipantId,
    v: ParticipantId,
) -> [u8; 32] {
    let label = purpose.label();
    let (lo, hi) = (u.min(v), u.max(v));
    let info: [&[u8]; 6] = [
        &[label.len() as u8],
        label,
        &session.0,
        &round.to_le_bytes(),
        &lo.to_le_bytes(),
        &hi.to_le_bytes(),
    ];
    let mut okm = [0u8; 32];
    Hkdf::<Sha256>::new(None, ikm)
        .expand_multi_info(&info, &mut okm)
        .expect("32 bytes is a valid HKDF-SHA256 output length");
    okm
}

/// The plaintext of e_{u,v}: u ‖ v ‖ s^SK share ‖ b share.
const PLAINTEXT_LEN: usize = 4 + 4 + 32 + 32;
/// Plaintext plus the Poly1305 tag.
pub const SEALED_LEN: usize = PLAINTEXT_LEN + 16;

fn nonce(round: u32, from: ParticipantId, to: ParticipantId) -> Nonce {
    let mut n = [0u8; 12];
    n[..4].copy_from_slice(&round.to_le_bytes());
    n[4..8].copy_from_slice(&from.to_le_bytes());
    n[8..].copy_from_slice(&to.to_le_bytes());
    Nonce::from(n)
}

/// The two shares `from` gives `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharePair {
    pub secret_key: Scalar,
    pub self_mask: Scalar,
}

/// e_{from,to} = AEnc(key, from ‖ to ‖ shares), bound to the session.
pub fn seal_shares(
    key: &[u8; 32],
    session: &SessionId,
    from: ParticipantId,
    to: ParticipantId,
    shares: &SharePair,
) -> Vec<u8> {
    let mut plaintext = [0u8; PLAINTEXT_LEN];
    plaintext[..4].copy_from_slice(&from.to_le_bytes());
    plaintext[4..8].copy_from_slice(&to.to_le_bytes());
    plaintext[8..40].copy_from_slice(shares.secret_key.as_bytes());
    plaintext[40..].copy_from_slice(shares.self_mask.as_bytes());
    let cipher = ChaCha20Poly1305::new(&Key::from(*key));
    let sealed = cipher
        .encrypt(&nonce(ROUND_SHARE_KEYS, from, to), Payload { msg: &plaintext, aad: &session.0 })
        .expect("a 72-byte plaintext is within ChaCha20-Poly1305's limits");
    plaintext.zeroize();
    sealed
}

/// Opens e_{from,to}; `None` if it does not authenticate, names other ids, or holds a
/// non-canonical scalar.
pub fn open_shares(
    key: &[u8; 32],
    session: &SessionId,
    from: ParticipantId,
    to: ParticipantId,
    ciphertext: &[u8],
) -> Option<SharePair> {
    let cipher = ChaCha20Poly1305::new(&Key::from(*key));
    let mut plaintext = cipher
        .decrypt(&nonce(ROUND_SHARE_KEYS, from, to), Payload { msg: ciphertext, aad: &session.0 })
        .ok()?;
    let result = (|| {
        if plaintext.len() != PLAINTEXT_LEN
            || plaintext[..4] != from.to_le_bytes()
            || plaintext[4..8] != to.to_le_bytes()
        {
            return None;
        }
        let scalar = |b: &[u8]| {
            Option::<Scalar>::from(Scalar::from_canonical_bytes(b.try_into().expect("32 bytes")))
        };
        Some(SharePair {
            secret_key: scalar(&plaintext[8..40])?,
            self_mask: scalar(&plaintext[40..])?,
        })
    })();
    plaintext.zeroize();
    result
}

/// A scalar sent in the clear (a revealed share); `None` if not canonical.
pub fn decode_scalar(bytes: &[u8; 32]) -> Option<Scalar> {
    Scalar::from_canonical_bytes(*bytes).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::derive;

    const SESSION: SessionId = SessionId([9; 16]);

    #[test]
    fn key_agreement_is_symmetric_and_pair_specific() {
        let mut rng = derive(1, "ka");
        let (a, b, c) =
            (KeyPair::generate(&mut rng), KeyPair::generate(&mut rng), KeyPair::generate(&mut rng));
        let pa = decode_public(&a.public).unwrap();
        let pb = decode_public(&b.public).unwrap();
        let pc = decode_public(&c.public).unwrap();
        assert_eq!(agree(&a.secret, &pb), agree(&b.secret, &pa));
        assert_ne!(agree(&a.secret, &pb), agree(&a.secret, &pc));
        // u and v derive the same key whichever way round; purpose, round and session separate
        let shared = agree(&a.secret, &pb);
        let k = derive_key(Purpose::PairwiseMask, &shared, &SESSION, 2, 3, 7);
        assert_eq!(k, derive_key(Purpose::PairwiseMask, &shared, &SESSION, 2, 7, 3));
        assert_ne!(k, derive_key(Purpose::Encryption, &shared, &SESSION, 2, 3, 7));
        assert_ne!(k, derive_key(Purpose::PairwiseMask, &shared, &SESSION, 1, 3, 7));
        assert_ne!(k, derive_key(Purpose::PairwiseMask, &shared, &SessionId([8; 16]), 2, 3, 7));
        assert_ne!(k, derive_key(Purpose::PairwiseMask, &shared, &SESSION, 2, 3, 8));
    }

    #[test]
    fn invalid_public_keys_are_refused() {
        assert!(decode_public(&RistrettoPoint::identity().compress().to_bytes()).is_none());
        assert!(decode_public(&[0xff; 32]).is_none());
        let mut rng = derive(2, "ka");
        assert!(decode_public(&KeyPair::generate(&mut rng).public).is_some());
    }

    #[test]
    fn sealed_shares_open_only_unmodified_and_in_place() {
        let mut rng = derive(3, "aead");
        let key = [5u8; 32];
        let shares =
            SharePair { secret_key: random_scalar(&mut rng), self_mask: random_scalar(&mut rng) };
        let ct = seal_shares(&key, &SESSION, 2, 3, &shares);
        assert_eq!(ct.len(), SEALED_LEN);
        assert_eq!(open_shares(&key, &SESSION, 2, 3, &ct), Some(shares));
        // any flipped bit is detected
        for i in 0..ct.len() {
            let mut bad = ct.clone();
            bad[i] ^= 1;
            assert_eq!(open_shares(&key, &SESSION, 2, 3, &bad), None, "byte {i}");
        }
        // another session, direction, pair or key: refused
        assert_eq!(open_shares(&key, &SessionId([0; 16]), 2, 3, &ct), None);
        assert_eq!(open_shares(&key, &SESSION, 3, 2, &ct), None);
        assert_eq!(open_shares(&key, &SESSION, 2, 4, &ct), None);
        assert_eq!(open_shares(&[6u8; 32], &SESSION, 2, 3, &ct), None);
        assert_eq!(open_shares(&key, &SESSION, 2, 3, &ct[..40]), None);
    }

    #[test]
    fn random_scalars_are_distinct_and_reproducible() {
        let a = random_scalar(&mut derive(4, "s"));
        let b = random_scalar(&mut derive(4, "s"));
        let c = random_scalar(&mut derive(5, "s"));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
