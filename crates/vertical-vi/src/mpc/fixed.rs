//! The plaintext fixed-point simulation (spec B3 "Fixed point"; the paper's main mode, spec C): the
//! very [`Program`] the parties run, executed on plain ring values by one machine with zero
//! correlated randomness. Every truncation is the exact floor (the MPC's may add one ulp), every
//! Newton–Raphson iteration is the same, and the comparison is exact. Unlike the MPC, it can see
//! overflow, and reports it ([`MpcError::Overflow`]) instead of computing garbage.

use rand_core::Rng;

use crate::mpc::MpcError;
use crate::mpc::dealer::OpMaterial;
use crate::mpc::exec::Machine;
use crate::mpc::noise::sample_vec;
use crate::mpc::program::{Op, Program, TRUNC_BITS};

/// Runs `prog` in plaintext; `inputs[p]` as for [`crate::mpc::run::run_in_process`]. Noise, if
/// any, is the sum of P per-party draws, as in the MPC.
pub fn run_fixed(
    prog: &Program,
    inputs: Vec<Vec<Vec<u128>>>,
    rng: &mut impl Rng,
) -> Result<Vec<u128>, MpcError> {
    if inputs.len() != prog.parties {
        return Err(MpcError::BadInput {
            what: format!("{} input sets for {} parties", inputs.len(), prog.parties),
        });
    }
    let mut machine = Machine::solo(prog);
    let mut own: Vec<_> = inputs.into_iter().map(|v| v.into_iter()).collect();
    let none = OpMaterial::None;
    let parties = prog.parties;
    for (pc, op) in prog.ops.iter().enumerate() {
        let checked = match op {
            Op::Trunc { src, .. } | Op::TruncLocal { src, .. } => Some((*src, &[TRUNC_BITS][..])),
            Op::CmpOpen { src, bits, .. } => Some((*src, &bits[..])),
            _ => None,
        };
        if let Some((src, bits)) = checked {
            let width = |i: usize| if bits.len() == 1 { bits[0] } else { bits[i] };
            if let Some(index) = machine.regs[src]
                .iter()
                .enumerate()
                .position(|(i, &x)| (x as i128).unsigned_abs() >= 1u128 << width(i))
            {
                return Err(MpcError::Overflow { op: pc, index, bits: width(index) });
            }
        }
        match op {
            Op::Input { dst, owner, len } | Op::Private { dst, owner, len } => {
                let v = own[*owner].next().ok_or_else(|| MpcError::BadInput {
                    what: format!("party {owner} has too few inputs"),
                })?;
                if v.len() != *len {
                    return Err(MpcError::BadInput {
                        what: format!("party {owner} input has length {}, expected {len}", v.len()),
                    });
                }
                machine.regs[*dst] = v;
            }
            op if op.interactive() => {
                let opened = machine.prepare(op, &none);
                if let Some(out) = machine.finish(op, &none, &opened, &[]) {
                    return Ok(out);
                }
            }
            op => machine.local(op, &mut |len, var| {
                let mut sum = vec![0i128; len];
                for _ in 0..parties {
                    for (s, z) in sum.iter_mut().zip(sample_vec(len, var, &mut *rng)?) {
                        *s += z;
                    }
                }
                Ok(sum)
            })?,
        }
    }
    Err(MpcError::OutOfOrder { what: "the program ended without an Open" })
}
