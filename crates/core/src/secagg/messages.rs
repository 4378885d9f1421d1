//! The SecureAgg messages (spec §3), as they travel inside relay envelopes.
//!
//! Every message is a [`SecAggMessage`]: the session id the aggregator chose, and one [`Body`].
//! [`Body::kind`] is the envelope's `kind` (`secagg/…`), so logs and the dashboard can name a
//! message without decoding it. Bytes come from [`crate::codec`] (postcard); ring vectors are
//! carried as packed little-endian bytes ([`RingVec`]), 8 bytes per coordinate.

use serde::{Deserialize, Serialize};

use super::config::Params;
use crate::wire::ParticipantId;

/// Names of the messages, one per [`Body`] variant (the envelope `kind`).
pub mod kind {
    pub const BEGIN: &str = "secagg/begin";
    pub const ADVERTISE_KEYS: &str = "secagg/advertise-keys";
    pub const KEY_DIRECTORY: &str = "secagg/key-directory";
    pub const ENCRYPTED_SHARES: &str = "secagg/encrypted-shares";
    pub const FORWARDED_SHARES: &str = "secagg/forwarded-shares";
    pub const MASKED_INPUT: &str = "secagg/masked-input";
    pub const UNMASK_REQUEST: &str = "secagg/unmask-request";
    pub const UNMASK_SHARES: &str = "secagg/unmask-shares";
    pub const RESULT: &str = "secagg/result";
    pub const ABORT: &str = "secagg/abort";
}

/// The 128-bit id of one SecureAgg instance, chosen at random by the aggregator. It enters every
/// key derivation and every share ciphertext's associated data, so nothing from one instance can
/// be replayed into another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SessionId(pub [u8; 16]);

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for b in &self.0[..4] {
            write!(f, "{b:02x}")?;
        }
        f.write_str("…")
    }
}

/// The four rounds of spec §3, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Phase {
    /// R0: sites send their two public keys; the aggregator collects U1.
    AdvertiseKeys,
    /// R1: sites send encrypted Shamir shares; the aggregator collects U2.
    ShareKeys,
    /// R2: sites send masked inputs; the aggregator collects U3.
    MaskedInput,
    /// R3: sites send the shares that remove the masks; the aggregator computes the sum.
    Unmask,
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Phase::AdvertiseKeys => "R0 advertise keys",
            Phase::ShareKeys => "R1 share keys",
            Phase::MaskedInput => "R2 masked input",
            Phase::Unmask => "R3 unmask",
        })
    }
}

/// Why a site stopped counting in a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DropReason {
    /// The transport reported that it left.
    Left,
    /// It was still connected but did not answer before the round's deadline.
    TimedOut,
}

/// A site that did not answer in `phase`. A site that drops in [`Phase::Unmask`] still counts in
/// the sum (its masked input arrived); a site that drops earlier does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropout {
    pub site: ParticipantId,
    pub phase: Phase,
    pub reason: DropReason,
}

/// A site's two Ristretto255 public keys (compressed): `enc` (c^PK) protects the share
/// ciphertexts, `mask` (s^PK) derives the pairwise masks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicKeys {
    pub enc: [u8; 32],
    pub mask: [u8; 32],
}

/// One line of the key directory the aggregator broadcasts after R0 (U1 with its keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyEntry {
    pub site: ParticipantId,
    pub keys: PublicKeys,
}

/// e_{from,to}: `from`'s shares of its s^SK and b for `to`, sealed with ChaCha20-Poly1305 under
/// KA(c_from^SK, c_to^PK). The aggregator forwards it unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedShares {
    pub from: ParticipantId,
    pub to: ParticipantId,
    pub ciphertext: Vec<u8>,
}

/// One revealed Shamir share (a canonical Ristretto scalar) of a secret owned by `owner`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevealedShare {
    pub owner: ParticipantId,
    pub share: [u8; 32],
}

/// The sum the aggregator broadcasts at the end, with who counted and who dropped where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SumBroadcast {
    pub sum: RingVec,
    /// U3: the sites whose inputs are in `sum`.
    pub survivors: Vec<ParticipantId>,
    pub dropouts: Vec<Dropout>,
}

/// Everything SecureAgg sends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SecAggMessage {
    pub session: SessionId,
    pub body: Body,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Body {
    /// Aggregator → all: the public parameters of a new instance (this opens R0).
    Begin(Params),
    /// Site → aggregator (R0): (c^PK, s^PK).
    AdvertiseKeys(PublicKeys),
    /// Aggregator → all: U1 and its keys, sorted by site (this opens R1).
    KeyDirectory(Vec<KeyEntry>),
    /// Site → aggregator (R1): e_{u,v} for every other v ∈ U1.
    EncryptedShares(Vec<SealedShares>),
    /// Aggregator → site v: e_{u,v} for every other u ∈ U2 (this opens R2; the senders are U2).
    ForwardedShares(Vec<SealedShares>),
    /// Site → aggregator (R2): y_u = x_u + p_u + Σ_v p_{u,v} in Z_{2^64}.
    MaskedInput(RingVec),
    /// Aggregator → all: U3 and U2\U3 (this opens R3). A site reveals b-shares for `survivors`
    /// and s^SK-shares for `dropped`, never both for one site.
    UnmaskRequest { survivors: Vec<ParticipantId>, dropped: Vec<ParticipantId> },
    /// Site → aggregator (R3).
    UnmaskShares { self_mask: Vec<RevealedShare>, secret_key: Vec<RevealedShare> },
    /// Aggregator → all: Σ_{u∈U3} x_u.
    Result(SumBroadcast),
    /// Aggregator → all: the instance ended without a sum.
    Abort { phase: Phase, reason: String },
}

impl Body {
    /// The envelope `kind` of this message.
    pub fn kind(&self) -> &'static str {
        match self {
            Body::Begin(_) => kind::BEGIN,
            Body::AdvertiseKeys(_) => kind::ADVERTISE_KEYS,
            Body::KeyDirectory(_) => kind::KEY_DIRECTORY,
            Body::EncryptedShares(_) => kind::ENCRYPTED_SHARES,
            Body::ForwardedShares(_) => kind::FORWARDED_SHARES,
            Body::MaskedInput(_) => kind::MASKED_INPUT,
            Body::UnmaskRequest { .. } => kind::UNMASK_REQUEST,
            Body::UnmaskShares { .. } => kind::UNMASK_SHARES,
            Body::Result(_) => kind::RESULT,
            Body::Abort { .. } => kind::ABORT,
        }
    }
}

/// A vector of ring elements, serialized as packed little-endian bytes (8 per coordinate) instead
/// of postcard's varints, which would spend 10 bytes on a uniformly random u64.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RingVec(pub Vec<u64>);

impl Serialize for RingVec {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut bytes = Vec::with_capacity(self.0.len() * 8);
        for v in &self.0 {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        serializer.serialize_bytes(&bytes)
    }
}

impl<'de> Deserialize<'de> for RingVec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = RingVec;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a byte string whose length is a multiple of 8")
            }
            fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<RingVec, E> {
                if !bytes.len().is_multiple_of(8) {
                    return Err(E::custom(format!(
                        "ring vector of {} bytes is not a whole number of u64s",
                        bytes.len()
                    )));
                }
                Ok(RingVec(
                    bytes
                        .chunks_exact(8)
                        .map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8")))
                        .collect(),
                ))
            }
            fn visit_borrowed_bytes<E: serde::de::Error>(self, b: &'_ [u8]) -> Result<RingVec, E> {
                self.visit_bytes(b)
            }
            fn visit_byte_buf<E: serde::de::Error>(self, b: Vec<u8>) -> Result<RingVec, E> {
                self.visit_bytes(&b)
            }
        }
        deserializer.deserialize_bytes(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{decode, encode};
    use crate::fixed::FixedPoint;
    use crate::secagg::config::Encoding;
    use crate::secagg::graph::Graph;

    fn session() -> SessionId {
        SessionId([7; 16])
    }

    #[test]
    fn every_body_round_trips() {
        let params = Params {
            sites: vec![2, 3, 4],
            threshold: 3,
            vector_len: 2,
            encoding: Encoding::Fixed(FixedPoint::new(32, 10.0).unwrap()),
            graph: Graph::Harary { k: 2, seed: 9 },
        };
        let keys = PublicKeys { enc: [1; 32], mask: [2; 32] };
        let sealed = SealedShares { from: 2, to: 3, ciphertext: vec![9; 88] };
        let bodies = vec![
            Body::Begin(params),
            Body::AdvertiseKeys(keys),
            Body::KeyDirectory(vec![KeyEntry { site: 2, keys }]),
            Body::EncryptedShares(vec![sealed.clone()]),
            Body::ForwardedShares(vec![sealed]),
            Body::MaskedInput(RingVec(vec![0, 1, u64::MAX])),
            Body::UnmaskRequest { survivors: vec![2, 3], dropped: vec![4] },
            Body::UnmaskShares {
                self_mask: vec![RevealedShare { owner: 2, share: [3; 32] }],
                secret_key: vec![],
            },
            Body::Result(SumBroadcast {
                sum: RingVec(vec![5]),
                survivors: vec![2, 3],
                dropouts: vec![Dropout {
                    site: 4,
                    phase: Phase::ShareKeys,
                    reason: DropReason::Left,
                }],
            }),
            Body::Abort { phase: Phase::Unmask, reason: "too few".into() },
        ];
        for body in bodies {
            let msg = SecAggMessage { session: session(), body };
            let back: SecAggMessage = decode(msg.body.kind(), &encode(&msg)).unwrap();
            assert_eq!(back, msg);
        }
    }

    #[test]
    fn ring_vectors_are_packed() {
        let v = RingVec((0..100).map(|i| u64::MAX - i).collect());
        // one length varint (800 needs 2 bytes) plus 8 bytes per coordinate
        assert_eq!(encode(&v).len(), 2 + 800);
        assert_eq!(decode::<RingVec>("ring", &encode(&v)).unwrap(), v);
    }

    #[test]
    fn garbage_is_rejected_not_panicked_on() {
        let good = encode(&SecAggMessage {
            session: session(),
            body: Body::MaskedInput(RingVec(vec![1, 2, 3])),
        });
        // every truncation of a valid message fails cleanly
        for cut in 0..good.len() {
            assert!(decode::<SecAggMessage>("secagg", &good[..cut]).is_err(), "cut {cut}");
        }
        // a ring vector whose byte length is not a multiple of 8
        let mut odd = encode(&SecAggMessage {
            session: session(),
            body: Body::Begin(Params {
                sites: vec![],
                threshold: 0,
                vector_len: 0,
                encoding: Encoding::Ring,
                graph: Default::default(),
            }),
        });
        odd.truncate(16);
        odd.extend_from_slice(&[5, 3, 1, 2, 3]); // variant 5 (MaskedInput), 3 bytes
        let err = decode::<SecAggMessage>("secagg", &odd).unwrap_err();
        assert_eq!(err.what, "secagg");
        // an unknown variant tag
        let mut bad = good.clone();
        bad[16] = 200;
        assert!(decode::<SecAggMessage>("secagg", &bad).is_err());
        // random bytes never panic
        let mut rng = crate::rng::derive(1, "garbage");
        for len in 0..200 {
            let bytes: Vec<u8> = (0..len).map(|_| rand::RngExt::random::<u8>(&mut rng)).collect();
            let _ = decode::<SecAggMessage>("secagg", &bytes);
        }
    }
}
