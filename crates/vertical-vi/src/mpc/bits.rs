//! Bits in transit. Boolean registers hold one XOR-shared bit per element (a `u128` that is 0 or
//! 1, so the interpreter's gathers and concatenations work on them unchanged); what a party sends
//! for a boolean op, and what the dealer sends of boolean material, is packed 128 bits to a word.

/// Words needed for `n` bits.
pub fn words(n: usize) -> usize {
    n.div_ceil(128)
}

/// Packs 0/1 values, bit i of the stream at bit i % 128 of word i / 128.
pub fn pack(bits: impl IntoIterator<Item = u128>) -> Vec<u128> {
    let mut out = Vec::new();
    for (i, b) in bits.into_iter().enumerate() {
        if i % 128 == 0 {
            out.push(0);
        }
        *out.last_mut().expect("pushed") |= (b & 1) << (i % 128);
    }
    out
}

/// The first `n` bits of `words` as 0/1 values (the caller checked the word count).
pub fn unpack(words: &[u128], n: usize) -> Vec<u128> {
    (0..n).map(|i| (words[i / 128] >> (i % 128)) & 1).collect()
}

/// A serde visitor for a field sent as one byte string: what it expects, and how to decode it
/// (`None`: the wrong length). Shared by the dealer's ring and bit fields.
pub(crate) struct ByteField<F>(pub &'static str, pub F);

impl<'de, F: FnOnce(&[u8]) -> Option<Vec<u128>>> serde::de::Visitor<'de> for ByteField<F> {
    type Value = Vec<u128>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.0)
    }

    fn visit_bytes<E: serde::de::Error>(self, b: &[u8]) -> Result<Vec<u128>, E> {
        let (what, decode) = (self.0, self.1);
        decode(b).ok_or_else(|| E::invalid_length(b.len(), &what))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u128>, A::Error> {
        let mut b = Vec::new();
        while let Some(x) = seq.next_element::<u8>()? {
            b.push(x);
        }
        self.visit_bytes(&b)
    }
}

/// Serde for a boolean field of dealer material: the bit count (u32, little-endian), then the
/// bits packed 8 to a byte.
pub(crate) mod bit_vec {
    use serde::{Deserializer, Serializer};

    use super::ByteField;

    pub fn serialize<S: Serializer>(v: &[u128], s: S) -> Result<S::Ok, S::Error> {
        let n = u32::try_from(v.len()).map_err(serde::ser::Error::custom)?;
        let mut bytes = n.to_le_bytes().to_vec();
        bytes.resize(4 + v.len().div_ceil(8), 0);
        for (i, b) in v.iter().enumerate() {
            bytes[4 + i / 8] |= ((b & 1) as u8) << (i % 8);
        }
        s.serialize_bytes(&bytes)
    }

    fn bits(b: &[u8]) -> Option<Vec<u128>> {
        let n = u32::from_le_bytes(b.get(..4)?.try_into().expect("4 bytes")) as usize;
        (b.len() == 4 + n.div_ceil(8))
            .then(|| (0..n).map(|i| u128::from((b[4 + i / 8] >> (i % 8)) & 1)).collect())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u128>, D::Error> {
        d.deserialize_bytes(ByteField("a bit count and the bits packed 8 to a byte", bits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_round_trips_across_word_edges() {
        for n in [0, 1, 127, 128, 129, 300] {
            let bits: Vec<u128> = (0..n).map(|i| ((i * 7 + i / 3) % 2) as u128).collect();
            let w = pack(bits.iter().copied());
            assert_eq!(w.len(), words(n));
            assert_eq!(unpack(&w, n), bits);
        }
    }
}
