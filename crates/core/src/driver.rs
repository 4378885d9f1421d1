//! The seam between a sans-IO protocol role and a [`Transport`], and a small generic driver.
//!
//! A role (SecureAgg's [`Site`](crate::secagg::Site) and [`Aggregator`](crate::secagg::Aggregator),
//! the private-mean study's [`MeanSite`](crate::study::mean::MeanSite) and
//! [`MeanAggregator`](crate::study::mean::MeanAggregator)) implements [`Machine`]: it takes
//! transport inputs and returns [`Outgoing`] messages. A [`Driver`] owns one transport and one
//! role and moves events between them; the simulators, the CLI and the browser app use it
//! unchanged (in the browser, call [`Driver::pump`] whenever the websocket delivers something and
//! [`Driver::fire_timeout`] from a timer set to [`Machine::poll_timeout`]).
//!
//! Nothing here is specific to one protocol: a role that wraps another (the study wraps SecureAgg)
//! is itself a [`Machine`] and forwards to the inner role's methods.

use crate::transport::{Transport, TransportError, TransportEvent};
use crate::wire::{ParticipantId, To};

/// One message a role wants sent: the driver passes it to [`Transport::send`] unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    pub to: To,
    /// The envelope kind, e.g. `secagg/masked-input`.
    pub kind: &'static str,
    /// The message bytes ([`crate::codec`]).
    pub payload: Vec<u8>,
}

/// A sans-IO protocol role, as a driver sees it.
///
/// Call order: feed every transport input as it comes (`handle` for a message, `handle_departure`
/// for a peer that left), send whatever each call returns, and call `handle_timeout` once the
/// clock reaches `poll_timeout()`. Re-read `poll_timeout()` after every call: it moves.
pub trait Machine {
    type Error: std::error::Error;

    /// A message `payload` from participant `from`. `Err` refuses that message.
    fn handle(
        &mut self,
        now_ms: u64,
        from: ParticipantId,
        payload: &[u8],
    ) -> Result<Vec<Outgoing>, Self::Error>;

    /// Participant `who` left the room (the transport's `PeerLeft`).
    fn handle_departure(
        &mut self,
        now_ms: u64,
        who: ParticipantId,
    ) -> Result<Vec<Outgoing>, Self::Error>;

    /// The clock reached (or passed) `poll_timeout()`. Roles without deadlines (the sites, which
    /// wait for their aggregator) keep this default.
    fn handle_timeout(&mut self, _now_ms: u64) -> Result<Vec<Outgoing>, Self::Error> {
        Ok(Vec::new())
    }

    /// When `handle_timeout` should next be called, if ever (by default never).
    fn poll_timeout(&self) -> Option<u64> {
        None
    }

    /// Whether the role has reached its end (a result or an abort): no input will change it.
    fn is_finished(&self) -> bool;
}

/// Something a [`Driver`] did, kept for logs, the dashboard and tests.
#[derive(Debug)]
pub enum DriverEvent<E> {
    Sent {
        at_ms: u64,
        to: To,
        kind: &'static str,
        bytes: usize,
    },
    /// The transport refused a send (typically: the recipient has just left).
    SendFailed {
        at_ms: u64,
        to: To,
        kind: &'static str,
        error: TransportError,
    },
    /// The role refused an input; `from` is `None` for a timeout or departure.
    Refused {
        at_ms: u64,
        from: Option<ParticipantId>,
        error: E,
    },
    /// A transport event the role does not take (joins, reconnects, relay errors).
    Ignored {
        at_ms: u64,
        event: TransportEvent,
    },
}

/// Owns a transport and a role; moves events from one to the other.
pub struct Driver<T, M: Machine> {
    pub transport: T,
    pub machine: M,
    log: Vec<DriverEvent<M::Error>>,
}

impl<T: Transport, M: Machine> Driver<T, M> {
    pub fn new(transport: T, machine: M) -> Self {
        Self { transport, machine, log: Vec::new() }
    }

    /// Sends what a role returned (e.g. an aggregator's opening messages).
    pub fn send(&mut self, at_ms: u64, outgoing: Vec<Outgoing>) {
        for out in outgoing {
            let event = match self.transport.send(out.to, out.kind, &out.payload) {
                Ok(()) => DriverEvent::Sent {
                    at_ms,
                    to: out.to,
                    kind: out.kind,
                    bytes: out.payload.len(),
                },
                Err(error) => DriverEvent::SendFailed { at_ms, to: out.to, kind: out.kind, error },
            };
            self.log.push(event);
        }
    }

    /// Feeds one transport event to the role and sends what it returns.
    pub fn feed(&mut self, at_ms: u64, event: TransportEvent) {
        let (from, result) = match event {
            TransportEvent::Message { from, payload, .. } => {
                (Some(from), self.machine.handle(at_ms, from, &payload))
            }
            TransportEvent::PeerLeft(peer) => (None, self.machine.handle_departure(at_ms, peer.id)),
            other => {
                self.log.push(DriverEvent::Ignored { at_ms, event: other });
                return;
            }
        };
        self.settle(at_ms, from, result);
    }

    /// Feeds every waiting transport event; returns how many there were.
    pub fn pump(&mut self, at_ms: u64) -> usize {
        let mut n = 0;
        while let Some(event) = self.transport.poll_event() {
            self.feed(at_ms, event);
            n += 1;
        }
        n
    }

    /// Calls the role's timeout if its deadline has come; returns whether it had.
    pub fn fire_timeout(&mut self, now_ms: u64) -> bool {
        match self.machine.poll_timeout() {
            Some(deadline) if deadline <= now_ms => {
                let result = self.machine.handle_timeout(now_ms);
                self.settle(now_ms, None, result);
                true
            }
            _ => false,
        }
    }

    /// For in-process simulations, once a pass moved no message: unless the role has finished,
    /// jumps `clock_ms` to its next deadline and fires it. Returns whether anything happened
    /// (`false`: the simulation has settled).
    pub fn advance_idle_clock(&mut self, clock_ms: &mut u64) -> bool {
        if self.machine.is_finished() {
            return false;
        }
        match self.machine.poll_timeout() {
            Some(deadline) => {
                *clock_ms = (*clock_ms).max(deadline);
                self.fire_timeout(*clock_ms)
            }
            None => false,
        }
    }

    pub fn log(&self) -> &[DriverEvent<M::Error>] {
        &self.log
    }

    /// The kinds this driver sent successfully, in order.
    pub fn sent_kinds(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.log.iter().filter_map(|e| match e {
            DriverEvent::Sent { kind, .. } => Some(*kind),
            _ => None,
        })
    }

    fn settle(
        &mut self,
        at_ms: u64,
        from: Option<ParticipantId>,
        result: Result<Vec<Outgoing>, M::Error>,
    ) {
        match result {
            Ok(outgoing) => self.send(at_ms, outgoing),
            Err(error) => self.log.push(DriverEvent::Refused { at_ms, from, error }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::MemoryRoom;
    use crate::wire::Role;

    /// Answers every message with "pong" to its sender, refuses empty ones, and has a deadline.
    struct Pong {
        deadline: Option<u64>,
        departures: Vec<ParticipantId>,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("empty message")]
    struct Empty;

    impl Machine for Pong {
        type Error = Empty;
        fn handle(
            &mut self,
            _: u64,
            from: ParticipantId,
            p: &[u8],
        ) -> Result<Vec<Outgoing>, Empty> {
            if p.is_empty() {
                return Err(Empty);
            }
            Ok(vec![Outgoing { to: To::One(from), kind: "pong", payload: p.to_vec() }])
        }
        fn handle_departure(&mut self, _: u64, who: ParticipantId) -> Result<Vec<Outgoing>, Empty> {
            self.departures.push(who);
            Ok(Vec::new())
        }
        fn handle_timeout(&mut self, _: u64) -> Result<Vec<Outgoing>, Empty> {
            self.deadline = None;
            Ok(vec![Outgoing { to: To::All, kind: "tick", payload: vec![1] }])
        }
        fn poll_timeout(&self) -> Option<u64> {
            self.deadline
        }
        fn is_finished(&self) -> bool {
            false
        }
    }

    #[test]
    fn moves_events_both_ways_and_logs_what_happened() {
        let room = MemoryRoom::new();
        let transport = room.join(Role::Dashboard, "d");
        let mut peer = room.join(Role::Site, "s");
        let mut d = Driver::new(transport, Pong { deadline: Some(50), departures: vec![] });
        assert_eq!(d.pump(0), 2, "Connected and PeerJoined");
        assert!(matches!(d.log(), [DriverEvent::Ignored { .. }, DriverEvent::Ignored { .. }]));

        peer.send(To::All, "ping", b"hi").unwrap();
        peer.send(To::All, "ping", b"").unwrap();
        assert_eq!(d.pump(10), 2);
        assert!(matches!(&d.log()[2], DriverEvent::Sent { at_ms: 10, kind: "pong", bytes: 2, .. }));
        assert!(matches!(&d.log()[3], DriverEvent::Refused { from: Some(2), .. }));
        while let Some(e) = peer.poll_event() {
            if let TransportEvent::Message { kind, payload, .. } = e {
                assert_eq!((kind.as_str(), payload.as_slice()), ("pong", &b"hi"[..]));
            }
        }

        assert!(!d.fire_timeout(49), "not due yet");
        assert!(d.fire_timeout(50));
        assert!(!d.fire_timeout(60), "no deadline any more");
        assert_eq!(d.sent_kinds().collect::<Vec<_>>(), vec!["pong", "tick"]);

        // a departure reaches the role, and a send to the departed peer is logged, not fatal
        room.disconnect(peer.id());
        d.pump(70);
        assert_eq!(d.machine.departures, vec![peer.id()]);
        d.send(80, vec![Outgoing { to: To::One(peer.id()), kind: "late", payload: vec![] }]);
        assert!(matches!(d.log().last(), Some(DriverEvent::SendFailed { kind: "late", .. })));
    }
}
