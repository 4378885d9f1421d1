/*!
The edge side: this relay's connections seated in rooms that other relays host.

A join asks the host through the broker and waits for its answer; after that the connection's
frames are published to the room's subject in the order they arrive, and what the host sends
back (`ToEdge`) goes into the connection's own outbox, so everything after the `Join` travels the
same way a local room's frames do: one ordered, bounded queue per connection.
*/

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_nats::{StatusCode, Subscriber};
use axum::extract::ws::Utf8Bytes;
use capelab_wire::To;

use super::message::{JoinAnswer, ToEdge, ToHost, decode, encode};
use super::nats::{Nats, next_of};
use super::subject::{self, Notice};
use crate::error::Refusal;
use crate::frame::relay_frame_text;
use crate::outbox::{CloseReason, Outbox};
use crate::registry::{Conn, ConnId, JoinRequest, Seat};
use crate::room_code::{self, RoomCode};
use crate::server::Shared;

/// This relay's connections seated in rooms hosted elsewhere.
#[derive(Default)]
pub struct Edge {
    seated: Mutex<HashMap<ConnId, Visitor>>,
}

struct Visitor {
    room: RoomCode,
    outbox: Outbox,
}

impl Edge {
    fn seated(&self) -> MutexGuard<'_, HashMap<ConnId, Visitor>> {
        self.seated.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The broker went away: every visitor gets an `Error` frame naming it after what it was
    /// already sent, then its connection closes. Returns how many.
    pub fn cut_all(&self, url: &str) -> usize {
        let frame = relay_frame_text(&Refusal::BrokerLost { url: url.to_owned() }.to_frame());
        let cut: Vec<Visitor> = self.seated().drain().map(|(_, v)| v).collect();
        for visitor in &cut {
            visitor.outbox.finish(frame.clone(), CloseReason::broker_lost());
        }
        cut.len()
    }

    /// The relay hosting `room` is gone: its visitors here are told, and closed.
    fn host_gone(&self, room: &RoomCode) {
        let frame = relay_frame_text(&Refusal::HostGone { room: room.to_string() }.to_frame());
        let mut seated = self.seated();
        let gone: Vec<ConnId> =
            seated.iter().filter(|(_, v)| v.room == *room).map(|(&id, _)| id).collect();
        for id in gone {
            if let Some(visitor) = seated.remove(&id) {
                visitor.outbox.finish(frame.clone(), CloseReason::host_gone());
            }
        }
    }

    /// An `Alive` to the host of every room a connection here is seated in.
    pub async fn heartbeat(&self, nats: &Nats) {
        let rooms: BTreeSet<RoomCode> = self.seated().values().map(|v| v.room.clone()).collect();
        for room in rooms {
            let _ = nats
                .client
                .publish_with_reply(
                    subject::room(&room),
                    subject::gone(&nats.relay, &room),
                    encode(&ToHost::Alive, b""),
                )
                .await;
        }
    }
}

/// Asks the relay hosting `request.room` for a seat for `conn`.
pub async fn join(nats: &Nats, conn: &Conn, request: JoinRequest<'_>) -> Result<Seat, Refusal> {
    let unknown = || Refusal::UnknownRoom { room: room_code::echo(request.room) };
    let code = RoomCode::parse(request.room).ok_or_else(unknown)?;
    nats.check_up()?;
    // Listed before asking: the host's `Welcome` may arrive before its answer.
    nats.edge.seated().insert(conn.id, Visitor { room: code.clone(), outbox: conn.outbox.clone() });
    let ask = ToHost::Join {
        relay: nats.relay.clone(),
        conn: conn.id,
        role: request.role,
        name: request.name.to_owned(),
        resume: request.resume.map(str::to_owned),
    };
    let answer = nats.client.request(subject::room(&code), encode(&ask, b"")).await;
    let seated = match answer {
        Ok(message) => match serde_json::from_slice::<JoinAnswer>(&message.payload) {
            Ok(JoinAnswer::Seated { id }) => Ok(Seat { room: code, id }),
            Ok(JoinAnswer::Refused { code, message }) => Err(Refusal::Forwarded { code, message }),
            Err(_) => Err(nats.down()),
        },
        Err(e) if e.kind() == async_nats::RequestErrorKind::NoResponders => {
            nats.check_settled().and(Err(unknown()))
        }
        Err(_) => Err(nats.down()),
    };
    if seated.is_err() {
        nats.edge.seated().remove(&conn.id);
    }
    seated
}

impl Nats {
    /// Passes an envelope (its frame text) from `conn`, seated as `seat`, to the room's host.
    pub async fn send(
        &self,
        conn: &Conn,
        seat: &Seat,
        to: To,
        envelope: Utf8Bytes,
    ) -> Result<(), Refusal> {
        let op = ToHost::Send { relay: self.relay.clone(), conn: conn.id, seat: seat.id, to };
        self.to_host(seat, &op, envelope.as_bytes()).await
    }

    pub async fn lock(&self, conn: &Conn, seat: &Seat, locked: bool) -> Result<(), Refusal> {
        let op = ToHost::Lock { relay: self.relay.clone(), conn: conn.id, seat: seat.id, locked };
        self.to_host(seat, &op, b"").await
    }

    /// `conn`'s socket is gone: the host marks the seat away (resumable). Sent even while the
    /// broker is away (the client holds it until it is back): a host that never noticed the
    /// outage would otherwise keep a seat nobody reads.
    pub async fn left(&self, conn: ConnId, seat: &Seat) {
        self.edge.seated().remove(&conn);
        let op = ToHost::Left { relay: self.relay.clone(), conn };
        let _ = self.publish_to_host(seat, &op, b"").await;
    }

    async fn to_host(&self, seat: &Seat, op: &ToHost, body: &[u8]) -> Result<(), Refusal> {
        self.check_up()?;
        self.publish_to_host(seat, op, body).await
    }

    async fn publish_to_host(&self, seat: &Seat, op: &ToHost, body: &[u8]) -> Result<(), Refusal> {
        self.client
            .publish_with_reply(
                subject::room(&seat.room),
                subject::gone(&self.relay, &seat.room),
                encode(op, body),
            )
            .await
            .map_err(|_| self.down())
    }
}

/// Delivers what hosts send to this relay's connections, and acts on "no responders" notices.
pub async fn serve_inbox(
    nats: Arc<Nats>,
    shared: Arc<Shared>,
    mut inbox: Subscriber,
    mut replies: Subscriber,
) {
    while let Some(message) = next_of(&mut inbox, &mut replies).await {
        if message.status == Some(StatusCode::NO_RESPONDERS) {
            match subject::notice(&nats.relay, message.subject.as_str()) {
                Some(Notice::RoomGone(room)) => nats.edge.host_gone(&room),
                Some(Notice::EdgeLost(edge)) => nats.host.edge_lost(&shared, &edge, shared.now()),
                None => {}
            }
            continue;
        }
        // Messages from a relay of another version are skipped, not guessed at.
        let Some((header, body)) = decode::<ToEdge>(&message.payload) else { continue };
        let outbox = |conn| nats.edge.seated().get(&conn).map(|v| v.outbox.clone());
        match header {
            ToEdge::Frame { conn } => {
                if let (Some(outbox), Ok(text)) = (outbox(conn), Utf8Bytes::try_from(body)) {
                    // A full outbox closes its own connection (fell behind), as for local rooms.
                    let _ = outbox.push(text);
                }
            }
            ToEdge::Close { conn, code, reason } => {
                if let Some(outbox) = outbox(conn) {
                    outbox.close(CloseReason::new(code, &reason));
                }
            }
            ToEdge::Alive => {}
        }
    }
}
