//! End-to-end sealed links between two participants, for protocols whose peer-to-peer traffic the
//! relay must not read (e.g. additive secret shares: a relay holding both parties' shares learns
//! the secret). The primitives are SecureAgg's ([`crate::secagg`]): Ristretto255 Diffie–Hellman
//! (curve25519-dalek), HKDF-SHA256 and ChaCha20-Poly1305; only the labels differ.
//!
//! - [`LinkKeyPair`]: a fresh key pair per run; its public half goes to the peers in clear (the
//!   relay fills in `from`, so a key is bound to the participant id that sent it; a relay that
//!   rewrites keys — an active man in the middle — is outside the honest-but-curious model).
//! - [`LinkKeyPair::link_key`]: the key of the **ordered** pair (from, to) under a context (the
//!   study id): `from → to` and `to → from` get different keys, so the two directions never share
//!   a (key, nonce).
//! - [`seal`] / [`open`]: ChaCha20-Poly1305 with a caller-built 12-byte nonce, which must be unique
//!   per key (callers build it from their step and round counters) and associated data that
//!   binds the ciphertext to its place (study, kind, step, …).

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use hkdf::Hkdf;
use sha2::Sha256;

use crate::rng::CapeRng;
use crate::secagg::crypto::{KeyPair, agree, decode_public};
use crate::wire::ParticipantId;

/// The HKDF label of a link key (length-prefixed in the info, like SecureAgg's labels).
const LABEL: &[u8] = b"capelab/link";

/// One participant's key pair for the links of one run. The secret is zeroized on drop.
pub struct LinkKeyPair(KeyPair);

impl LinkKeyPair {
    pub fn generate(rng: &mut CapeRng) -> Self {
        LinkKeyPair(KeyPair::generate(rng))
    }

    /// The public key to send to the peers.
    pub fn public(&self) -> [u8; 32] {
        self.0.public
    }

    /// The key for messages `from → to` (one of them is this key pair's owner, the other the owner
    /// of `peer_public`) under `context`. `None` if `peer_public` is not a valid public key.
    pub fn link_key(
        &self,
        peer_public: &[u8; 32],
        context: &[u8],
        from: ParticipantId,
        to: ParticipantId,
    ) -> Option<[u8; 32]> {
        let peer = decode_public(peer_public)?;
        let shared = agree(&self.0.secret, &peer);
        let info: [&[u8]; 6] = [
            &[LABEL.len() as u8],
            LABEL,
            &(context.len() as u32).to_le_bytes(),
            context,
            &from.to_le_bytes(),
            &to.to_le_bytes(),
        ];
        let mut okm = [0u8; 32];
        Hkdf::<Sha256>::new(None, &shared)
            .expand_multi_info(&info, &mut okm)
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        Some(okm)
    }
}

/// AEAD-seals `plaintext` under `key` with `nonce` (unique per key) and associated data `aad`.
pub fn seal(key: &[u8; 32], nonce: [u8; 12], aad: &[u8], plaintext: &[u8]) -> Vec<u8> {
    ChaCha20Poly1305::new(&Key::from(*key))
        .encrypt(&Nonce::from(nonce), Payload { msg: plaintext, aad })
        .expect("protocol messages are far below ChaCha20-Poly1305's length limit")
}

/// Opens what [`seal`] made; `None` if the key, nonce, associated data or any byte differ.
pub fn open(key: &[u8; 32], nonce: [u8; 12], aad: &[u8], ciphertext: &[u8]) -> Option<Vec<u8>> {
    ChaCha20Poly1305::new(&Key::from(*key))
        .decrypt(&Nonce::from(nonce), Payload { msg: ciphertext, aad })
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::derive;

    #[test]
    fn both_ends_derive_the_same_directional_key_and_only_they_open() {
        let mut rng = derive(1, "link");
        let (a, b, c) = (
            LinkKeyPair::generate(&mut rng),
            LinkKeyPair::generate(&mut rng),
            LinkKeyPair::generate(&mut rng),
        );
        let ab = a.link_key(&b.public(), b"run", 1, 2).unwrap();
        assert_eq!(ab, b.link_key(&a.public(), b"run", 1, 2).unwrap());
        let ba = b.link_key(&a.public(), b"run", 2, 1).unwrap();
        assert_ne!(ab, ba, "each direction has its own key");
        assert_ne!(ab, a.link_key(&b.public(), b"other run", 1, 2).unwrap());
        assert_ne!(ab, c.link_key(&b.public(), b"run", 1, 2).unwrap(), "a third party's key");
        assert!(a.link_key(&[0xff; 32], b"run", 1, 2).is_none());

        let nonce = [7u8; 12];
        let sealed = seal(&ab, nonce, b"aad", b"secret share");
        assert_eq!(open(&ab, nonce, b"aad", &sealed).as_deref(), Some(&b"secret share"[..]));
        assert!(open(&ba, nonce, b"aad", &sealed).is_none());
        assert!(open(&ab, [8u8; 12], b"aad", &sealed).is_none());
        assert!(open(&ab, nonce, b"other", &sealed).is_none());
        let mut bad = sealed.clone();
        bad[0] ^= 1;
        assert!(open(&ab, nonce, b"aad", &bad).is_none());
    }
}
