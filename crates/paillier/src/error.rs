//! Everything this crate refuses, with messages that name the problem.

/// Why a key, a ciphertext or a plaintext was refused.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum PaillierError {
    /// A modulus outside the sizes capelab accepts.
    #[error(
        "key of {bits} bits: capelab accepts {demo} (demo) or {min}..{max}",
        demo = crate::keys::DEMO_BITS,
        min = crate::keys::MIN_BITS,
        max = crate::keys::MAX_BITS
    )]
    KeySize { bits: u32 },
    /// An even modulus cannot be a product of two odd primes.
    #[error("modulus is even: a Paillier modulus is the product of two odd primes")]
    EvenModulus,
    /// Primes given for a key (an interoperability test's) that do not make one.
    #[error("these primes do not make a Paillier key: {0}")]
    BadPrimes(&'static str),
    /// A modulus that does not parse as a decimal number.
    #[error("modulus is not a decimal number: {0}")]
    ModulusNotDecimal(String),
    /// A ciphertext that is not a unit modulo n².
    #[error("ciphertext is not in Z*_{{n²}}: {reason}")]
    NotACiphertext { reason: &'static str },
    /// A ciphertext whose encoding is too long or does not parse.
    #[error("ciphertext does not decode: {0}")]
    CiphertextEncoding(String),
    /// A decrypted value whose magnitude needs more than 64 bits.
    #[error("plaintext {sign}2^{log2} does not fit in i64", sign = if *.negative { "−" } else { "" })]
    PlaintextOverflow {
        /// ⌊log2 |m|⌋ of the centred plaintext.
        log2: u32,
        negative: bool,
    },
    /// A packed value over the packing's bound.
    #[error("value {value} in slot {slot} exceeds the packing bound ±{bound}")]
    ValueOverBound { slot: usize, value: i64, bound: u64 },
    /// More values than slots.
    #[error("{given} values do not fit in {slots} slots of this packing")]
    TooManySlots { given: usize, slots: usize },
    /// A packing built for another key size.
    #[error("packing was built for a {packing_bits}-bit key, the key has {key_bits} bits")]
    PackingKeyMismatch { packing_bits: u32, key_bits: u32 },
    /// A packing that cannot be built.
    #[error("packing impossible: {0}")]
    Packing(String),
    /// A sum of more packed ciphertexts than the packing has headroom for.
    #[error("{summands} summands: this packing has headroom for 1..={max}")]
    Summands { summands: u32, max: u32 },
    /// A decoded slot outside what `summands` values within the bound can give: the ciphertext
    /// was not a sum of that many packed ciphertexts of this packing.
    #[error(
        "slot {slot} decodes outside ±{bound}·{summands}: not a sum of {summands} packed ciphertexts of this packing"
    )]
    SlotOutOfRange { slot: usize, bound: u64, summands: u32 },
}
