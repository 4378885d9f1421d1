/*!
The room registry: who is in which room, and where each frame goes. No sockets, no clock.

A [`Registry`] owns every room. Connections reach it through a [`Conn`] (an id plus the
connection's [`Outbox`]); the registry answers by pushing serialised frames into outboxes, so
everything a participant receives — its `Welcome`, presence, envelopes — passes through one
ordered queue, and a `Welcome` always comes before the first message that depends on it.
Time is an argument (`now`, from [`crate::Clock`]), which is how tests drive the grace period.

Behaviour the wire format leaves open, decided here:
- Ids are 1, 2, 3, … in join order per room and never reused, even after an identity expires.
- `Welcome.peers` lists the participants connected at that moment. A participant who was away
  when you joined may later arrive as `Rejoined`; clients treat that as a join.
- A participant who drops is announced `Left` at once and stays *away* for the grace period: it
  still holds its id and a seat (it counts towards `max_participants`), and a `Join` presenting
  its resume token in the same room takes the identity back — same id, role and name — and the
  others see `Rejoined`. The token stays valid for later reconnects.
- A resume token that matches an identity still connected (a half-open connection the relay has
  not noticed yet, or a duplicated tab) takes the identity over: the old connection is closed with
  code 4001, the others see `Left` then `Rejoined`.
- A resume token that is unknown, expired or from another room is ignored: the `Join` is treated
  as a new participant (a new id, `Joined`). The client sees this in `Welcome.you.id`. This keeps
  a reload after a relay restart working instead of failing on a stale token.
- `To::One` may name the sender itself (a cheap echo to check a connection); naming an away
  participant is refused with `UnknownRecipient`, as the message could not be delivered.
- A room is dropped when it has no connected participant and nobody within the grace period.
  Expiry goes through a deadline index ([`Deadlines`]), so it costs only the identities that
  expire, never a scan of every room.
- A room has exactly one dashboard: the participant who created it. A `Join` with role
  `dashboard` is refused (`NotAllowed`) unless its resume token brings back that very seat.
- The dashboard may lock its room (`Lock`): new participants are then refused (`NotAllowed`);
  anyone seated before may still resume. Locking twice, or unlocking an open room, is no error.
*/

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use axum::extract::ws::Utf8Bytes;
use capelab_wire::{ParticipantId, Peer, PresenceEvent, RelayFrame, Role, To, WIRE_VERSION};

use crate::error::Refusal;
use crate::expiry::Deadlines;
use crate::frame::relay_frame_text;
use crate::limits::{RelayLimits, TokenBucket, clean_name};
use crate::log::Log;
use crate::outbox::{CloseReason, Outbox};
use crate::resume::ResumeToken;
use crate::room_code::{self, RoomCode};

/// Identifies one websocket connection for the relay's lifetime.
pub type ConnId = u64;

/// A connection as the registry sees it: who it is and where its frames go.
#[derive(Clone, Debug)]
pub struct Conn {
    pub id: ConnId,
    pub outbox: Outbox,
}

/// Where a connection sits once it has created or joined a room.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seat {
    pub room: RoomCode,
    pub id: ParticipantId,
}

/// What a `Join` asks for.
#[derive(Clone, Copy, Debug)]
pub struct JoinRequest<'a> {
    pub room: &'a str,
    pub role: Role,
    pub name: &'a str,
    pub resume: Option<&'a str>,
}

/// Every room on this relay.
#[derive(Debug)]
pub struct Registry {
    rooms: HashMap<RoomCode, Room>,
    deadlines: Deadlines,
    limits: RelayLimits,
    grace: Duration,
    log: Log,
}

#[derive(Debug)]
struct Room {
    /// The id the next new participant gets; ids start at 1.
    last_id: ParticipantId,
    members: BTreeMap<ParticipantId, Member>,
    /// Bytes all members together may still send (each sender also has its own budget).
    bytes: TokenBucket,
    /// No new participants while set.
    locked: bool,
}

#[derive(Debug)]
struct Member {
    peer: Peer,
    token: ResumeToken,
    link: Link,
}

#[derive(Debug)]
enum Link {
    Connected(Conn),
    /// Dropped at `since`; resumable until `since + grace`.
    Away {
        since: Duration,
    },
}

impl Registry {
    /// An empty registry. `grace` is how long a dropped participant stays resumable.
    pub fn new(limits: RelayLimits, grace: Duration, log: Log) -> Self {
        Registry { rooms: HashMap::new(), deadlines: Deadlines::default(), limits, grace, log }
    }

    /// Opens a new room with a fresh code and seats `conn` in it as its dashboard (id 1).
    pub fn create(&mut self, conn: &Conn, name: &str, now: Duration) -> Seat {
        self.expire(now);
        let code = loop {
            let candidate = RoomCode::random();
            if !self.rooms.contains_key(&candidate) {
                break candidate;
            }
        };
        self.open(conn, name, code, now)
    }

    /// Opens room `code`, chosen by the caller (a code claimed across relays through the broker),
    /// and seats `conn` as its dashboard; `None` if a room with that code is open here already.
    pub fn create_as(
        &mut self,
        conn: &Conn,
        name: &str,
        code: RoomCode,
        now: Duration,
    ) -> Option<Seat> {
        self.expire(now);
        (!self.rooms.contains_key(&code)).then(|| self.open(conn, name, code, now))
    }

    fn open(&mut self, conn: &Conn, name: &str, code: RoomCode, now: Duration) -> Seat {
        let room = self.rooms.entry(code.clone()).or_insert_with(|| Room {
            last_id: 0,
            members: BTreeMap::new(),
            bytes: self.limits.room_bytes(now),
            locked: false,
        });
        let peer = room.admit(conn, Role::Dashboard, name, &code, &self.limits);
        self.log.line(format_args!("room {code} created by #{} {:?}", peer.id, peer.name));
        Seat { room: code, id: peer.id }
    }

    /// Seats `conn` in an existing room: as a returning identity if `resume` names one there,
    /// otherwise as a new participant.
    pub fn join(
        &mut self,
        conn: &Conn,
        request: JoinRequest<'_>,
        now: Duration,
    ) -> Result<Seat, Refusal> {
        self.expire(now);
        let unknown = || Refusal::UnknownRoom { room: room_code::echo(request.room) };
        let code = RoomCode::parse(request.room).ok_or_else(unknown)?;
        let room = self.rooms.get_mut(&code).ok_or_else(unknown)?;

        if let Some(id) = request.resume.and_then(|token| room.holder_of(token)) {
            if let Some(since) = room.resume(conn, id, &code, &self.limits, &self.log) {
                self.deadlines.remove(since + self.grace, &code, id);
            }
            return Ok(Seat { room: code, id });
        }
        if request.role == Role::Dashboard {
            return Err(Refusal::DashboardTaken { room: code.to_string() });
        }
        if room.locked {
            return Err(Refusal::RoomLocked { room: code.to_string() });
        }
        if room.members.len() >= self.limits.max_participants {
            return Err(Refusal::RoomFull {
                room: code.to_string(),
                max: self.limits.max_participants,
            });
        }
        let peer = room.admit(conn, request.role, request.name, &code, &self.limits);
        self.log.line(format_args!("{code}: #{} {} {:?} joined", peer.id, peer.role, peer.name));
        Ok(Seat { room: code, id: peer.id })
    }

    /// Delivers an already-serialised envelope from `seat` to `to` (`To::All`: everyone else
    /// connected). The sender must still hold the seat on this connection.
    pub fn route(
        &mut self,
        conn: &Conn,
        seat: &Seat,
        to: To,
        envelope: Utf8Bytes,
        now: Duration,
    ) -> Result<(), Refusal> {
        let room = self.rooms.get_mut(&seat.room).ok_or(Refusal::Superseded)?;
        if room.connection_of(seat.id).map(|c| c.id) != Some(conn.id) {
            return Err(Refusal::Superseded);
        }
        // Bounds what several members together push at the others; each sender has its own too.
        if !room.bytes.try_take_n(now, envelope.len() as u64) {
            return Err(Refusal::ByteRateLimited {
                who: "this room",
                size: envelope.len(),
                per_second: self.limits.room_bytes_per_second.into(),
                burst: self.limits.room_byte_burst.into(),
            });
        }
        match to {
            To::All => room.broadcast_except(seat.id, &envelope),
            To::One(id) => match room.members.get(&id).map(|m| &m.link) {
                // A full outbox closes its own connection; the sender is not to blame.
                Some(Link::Connected(recipient)) => {
                    let _ = recipient.outbox.push(envelope);
                }
                Some(Link::Away { .. }) => {
                    return Err(Refusal::RecipientAway { room: seat.room.to_string(), id });
                }
                None => return Err(Refusal::UnknownRecipient { room: seat.room.to_string(), id }),
            },
        }
        Ok(())
    }

    /// Locks or unlocks `seat`'s room; only its dashboard may, from its current connection.
    pub fn lock(&mut self, conn: &Conn, seat: &Seat, locked: bool) -> Result<(), Refusal> {
        let room = self.rooms.get_mut(&seat.room).ok_or(Refusal::Superseded)?;
        if room.connection_of(seat.id).map(|c| c.id) != Some(conn.id) {
            return Err(Refusal::Superseded);
        }
        if room.members.get(&seat.id).map(|m| m.peer.role) != Some(Role::Dashboard) {
            return Err(Refusal::NotDashboard { room: seat.room.to_string() });
        }
        if room.locked != locked {
            room.locked = locked;
            let state = if locked { "locked" } else { "unlocked" };
            self.log.line(format_args!("room {} {state}", seat.room));
        }
        Ok(())
    }

    /// The connection holding `seat` is gone: tell the others and keep the identity resumable.
    /// Does nothing if another connection has taken the identity over meanwhile.
    pub fn disconnect(&mut self, conn_id: ConnId, seat: &Seat, now: Duration) {
        let Some(room) = self.rooms.get_mut(&seat.room) else { return };
        if room.connection_of(seat.id).map(|c| c.id) != Some(conn_id) {
            return;
        }
        let Some(member) = room.members.get_mut(&seat.id) else { return };
        member.link = Link::Away { since: now };
        let peer = member.peer.clone();
        self.deadlines.add(now + self.grace, &seat.room, seat.id);
        room.announce(PresenceEvent::Left, &peer);
        self.log.line(format_args!(
            "{}: #{} left (resumable for {} s)",
            seat.room,
            peer.id,
            self.grace.as_secs()
        ));
        self.expire(now);
    }

    /// Forgets identities whose grace period is over, and rooms left with nobody. Touches only
    /// the identities that expire.
    pub fn expire(&mut self, now: Duration) {
        while let Some((code, id)) = self.deadlines.pop_due(now) {
            let Some(room) = self.rooms.get_mut(&code) else { continue };
            if !matches!(room.members.get(&id).map(|m| &m.link), Some(Link::Away { .. })) {
                continue;
            }
            room.members.remove(&id);
            self.log.line(format_args!("{code}: #{id} expired"));
            if room.members.is_empty() {
                self.rooms.remove(&code);
                self.log.line(format_args!("room {code} closed"));
            }
        }
    }

    /// How many away identities expiry has looked at so far (the work it did, for tests).
    pub fn expiry_work(&self) -> u64 {
        self.deadlines.examined()
    }

    /// Whether a room with this code is open.
    pub fn has_room(&self, code: &RoomCode) -> bool {
        self.rooms.contains_key(code)
    }

    /// How many rooms are open.
    pub fn room_count(&self) -> usize {
        self.rooms.len()
    }
}

impl Room {
    /// Seats a new participant, sends it its `Welcome` and tells the others.
    fn admit(
        &mut self,
        conn: &Conn,
        role: Role,
        name: &str,
        code: &RoomCode,
        limits: &RelayLimits,
    ) -> Peer {
        self.last_id += 1;
        let id = self.last_id;
        let mut name = clean_name(name);
        if name.is_empty() {
            name = format!("{role} {id}");
        }
        let peer = Peer { id, role, name };
        let token = ResumeToken::random();
        self.welcome(conn, &peer, &token, code, limits);
        self.announce(PresenceEvent::Joined, &peer);
        self.members
            .insert(id, Member { peer: peer.clone(), token, link: Link::Connected(conn.clone()) });
        peer
    }

    /// Gives identity `id` to `conn`, taking it from an older connection if it still has it.
    /// Returns when it went away, if it was away.
    fn resume(
        &mut self,
        conn: &Conn,
        id: ParticipantId,
        code: &RoomCode,
        limits: &RelayLimits,
        log: &Log,
    ) -> Option<Duration> {
        let member = self.members.get_mut(&id)?;
        let previous = std::mem::replace(&mut member.link, Link::Connected(conn.clone()));
        let (peer, token) = (member.peer.clone(), member.token.clone());
        let away_since = match previous {
            Link::Connected(old) => {
                old.outbox.close(CloseReason::superseded());
                self.announce_except(id, PresenceEvent::Left, &peer);
                log.line(format_args!("{code}: #{id} taken over by a new connection"));
                None
            }
            Link::Away { since } => {
                log.line(format_args!("{code}: #{id} rejoined"));
                Some(since)
            }
        };
        self.welcome(conn, &peer, &token, code, limits);
        self.announce_except(id, PresenceEvent::Rejoined, &peer);
        away_since
    }

    fn welcome(
        &self,
        conn: &Conn,
        you: &Peer,
        token: &ResumeToken,
        code: &RoomCode,
        limits: &RelayLimits,
    ) {
        let peers = self
            .members
            .values()
            .filter(|m| m.peer.id != you.id && matches!(m.link, Link::Connected(_)))
            .map(|m| m.peer.clone())
            .collect();
        let welcome = RelayFrame::Welcome {
            v: WIRE_VERSION,
            room: code.to_string(),
            you: you.clone(),
            resume: token.as_str().to_owned(),
            peers,
            limits: limits.announced(),
        };
        let _ = conn.outbox.push(relay_frame_text(&welcome));
    }

    /// Tells every connected member except `peer` itself.
    fn announce(&self, event: PresenceEvent, peer: &Peer) {
        self.announce_except(peer.id, event, peer);
    }

    fn announce_except(&self, except: ParticipantId, event: PresenceEvent, peer: &Peer) {
        let frame = RelayFrame::Presence { v: WIRE_VERSION, event, peer: peer.clone() };
        self.broadcast_except(except, &relay_frame_text(&frame));
    }

    fn broadcast_except(&self, except: ParticipantId, frame: &Utf8Bytes) {
        for (id, member) in &self.members {
            if let (false, Link::Connected(conn)) = (*id == except, &member.link) {
                let _ = conn.outbox.push(frame.clone());
            }
        }
    }

    fn connection_of(&self, id: ParticipantId) -> Option<&Conn> {
        match &self.members.get(&id)?.link {
            Link::Connected(conn) => Some(conn),
            Link::Away { .. } => None,
        }
    }

    fn holder_of(&self, token: &str) -> Option<ParticipantId> {
        self.members.values().find(|m| m.token.matches(token)).map(|m| m.peer.id)
    }
}

#[cfg(test)]
mod tests;
