//! One party of the MPC as a sans-IO state machine (spec B3 step 3): no sockets, no clocks, only
//! messages in and messages out. Round 0 secret-shares the party's own inputs (point to point):
//! party p sends each other party q a fresh 32-byte ChaCha20 seed, q's shares of all of p's
//! inputs are that seed's stream, and p keeps its values minus the others' shares (a PRG
//! assumption, as for the dealer's seeds: q's shares are computationally uniform; the seed
//! travels sealed to q alone);
//! every later round is one interactive op of the [`Program`], in which each party broadcasts its
//! share of a masked value (Beaver d = x − a and e = y − b, a truncation or comparison opening
//! x + 2^l + r; for the comparison's bits, XOR shares of d = x ⊕ a, e = y ⊕ b packed 128 to a
//! word; for [`Op::OwnedMatVec`] also, from each owner, its private matrix masked by the dealer's
//! β) and finally of G̃. Nothing per-example is ever opened unmasked (spec D12).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use capelab_core::rng::CapeRng;

use crate::mpc::MpcError;
use crate::mpc::dealer::{OpMaterial, PartyMaterial};
use crate::mpc::exec::Machine;
use crate::mpc::noise::sample_vec;
use crate::mpc::program::{Op, Program};
use crate::mpc::ring::random;
use rand_core::{Rng, SeedableRng};

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

/// A 32-byte seed as two ring values (little-endian), the form it travels in.
fn seed_values(seed: &[u8; 32]) -> [u128; 2] {
    let lo = u128::from_le_bytes(seed[..16].try_into().expect("16 bytes"));
    let hi = u128::from_le_bytes(seed[16..].try_into().expect("16 bytes"));
    [lo, hi]
}

/// The inverse of [`seed_values`] (the caller checked there are two values).
fn values_seed(v: &[u128]) -> [u8; 32] {
    let mut s = [0u8; 32];
    s[..16].copy_from_slice(&v[0].to_le_bytes());
    s[16..].copy_from_slice(&v[1].to_le_bytes());
    s
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
    /// [`Op::Input`] or [`Op::Private`] it owns, in program order. `rng` draws its input shares
    /// and noise.
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
        let want = prog.input_lens(index);
        let got: Vec<usize> = inputs.iter().map(Vec::len).collect();
        if want != got {
            return Err(MpcError::BadInput {
                what: format!(
                    "party {index} inputs have lengths {got:?}, the program wants {want:?}"
                ),
            });
        }
        let machine = Machine::new(&prog, index);
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
        // one seed per other party; its shares of our inputs are that seed's stream
        let mut seeds = vec![[0u8; 32]; p];
        for (q, seed) in seeds.iter_mut().enumerate() {
            if q != self.index {
                self.rng.fill_bytes(seed);
            }
        }
        let mut streams: Vec<CapeRng> = seeds.iter().map(|s| CapeRng::from_seed(*s)).collect();
        let mut mine = self.inputs.drain(..);
        for op in &self.prog.ops {
            if let Op::Private { dst, owner, .. } = op
                && *owner == self.index
            {
                self.machine.regs[*dst] = mine.next().expect("checked in new");
            }
            if let Op::Input { dst, owner, .. } = op
                && *owner == self.index
            {
                let vals = mine.next().expect("checked in new");
                let keep = vals
                    .into_iter()
                    .map(|v| {
                        let mut k = v;
                        for (q, stream) in streams.iter_mut().enumerate() {
                            if q != self.index {
                                k = k.wrapping_sub(random(stream));
                            }
                        }
                        k
                    })
                    .collect();
                self.machine.regs[*dst] = keep;
            }
        }
        let out: Vec<Vec<u128>> = seeds.iter().map(|s| seed_values(s).to_vec()).collect();
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

    /// Values per message from `from` this round: a seed (two ring values) in round 0.
    fn expected_len(&self, from: usize) -> usize {
        if self.round == 0 { 2 } else { self.prog.sent_len(&self.prog.ops[self.pc], from) }
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
            let mut streams: Vec<Option<CapeRng>> = by
                .iter()
                .map(|m| m.as_ref().map(|m| CapeRng::from_seed(values_seed(&m.values))))
                .collect();
            for op in &self.prog.ops {
                if let Op::Input { dst, owner, len } = op
                    && *owner != self.index
                {
                    let stream = streams[*owner].as_mut().expect("validated");
                    self.machine.regs[*dst] = (0..*len).map(|_| random(stream)).collect();
                }
            }
        } else {
            let own = std::mem::take(&mut self.own);
            let op = &self.prog.ops[self.pc];
            let n = self.prog.opened_len(op);
            let mut opened = own[..n].to_vec();
            let xor = op.opens_bits();
            for m in by.iter().flatten() {
                for (o, v) in opened.iter_mut().zip(&m.values[..n]) {
                    *o = if xor { *o ^ v } else { o.wrapping_add(*v) };
                }
            }
            // what each party sent after its broadcast share (its masked private matrices)
            let owned: Vec<&[u128]> =
                by.iter().map(|m| m.as_ref().map_or(&own[n..], |m| &m.values[n..])).collect();
            let out = self.machine.finish(op, &self.material[self.pc], &opened, &owned);
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
            if !matches!(op, Op::Input { .. } | Op::Private { .. }) {
                let rng = &mut self.rng;
                self.machine.local(op, &mut |len, var| sample_vec(len, var, rng))?;
            }
            self.pc += 1;
        }
        Err(MpcError::OutOfOrder { what: "the program ended without an Open" })
    }
}
