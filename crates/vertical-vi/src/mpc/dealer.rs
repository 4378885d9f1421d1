//! The dealer: the trusted third party of spec B1 (a *separate* player, spec C "a separate dealer
//! tab") that hands out correlated randomness before the run and then leaves. It reads only the
//! public program, never an input, a share of one, or an opened value (spec D10).
//!
//! Per interactive op it deals, as additive shares to each party:
//! - [`Op::Mul`]: Beaver triples (a, b, c = a·b), a, b uniform in Z_{2^128};
//! - [`Op::OwnedMatVec`]: α uniform (shared), β^b uniform for each private matrix (given to
//!   its owner alone) and shares of z^b_{kj} = Σ_n α_{nk}·β^b_{nkj};
//! - [`Op::Trunc`]: truncation pairs (r, ⌊r/2^f⌋), r uniform in [0, 2^127);
//! - [`Op::CmpOpen`]: (r, ⌊r/2^l⌋, the l low bits of r), r uniform in [0, 2^127): an
//!   edaBit-style mask whose bits are shared arithmetically, for the bitwise comparison.
//!
//! **Seeded material** (the trusted-dealer PRG trick of CrypTen's TTP provider): the dealer draws
//! a 32-byte ChaCha20 seed per party ([`PartyMaterial::seed`]) and every value that is a *uniform*
//! share is expanded from it by that party ([`PartyMaterial::expand`]), in program order. Party
//! P − 1's shares of the uniformly random values themselves (triple factors a, b, the α and β
//! of [`Op::OwnedMatVec`]) come from its seed too; only its shares of *derived* values (c = a·b,
//! αβ, and the bounded masks r with ⌊r/2^l⌋ and the bits of r) are sent explicitly, as the true
//! value minus the other parties' seeded shares (XOR for bits). So parties 0..P − 2 receive a seed and
//! nothing else, party P − 1 a seed and the derived values. Security assumption: ChaCha20 is a
//! PRG (every seeded share is computationally, instead of perfectly, uniform); each seed is
//! known to the dealer and its party only (it travels sealed to that party, like the material).
//!
//! The dealer's own draws (the seeds, the bounded masks r) come from its CSPRNG
//! ([`capelab_core::rng::CapeRng`]).

use rand_core::Rng;
use serde::{Deserialize, Serialize};

use capelab_core::rng::CapeRng;
use rand_core::SeedableRng;

use crate::mpc::MpcError;
use crate::mpc::bits::{bit_vec, words};
use crate::mpc::program::{MASK_BITS, Op, Program};
use crate::mpc::ring::{FRAC_BITS, random};

/// One party's correlated randomness for one op (empty for local ops). In the plaintext
/// simulation every op has [`OpMaterial::None`], which the interpreter reads as zeros. What the
/// dealer sends holds only the explicit values (fields expanded from the seed are empty);
/// [`PartyMaterial::expand`] fills in the rest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum OpMaterial {
    #[default]
    None,
    Triples {
        #[serde(with = "ring_vec")]
        a: Vec<u128>,
        #[serde(with = "ring_vec")]
        b: Vec<u128>,
        #[serde(with = "ring_vec")]
        c: Vec<u128>,
    },
    Trunc {
        #[serde(with = "ring_vec")]
        r: Vec<u128>,
        #[serde(with = "ring_vec")]
        r_hi: Vec<u128>,
    },
    /// For [`Op::OwnedMatVec`]: shares of α, the party's own β (the concatenation of the β^b
    /// of the matrices it owns; empty for a party that owns none) and shares of z = αβ per
    /// matrix.
    Owned {
        #[serde(with = "ring_vec")]
        alpha: Vec<u128>,
        #[serde(with = "ring_vec")]
        beta: Vec<u128>,
        #[serde(with = "ring_vec")]
        z: Vec<u128>,
    },
    Cmp {
        #[serde(with = "ring_vec")]
        r: Vec<u128>,
        #[serde(with = "ring_vec")]
        r_hi: Vec<u128>,
        /// XOR shares of the low bits of r.
        #[serde(with = "bit_vec")]
        bits: Vec<u128>,
    },
    /// XOR shares of a boolean triple (a, b, c = a∧b).
    BoolTriples {
        #[serde(with = "bit_vec")]
        a: Vec<u128>,
        #[serde(with = "bit_vec")]
        b: Vec<u128>,
        #[serde(with = "bit_vec")]
        c: Vec<u128>,
    },
    /// A random bit ρ, XOR-shared (`bit`) and additively shared (`share`).
    BitPair {
        #[serde(with = "bit_vec")]
        bit: Vec<u128>,
        #[serde(with = "ring_vec")]
        share: Vec<u128>,
    },
}

/// Ring values on the wire as one byte string of 16-byte little-endian words (a varint would
/// spend about 19 bytes on each uniformly random value).
mod ring_vec {
    use serde::{Deserializer, Serializer};

    use crate::mpc::bits::ByteField;

    pub fn serialize<S: Serializer>(v: &[u128], s: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        s.serialize_bytes(&bytes)
    }

    fn words(b: &[u8]) -> Option<Vec<u128>> {
        b.len().is_multiple_of(16).then(|| {
            b.chunks_exact(16)
                .map(|c| u128::from_le_bytes(c.try_into().expect("16 bytes")))
                .collect()
        })
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u128>, D::Error> {
        d.deserialize_bytes(ByteField("ring values as 16-byte little-endian words", words))
    }
}

/// The vectors of an [`OpMaterial`], in declaration order (by reference or mutable reference).
macro_rules! material_fields {
    ($m:expr) => {
        match $m {
            OpMaterial::None => vec![],
            OpMaterial::Triples { a, b, c } => vec![a, b, c],
            OpMaterial::Trunc { r, r_hi } => vec![r, r_hi],
            OpMaterial::Owned { alpha, beta, z } => vec![alpha, beta, z],
            OpMaterial::Cmp { r, r_hi, bits } => vec![r, r_hi, bits],
            OpMaterial::BoolTriples { a, b, c } => vec![a, b, c],
            OpMaterial::BitPair { bit, share } => vec![bit, share],
        }
    };
}

impl OpMaterial {
    fn fields(&self) -> Vec<&Vec<u128>> {
        material_fields!(self)
    }

    fn fields_mut(&mut self) -> Vec<&mut Vec<u128>> {
        material_fields!(self)
    }

    /// Which fields hold XOR-shared bits (combined by ⊕, drawn one bit at a time).
    fn bit_fields(&self) -> &'static [bool] {
        match self {
            OpMaterial::Cmp { .. } => &[false, false, true],
            OpMaterial::BoolTriples { .. } => &[true, true, true],
            OpMaterial::BitPair { .. } => &[true, false],
            _ => &[false, false, false],
        }
    }
}

/// Everything one party receives from the dealer, indexed like the program's ops: its seed and
/// its explicit (derived) values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartyMaterial {
    pub party: usize,
    /// The ChaCha20 seed this party expands its uniform shares from.
    pub seed: [u8; 32],
    pub ops: Vec<OpMaterial>,
}

impl PartyMaterial {
    /// How many 16-byte words this is as sent, for the cost report: the seed counts as 2, a ring
    /// field one per value, a bit field one per 128 bits.
    pub fn values(&self) -> usize {
        let fields = self.ops.iter().flat_map(|m| m.fields().into_iter().zip(m.bit_fields()));
        2 + fields.map(|(f, &bits)| if bits { words(f.len()) } else { f.len() }).sum::<usize>()
    }

    /// The full material for `prog`: the seeded shares, with the explicit values in the fields
    /// the seed does not give. Refuses material of the wrong shape.
    pub fn expand(self, prog: &Program) -> Result<Vec<OpMaterial>, MpcError> {
        let bad = || MpcError::BadInput {
            what: format!("dealer material is not party {}'s for this program", self.party),
        };
        if self.ops.len() != prog.ops.len() || self.party >= prog.parties {
            return Err(bad());
        }
        let mut rng = CapeRng::from_seed(self.seed);
        let mut out = Vec::with_capacity(prog.ops.len());
        for (op, sent) in prog.ops.iter().zip(&self.ops) {
            let mut m = seeded(op, prog, self.party, &mut rng);
            let want = derived_lens(op, prog, self.party);
            let got: Vec<usize> = sent.fields().iter().map(|f| f.len()).collect();
            if got.len() != want.len() && !(got.is_empty() && want.iter().all(|&n| n == 0)) {
                return Err(bad());
            }
            if !got.is_empty() && got != want {
                return Err(bad());
            }
            for (field, value) in m.fields_mut().into_iter().zip(sent.fields()) {
                if field.is_empty() {
                    field.clone_from(value);
                }
            }
            out.push(m);
        }
        Ok(out)
    }
}

fn below_mask(rng: &mut impl Rng) -> u128 {
    random(rng) >> (128 - MASK_BITS)
}

fn draw(n: usize, rng: &mut impl Rng) -> Vec<u128> {
    (0..n).map(|_| random(rng)).collect()
}

/// `n` uniform bits, 0/1 values (one 64-bit draw per 64 bits).
fn draw_bits(n: usize, rng: &mut impl Rng) -> Vec<u128> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let w = rng.next_u64();
        out.extend((0..64.min(n - out.len())).map(|j| u128::from((w >> j) & 1)));
    }
    out
}

/// The bit widths of a comparison, one per element.
fn cmp_widths(bits: &[u32], n: usize) -> Vec<u32> {
    (0..n).map(|i| if bits.len() == 1 { bits[0] } else { bits[i] }).collect()
}

/// The lengths of each field of `party`'s material for `op`.
fn field_lens(op: &Op, prog: &Program, party: usize) -> Vec<usize> {
    let len = |r: &usize| prog.lens[*r];
    match op {
        Op::Mul { a, .. } | Op::And { a, .. } => vec![len(a); 3],
        Op::B2A { src, .. } => vec![len(src); 2],
        Op::OwnedMatVec { w, groups, xs, .. } => {
            let z = xs.iter().map(|(_, x)| len(x) / len(w) * groups).sum();
            vec![len(w), prog.owned_len(op, party), z]
        }
        Op::Trunc { src, .. } => vec![len(src); 2],
        Op::CmpOpen { src, bits, .. } => {
            let n = len(src);
            vec![n, n, cmp_widths(bits, n).iter().map(|&b| b as usize).sum()]
        }
        _ => vec![],
    }
}

/// Which fields of `op`'s material are uniform values (seeded for every party).
fn uniform_fields(op: &Op) -> &'static [bool] {
    match op {
        Op::Mul { .. } | Op::And { .. } | Op::OwnedMatVec { .. } => &[true, true, false],
        Op::B2A { .. } => &[true, false],
        Op::Trunc { .. } => &[false, false],
        Op::CmpOpen { .. } => &[false, false, false],
        _ => &[],
    }
}

/// The lengths of the fields the dealer sends `party` explicitly (0 for seeded ones).
fn derived_lens(op: &Op, prog: &Program, party: usize) -> Vec<usize> {
    let last = party + 1 == prog.parties;
    field_lens(op, prog, party)
        .into_iter()
        .zip(uniform_fields(op))
        .map(|(n, &u)| if last && !u { n } else { 0 })
        .collect()
}

/// The part of `party`'s material for `op` that its seed gives (in a fixed order): every field,
/// or, for the last party, the uniform fields only (the others left empty).
fn seeded(op: &Op, prog: &Program, party: usize, rng: &mut impl Rng) -> OpMaterial {
    let last = party + 1 == prog.parties;
    let lens = field_lens(op, prog, party);
    let mut m = empty_material(op);
    let bits = m.bit_fields();
    for ((field, (&n, &u)), &b) in
        m.fields_mut().into_iter().zip(lens.iter().zip(uniform_fields(op))).zip(bits)
    {
        if u || !last {
            *field = if b { draw_bits(n, rng) } else { draw(n, rng) };
        }
    }
    m
}

/// The material variant of `op` with empty fields, for [`seeded`] to fill.
fn empty_material(op: &Op) -> OpMaterial {
    let e = Vec::new;
    match op {
        Op::Mul { .. } => OpMaterial::Triples { a: e(), b: e(), c: e() },
        Op::OwnedMatVec { .. } => OpMaterial::Owned { alpha: e(), beta: e(), z: e() },
        Op::And { .. } => OpMaterial::BoolTriples { a: e(), b: e(), c: e() },
        Op::B2A { .. } => OpMaterial::BitPair { bit: e(), share: e() },
        Op::Trunc { .. } => OpMaterial::Trunc { r: e(), r_hi: e() },
        Op::CmpOpen { .. } => OpMaterial::Cmp { r: e(), r_hi: e(), bits: e() },
        _ => OpMaterial::None,
    }
}

/// Σ_p (or ⊕_p, for a bit field) of field `i` of every party's seeded material (the last party's
/// derived fields are empty and count as 0): the value the seeds alone define.
fn seeded_sum(ms: &[OpMaterial], i: usize, n: usize) -> Vec<u128> {
    let mut s = vec![0u128; n];
    for m in ms {
        let xor = m.bit_fields()[i];
        for (acc, v) in s.iter_mut().zip(m.fields()[i]) {
            *acc = if xor { *acc ^ v } else { acc.wrapping_add(*v) };
        }
    }
    s
}

/// Deals the material for `prog` to its `prog.parties` parties.
pub fn deal_program(prog: &Program, rng: &mut impl Rng) -> Vec<PartyMaterial> {
    let parties = prog.parties;
    let last = parties - 1;
    let mut out: Vec<PartyMaterial> = (0..parties)
        .map(|party| {
            let mut seed = [0u8; 32];
            rng.fill_bytes(&mut seed);
            PartyMaterial { party, seed, ops: Vec::with_capacity(prog.ops.len()) }
        })
        .collect();
    let mut streams: Vec<CapeRng> = out.iter().map(|m| CapeRng::from_seed(m.seed)).collect();
    for op in &prog.ops {
        let ms: Vec<OpMaterial> =
            streams.iter_mut().enumerate().map(|(p, r)| seeded(op, prog, p, r)).collect();
        let lens = field_lens(op, prog, last);
        let sum = |i: usize| seeded_sum(&ms, i, lens[i]);
        // the true values of the derived fields, in field order (None for uniform fields)
        let truth: Vec<Option<Vec<u128>>> = match op {
            Op::And { .. } => {
                let (a, b) = (sum(0), sum(1));
                vec![None, None, Some(a.iter().zip(&b).map(|(x, y)| x & y).collect())]
            }
            // ρ itself, as an additive value
            Op::B2A { .. } => vec![None, Some(sum(0))],
            Op::Mul { .. } => {
                let (a, b) = (sum(0), sum(1));
                vec![None, None, Some(a.iter().zip(&b).map(|(x, y)| x.wrapping_mul(*y)).collect())]
            }
            Op::OwnedMatVec { w, groups, xs, .. } => {
                let alpha = sum(0);
                let rows = prog.lens[*w];
                let mut z = Vec::with_capacity(lens[2]);
                // where each owner's next β^b starts in its seeded β
                let mut from = vec![0usize; parties];
                for &(owner, x) in xs {
                    let e = prog.lens[x] / rows;
                    let beta = &ms[owner].fields()[1][from[owner]..from[owner] + rows * e];
                    from[owner] += rows * e;
                    let mut y = vec![0u128; groups * e];
                    for (i, br) in beta.chunks_exact(e.max(1)).take(rows).enumerate() {
                        let k = i % groups;
                        for (yk, b) in y[k * e..(k + 1) * e].iter_mut().zip(br) {
                            *yk = yk.wrapping_add(alpha[i].wrapping_mul(*b));
                        }
                    }
                    z.extend(y);
                }
                vec![None, None, Some(z)]
            }
            Op::Trunc { .. } => {
                let r: Vec<u128> = (0..lens[0]).map(|_| below_mask(rng)).collect();
                let hi = r.iter().map(|r| r >> FRAC_BITS).collect();
                vec![Some(r), Some(hi)]
            }
            Op::CmpOpen { bits, .. } => {
                let l = cmp_widths(bits, lens[0]);
                let r: Vec<u128> = (0..lens[0]).map(|_| below_mask(rng)).collect();
                let hi = r.iter().zip(&l).map(|(r, &l)| r >> l).collect();
                let b = r
                    .iter()
                    .zip(&l)
                    .flat_map(|(r, &l)| (0..l).map(move |j| (r >> j) & 1))
                    .collect();
                vec![Some(r), Some(hi), Some(b)]
            }
            _ => vec![],
        };
        // the last party's explicit share: truth − Σ of the others' seeded shares
        let mut sent = ms[last].clone();
        let bits = sent.bit_fields();
        for (i, (field, t)) in sent.fields_mut().into_iter().zip(&truth).enumerate() {
            match t {
                None => field.clear(),
                Some(t) => {
                    let others = seeded_sum(&ms[..last], i, lens[i]);
                    *field = if bits[i] {
                        t.iter().zip(&others).map(|(t, o)| t ^ o).collect()
                    } else {
                        t.iter().zip(&others).map(|(t, o)| t.wrapping_sub(*o)).collect()
                    };
                }
            }
        }
        for (p, m) in out.iter_mut().enumerate() {
            m.ops.push(if p == last { sent.clone() } else { OpMaterial::None });
        }
    }
    out
}
