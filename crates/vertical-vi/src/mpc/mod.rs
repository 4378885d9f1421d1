/*!
The MPC of spec B3 step 3: the per-example gradients of one batch computed under additive secret
sharing over Z_{2^128} (f = 32 fractional bits), clipped jointly, noised in shares, and only the
noisy clipped batch sum G̃ opened (spec D11, D12).

- [`ring`]: encoding and additive sharing.
- [`program`]: the circuit as a straight-line program, and the fixed-point numerics built from it
  (products with truncation, Newton–Raphson reciprocal and inverse square root, comparison).
- [`circuit`]: the DPVI gradient circuit itself, and the two ways to run it.
- [`dealer`]: the trusted dealer's correlated randomness (Beaver triples, boolean triples,
  truncation pairs, comparison masks, the masks of a private matrix product).
- [`bits`]: XOR-shared bits and their packing.
- [`party`]: one party as a sans-IO round state machine; [`run`]: all parties in one process.
- [`fixed`]: the plaintext fixed-point simulation (the paper's main mode) of the same program.
- [`noise`]: the exact discrete Gaussian.

Cost (measured on CPS1988, release, in process, P = 2, K = 20, B = 100, D = 799, `cargo run
--release -p capelab-vertical-vi --example vvi_mpc_step`): 56 rounds; party 0 (demographics,
e = 36) sends 1.8 MB and party 1 (financial, e = 3) 0.76 MB; the dealer sends party 0 a 32-byte
seed and party 1 0.37 MB; 29 ms per step without noise. (Stop 23's circuit: 54 rounds, 6.7 MB of
openings per party and 3.8 MB of dealer material; the first one: 102 rounds, 21 MB and 33 MB per
party, 0.25 s.) What made the difference:
- with two parties, truncation is local ([`program::Op::TruncLocal`], SecureML), no round;
- g_n is never formed: the clip needs only ‖g_n‖², which is Σ GY² + Σ_k r_nk²·ℓ_nk with
  ℓ^p_nk = Σ_j (dlog^p_nkj)² a party's own (shared) input, and the clipped GR blocks are
  Σ_n (f_n r_nk)·dlog^p_nkj, a product of a shared B×K matrix with a matrix only party p holds
  ([`program::Op::OwnedMatVec`]): each dlog^p travels once, masked, from its owner, and the
  other parties send B·K values, not B·D;
- the clip's comparisons: [u ≥ 1] reads u at 20 fractional bits (44 bits instead of 56), the 10
  that only pick the inverse square root's start read u at 2 (26 bits), all in the same rounds
  ([`program::Builder::geq_zero_mixed`]), and their suffix products are ANDs of XOR-shared bits
  sent packed 128 to a word ([`bits`]) instead of 128-bit ring products of 0/1 values;
- seeded dealer material ([`dealer`]): uniform shares expanded from a per-party ChaCha20 seed,
  only derived values sent, to one party; and inputs shared the same way (round 0 sends a seed,
  [`party`]).

The reciprocal's and inverse square root's Newton–Raphson iterations are now most of the rounds
(26 and 15), and party 0's masked dlog (72 000 values) most of the bytes.
*/

pub mod bits;
pub mod circuit;
pub mod dealer;
pub(crate) mod exec;
pub mod fixed;
pub mod noise;
pub mod party;
pub mod program;
pub mod ring;
pub mod run;

pub use circuit::{GradientConfig, Shape};
pub use party::{Message, MpcParty, Step};

/// Everything that can go wrong in the MPC layer, each naming the problem.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MpcError {
    #[error("cannot encode {value}: not a finite number")]
    NotFinite { value: f64 },
    #[error("cannot encode {value}: |x| must stay below {max}")]
    OutOfRange { value: f64, max: f64 },
    #[error("secret sharing needs at least 2 parties, got {parties}")]
    TooFewParties { parties: usize },
    #[error("message for round {got} arrived in round {expected}")]
    WrongRound { expected: u32, got: u32 },
    #[error("message from unknown party {from} (there are {parties} parties)")]
    UnknownParty { from: usize, parties: usize },
    #[error("message addressed to party {to} delivered to party {me}")]
    WrongRecipient { to: usize, me: usize },
    #[error("party {from} sent two messages in one round")]
    DuplicateSender { from: usize },
    #[error("no message from party {from} this round")]
    MissingSender { from: usize },
    #[error("message from party {from} has {got} values, expected {expected}")]
    WrongLength { from: usize, expected: usize, got: usize },
    #[error("protocol step out of order: {what}")]
    OutOfOrder { what: &'static str },
    #[error("input mismatch: {what}")]
    BadInput { what: String },
    #[error(
        "fixed-point overflow in op {op} element {index}: |value| ≥ 2^{bits} (the MPC would silently \
         compute garbage here)"
    )]
    Overflow { op: usize, index: usize, bits: u32 },
    #[error(
        "noise variance {variance} is not representable exactly (needs 0 or a positive f64 below 2^99 with ≤ 62 fractional bits)"
    )]
    NoiseVariance { variance: f64 },
}
