//! All parties and the dealer of one run in one process, exchanging messages in memory: for tests,
//! the CLI and the fixed-vs-mpc comparison. A networked run drives the same [`MpcParty`] values
//! over real (end-to-end encrypted) links instead.

use std::sync::Arc;

use capelab_core::rng::Seed;

use crate::mpc::MpcError;
use crate::mpc::dealer::deal_program;
use crate::mpc::party::{Message, MpcParty, Step};
use crate::mpc::program::Program;

/// What a run produced and cost.
#[derive(Clone, Debug, PartialEq)]
pub struct RunReport {
    /// The opened output (ring units), identical at every party.
    pub output: Vec<u128>,
    /// Communication rounds, the input round included.
    pub rounds: u32,
    /// Bytes each party sent (16 per ring element; headers not counted).
    pub bytes_sent: Vec<usize>,
    /// Ring elements the dealer sent to each party.
    pub dealt_values: Vec<usize>,
    /// When recorded: every message party 0 received, in order.
    pub received_by_0: Vec<Message>,
    /// When recorded: every message party 0 sent, in order.
    pub sent_by_0: Vec<Message>,
}

/// Runs `prog` with `inputs[p]` = party p's inputs (one vector per Input op it owns). The dealer
/// draws from `seed.rng("mpc/dealer")`, party p from `seed.rng("mpc/party/p")`.
pub fn run_in_process(
    prog: &Program,
    inputs: Vec<Vec<Vec<u128>>>,
    seed: Seed,
    record: bool,
) -> Result<RunReport, MpcError> {
    let p = prog.parties;
    if inputs.len() != p {
        return Err(MpcError::BadInput {
            what: format!("{} input sets for {p} parties", inputs.len()),
        });
    }
    let prog = Arc::new(prog.clone());
    let material = deal_program(&prog, &mut seed.rng("mpc/dealer"));
    let dealt_values = material.iter().map(|m| m.values()).collect();
    let mut parties = material
        .into_iter()
        .zip(inputs)
        .enumerate()
        .map(|(i, (m, inp))| {
            MpcParty::new(i, Arc::clone(&prog), m, inp, seed.rng(&format!("mpc/party/{i}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut bytes_sent = vec![0usize; p];
    let mut received_by_0 = Vec::new();
    let mut sent_by_0 = Vec::new();
    let mut inflight: Vec<Message> = Vec::new();
    for party in &mut parties {
        inflight.extend(party.start()?);
    }
    let mut rounds = 1;
    loop {
        let mut inbox: Vec<Vec<Message>> = vec![Vec::new(); p];
        for m in inflight.drain(..) {
            bytes_sent[m.from] += 16 * m.values.len();
            if record && m.to == 0 {
                received_by_0.push(m.clone());
            }
            if record && m.from == 0 {
                sent_by_0.push(m.clone());
            }
            let to = m.to;
            inbox[to].push(m);
        }
        let mut outputs = Vec::new();
        for (party, msgs) in parties.iter_mut().zip(inbox) {
            match party.receive(msgs)? {
                Step::Send(ms) => inflight.extend(ms),
                Step::Done(out) => outputs.push(out),
            }
        }
        if !outputs.is_empty() {
            if outputs.len() != p || outputs.iter().any(|o| *o != outputs[0]) {
                return Err(MpcError::OutOfOrder {
                    what: "parties finished in different rounds or disagree",
                });
            }
            let output = outputs.swap_remove(0);
            return Ok(RunReport {
                output,
                rounds,
                bytes_sent,
                dealt_values,
                received_by_0,
                sent_by_0,
            });
        }
        rounds += 1;
    }
}
