//! The dealer: the trusted third party of spec B1 (a *separate* player, spec C "a separate dealer
//! tab") that hands out correlated randomness before the run and then leaves. It reads only the
//! public program, never an input, a share of one, or an opened value (spec D10).
//!
//! Per interactive op it deals, as additive shares to each party:
//! - [`Op::Mul`]: Beaver triples (a, b, c = a·b), a, b uniform in Z_{2^128};
//! - [`Op::MulGather`]: broadcast triples (α, β, c_i = α_{idx_i}·β_i);
//! - [`Op::MaskOpen`]: a mask A uniform in Z_{2^128} and the per-group sums of A²;
//! - [`Op::MatVec`]: b uniform and W = Aᵀb for the A of the [`Op::MaskOpen`] it refers to;
//! - [`Op::Trunc`]: truncation pairs (r, ⌊r/2^f⌋), r uniform in [0, 2^127);
//! - [`Op::CmpOpen`]: (r, ⌊r/2^l⌋, the l low bits of r), r uniform in [0, 2^127): an
//!   edaBit-style mask whose bits are shared arithmetically, for the bitwise comparison.
//!
//! All of it comes from the dealer's CSPRNG ([`capelab_core::rng::CapeRng`]).

use rand_core::Rng;
use serde::{Deserialize, Serialize};

use crate::mpc::program::{MASK_BITS, Op, Program};
use crate::mpc::ring::{FRAC_BITS, random, share_unchecked};

/// One party's correlated randomness for one op (empty for local ops). In the plaintext
/// simulation every op has [`OpMaterial::None`], which the interpreter reads as zeros.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum OpMaterial {
    #[default]
    None,
    Triples {
        a: Vec<u128>,
        b: Vec<u128>,
        c: Vec<u128>,
    },
    Trunc {
        r: Vec<u128>,
        r_hi: Vec<u128>,
    },
    Mask {
        a: Vec<u128>,
        sq: Vec<u128>,
    },
    MatVec {
        b: Vec<u128>,
        w: Vec<u128>,
    },
    Cmp {
        r: Vec<u128>,
        r_hi: Vec<u128>,
        bits: Vec<u128>,
    },
}

/// Everything one party receives from the dealer, indexed like the program's ops.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartyMaterial {
    pub party: usize,
    pub ops: Vec<OpMaterial>,
}

impl PartyMaterial {
    /// How many ring elements this is (for the cost report).
    pub fn values(&self) -> usize {
        self.ops
            .iter()
            .map(|m| match m {
                OpMaterial::None => 0,
                OpMaterial::Triples { a, b, c } => a.len() + b.len() + c.len(),
                OpMaterial::Trunc { r, r_hi } => r.len() + r_hi.len(),
                OpMaterial::Mask { a, sq } => a.len() + sq.len(),
                OpMaterial::MatVec { b, w } => b.len() + w.len(),
                OpMaterial::Cmp { r, r_hi, bits } => r.len() + r_hi.len() + bits.len(),
            })
            .sum()
    }
}

fn below_mask(rng: &mut impl Rng) -> u128 {
    random(rng) >> (128 - MASK_BITS)
}

/// Shares `vals` among P parties: out[p][i] is party p's share of vals[i].
fn deal(vals: &[u128], parties: usize, rng: &mut impl Rng) -> Vec<Vec<u128>> {
    let mut out = vec![Vec::with_capacity(vals.len()); parties];
    for &v in vals {
        for (p, s) in share_unchecked(v, parties, rng).into_iter().enumerate() {
            out[p].push(s);
        }
    }
    out
}

/// Shares of the triples (xa, xb, xc), one [`OpMaterial::Triples`] per party.
fn triples(
    xa: &[u128],
    xb: &[u128],
    xc: &[u128],
    parties: usize,
    rng: &mut impl Rng,
) -> Vec<OpMaterial> {
    let (sa, sb, sc) = (deal(xa, parties, rng), deal(xb, parties, rng), deal(xc, parties, rng));
    sa.into_iter().zip(sb).zip(sc).map(|((a, b), c)| OpMaterial::Triples { a, b, c }).collect()
}

/// Deals the material for `prog` to its `prog.parties` parties.
pub fn deal_program(prog: &Program, rng: &mut impl Rng) -> Vec<PartyMaterial> {
    let parties = prog.parties;
    let mut out: Vec<PartyMaterial> = (0..parties)
        .map(|party| PartyMaterial { party, ops: Vec::with_capacity(prog.ops.len()) })
        .collect();
    // The masks of the MaskOpen ops, by the register their shares go to (for MatVec's W).
    let mut masks: std::collections::HashMap<usize, Vec<u128>> = Default::default();
    for op in &prog.ops {
        let per_party: Vec<OpMaterial> = match op {
            Op::Mul { a, .. } => {
                let n = prog.lens[*a];
                let xa: Vec<u128> = (0..n).map(|_| random(rng)).collect();
                let xb: Vec<u128> = (0..n).map(|_| random(rng)).collect();
                let xc: Vec<u128> = xa.iter().zip(&xb).map(|(x, y)| x.wrapping_mul(*y)).collect();
                triples(&xa, &xb, &xc, parties, rng)
            }
            Op::MulGather { a, b, idx, .. } => {
                let xa: Vec<u128> = (0..prog.lens[*a]).map(|_| random(rng)).collect();
                let xb: Vec<u128> = (0..prog.lens[*b]).map(|_| random(rng)).collect();
                let xc: Vec<u128> =
                    idx.iter().zip(&xb).map(|(&i, y)| xa[i as usize].wrapping_mul(*y)).collect();
                triples(&xa, &xb, &xc, parties, rng)
            }
            Op::MaskOpen { a, src, group, .. } => {
                let xa: Vec<u128> = (0..prog.lens[*src]).map(|_| random(rng)).collect();
                let sq: Vec<u128> = xa
                    .chunks(*group)
                    .map(|c| c.iter().fold(0u128, |s, x| s.wrapping_add(x.wrapping_mul(*x))))
                    .collect();
                let (sa, ss) = (deal(&xa, parties, rng), deal(&sq, parties, rng));
                masks.insert(*a, xa);
                sa.into_iter().zip(ss).map(|(a, sq)| OpMaterial::Mask { a, sq }).collect()
            }
            Op::MatVec { f, a, .. } => {
                let xa = masks.get(a).expect("a MatVec after its MaskOpen");
                let n = prog.lens[*f];
                let cols = xa.len() / n;
                let xb: Vec<u128> = (0..n).map(|_| random(rng)).collect();
                let mut w = vec![0u128; cols];
                for (row, &b) in xa.chunks(cols).zip(&xb) {
                    for (s, x) in w.iter_mut().zip(row) {
                        *s = s.wrapping_add(x.wrapping_mul(b));
                    }
                }
                let (sb, sw) = (deal(&xb, parties, rng), deal(&w, parties, rng));
                sb.into_iter().zip(sw).map(|(b, w)| OpMaterial::MatVec { b, w }).collect()
            }
            Op::Trunc { src, .. } => {
                let r: Vec<u128> = (0..prog.lens[*src]).map(|_| below_mask(rng)).collect();
                let hi: Vec<u128> = r.iter().map(|r| r >> FRAC_BITS).collect();
                let (sr, sh) = (deal(&r, parties, rng), deal(&hi, parties, rng));
                sr.into_iter().zip(sh).map(|(r, r_hi)| OpMaterial::Trunc { r, r_hi }).collect()
            }
            Op::CmpOpen { src, bits, .. } => {
                let l = |i: usize| if bits.len() == 1 { bits[0] } else { bits[i] };
                let r: Vec<u128> = (0..prog.lens[*src]).map(|_| below_mask(rng)).collect();
                let hi: Vec<u128> = r.iter().enumerate().map(|(i, r)| r >> l(i)).collect();
                let b: Vec<u128> = r
                    .iter()
                    .enumerate()
                    .flat_map(|(i, r)| (0..l(i)).map(move |j| (r >> j) & 1))
                    .collect();
                let (sr, sh, sb) =
                    (deal(&r, parties, rng), deal(&hi, parties, rng), deal(&b, parties, rng));
                sr.into_iter()
                    .zip(sh)
                    .zip(sb)
                    .map(|((r, r_hi), bits)| OpMaterial::Cmp { r, r_hi, bits })
                    .collect()
            }
            _ => vec![OpMaterial::None; parties],
        };
        for (p, m) in per_party.into_iter().enumerate() {
            out[p].ops.push(m);
        }
    }
    out
}
