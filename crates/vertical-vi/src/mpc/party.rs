//! One party of the MPC as a sans-IO state machine (spec B3 step 3): no sockets, no clocks, only
//! messages in and messages out. Round 0 secret-shares the party's own inputs (point to point);
//! every later round is one interactive op of the [`Program`], in which each party broadcasts its
//! share of a masked value (Beaver d = x − a and e = y − b, a truncation or comparison opening
//! x + 2^l + r) and finally of G̃. Nothing per-example is ever opened unmasked (spec D12).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use capelab_core::rng::CapeRng;

use crate::mpc::MpcError;
use crate::mpc::dealer::{OpMaterial, PartyMaterial};
use crate::mpc::exec::Machine;
use crate::mpc::noise::sample_vec;
use crate::mpc::program::{Op, Program};
use crate::mpc::ring::share_unchecked;

/// One party's message to another in one round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub round: u32,
    pub from: usize,
    pub to: usize,
    pub values: Vec<u128>,
}

/// What a party does next.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Send these (one per other party), then wait for the round's messages.
    Send(Vec<Message>),
    /// The run is over; the opened output (G̃ in ring units).
    Done(Vec<u128>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    New,
    Waiting,
    Done,
}

/// A party's state for one run of a program.
#[derive(Debug)]
pub struct MpcParty {
    index: usize,
    prog: Arc<Program>,
    /// The dealt material, expanded from the seed, one entry per op.
    material: Vec<OpMaterial>,
    machine: Machine,
    rng: CapeRng,
    inputs: Vec<Vec<u128>>,
    round: u32,
    pc: usize,
    own: Vec<u128>,
    state: State,
}

impl MpcParty {
    /// Party `index` with its dealt `material` and its own `inputs`, one vector per
    /// [`Op::Input`] it owns, in program order. `rng` draws its input shares and noise.
    pub fn new(
        index: usize,
        prog: Arc<Program>,
        material: PartyMaterial,
        inputs: Vec<Vec<u128>>,
        rng: CapeRng,
    ) -> Result<Self, MpcError> {
        if prog.parties < 2 {
            return Err(MpcError::TooFewParties { parties: prog.parties });
        }
        if index >= prog.parties {
            return Err(MpcError::UnknownParty { from: index, parties: prog.parties });
        }
        if material.party != index || material.ops.len() != prog.ops.len() {
            return Err(MpcError::BadInput {
                what: format!("dealer material is not party {index}'s for this program"),
            });
        }
        let material = material.expand(&prog)?;
        let want: Vec<usize> = prog
            .ops
            .iter()
            .filter_map(|o| match o {
                Op::Input { owner, len, .. } if *owner == index => Some(*len),
                _ => None,
            })
            .collect();
        let got: Vec<usize> = inputs.iter().map(Vec::len).collect();
        if want != got {
            return Err(MpcError::BadInput {
                what: format!(
                    "party {index} inputs have lengths {got:?}, the program wants {want:?}"
                ),
            });
        }
        let machine = Machine::new(&prog, index == 0);
        Ok(Self {
            index,
            prog,
            material,
            machine,
            rng,
            inputs,
            round: 0,
            pc: 0,
            own: Vec::new(),
            state: State::New,
        })
    }

    pub fn index(&self) -> usize {
        self.index
    }

    /// The round whose messages this party expects next.
    pub fn round(&self) -> u32 {
        self.round
    }

    /// Round 0: shares this party's inputs; returns one message per other party.
    pub fn start(&mut self) -> Result<Vec<Message>, MpcError> {
        if self.state != State::New {
            return Err(MpcError::OutOfOrder { what: "start called twice" });
        }
        let p = self.prog.parties;
        let mut out: Vec<Vec<u128>> = vec![Vec::new(); p];
        let mut mine = self.inputs.drain(..);
        for op in &self.prog.ops {
            if let Op::Input { dst, owner, .. } = op
                && *owner == self.index
            {
                let vals = mine.next().expect("checked in new");
                let mut keep = Vec::with_capacity(vals.len());
                for v in vals {
                    for (q, s) in share_unchecked(v, p, &mut self.rng).into_iter().enumerate() {
                        if q == self.index {
                            keep.push(s);
                        } else {
                            out[q].push(s);
                        }
                    }
                }
                self.machine.regs[*dst] = keep;
            }
        }
        drop(mine);
        self.state = State::Waiting;
        Ok(self.addressed(out))
    }

    fn addressed(&self, mut per: Vec<Vec<u128>>) -> Vec<Message> {
        (0..self.prog.parties)
            .filter(|&q| q != self.index)
            .map(|q| Message {
                round: self.round,
                from: self.index,
                to: q,
                values: std::mem::take(&mut per[q]),
            })
            .collect()
    }

    fn expected_len(&self, from: usize) -> usize {
        if self.round == 0 {
            self.prog.input_len(from)
        } else {
            self.prog.opened_len(&self.prog.ops[self.pc])
        }
    }

    /// Checks a round's messages: one from every other party, addressed here, for this round,
    /// of the right length. Returns them ordered by sender.
    fn validate(&self, msgs: Vec<Message>) -> Result<Vec<Option<Message>>, MpcError> {
        let p = self.prog.parties;
        let mut by: Vec<Option<Message>> = vec![None; p];
        for m in msgs {
            if m.from >= p || m.from == self.index {
                return Err(MpcError::UnknownParty { from: m.from, parties: p });
            }
            if m.to != self.index {
                return Err(MpcError::WrongRecipient { to: m.to, me: self.index });
            }
            if m.round != self.round {
                return Err(MpcError::WrongRound { expected: self.round, got: m.round });
            }
            let want = self.expected_len(m.from);
            if m.values.len() != want {
                return Err(MpcError::WrongLength {
                    from: m.from,
                    expected: want,
                    got: m.values.len(),
                });
            }
            if by[m.from].is_some() {
                return Err(MpcError::DuplicateSender { from: m.from });
            }
            let f = m.from;
            by[f] = Some(m);
        }
        if let Some(from) = (0..p).find(|&q| q != self.index && by[q].is_none()) {
            return Err(MpcError::MissingSender { from });
        }
        Ok(by)
    }

    /// Takes the round's messages from all other parties; returns the next messages, or the
    /// opened output. A refused round leaves the state unchanged.
    pub fn receive(&mut self, msgs: Vec<Message>) -> Result<Step, MpcError> {
        if self.state != State::Waiting {
            return Err(MpcError::OutOfOrder { what: "receive before start or after done" });
        }
        let by = self.validate(msgs)?;
        if self.round == 0 {
            let mut cursor = vec![0usize; self.prog.parties];
            for op in &self.prog.ops {
                if let Op::Input { dst, owner, len } = op
                    && *owner != self.index
                {
                    let m = by[*owner].as_ref().expect("validated");
                    self.machine.regs[*dst] =
                        m.values[cursor[*owner]..cursor[*owner] + len].to_vec();
                    cursor[*owner] += len;
                }
            }
        } else {
            let mut opened = std::mem::take(&mut self.own);
            for m in by.iter().flatten() {
                for (o, v) in opened.iter_mut().zip(&m.values) {
                    *o = o.wrapping_add(*v);
                }
            }
            let op = &self.prog.ops[self.pc];
            let out = self.machine.finish(op, &self.material[self.pc], &opened);
            self.material[self.pc] = OpMaterial::None; // used once
            self.pc += 1;
            if let Some(out) = out {
                self.state = State::Done;
                return Ok(Step::Done(out));
            }
        }
        self.advance()
    }

    /// Runs local ops up to the next interactive one and prepares its broadcast.
    fn advance(&mut self) -> Result<Step, MpcError> {
        let prog = Arc::clone(&self.prog);
        while self.pc < prog.ops.len() {
            let op = &prog.ops[self.pc];
            if op.interactive() {
                self.own = self.machine.prepare(op, &self.material[self.pc]);
                self.round += 1;
                let per = vec![self.own.clone(); prog.parties];
                return Ok(Step::Send(self.addressed(per)));
            }
            if !matches!(op, Op::Input { .. }) {
                let rng = &mut self.rng;
                self.machine.local(op, &mut |len, var| sample_vec(len, var, rng))?;
            }
            self.pc += 1;
        }
        Err(MpcError::OutOfOrder { what: "the program ended without an Open" })
    }
}
