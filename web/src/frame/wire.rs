/*!
The wire as the relay sees it, and the transport the study roles send through.

[`StudyTransport`] is the [`Transport`] a role's [`Driver`](capelab_core::driver::Driver) owns:
sends go through the dashboard's [`StepGate`] (if any) to the room's websocket, and every
envelope is noted in the [`WireLog`] with what the relay reads of it: sender, recipient, kind and
size, never the payload. Events do not come through here: the session polls the websocket and the
study driver feeds them to the role, so [`Transport::poll_event`] is always `None`.
*/

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use capelab_core::transport::{Transport, TransportError, TransportEvent};
use capelab_core::wire::{ParticipantId, To};

use crate::studies::mean::step_gate::{HeldMessage, StepGate};
use crate::transport::WsTransport;

/// Lines kept for the view: the recent traffic, not a full log.
const KEEP: usize = 40;

/// What happened to one envelope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Sent,
    /// Held by step-by-step mode until "Next round".
    Held,
    /// The transport refused it (e.g. the recipient had just left).
    Failed,
    Received,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Sent => "sent",
            Direction::Held => "held",
            Direction::Failed => "failed",
            Direction::Received => "received",
        }
    }
}

/// One envelope, as the relay sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireLine {
    pub at_ms: u64,
    pub direction: Direction,
    /// The other end: the recipient of a send (`None` = everyone), the sender of a receipt.
    pub peer: Option<ParticipantId>,
    pub kind: String,
    pub bytes: usize,
}

/// The recent envelopes, newest last.
#[derive(Debug, Default)]
pub struct WireLog {
    lines: VecDeque<WireLine>,
    total: usize,
}

impl WireLog {
    pub fn push(&mut self, line: WireLine) {
        self.lines.push_back(line);
        self.total += 1;
        while self.lines.len() > KEEP {
            self.lines.pop_front();
        }
    }

    pub fn note_received(&mut self, at_ms: u64, event: &TransportEvent) {
        if let TransportEvent::Message { from, kind, payload } = event {
            self.push(WireLine {
                at_ms,
                direction: Direction::Received,
                peer: Some(*from),
                kind: kind.clone(),
                bytes: payload.len(),
            });
        }
    }

    pub fn lines(&self) -> Vec<WireLine> {
        self.lines.iter().cloned().collect()
    }

    /// Envelopes noted since the page opened (the view shows only the recent ones).
    pub fn total(&self) -> usize {
        self.total
    }
}

fn peer_of(to: To) -> Option<ParticipantId> {
    match to {
        To::All => None,
        To::One(id) => Some(id),
    }
}

/// Sends a message on the websocket and notes it.
pub fn send_noted(
    ws: &mut WsTransport,
    log: &RefCell<WireLog>,
    at_ms: u64,
    message: &HeldMessage,
) -> Result<(), TransportError> {
    let result = ws.send(message.to, &message.kind, &message.payload);
    log.borrow_mut().push(WireLine {
        at_ms,
        direction: if result.is_ok() { Direction::Sent } else { Direction::Failed },
        peer: peer_of(message.to),
        kind: message.kind.clone(),
        bytes: message.payload.len(),
    });
    result
}

/// The transport a study role's driver owns. See the module docs.
#[derive(Clone)]
pub struct StudyTransport {
    pub ws: WsTransport,
    pub gate: Option<Rc<RefCell<StepGate>>>,
    pub log: Rc<RefCell<WireLog>>,
    /// The wall clock of the send being made, for the log.
    pub now: fn() -> u64,
}

impl Transport for StudyTransport {
    fn send(&mut self, to: To, kind: &str, payload: &[u8]) -> Result<(), TransportError> {
        let message = HeldMessage { to, kind: kind.to_owned(), payload: payload.to_vec() };
        let at_ms = (self.now)();
        let offer = match &self.gate {
            Some(gate) => gate.borrow_mut().offer(message.clone()),
            None => {
                crate::studies::mean::step_gate::Offer { send: vec![message.clone()], dropped: 0 }
            }
        };
        if offer.send.is_empty() {
            self.log.borrow_mut().push(WireLine {
                at_ms,
                direction: Direction::Held,
                peer: peer_of(to),
                kind: message.kind,
                bytes: message.payload.len(),
            });
            return Ok(());
        }
        let mut result = Ok(());
        for out in &offer.send {
            let sent = send_noted(&mut self.ws, &self.log, at_ms, out);
            if *out == message {
                result = sent;
            }
        }
        result
    }

    fn poll_event(&mut self) -> Option<TransportEvent> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_keeps_the_recent_envelopes_and_counts_all() {
        let mut log = WireLog::default();
        for i in 0..(KEEP + 3) {
            log.note_received(
                i as u64,
                &TransportEvent::Message { from: 2, kind: "secagg/x".into(), payload: vec![0; i] },
            );
        }
        log.note_received(99, &TransportEvent::Disconnected { reason: "x".into() });
        let lines = log.lines();
        assert_eq!((lines.len(), log.total()), (KEEP, KEEP + 3));
        assert_eq!(lines[0].bytes, 3);
        assert_eq!(lines.last().unwrap().direction, Direction::Received);
        assert_eq!(peer_of(To::All), None);
    }
}
