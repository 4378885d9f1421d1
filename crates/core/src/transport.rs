/*!
The one transport seam: how a participant's protocol driver talks to the room.

A [`Transport`] sends protocol bytes to one participant or to everyone else, and yields
[`TransportEvent`]s: messages, presence changes and connection state. Protocol roles never see a
transport; a driver moves bytes between the two. Two implementations exist:

- [`MemoryRoom`] (here): every participant in one process, for unit tests, the CLI's simulations and
  benchmarks. It routes exactly as the relay does (`To::All` excludes the sender) and can drop a
  participant on command, which is how tests script a site vanishing mid-round.
- the websocket transport in `web/src/transport.rs`, which speaks [`crate::wire`] to the relay.
*/

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::wire::{ErrorCode, ParticipantId, Peer, Role, To};

/// What a transport reports to its driver.
#[derive(Clone, Debug, PartialEq)]
pub enum TransportEvent {
    /// In the room, with this identity, next to these peers.
    Connected {
        room: String,
        you: Peer,
        peers: Vec<Peer>,
    },
    PeerJoined(Peer),
    /// A peer's connection came back with the same id.
    PeerRejoined(Peer),
    PeerLeft(Peer),
    Message {
        from: ParticipantId,
        kind: String,
        payload: Vec<u8>,
    },
    /// The connection is gone; a websocket transport retries on its own and reports `Connected` again.
    Disconnected {
        reason: String,
    },
    /// The relay refused one of our frames.
    Refused {
        code: ErrorCode,
        message: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    #[error("not connected to a room")]
    NotConnected,
    #[error("participant {0} is not in the room")]
    UnknownRecipient(ParticipantId),
    #[error("frame of {size} bytes exceeds the relay's limit of {limit} bytes")]
    Oversized { size: usize, limit: usize },
}

/// Moves protocol bytes between this participant and the rest of its room.
pub trait Transport {
    /// Queues `payload` for `to`. `kind` names the message for logs and the dashboard.
    fn send(&mut self, to: To, kind: &str, payload: &[u8]) -> Result<(), TransportError>;
    /// The next event, if one is waiting. Never blocks.
    fn poll_event(&mut self) -> Option<TransportEvent>;
}

/// An in-process room: every participant's queue behind one lock.
#[derive(Clone, Default)]
pub struct MemoryRoom {
    inner: Arc<Mutex<RoomState>>,
}

#[derive(Default)]
struct RoomState {
    next_id: ParticipantId,
    members: Vec<Member>,
}

struct Member {
    peer: Peer,
    connected: bool,
    inbox: VecDeque<TransportEvent>,
}

impl MemoryRoom {
    pub const NAME: &'static str = "memory";

    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a participant; it first sees `Connected`, and everyone else sees `PeerJoined`.
    pub fn join(&self, role: Role, name: &str) -> MemoryTransport {
        let mut room = self.lock();
        room.next_id += 1;
        let peer = Peer { id: room.next_id, role, name: name.to_owned() };
        let peers: Vec<Peer> =
            room.members.iter().filter(|m| m.connected).map(|m| m.peer.clone()).collect();
        for m in room.members.iter_mut().filter(|m| m.connected) {
            m.inbox.push_back(TransportEvent::PeerJoined(peer.clone()));
        }
        let mut inbox = VecDeque::new();
        inbox.push_back(TransportEvent::Connected {
            room: Self::NAME.to_owned(),
            you: peer.clone(),
            peers,
        });
        room.members.push(Member { peer: peer.clone(), connected: true, inbox });
        MemoryTransport { room: self.clone(), id: peer.id }
    }

    /// Drops a participant as if its tab were closed: everyone else sees `PeerLeft`, and anything
    /// still queued for it is lost.
    pub fn disconnect(&self, id: ParticipantId) {
        let mut room = self.lock();
        let Some(idx) = room.members.iter().position(|m| m.peer.id == id && m.connected) else {
            return;
        };
        room.members[idx].connected = false;
        room.members[idx].inbox.clear();
        let peer = room.members[idx].peer.clone();
        for m in room.members.iter_mut().filter(|m| m.connected) {
            m.inbox.push_back(TransportEvent::PeerLeft(peer.clone()));
        }
    }

    /// How many events wait in all inboxes: zero means the room is quiet.
    pub fn pending(&self) -> usize {
        self.lock().members.iter().map(|m| m.inbox.len()).sum()
    }

    fn lock(&self) -> MutexGuard<'_, RoomState> {
        // A panic while holding the lock can only come from a bug in this file; keep going.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One participant's handle on a [`MemoryRoom`].
pub struct MemoryTransport {
    room: MemoryRoom,
    id: ParticipantId,
}

impl MemoryTransport {
    pub fn id(&self) -> ParticipantId {
        self.id
    }
}

impl Transport for MemoryTransport {
    fn send(&mut self, to: To, kind: &str, payload: &[u8]) -> Result<(), TransportError> {
        let mut room = self.room.lock();
        let me = room
            .members
            .iter()
            .find(|m| m.peer.id == self.id)
            .ok_or(TransportError::NotConnected)?;
        if !me.connected {
            return Err(TransportError::NotConnected);
        }
        let event = TransportEvent::Message {
            from: self.id,
            kind: kind.to_owned(),
            payload: payload.to_vec(),
        };
        match to {
            To::All => {
                for m in room.members.iter_mut().filter(|m| m.connected && m.peer.id != self.id) {
                    m.inbox.push_back(event.clone());
                }
            }
            To::One(id) => {
                let target = room
                    .members
                    .iter_mut()
                    .find(|m| m.peer.id == id && m.connected)
                    .ok_or(TransportError::UnknownRecipient(id))?;
                target.inbox.push_back(event);
            }
        }
        Ok(())
    }

    fn poll_event(&mut self) -> Option<TransportEvent> {
        let mut room = self.room.lock();
        room.members.iter_mut().find(|m| m.peer.id == self.id)?.inbox.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(t: &mut MemoryTransport) -> Vec<TransportEvent> {
        std::iter::from_fn(|| t.poll_event()).collect()
    }

    #[test]
    fn routes_like_the_relay() {
        let room = MemoryRoom::new();
        let mut dash = room.join(Role::Dashboard, "dash");
        let mut a = room.join(Role::Site, "a");
        let mut b = room.join(Role::Site, "b");
        assert!(matches!(
            drain(&mut a)[..],
            [TransportEvent::Connected { .. }, TransportEvent::PeerJoined(_)]
        ));
        drain(&mut b);
        drain(&mut dash);

        a.send(To::All, "hello", b"x").unwrap();
        assert!(drain(&mut a).is_empty(), "a broadcast never comes back to its sender");
        assert_eq!(drain(&mut b).len(), 1);
        assert_eq!(drain(&mut dash).len(), 1);

        dash.send(To::One(b.id()), "direct", b"y").unwrap();
        assert!(drain(&mut a).is_empty());
        assert_eq!(
            drain(&mut b),
            vec![TransportEvent::Message {
                from: dash.id(),
                kind: "direct".into(),
                payload: b"y".to_vec()
            }]
        );
        assert_eq!(dash.send(To::One(99), "x", b""), Err(TransportError::UnknownRecipient(99)));
    }

    #[test]
    fn a_dropped_participant_is_announced_and_silenced() {
        let room = MemoryRoom::new();
        let mut dash = room.join(Role::Dashboard, "dash");
        let mut a = room.join(Role::Site, "a");
        drain(&mut dash);
        room.disconnect(a.id());
        assert!(matches!(&drain(&mut dash)[..], [TransportEvent::PeerLeft(p)] if p.id == a.id()));
        assert_eq!(a.send(To::All, "late", b""), Err(TransportError::NotConnected));
        assert_eq!(
            dash.send(To::One(a.id()), "x", b""),
            Err(TransportError::UnknownRecipient(a.id()))
        );
        assert_eq!(room.pending(), 0);
    }
}
