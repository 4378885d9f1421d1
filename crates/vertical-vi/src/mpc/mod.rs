/*!
The MPC of spec B3 step 3: the per-example gradients of one batch computed under additive secret
sharing over Z_{2^128} (f = 32 fractional bits), clipped jointly, noised in shares, and only the
noisy clipped batch sum G̃ opened (spec D11, D12).

- [`ring`]: encoding and additive sharing.
- [`program`]: the circuit as a straight-line program, and the fixed-point numerics built from it
  (products with truncation, Newton–Raphson reciprocal and inverse square root, comparison).
- [`circuit`]: the DPVI gradient circuit itself, and the two ways to run it.
- [`dealer`]: the trusted dealer's correlated randomness (Beaver triples, truncation pairs,
  comparison masks).
- [`party`]: one party as a sans-IO round state machine; [`run`]: all parties in one process.
- [`fixed`]: the plaintext fixed-point simulation (the paper's main mode) of the same program.
- [`noise`]: the exact discrete Gaussian.

Cost (measured on CPS1988, release, in process, P = 2, K = 20, B = 100, D = 799, `cargo run
--release -p capelab-vertical-vi --example vvi_mpc_step`): 54 rounds, 6.7 MB of openings
per party, dealer material 32 bytes (a seed) to party 0 and 3.8 MB to party 1, about 0.05 s per
step without noise (before: 102 rounds, 21 MB of openings and 33 MB of dealer material per
party, 0.25 s on the same machine). What made the difference:
- with two parties, truncation is local ([`program::Op::TruncLocal`], SecureML), no round;
- r_nk·dlog_nkj opens r_nk once per (n, k) ([`program::Op::MulGather`], a broadcast triple);
- the per-example vector g is opened once, masked by a dealer A ([`program::Op::MaskOpen`]):
  ‖g_n‖² and Σ_n f_n g_n (a matrix–vector Beaver product, [`program::Op::MatVec`], which opens
  only the B factors) both come from E = g − A, instead of two B×D products;
- the clip's comparisons: [u ≥ 1] reads u at 20 fractional bits (44 bits instead of 56), and
  the 10 that only pick the inverse square root's start read u at 2 (26 bits), all in the same
  rounds ([`program::Builder::geq_zero_mixed`]);
- seeded dealer material ([`dealer`]): uniform shares expanded from a per-party ChaCha20 seed,
  only derived values sent, to one party; and inputs shared the same way (round 0 sends a seed,
  [`party`]).

The comparisons remain most of the traffic.
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
