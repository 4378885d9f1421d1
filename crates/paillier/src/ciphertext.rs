//! A Paillier ciphertext: an element of Z*_{n²}, as received (checked against a key on use).

use core::cmp::Ordering;
use core::fmt;

use crypto_bigint::BoxedUint;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::keys::MAX_BITS;

/// A ciphertext under some [`PublicKey`](crate::PublicKey).
///
/// It does not carry its key: [`PublicKey::check`](crate::PublicKey::check) says whether it can
/// be one under a given key, and decryption runs that check first. On the wire it is a decimal
/// string (JSON) or big-endian bytes (postcard), at most 2·4096 bits.
#[derive(Clone)]
pub struct Ciphertext(pub(crate) BoxedUint);

impl Ciphertext {
    /// The value as big-endian bytes without leading zeros.
    pub fn to_be_bytes(&self) -> Vec<u8> {
        self.0.to_be_bytes_trimmed_vartime().into_vec()
    }

    /// A ciphertext from big-endian bytes (at most 2·4096 bits); not yet checked against a key.
    pub fn from_be_bytes(bytes: &[u8]) -> Result<Ciphertext, crate::PaillierError> {
        crate::serde_big::from_bytes(bytes, 2 * MAX_BITS)
            .map(Ciphertext)
            .map_err(crate::PaillierError::CiphertextEncoding)
    }

    /// The value in decimal.
    pub fn to_decimal(&self) -> String {
        self.0.to_string_radix_vartime(10)
    }

    /// A ciphertext from its decimal digits (at most 2·4096 bits); not yet checked against a key.
    pub fn from_decimal(text: &str) -> Result<Ciphertext, crate::PaillierError> {
        crate::serde_big::parse_decimal(text.trim(), 2 * MAX_BITS)
            .map(Ciphertext)
            .map_err(crate::PaillierError::CiphertextEncoding)
    }
}

impl PartialEq for Ciphertext {
    fn eq(&self, other: &Self) -> bool {
        // Ciphertexts are public: a variable-time comparison is fine. Precisions may differ
        // (a decoded ciphertext has the precision of its bytes).
        self.0.cmp_vartime(&other.0) == Ordering::Equal
    }
}

impl Eq for Ciphertext {}

impl fmt::Debug for Ciphertext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex: String = self.to_be_bytes().iter().map(|b| format!("{b:02x}")).collect();
        if hex.len() > 16 {
            write!(
                f,
                "Ciphertext({}…{}, {} bits)",
                &hex[..8],
                &hex[hex.len() - 8..],
                self.0.bit_width_vartime()
            )
        } else {
            write!(f, "Ciphertext(0x{hex})")
        }
    }
}

impl Serialize for Ciphertext {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        crate::serde_big::serialize(&self.0, s)
    }
}

impl<'de> Deserialize<'de> for Ciphertext {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::serde_big::deserialize(d, 2 * MAX_BITS).map(Ciphertext)
    }
}
