/*!
The host side: rooms opened here, and the participants other relays seat in them.

Each hosted room has a subscription to its subject and one task that applies its operations in
arrival order against the registry. A participant connected to another relay is a [`Conn`] here
like any other; its outbox is drained by a forwarder that publishes each frame to that relay, so
the registry routes to it without knowing where it is.
*/

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_nats::{RequestErrorKind, Subscriber};
use axum::extract::ws::Utf8Bytes;
use bytes::Bytes;
use capelab_wire::Role;
use futures_util::StreamExt as _;
use tokio::task::JoinHandle;

use super::message::{JoinAnswer, RelayId, ToEdge, ToHost, decode, encode};
use super::nats::Nats;
use super::subject;
use crate::error::Refusal;
use crate::frame::relay_frame_text;
use crate::outbox::{CloseReason, Outbox};
use crate::registry::{Conn, ConnId, JoinRequest, Seat};
use crate::room_code::RoomCode;
use crate::server::Shared;

/// Codes drawn before giving up on opening a room (each clash is ~1e-9 likely).
const CLAIM_TRIES: usize = 8;
/// How long a probe waits for a relay that is subscribed to the code but has not answered.
const PROBE_WAIT: Duration = Duration::from_secs(1);
/// How often a hosted room's task checks whether the room has closed, to free its subject.
const ROOM_CHECK: Duration = Duration::from_secs(1);

/// Participants of other relays seated in rooms hosted here, by (their relay, their connection).
#[derive(Default)]
pub struct Host {
    remotes: Mutex<HashMap<(RelayId, ConnId), Remote>>,
}

struct Remote {
    conn: Conn,
    seat: Seat,
    forwarder: JoinHandle<()>,
}

/// Whether the room `typed` names is hosted by this relay.
pub fn hosts(shared: &Shared, typed: &str) -> bool {
    RoomCode::parse(typed).is_some_and(|code| shared.registry().has_room(&code))
}

/// Claims a code no relay on the broker has, opens the room here and starts serving it.
pub async fn create(
    nats: &Arc<Nats>,
    shared: &Arc<Shared>,
    conn: &Conn,
    name: &str,
    now: Duration,
) -> Result<Seat, Refusal> {
    for _ in 0..CLAIM_TRIES {
        nats.check_up()?;
        nats.check_settled()?;
        let code = loop {
            let candidate = RoomCode::random();
            if !shared.registry().has_room(&candidate) {
                break candidate;
            }
        };
        // Subscribed (and known to the server) before asking, so a relay claiming the same code
        // at the same moment hears this one, as this one hears it.
        let subject = subject::room(&code);
        let subscription = nats.client.subscribe(subject.clone()).await.map_err(|_| nats.down())?;
        nats.client.flush().await.map_err(|_| nats.down())?;
        let probe = async_nats::Request::new()
            .payload(encode(&ToHost::Probe, b""))
            .timeout(Some(PROBE_WAIT));
        match nats.client.send_request(subject, probe).await {
            Err(e) if e.kind() == RequestErrorKind::NoResponders => {}
            // Another relay has it, or is claiming it at this moment (and answers only once it
            // has opened it): draw again.
            Ok(_) => continue,
            Err(e) if e.kind() == RequestErrorKind::TimedOut => continue,
            Err(_) => return Err(nats.down()),
        }
        let Some(seat) = shared.registry().create_as(conn, name, code.clone(), now) else {
            continue;
        };
        tokio::spawn(serve_room(nats.clone(), shared.clone(), code, subscription));
        return Ok(seat);
    }
    Err(nats.down())
}

/// Applies the room's operations in order until the room closes; then frees its subject.
async fn serve_room(nats: Arc<Nats>, shared: Arc<Shared>, code: RoomCode, mut ops: Subscriber) {
    let mut check = tokio::time::interval(ROOM_CHECK);
    loop {
        tokio::select! {
            message = ops.next() => match message {
                Some(message) => apply(&nats, &shared, &code, message).await,
                None => return,
            },
            _ = check.tick() => {
                if !shared.registry().has_room(&code) {
                    return;
                }
            }
        }
    }
}

async fn apply(nats: &Arc<Nats>, shared: &Shared, code: &RoomCode, message: async_nats::Message) {
    // Messages from a relay of another version are skipped, not guessed at.
    let Some((op, body)) = decode::<ToHost>(&message.payload) else { return };
    let now = shared.now();
    let answer = match op {
        ToHost::Probe => Some(Bytes::from_static(b"taken")),
        ToHost::Join { relay, conn, role, name, resume } => {
            let request = Request { room: code, role, name: &name, resume: resume.as_deref() };
            let answer = nats.host.join(nats, shared, relay, conn, request, now);
            Some(serde_json::to_vec(&answer).expect("answers serialise").into())
        }
        ToHost::Send { relay, conn, seat, to } => {
            let Some(remote) = nats.host.conn(&relay, conn) else { return };
            let Ok(envelope) = Utf8Bytes::try_from(body) else { return };
            let seat = Seat { room: code.clone(), id: seat };
            if let Err(refusal) = shared.registry().route(&remote, &seat, to, envelope, now) {
                let _ = remote.outbox.push_refusal(relay_frame_text(&refusal.to_frame()));
            }
            None
        }
        ToHost::Lock { relay, conn, seat, locked } => {
            let Some(remote) = nats.host.conn(&relay, conn) else { return };
            let seat = Seat { room: code.clone(), id: seat };
            if let Err(refusal) = shared.registry().lock(&remote, &seat, locked) {
                let _ = remote.outbox.push_refusal(relay_frame_text(&refusal.to_frame()));
            }
            None
        }
        ToHost::Left { relay, conn } => {
            nats.host.left(shared, &relay, conn, now);
            None
        }
        ToHost::Alive => None,
    };
    if let (Some(answer), Some(reply)) = (answer, message.reply) {
        let _ = nats.client.publish(reply, answer).await;
    }
}

/// A remote `Join`, for [`Host::join`].
struct Request<'a> {
    room: &'a RoomCode,
    role: Role,
    name: &'a str,
    resume: Option<&'a str>,
}

impl Host {
    fn remotes(&self) -> MutexGuard<'_, HashMap<(RelayId, ConnId), Remote>> {
        self.remotes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn conn(&self, relay: &RelayId, conn: ConnId) -> Option<Conn> {
        self.remotes().get(&(relay.clone(), conn)).map(|r| r.conn.clone())
    }

    /// Seats connection `conn` of relay `relay` through the registry, as a local one would be.
    fn join(
        &self,
        nats: &Arc<Nats>,
        shared: &Shared,
        relay: RelayId,
        conn: ConnId,
        request: Request<'_>,
        now: Duration,
    ) -> JoinAnswer {
        let limits = &shared.config.limits;
        let local = Conn {
            id: shared.next_conn_id(),
            outbox: Outbox::with_budget(limits.max_queue_bytes, shared.queues.clone()),
        };
        let join = JoinRequest {
            room: request.room.as_str(),
            role: request.role,
            name: request.name,
            resume: request.resume,
        };
        let seated = shared.registry().join(&local, join, now);
        match seated {
            Ok(seat) => {
                let id = seat.id;
                let forwarder =
                    tokio::spawn(forward(nats.clone(), relay.clone(), conn, local.outbox.clone()));
                let remote = Remote { conn: local, seat, forwarder };
                if let Some(old) = self.remotes().insert((relay, conn), remote) {
                    old.forwarder.abort();
                }
                JoinAnswer::Seated { id }
            }
            Err(refusal) => {
                JoinAnswer::Refused { code: refusal.code(), message: refusal.to_string() }
            }
        }
    }

    /// The remote connection's socket is gone: its seat becomes away, as a local one would.
    fn left(&self, shared: &Shared, relay: &RelayId, conn: ConnId, now: Duration) {
        let removed = self.remotes().remove(&(relay.clone(), conn));
        if let Some(remote) = removed {
            release(shared, remote, now);
        }
    }

    /// Relay `edge` no longer listens: all its participants here are away.
    pub fn edge_lost(&self, shared: &Shared, edge: &str, now: Duration) {
        let gone: Vec<Remote> = {
            let mut remotes = self.remotes();
            let keys: Vec<_> = remotes.keys().filter(|(r, _)| r == edge).cloned().collect();
            keys.into_iter().filter_map(|k| remotes.remove(&k)).collect()
        };
        if !gone.is_empty() {
            shared.log.line(format_args!(
                "relay {edge} stopped answering: {} of its seats here are away",
                gone.len()
            ));
        }
        for remote in gone {
            release(shared, remote, now);
        }
    }

    /// The broker went away: every remote seat here becomes away (resumable). Returns how many.
    pub fn drop_all(&self, shared: &Shared, now: Duration) -> usize {
        let all: Vec<Remote> = self.remotes().drain().map(|(_, r)| r).collect();
        let n = all.len();
        for remote in all {
            release(shared, remote, now);
        }
        n
    }

    /// Shutdown: each remote seat's relay is told to close it, as a local socket would be.
    pub async fn close_all_for_shutdown(&self) {
        let all: Vec<Remote> = self.remotes().drain().map(|(_, r)| r).collect();
        for remote in &all {
            remote.conn.outbox.close(CloseReason::shutdown());
        }
        for remote in all {
            let _ = tokio::time::timeout(Duration::from_secs(1), remote.forwarder).await;
        }
    }

    /// An `Alive` to every relay with participants here.
    pub async fn heartbeat(&self, nats: &Nats) {
        let edges: BTreeSet<RelayId> = self.remotes().keys().map(|(r, _)| r.clone()).collect();
        for edge in edges {
            let _ = nats
                .client
                .publish_with_reply(
                    subject::relay(&edge),
                    subject::lost(&nats.relay, &edge),
                    encode(&ToEdge::Alive, b""),
                )
                .await;
        }
    }
}

/// Stops forwarding to a remote seat and marks it away in the registry.
fn release(shared: &Shared, remote: Remote, now: Duration) {
    remote.forwarder.abort();
    shared.registry().disconnect(remote.conn.id, &remote.seat, now);
    remote.conn.outbox.close(CloseReason::normal());
}

/// Drains a remote participant's outbox into the broker, to connection `conn` of relay `edge`;
/// a close of the outbox (takeover, fell behind, shutdown) is passed on and ends it.
async fn forward(nats: Arc<Nats>, edge: RelayId, conn: ConnId, outbox: Outbox) {
    let to = subject::relay(&edge);
    let lost = subject::lost(&nats.relay, &edge);
    loop {
        let (header, frame) = tokio::select! {
            biased;
            reason = outbox.closed() => {
                let close = ToEdge::Close { conn, code: reason.code, reason: reason.reason };
                let _ = nats.client.publish_with_reply(to, lost, encode(&close, b"")).await;
                return;
            }
            frame = outbox.next() => (ToEdge::Frame { conn }, frame),
        };
        let message = encode(&header, frame.as_bytes());
        if nats.client.publish_with_reply(to.clone(), lost.clone(), message).await.is_err() {
            return;
        }
    }
}
