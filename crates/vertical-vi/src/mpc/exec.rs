//! The interpreter shared by a party ([`crate::mpc::party`]) and the plaintext simulation
//! ([`crate::mpc::fixed`]): local ops, and the two halves of every interactive op (what to send,
//! and what to do with the opened sum). In the simulation the machine is the only "party" and all
//! correlated randomness is zero, so the masked openings are the values themselves and every op
//! computes its exact fixed-point result (truncation is the floor).

use crate::mpc::MpcError;
use crate::mpc::bits::{pack, unpack};
use crate::mpc::dealer::OpMaterial;
use crate::mpc::program::{Op, Program, TRUNC_BITS};
use crate::mpc::ring::FRAC_BITS;

/// A draw of `len` noise values of the given variance (ring units).
pub(crate) type NoiseFn<'a> = dyn FnMut(usize, f64) -> Result<Vec<i128>, MpcError> + 'a;

fn at(v: &[u128], i: usize) -> u128 {
    v.get(i).copied().unwrap_or(0)
}

fn bcast(c: &[u128], i: usize) -> u128 {
    if c.len() == 1 { c[0] } else { c[i] }
}

fn bcast32(c: &[u32], i: usize) -> u32 {
    if c.len() == 1 { c[0] } else { c[i] }
}

/// One party's registers.
#[derive(Clone, Debug)]
pub(crate) struct Machine {
    pub regs: Vec<Vec<u128>>,
    /// Party 0 adds public constants.
    pub leader: bool,
    /// The plaintext simulation: registers hold values, not shares.
    pub solo: bool,
    /// This party's index (0 in the simulation, which owns every private input).
    pub index: usize,
    /// Every register's length (a private input's too, which only its owner holds).
    lens: Vec<usize>,
}

impl Machine {
    pub fn new(prog: &Program, index: usize) -> Self {
        let regs = vec![Vec::new(); prog.lens.len()];
        Self { regs, leader: index == 0, solo: false, index, lens: prog.lens.clone() }
    }

    /// The plaintext simulation's machine ([`crate::mpc::fixed`]).
    pub fn solo(prog: &Program) -> Self {
        let regs = vec![Vec::new(); prog.lens.len()];
        Self { regs, leader: true, solo: true, index: 0, lens: prog.lens.clone() }
    }

    /// Whether this machine holds `owner`'s private inputs.
    fn owns(&self, owner: usize) -> bool {
        self.solo || self.index == owner
    }

    fn lead(&self, v: u128) -> u128 {
        if self.leader { v } else { 0 }
    }

    /// Runs a local op.
    pub fn local(&mut self, op: &Op, noise: &mut NoiseFn<'_>) -> Result<(), MpcError> {
        let r = &self.regs;
        let (dst, v): (usize, Vec<u128>) = match op {
            Op::Const { dst, values } => (*dst, values.iter().map(|&v| self.lead(v)).collect()),
            Op::Add { dst, a, b } => {
                (*dst, r[*a].iter().zip(&r[*b]).map(|(x, y)| x.wrapping_add(*y)).collect())
            }
            Op::Sub { dst, a, b } => {
                (*dst, r[*a].iter().zip(&r[*b]).map(|(x, y)| x.wrapping_sub(*y)).collect())
            }
            Op::MulConst { dst, src, c } => (
                *dst,
                r[*src].iter().enumerate().map(|(i, x)| x.wrapping_mul(bcast(c, i))).collect(),
            ),
            Op::AddConst { dst, src, c } => (
                *dst,
                r[*src]
                    .iter()
                    .enumerate()
                    .map(|(i, x)| x.wrapping_add(self.lead(bcast(c, i))))
                    .collect(),
            ),
            Op::Gather { dst, src, idx } => {
                (*dst, idx.iter().map(|&i| r[*src][i as usize]).collect())
            }
            Op::Overwrite { dst, base, src, idx } => {
                let mut v = r[*base].clone();
                for (k, &i) in idx.iter().enumerate() {
                    v[i as usize] = r[*src][k];
                }
                (*dst, v)
            }
            Op::Concat { dst, srcs } => {
                (*dst, srcs.iter().flat_map(|&s| r[s].iter().copied()).collect())
            }
            Op::SumGroups { dst, src, group } => (
                *dst,
                r[*src]
                    .chunks(*group)
                    .map(|c| c.iter().fold(0u128, |a, x| a.wrapping_add(*x)))
                    .collect(),
            ),
            Op::ColumnSum { dst, src, cols } => {
                let mut v = vec![0u128; *cols];
                for row in r[*src].chunks(*cols) {
                    for (s, x) in v.iter_mut().zip(row) {
                        *s = s.wrapping_add(*x);
                    }
                }
                (*dst, v)
            }
            Op::CmpFinish { dst, abits, t, bits } => {
                let (a, t) = (&r[*abits], &r[*t]);
                // one width per element, or one for all
                let count = if bits.len() == 1 { t.len() / bits[0] as usize } else { bits.len() };
                let mut off = 0;
                let v = (0..count)
                    .map(|i| {
                        let l = bcast32(bits, i) as usize;
                        let mut lt = 0u128;
                        for j in 0..l {
                            if a[off + j] == 0 {
                                let next = if j + 1 < l { t[off + j + 1] } else { self.lead(1) };
                                lt ^= next ^ t[off + j];
                            }
                        }
                        off += l;
                        lt
                    })
                    .collect();
                (*dst, v)
            }
            Op::TruncLocal { dst, src } => {
                let v = if self.solo {
                    r[*src].iter().map(|&x| ((x as i128) >> FRAC_BITS) as u128).collect()
                } else if self.leader {
                    r[*src].iter().map(|&x| x >> FRAC_BITS).collect()
                } else {
                    r[*src]
                        .iter()
                        .map(|&x| (x.wrapping_neg() >> FRAC_BITS).wrapping_neg())
                        .collect()
                };
                (*dst, v)
            }
            Op::AddNoise { dst, src, variance } => {
                let z = noise(r[*src].len(), *variance)?;
                (*dst, r[*src].iter().zip(z).map(|(x, z)| x.wrapping_add(z as u128)).collect())
            }
            Op::Input { .. }
            | Op::Private { .. }
            | Op::Mul { .. }
            | Op::And { .. }
            | Op::B2A { .. }
            | Op::OwnedMatVec { .. }
            | Op::Trunc { .. }
            | Op::CmpOpen { .. }
            | Op::Open { .. } => {
                unreachable!("not a local op: {op:?}")
            }
        };
        self.regs[dst] = v;
        Ok(())
    }

    /// What this party broadcasts for interactive `op`.
    pub fn prepare(&self, op: &Op, mat: &OpMaterial) -> Vec<u128> {
        let r = &self.regs;
        match (op, mat) {
            (Op::Mul { a, b, .. }, m) => {
                let (ta, tb) = match m {
                    OpMaterial::Triples { a, b, .. } => (&a[..], &b[..]),
                    _ => (&[][..], &[][..]),
                };
                let d = r[*a].iter().enumerate().map(|(i, x)| x.wrapping_sub(at(ta, i)));
                let e = r[*b].iter().enumerate().map(|(i, y)| y.wrapping_sub(at(tb, i)));
                d.chain(e).collect()
            }
            (Op::And { a, b, .. }, m) => {
                let (ta, tb) = match m {
                    OpMaterial::BoolTriples { a, b, .. } => (&a[..], &b[..]),
                    _ => (&[][..], &[][..]),
                };
                let d = r[*a].iter().enumerate().map(|(i, x)| x ^ at(ta, i));
                let e = r[*b].iter().enumerate().map(|(i, y)| y ^ at(tb, i));
                pack(d.chain(e))
            }
            (Op::B2A { src, .. }, m) => {
                let rho = match m {
                    OpMaterial::BitPair { bit, .. } => &bit[..],
                    _ => &[][..],
                };
                pack(r[*src].iter().enumerate().map(|(i, x)| x ^ at(rho, i)))
            }
            (Op::OwnedMatVec { w, xs, .. }, m) => {
                let (alpha, beta) = match m {
                    OpMaterial::Owned { alpha, beta, .. } => (&alpha[..], &beta[..]),
                    _ => (&[][..], &[][..]),
                };
                let mut out: Vec<u128> =
                    r[*w].iter().enumerate().map(|(i, x)| x.wrapping_sub(at(alpha, i))).collect();
                // then Δ = x − β for each matrix this party owns (in the simulation: none needed)
                if !self.solo {
                    let own = xs.iter().filter(|(o, _)| *o == self.index).flat_map(|(_, x)| &r[*x]);
                    out.extend(own.enumerate().map(|(i, x)| x.wrapping_sub(at(beta, i))));
                }
                out
            }
            (Op::Trunc { src, .. }, m) => self.masked(*src, TRUNC_BITS, mask(m)),
            (Op::CmpOpen { src, bits, .. }, m) => {
                let r = mask(m);
                self.regs[*src]
                    .iter()
                    .enumerate()
                    .map(|(i, x)| {
                        x.wrapping_add(self.lead(1u128 << bcast32(bits, i))).wrapping_add(at(r, i))
                    })
                    .collect()
            }
            (Op::Open { src }, _) => r[*src].clone(),
            _ => unreachable!("not an interactive op: {op:?}"),
        }
    }

    fn masked(&self, src: usize, bits: u32, r: &[u128]) -> Vec<u128> {
        let off = self.lead(1u128 << bits);
        self.regs[src]
            .iter()
            .enumerate()
            .map(|(i, x)| x.wrapping_add(off).wrapping_add(at(r, i)))
            .collect()
    }

    /// Completes interactive `op` from the opened sum of all parties' broadcasts and, for
    /// [`Op::OwnedMatVec`], each party's masked private matrices (`owned[p]`: what party p sent
    /// after its broadcast share; empty in the simulation). Returns the program's output for
    /// [`Op::Open`].
    pub fn finish(
        &mut self,
        op: &Op,
        mat: &OpMaterial,
        opened: &[u128],
        owned: &[&[u128]],
    ) -> Option<Vec<u128>> {
        match op {
            Op::Mul { dst, a, .. } => {
                let n = self.regs[*a].len();
                let (d, e) = opened.split_at(n);
                let (ta, tb, tc) = match mat {
                    OpMaterial::Triples { a, b, c } => (&a[..], &b[..], &c[..]),
                    _ => (&[][..], &[][..], &[][..]),
                };
                let v = (0..n)
                    .map(|i| {
                        at(tc, i)
                            .wrapping_add(d[i].wrapping_mul(at(tb, i)))
                            .wrapping_add(e[i].wrapping_mul(at(ta, i)))
                            .wrapping_add(self.lead(d[i].wrapping_mul(e[i])))
                    })
                    .collect();
                self.regs[*dst] = v;
                None
            }
            Op::And { dst, a, .. } => {
                let n = self.regs[*a].len();
                let de = unpack(opened, 2 * n);
                let (d, e) = de.split_at(n);
                let (ta, tb, tc) = match mat {
                    OpMaterial::BoolTriples { a, b, c } => (&a[..], &b[..], &c[..]),
                    _ => (&[][..], &[][..], &[][..]),
                };
                let v = (0..n)
                    .map(|i| {
                        at(tc, i) ^ (d[i] & at(tb, i)) ^ (e[i] & at(ta, i)) ^ self.lead(d[i] & e[i])
                    })
                    .collect();
                self.regs[*dst] = v;
                None
            }
            Op::B2A { dst, src } => {
                let n = self.regs[*src].len();
                let o = unpack(opened, n);
                let rho = match mat {
                    OpMaterial::BitPair { share, .. } => &share[..],
                    _ => &[][..],
                };
                // x = o + ρ·(1 − 2o): ρ's additive share times ±1
                let v = o
                    .iter()
                    .enumerate()
                    .map(|(i, &o)| {
                        let r = at(rho, i);
                        self.lead(o).wrapping_add(if o == 1 { r.wrapping_neg() } else { r })
                    })
                    .collect();
                self.regs[*dst] = v;
                None
            }
            Op::OwnedMatVec { dst, w, groups, xs } => {
                let (alpha, z) = match mat {
                    OpMaterial::Owned { alpha, z, .. } => (&alpha[..], &z[..]),
                    _ => (&[][..], &[][..]),
                };
                let rows = self.regs[*w].len();
                let mut v = Vec::new();
                // where each owner's next Δ block starts in what it sent
                let mut from = vec![0usize; owned.len()];
                for &(owner, x) in xs {
                    let e = self.lens[x] / rows;
                    if e == 0 {
                        continue;
                    }
                    let start = v.len();
                    v.extend((0..groups * e).map(|i| at(z, start + i)));
                    let y = &mut v[start..];
                    // α·Δ: this party's share of α against the owner's public Δ
                    if let Some(d) = owned.get(owner) {
                        let d = &d[from[owner]..];
                        from[owner] += rows * e;
                        for (i, dr) in d.chunks_exact(e).take(rows).enumerate() {
                            let (k, a) = (i % groups, at(alpha, i));
                            for (yk, dj) in y[k * e..(k + 1) * e].iter_mut().zip(dr) {
                                *yk = yk.wrapping_add(a.wrapping_mul(*dj));
                            }
                        }
                    }
                    // W·x: the owner's local term
                    if self.owns(owner) {
                        for (i, (wi, xr)) in
                            opened.iter().zip(self.regs[x].chunks_exact(e)).enumerate()
                        {
                            let k = i % groups;
                            for (yk, xj) in y[k * e..(k + 1) * e].iter_mut().zip(xr) {
                                *yk = yk.wrapping_add(wi.wrapping_mul(*xj));
                            }
                        }
                    }
                }
                self.regs[*dst] = v;
                None
            }
            Op::Trunc { dst, .. } => {
                let r_hi = match mat {
                    OpMaterial::Trunc { r_hi, .. } => &r_hi[..],
                    _ => &[][..],
                };
                let off = 1u128 << (TRUNC_BITS - FRAC_BITS);
                let v = opened
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        self.lead((c >> FRAC_BITS).wrapping_sub(off)).wrapping_sub(at(r_hi, i))
                    })
                    .collect();
                self.regs[*dst] = v;
                None
            }
            Op::CmpOpen { e, base, abits, bits, .. } => {
                let (r_hi, rb) = match mat {
                    OpMaterial::Cmp { r_hi, bits, .. } => (&r_hi[..], &bits[..]),
                    _ => (&[][..], &[][..]),
                };
                let n = opened.len();
                let total: usize = (0..n).map(|i| bcast32(bits, i) as usize).sum();
                let mut ev = Vec::with_capacity(total);
                let mut av = Vec::with_capacity(total);
                let mut bv = Vec::with_capacity(n);
                for (i, &c) in opened.iter().enumerate() {
                    let l = bcast32(bits, i);
                    bv.push(self.lead(c >> l).wrapping_sub(at(r_hi, i)));
                    for j in 0..l {
                        let a = (c >> j) & 1;
                        let rj = at(rb, av.len());
                        av.push(a);
                        ev.push(rj ^ self.lead(1 ^ a));
                    }
                }
                self.regs[*e] = ev;
                self.regs[*abits] = av;
                self.regs[*base] = bv;
                None
            }
            Op::Open { .. } => Some(opened.to_vec()),
            _ => unreachable!("not an interactive op: {op:?}"),
        }
    }
}

fn mask(m: &OpMaterial) -> &[u128] {
    match m {
        OpMaterial::Trunc { r, .. } | OpMaterial::Cmp { r, .. } => r,
        _ => &[],
    }
}
