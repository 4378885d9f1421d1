//! Big integers on the wire: a decimal string in human-readable formats (JSON), big-endian bytes
//! without leading zeros in binary ones (postcard). Decoding bounds the length before parsing.

use core::fmt;

use crypto_bigint::BoxedUint;
use serde::de::{self, Visitor};
use serde::{Deserializer, Serializer};

/// Serialises `x` as a decimal string or as trimmed big-endian bytes.
pub(crate) fn serialize<S: Serializer>(x: &BoxedUint, s: S) -> Result<S::Ok, S::Error> {
    if s.is_human_readable() {
        s.serialize_str(&x.to_string_radix_vartime(10))
    } else {
        s.serialize_bytes(&x.to_be_bytes_trimmed_vartime())
    }
}

/// Parses a decimal string (digits only, no sign, no separators) of at most `max_bits` bits.
pub(crate) fn parse_decimal(text: &str, max_bits: u32) -> Result<BoxedUint, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err("expected decimal digits only".into());
    }
    // log10(2) < 0.30103: a number of max_bits bits has at most ⌈max_bits·0.30103⌉ + 1 digits.
    let max_digits = (max_bits as usize * 30103).div_ceil(100_000) + 1;
    let digits = text.trim_start_matches('0');
    if digits.len() > max_digits {
        return Err(format!("more than {max_bits} bits"));
    }
    let x = BoxedUint::from_str_radix_vartime(if digits.is_empty() { "0" } else { digits }, 10)
        .map_err(|e| e.to_string())?;
    if x.bit_width_vartime() > max_bits {
        return Err(format!("more than {max_bits} bits"));
    }
    Ok(x)
}

/// Reads big-endian bytes of at most `max_bits` bits (leading zero bytes allowed).
pub(crate) fn from_bytes(bytes: &[u8], max_bits: u32) -> Result<BoxedUint, String> {
    let first = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
    let bytes = &bytes[first..];
    if bytes.len() * 8 > max_bits as usize + 7 {
        return Err(format!("more than {max_bits} bits"));
    }
    let x =
        if bytes.is_empty() { BoxedUint::zero() } else { BoxedUint::from_be_slice_vartime(bytes) };
    if x.bit_width_vartime() > max_bits {
        return Err(format!("more than {max_bits} bits"));
    }
    Ok(x)
}

/// Deserialises what [`serialize`] wrote, at most `max_bits` bits.
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
    d: D,
    max_bits: u32,
) -> Result<BoxedUint, D::Error> {
    struct BigVisitor(u32);
    impl<'de> Visitor<'de> for BigVisitor {
        type Value = BoxedUint;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            write!(
                f,
                "a non-negative integer of at most {} bits (decimal string or big-endian bytes)",
                self.0
            )
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<BoxedUint, E> {
            parse_decimal(v, self.0).map_err(E::custom)
        }
        fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<BoxedUint, E> {
            from_bytes(v, self.0).map_err(E::custom)
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<BoxedUint, A::Error> {
            let mut bytes = Vec::new();
            while let Some(b) = seq.next_element::<u8>()? {
                if bytes.len() > self.0 as usize / 8 + 1 {
                    return Err(de::Error::custom(format!("more than {} bits", self.0)));
                }
                bytes.push(b);
            }
            from_bytes(&bytes, self.0).map_err(de::Error::custom)
        }
    }
    if d.is_human_readable() {
        d.deserialize_str(BigVisitor(max_bits))
    } else {
        d.deserialize_bytes(BigVisitor(max_bits))
    }
}
