//! The circuit as data: a straight-line program over registers of ring values, built once from
//! public parameters and run unchanged by every party ([`crate::mpc::party`]), by the dealer (which
//! only reads which correlated randomness each interactive op needs, [`crate::mpc::dealer`]) and by
//! the plaintext fixed-point simulation ([`crate::mpc::fixed`]). One program, so the `fixed` and
//! `mpc` modes do the same truncations and the same Newton–Raphson iterations (spec C, "plaintext
//! fixed-point simulation").
//!
//! Registers hold, per party, additive shares (or, in `fixed`, the plain values); the comparison's
//! bit registers hold XOR shares of bits instead ([`crate::mpc::bits`]). Local ops are linear;
//! each interactive op ([`Op::Mul`], [`Op::And`], [`Op::Trunc`], [`Op::CmpOpen`], [`Op::Open`], …)
//! is one communication round, so the builder batches all independent products of a layer into
//! one op.

use serde::{Deserialize, Serialize};

use crate::mpc::bits::words;

/// A register index.
pub type Reg = usize;

/// Fixed-point truncation accepts |x| < 2^TRUNC_BITS (x at scale 2^{2f}, i.e. a real product below
/// 2^{86−64} = 2^22 ≈ 4.2·10^6 in magnitude). The mask r is uniform in [0, 2^127), so the opened
/// x + 2^86 + r never wraps and is within statistical distance 2^{87−127} = 2^{−40} of a value
/// independent of x.
pub const TRUNC_BITS: u32 = 86;

/// The masks of [`Op::Trunc`] and [`Op::CmpOpen`] are uniform in [0, 2^MASK_BITS).
pub const MASK_BITS: u32 = 127;

/// One instruction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// `owner`'s private input of length `len`, secret-shared in round 0.
    Input {
        dst: Reg,
        owner: usize,
        len: usize,
    },
    /// `owner`'s private input of length `len`, *not* shared: the owner holds it in the clear,
    /// the other parties' register stays empty. Only [`Op::OwnedMatVec`] reads it.
    Private {
        dst: Reg,
        owner: usize,
        len: usize,
    },
    /// A public constant vector (party 0 holds it, the others hold 0).
    Const {
        dst: Reg,
        values: Vec<u128>,
    },
    Add {
        dst: Reg,
        a: Reg,
        b: Reg,
    },
    Sub {
        dst: Reg,
        a: Reg,
        b: Reg,
    },
    /// dst_i = c_i · src_i with public ring constants (`c` of length 1 broadcasts). No rescaling.
    MulConst {
        dst: Reg,
        src: Reg,
        c: Vec<u128>,
    },
    /// dst_i = src_i + c_i (party 0 adds; `c` of length 1 broadcasts).
    AddConst {
        dst: Reg,
        src: Reg,
        c: Vec<u128>,
    },
    /// dst_i = src_{idx_i}.
    Gather {
        dst: Reg,
        src: Reg,
        idx: Vec<u32>,
    },
    /// dst = base; dst_{idx_i} = src_i.
    Overwrite {
        dst: Reg,
        base: Reg,
        src: Reg,
        idx: Vec<u32>,
    },
    Concat {
        dst: Reg,
        srcs: Vec<Reg>,
    },
    /// dst_i = Σ_{j<group} src_{i·group + j}.
    SumGroups {
        dst: Reg,
        src: Reg,
        group: usize,
    },
    /// dst_c = Σ_r src_{r·cols + c}.
    ColumnSum {
        dst: Reg,
        src: Reg,
        cols: usize,
    },
    /// Interactive: elementwise ring product by a Beaver triple (opens d = x − a, e = y − b).
    Mul {
        dst: Reg,
        a: Reg,
        b: Reg,
    },
    /// Interactive: products of a shared matrix w (rows × `groups`) with matrices private to
    /// their owners ([`Op::Private`]): dst = [y^1, y^2, …] with y^b_{kj} = Σ_n w_{nk}·x^b_{nkj}
    /// (x^b laid out (n, k, j), rows × groups × e_b; ring products, not truncated). Every party
    /// broadcasts its share of W = w − α (α dealt, shared) and each owner sends Δ^b = x^b − β^b
    /// (β^b dealt to the owner alone), so the traffic is len(w) per party plus each private
    /// matrix once, from its owner; then y^b = W·x^b (the owner's local term) + α·Δ^b + αβ^b
    /// (dealt shares). W and Δ^b are uniform: nothing of w or x^b is revealed.
    OwnedMatVec {
        dst: Reg,
        w: Reg,
        groups: usize,
        /// (owner, register of its private matrix), in output order.
        xs: Vec<(usize, Reg)>,
    },
    /// Local, two parties only: dst ≈ src / 2^f by the SecureML local truncation (Mohassel and
    /// Zhang 2017): party 0 shifts its share, party 1 negates, shifts and negates back. No round,
    /// no dealer material; the result is ⌊src/2^f⌋ or ⌊src/2^f⌋ + 1, except with probability
    /// about |src|/2^127 ≤ 2^{−41} per element (|src| < 2^[`TRUNC_BITS`]), when the two shares
    /// wrap and the result is garbage. This is a correctness assumption (the shares of src are
    /// uniform), not a privacy one: nothing is sent. [`Builder::trunc`] uses it when P = 2.
    TruncLocal {
        dst: Reg,
        src: Reg,
    },
    /// Interactive: dst ≈ src / 2^f with a dealer pair (r, r >> f); opens src + 2^86 + r.
    /// dst ∈ {⌊src/2^f⌋, ⌊src/2^f⌋ + 1}: the error is in [0, 1) ulp = [0, 2^{−32}) before
    /// the floor, at most one unit of 2^{−f} in all.
    Trunc {
        dst: Reg,
        src: Reg,
    },
    /// Interactive: first half of the comparison [src_i ≥ 0] for |src_i| < 2^{l_i}, l_i =
    /// `bits[i]` (one width per element, or one for all): opens c = src + 2^l + r (r dealt with
    /// its low l bits XOR-shared), and sets, per element, `abits` (public: the low bits a_j of c),
    /// `e` (XOR shares of the bits 1 ⊕ a_j ⊕ r_j: bit j of c and r agree) and `base` (additive
    /// shares of ⌊c/2^l⌋ − ⌊r/2^l⌋). Layout of `e`/`abits`: element-major, bit j of element i at
    /// (l_0 + … + l_{i−1}) + j.
    CmpOpen {
        e: Reg,
        base: Reg,
        abits: Reg,
        src: Reg,
        bits: Vec<u32>,
    },
    /// Interactive: elementwise AND of XOR-shared bits by a boolean Beaver triple (a, b, c = a∧b):
    /// opens d = x ⊕ a and e = y ⊕ b, one bit each, packed ([`crate::mpc::bits`]).
    And {
        dst: Reg,
        a: Reg,
        b: Reg,
    },
    /// Local end of the comparison, in XOR shares: with t the suffix ANDs T_j = ∧_{i≥j} e_i
    /// (T_bits = 1), dst = ⊕_{j: a_j = 0} (T_{j+1} ⊕ T_j) = [c mod 2^l < r mod 2^l] (T is
    /// monotone in j, so at most one term is 1: the XOR is the sum). [src ≥ 0] = base − dst.
    CmpFinish {
        dst: Reg,
        abits: Reg,
        t: Reg,
        bits: Vec<u32>,
    },
    /// Interactive: XOR-shared bits to additive shares, by a dealt random bit ρ shared both ways:
    /// opens o = x ⊕ ρ (one bit each, packed); then x = o + ρ·(1 − 2o).
    B2A {
        dst: Reg,
        src: Reg,
    },
    /// Each party adds its own discrete Gaussian share N_Z(0, variance) (ring units).
    AddNoise {
        dst: Reg,
        src: Reg,
        variance: f64,
    },
    /// Interactive: opens src; its value is the program's output.
    Open {
        src: Reg,
    },
}

impl Op {
    /// Whether this op's broadcasts are combined by XOR (boolean openings) instead of addition.
    pub fn opens_bits(&self) -> bool {
        matches!(self, Op::And { .. } | Op::B2A { .. })
    }

    /// Whether this op needs a round of communication.
    pub fn interactive(&self) -> bool {
        matches!(
            self,
            Op::Mul { .. }
                | Op::And { .. }
                | Op::B2A { .. }
                | Op::OwnedMatVec { .. }
                | Op::Trunc { .. }
                | Op::CmpOpen { .. }
                | Op::Open { .. }
        )
    }
}

/// A built program.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Program {
    pub parties: usize,
    pub ops: Vec<Op>,
    /// The length of every register.
    pub lens: Vec<usize>,
}

impl Program {
    /// The number of communication rounds: one for the inputs plus one per interactive op.
    pub fn rounds(&self) -> usize {
        1 + self.ops.iter().filter(|o| o.interactive()).count()
    }

    /// How many words one party broadcasts in the round of interactive op `op`.
    pub fn opened_len(&self, op: &Op) -> usize {
        match op {
            Op::Mul { a, .. } => 2 * self.lens[*a],
            Op::And { a, .. } => words(2 * self.lens[*a]),
            Op::B2A { src, .. } => words(self.lens[*src]),
            Op::OwnedMatVec { w, .. } => self.lens[*w],
            Op::Trunc { src, .. } | Op::CmpOpen { src, .. } | Op::Open { src } => self.lens[*src],
            _ => 0,
        }
    }

    /// How many words party `from` sends each other party in the round of interactive `op`:
    /// the broadcast share ([`Program::opened_len`]) and, for [`Op::OwnedMatVec`], its own
    /// masked private matrices after it.
    pub fn sent_len(&self, op: &Op, from: usize) -> usize {
        self.opened_len(op) + self.owned_len(op, from)
    }

    /// The length of `from`'s private matrices in an [`Op::OwnedMatVec`] (0 for other ops).
    pub fn owned_len(&self, op: &Op, from: usize) -> usize {
        match op {
            Op::OwnedMatVec { xs, .. } => {
                xs.iter().filter(|(o, _)| *o == from).map(|(_, x)| self.lens[*x]).sum()
            }
            _ => 0,
        }
    }

    /// The lengths of `owner`'s inputs ([`Op::Input`] and [`Op::Private`]), in program order.
    pub fn input_lens(&self, owner: usize) -> Vec<usize> {
        self.ops
            .iter()
            .filter_map(|o| match o {
                Op::Input { owner: w, len, .. } | Op::Private { owner: w, len, .. }
                    if *w == owner =>
                {
                    Some(*len)
                }
                _ => None,
            })
            .collect()
    }

    /// The total input length of `owner`.
    pub fn input_len(&self, owner: usize) -> usize {
        self.input_lens(owner).iter().sum()
    }
}

/// Builds a [`Program`], with the fixed-point numerics (products, reciprocal, inverse square root,
/// comparison) as compositions of ops.
#[derive(Debug)]
pub struct Builder {
    prog: Program,
}

/// f64 → ring constant (panics on a non-finite or huge constant: constants are the builder's own).
fn cst(x: f64) -> u128 {
    crate::mpc::ring::encode(x).expect("a circuit constant within the ring's range")
}

impl Builder {
    pub fn new(parties: usize) -> Self {
        Self { prog: Program { parties, ops: Vec::new(), lens: Vec::new() } }
    }

    pub fn finish(self) -> Program {
        self.prog
    }

    pub fn len(&self, r: Reg) -> usize {
        self.prog.lens[r]
    }

    fn reg(&mut self, len: usize) -> Reg {
        self.prog.lens.push(len);
        self.prog.lens.len() - 1
    }

    pub fn input(&mut self, owner: usize, len: usize) -> Reg {
        let dst = self.reg(len);
        self.prog.ops.push(Op::Input { dst, owner, len });
        dst
    }

    pub fn private(&mut self, owner: usize, len: usize) -> Reg {
        let dst = self.reg(len);
        self.prog.ops.push(Op::Private { dst, owner, len });
        dst
    }

    pub fn constant(&mut self, values: Vec<u128>) -> Reg {
        let dst = self.reg(values.len());
        self.prog.ops.push(Op::Const { dst, values });
        dst
    }

    pub fn add(&mut self, a: Reg, b: Reg) -> Reg {
        assert_eq!(self.len(a), self.len(b));
        let dst = self.reg(self.len(a));
        self.prog.ops.push(Op::Add { dst, a, b });
        dst
    }

    pub fn sub(&mut self, a: Reg, b: Reg) -> Reg {
        assert_eq!(self.len(a), self.len(b));
        let dst = self.reg(self.len(a));
        self.prog.ops.push(Op::Sub { dst, a, b });
        dst
    }

    pub fn mul_const(&mut self, src: Reg, c: Vec<u128>) -> Reg {
        assert!(c.len() == 1 || c.len() == self.len(src));
        let dst = self.reg(self.len(src));
        self.prog.ops.push(Op::MulConst { dst, src, c });
        dst
    }

    pub fn add_const(&mut self, src: Reg, c: Vec<u128>) -> Reg {
        assert!(c.len() == 1 || c.len() == self.len(src));
        let dst = self.reg(self.len(src));
        self.prog.ops.push(Op::AddConst { dst, src, c });
        dst
    }

    pub fn gather(&mut self, src: Reg, idx: Vec<u32>) -> Reg {
        debug_assert!(idx.iter().all(|&i| (i as usize) < self.len(src)));
        let dst = self.reg(idx.len());
        self.prog.ops.push(Op::Gather { dst, src, idx });
        dst
    }

    pub fn slice(&mut self, src: Reg, start: usize, len: usize) -> Reg {
        self.gather(src, (start as u32..(start + len) as u32).collect())
    }

    pub fn overwrite(&mut self, base: Reg, src: Reg, idx: Vec<u32>) -> Reg {
        assert_eq!(self.len(src), idx.len());
        let dst = self.reg(self.len(base));
        self.prog.ops.push(Op::Overwrite { dst, base, src, idx });
        dst
    }

    pub fn concat(&mut self, srcs: &[Reg]) -> Reg {
        let dst = self.reg(srcs.iter().map(|&r| self.len(r)).sum());
        self.prog.ops.push(Op::Concat { dst, srcs: srcs.to_vec() });
        dst
    }

    pub fn sum_groups(&mut self, src: Reg, group: usize) -> Reg {
        assert_eq!(self.len(src) % group, 0);
        let dst = self.reg(self.len(src) / group);
        self.prog.ops.push(Op::SumGroups { dst, src, group });
        dst
    }

    pub fn column_sum(&mut self, src: Reg, cols: usize) -> Reg {
        assert_eq!(self.len(src) % cols, 0);
        let dst = self.reg(cols);
        self.prog.ops.push(Op::ColumnSum { dst, src, cols });
        dst
    }

    /// Ring product (one round). For integer (0/1) operands, or an integer times a fixed-point
    /// value, no truncation is needed.
    pub fn mul(&mut self, a: Reg, b: Reg) -> Reg {
        assert_eq!(self.len(a), self.len(b));
        let dst = self.reg(self.len(a));
        self.prog.ops.push(Op::Mul { dst, a, b });
        dst
    }

    /// Products of shared w with private matrices (one round), see [`Op::OwnedMatVec`];
    /// untruncated. Returns one register per private matrix, in the order of `xs`.
    pub fn owned_mat_vec(&mut self, w: Reg, groups: usize, xs: &[(usize, Reg)]) -> Vec<Reg> {
        let rows = self.len(w);
        assert_eq!(rows % groups, 0);
        // y^b has `groups` rows of e_b = len(x^b)/rows
        let lens: Vec<usize> = xs
            .iter()
            .map(|&(_, x)| {
                assert_eq!(self.len(x) % rows, 0);
                groups * (self.len(x) / rows)
            })
            .collect();
        let dst = self.reg(lens.iter().sum());
        self.prog.ops.push(Op::OwnedMatVec { dst, w, groups, xs: xs.to_vec() });
        self.split_lens(dst, &lens)
    }

    /// Truncation by 2^f, see [`Op::Trunc`] (one round) and, with two parties,
    /// [`Op::TruncLocal`] (no round).
    pub fn trunc(&mut self, src: Reg) -> Reg {
        let dst = self.reg(self.len(src));
        if self.prog.parties == 2 {
            self.prog.ops.push(Op::TruncLocal { dst, src });
        } else {
            self.prog.ops.push(Op::Trunc { dst, src });
        }
        dst
    }

    /// Fixed-point product: ring product then truncation (two rounds; one with two parties).
    pub fn fmul(&mut self, a: Reg, b: Reg) -> Reg {
        let p = self.mul(a, b);
        self.trunc(p)
    }

    /// Several independent fixed-point products in one product round and one truncation round.
    pub fn fmul_many(&mut self, pairs: &[(Reg, Reg)]) -> Vec<Reg> {
        let xs: Vec<Reg> = pairs.iter().map(|p| p.0).collect();
        let ys: Vec<Reg> = pairs.iter().map(|p| p.1).collect();
        let (x, y) = (self.concat(&xs), self.concat(&ys));
        let z = self.fmul(x, y);
        self.split(z, &xs)
    }

    /// Splits `src` into consecutive pieces as long as `like`'s registers.
    pub fn split(&mut self, src: Reg, like: &[Reg]) -> Vec<Reg> {
        let lens: Vec<usize> = like.iter().map(|&r| self.len(r)).collect();
        self.split_lens(src, &lens)
    }

    /// Splits `src` into consecutive pieces of these lengths.
    pub fn split_lens(&mut self, src: Reg, lens: &[usize]) -> Vec<Reg> {
        let mut at = 0;
        let mut out = Vec::with_capacity(lens.len());
        for &n in lens {
            out.push(self.slice(src, at, n));
            at += n;
        }
        out
    }

    /// The public fixed-point constant `x` repeated `len` times.
    pub fn const_f(&mut self, x: f64, len: usize) -> Reg {
        self.constant(vec![cst(x); len])
    }

    /// Shares of the bits [x_i ≥ 0] (integers 0/1), exact for |x_i| < 2^bits (bits ≤ 120).
    /// Rounds: one opening, ⌈log₂ bits⌉ AND rounds (Hillis–Steele suffix ANDs of the XOR-shared
    /// e_j, about bits·⌈log₂ bits⌉ ANDs of one bit each per element), and one round to turn the
    /// result into additive shares. Nothing is truncated.
    pub fn geq_zero(&mut self, x: Reg, bits: u32) -> Reg {
        let n = self.len(x);
        self.geq_zero_mixed(x, vec![bits; n])
    }

    /// [`Builder::geq_zero`] with one width per element (|x_i| < 2^{bits_i}), all in the same
    /// rounds: an element costs ANDs for its own width only.
    pub fn geq_zero_mixed(&mut self, x: Reg, bits: Vec<u32>) -> Reg {
        let n = self.len(x);
        assert_eq!(bits.len(), n);
        assert!(bits.iter().all(|b| (2..=120).contains(b)));
        let total: usize = bits.iter().map(|&b| b as usize).sum();
        let top = bits.iter().copied().max().unwrap_or(2) as usize;
        let e = self.reg(total);
        let base = self.reg(n);
        let abits = self.reg(total);
        self.prog.ops.push(Op::CmpOpen { e, base, abits, src: x, bits: bits.clone() });
        let mut t = e;
        let mut s = 1;
        while s < top {
            let mut lo = Vec::new();
            let mut hi = Vec::new();
            let mut off = 0;
            for &l in &bits {
                let l = l as usize;
                for j in 0..l.saturating_sub(s) {
                    lo.push((off + j) as u32);
                    hi.push((off + j + s) as u32);
                }
                off += l;
            }
            let a = self.gather(t, lo.clone());
            let b = self.gather(t, hi);
            let p = self.and(a, b);
            t = self.overwrite(t, p, lo);
            s *= 2;
        }
        let lt = self.reg(n);
        self.prog.ops.push(Op::CmpFinish { dst: lt, abits, t, bits });
        let lt = self.b2a(lt);
        self.sub(base, lt)
    }

    /// AND of XOR-shared bits (one round), see [`Op::And`].
    pub fn and(&mut self, a: Reg, b: Reg) -> Reg {
        assert_eq!(self.len(a), self.len(b));
        let dst = self.reg(self.len(a));
        self.prog.ops.push(Op::And { dst, a, b });
        dst
    }

    /// XOR-shared bits to additive shares (one round), see [`Op::B2A`].
    fn b2a(&mut self, src: Reg) -> Reg {
        let dst = self.reg(self.len(src));
        self.prog.ops.push(Op::B2A { dst, src });
        dst
    }

    /// Newton–Raphson reciprocal 1/b for b in `range` = [lo, hi] (spec B3 "Fixed point", Alg. 3,
    /// update q ← q(2 − b q), spec D2), from the public constant start q₀ = 2/(lo + hi) instead of
    /// the paper's 3·e^{1−2b} + 0.003 (which would need exp under MPC). Then
    /// |e₀| = |1 − b q₀| ≤ (hi − lo)/(hi + lo) < 1 on the range, and e_{k+1} = e_k².
    /// The first k − 2 iterations are computed Goldschmidt-style (q ← q(1 + e), e ← e², one
    /// product round each, the same iterates); while e ≈ 1 the tracked e's rounding error doubles
    /// each step (up to ~2^{k−32} relative in q), so the last two iterations recompute
    /// e = 1 − b q from b (true, self-correcting Newton steps), which squares that error away
    /// twice. k is the least with |e₀|^{2^k} ≤ 2^{−40}: 22 for the default [2^{−10}, 2^8]
    /// (1 + 2(k − 2) + 8 = 49 rounds). Outside the range: below lo the
    /// result is too small (b = 0 gives the finite q₀·2^k, harmless after multiplying by
    /// mat = 0); between hi and hi + lo it converges more slowly; for b ≥ hi + lo it diverges.
    pub fn recip(&mut self, b: Reg, lo: f64, hi: f64) -> Reg {
        let n = self.len(b);
        let k = recip_iterations(lo, hi);
        let q0 = 2.0 / (lo + hi);
        let bq = self.mul_const(b, vec![cst(q0)]);
        let bq = self.trunc(bq);
        let one = self.const_f(1.0, n);
        let mut e = self.sub(one, bq);
        let mut q = self.const_f(q0, n);
        for _ in 2..k {
            let one_e = self.add_const(e, vec![cst(1.0)]);
            let r = self.fmul_many(&[(q, one_e), (e, e)]);
            q = r[0];
            e = r[1];
        }
        for _ in 0..2 {
            let bq = self.fmul(b, q);
            let e = self.sub(one, bq);
            let qe = self.fmul(q, e);
            q = self.add(q, qe);
        }
        q
    }

    /// Newton–Raphson inverse square root y ≈ u^{−1/2} for u ∈ [1, 4^{m+1}), given the shared
    /// comparison bits t_j = [u ≥ 4^j], j = 0..=m (element-major, m + 1 per element) and
    /// hu = u/2. The start y₀ = c·2^{−J} for 4^J ≤ u < 4^{J+1} (c = √0.4, linear in the t_j since
    /// they are monotone) puts u y₀² in [0.4, 1.6), so |e₀| = |1 − u y₀²| ≤ 0.6; with
    /// e' = (3e² + e³)/4, 5 iterations y ← y·(1.5 − ((u/2)·y)·y) reach |e| < 10^{−9}, then
    /// rounding dominates: about 2 ulps (2^{−31}) absolute in y. The products are taken in this
    /// order because y² alone would lose precision for small y (y ≈ 2^{−11} at the top).
    /// 3 product layers per iteration: 30 rounds. For u < 1 the result stays finite (≤ c·1.5^5) and is meant to be discarded.
    pub fn rsqrt(&mut self, hu: Reg, t: Reg, m: usize) -> Reg {
        let n = self.len(hu);
        let c = 0.4f64.sqrt();
        let mut w = vec![0u128; m + 1];
        for (j, wj) in w.iter_mut().enumerate().skip(1) {
            *wj = cst(c * 2f64.powi(-(j as i32)));
        }
        let w: Vec<u128> = (0..n).flat_map(|_| w.iter().copied()).collect();
        let tw = self.mul_const(t, w);
        let tw = self.sum_groups(tw, m + 1);
        let c0 = self.const_f(c, n);
        let mut y = self.sub(c0, tw);
        let c15 = self.const_f(1.5, n);
        for _ in 0..5 {
            let a = self.fmul(hu, y);
            let b = self.fmul(a, y);
            let d = self.sub(c15, b);
            y = self.fmul(y, d);
        }
        y
    }

    pub fn add_noise(&mut self, src: Reg, variance: f64) -> Reg {
        let dst = self.reg(self.len(src));
        self.prog.ops.push(Op::AddNoise { dst, src, variance });
        dst
    }

    pub fn open(&mut self, src: Reg) {
        self.prog.ops.push(Op::Open { src });
    }
}

/// The Newton–Raphson iterations [`Builder::recip`] uses for [lo, hi].
pub fn recip_iterations(lo: f64, hi: f64) -> usize {
    assert!(0.0 < lo && lo < hi);
    let e0 = (hi - lo) / (hi + lo);
    // |e0|^{2^k} ≤ 2^-40  ⇔  2^k · ln(1/e0) ≥ 40 ln 2
    let need = 40.0 * std::f64::consts::LN_2 / -e0.ln();
    let mut k = 0;
    while ((1u64 << k) as f64) < need {
        k += 1;
    }
    k.max(1)
}
