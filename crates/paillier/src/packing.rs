//! Several bounded signed values in one Paillier plaintext.
//!
//! Each value v ∈ [−B, B] is stored as v + B in its own slot of `slot_bytes` bytes; a sum of up to
//! `max_summands` packed plaintexts then holds Σ(v + B) ≤ 2·S·B in every slot without a carry into
//! the next, and decodes as Σv = slot − S·B. Slots are whole bytes so that packing is a byte copy.
//! The plaintext stays below 2^{bits − 8} < n.

use crypto_bigint::{BoxedUint, Resize};

use crate::error::PaillierError;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packing {
    bound: u64,
    max_summands: u32,
    slot_bytes: usize,
    slots: usize,
    key_bits: u32,
}

impl Packing {
    /// A packing for values with |v| ≤ `value_bound`, sums of up to `max_summands` ciphertexts,
    /// under keys of `key_bits` bits.
    pub fn new(
        value_bound: u64,
        max_summands: u32,
        key_bits: u32,
    ) -> Result<Packing, PaillierError> {
        if value_bound == 0 || max_summands == 0 {
            return Err(PaillierError::Packing(
                "the bound and the summands must be at least 1".into(),
            ));
        }
        // The largest slot value 2·S·B must fit in the slot.
        let top = 2u128 * value_bound as u128 * max_summands as u128;
        let bits = 128 - top.leading_zeros();
        if bits > 120 {
            return Err(PaillierError::Packing(format!(
                "2·{max_summands}·{value_bound} needs {bits} bits per slot; at most 120"
            )));
        }
        let slot_bytes = bits.div_ceil(8) as usize;
        let slots = (key_bits as usize).saturating_sub(8) / (8 * slot_bytes);
        if slots == 0 {
            return Err(PaillierError::Packing(format!(
                "no slot of {slot_bytes} bytes fits a {key_bits}-bit key"
            )));
        }
        Ok(Packing { bound: value_bound, max_summands, slot_bytes, slots, key_bits })
    }

    pub fn slots(&self) -> usize {
        self.slots
    }

    fn check_key(&self, key_bits: u32) -> Result<(), PaillierError> {
        if key_bits != self.key_bits {
            return Err(PaillierError::PackingKeyMismatch {
                packing_bits: self.key_bits,
                key_bits,
            });
        }
        Ok(())
    }

    /// The plaintext of `values` (slot 0 in the lowest bytes), at the key's precision.
    pub(crate) fn pack(&self, values: &[i64], key_bits: u32) -> Result<BoxedUint, PaillierError> {
        self.check_key(key_bits)?;
        if values.len() > self.slots {
            return Err(PaillierError::TooManySlots { given: values.len(), slots: self.slots });
        }
        let total = self.slots * self.slot_bytes;
        let mut bytes = vec![0u8; total];
        // Unused slots hold 0 (stored as B), so that they decode to 0 like the others.
        for slot in 0..self.slots {
            let v = values.get(slot).copied().unwrap_or(0);
            if v.unsigned_abs() > self.bound {
                return Err(PaillierError::ValueOverBound { slot, value: v, bound: self.bound });
            }
            let stored = (v as i128 + self.bound as i128) as u128;
            let be = stored.to_be_bytes();
            let end = total - slot * self.slot_bytes;
            bytes[end - self.slot_bytes..end].copy_from_slice(&be[16 - self.slot_bytes..]);
        }
        Ok(BoxedUint::from_be_slice_vartime(&bytes).resize(key_bits))
    }

    /// The sums Σv per slot from a decrypted sum of `summands` packed plaintexts.
    pub(crate) fn unpack(
        &self,
        m: &BoxedUint,
        key_bits: u32,
        summands: u32,
    ) -> Result<Vec<i64>, PaillierError> {
        self.check_key(key_bits)?;
        if summands == 0 || summands > self.max_summands {
            return Err(PaillierError::Summands { summands, max: self.max_summands });
        }
        let total = self.slots * self.slot_bytes;
        let all = m.to_be_bytes();
        if all.len() < total || all[..all.len() - total].iter().any(|&b| b != 0) {
            return Err(PaillierError::SlotOutOfRange {
                slot: self.slots,
                bound: self.bound,
                summands,
            });
        }
        let bytes = &all[all.len() - total..];
        let offset = self.bound as i128 * summands as i128;
        (0..self.slots)
            .map(|slot| {
                let end = total - slot * self.slot_bytes;
                let mut be = [0u8; 16];
                be[16 - self.slot_bytes..].copy_from_slice(&bytes[end - self.slot_bytes..end]);
                let stored = u128::from_be_bytes(be) as i128;
                if stored > 2 * offset {
                    return Err(PaillierError::SlotOutOfRange {
                        slot,
                        bound: self.bound,
                        summands,
                    });
                }
                Ok((stored - offset) as i64)
            })
            .collect()
    }
}
