/*!
One websocket connection: reads client frames, applies the limits, asks the registry to act,
and writes whatever the registry queued for it.

Each connection runs two tasks. The reader (this task) handles frames one at a time, in order:
message rate, size, byte budget, JSON and version, then the registry. The writer drains the
connection's [`Outbox`] into the socket and pings every `Config::ping_interval`, so a receiver
that reads slowly only ever slows itself down.

Every refusal goes back to the sender alone as an `Error` frame, and the connection stays open.
A connection closes only when:
- the client closes it or its socket fails;
- its outbox overflows or the relay's queues are full (1008 / 1001), the relay shuts down
  (1001), another connection resumes its identity (4001), or it sends nothing, not even a pong,
  for three ping intervals (1001);
- it abuses the relay (1008): it leaves 64 KiB of refusals unread, keeps sending after its byte
  budget ran out (refused bytes past `byte_burst`), or keeps guessing room codes;
- it breaks the websocket protocol (1002), sends a text frame that is not UTF-8 (1007), or a
  message past the websocket's hard size cap (1009); the stream cannot be read past these.

Before it has a seat, a connection's outbox holds only [`MIN_QUEUE_BYTES`]: enough for its
refusals and a `Welcome`, not for a pile of replies it never reads.

After asking for a close, the reader keeps reading (and ignoring) frames for a moment so the
client receives the close frame instead of a connection reset.
*/

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use capelab_wire::{ClientFrame, Envelope, RelayFrame, WIRE_VERSION};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::time::{MissedTickBehavior, timeout};

use crate::broker::{self, Nats};
use crate::config::MIN_QUEUE_BYTES;
use crate::error::Refusal;
use crate::frame::{parse_client_frame, relay_frame_text};
use crate::guesses::{self, CUT_OFF_AFTER, REFILL_PERIOD};
use crate::limits::{TokenBucket, check_kind, check_name};
use crate::outbox::{CloseReason, Outbox, close_code};
use crate::registry::{Conn, JoinRequest, Seat};
use crate::server::{OpenConnection, Shared};

/// How long a closing connection is given to finish the close handshake.
const LINGER: Duration = Duration::from_secs(5);
/// A connection silent for this many ping intervals is given up on.
const SILENT_INTERVALS: u32 = 3;

/// Runs one upgraded websocket until it closes, then tells the room. `open` counts it among the
/// relay's connections until it is gone.
pub(crate) async fn run(
    socket: WebSocket,
    shared: Arc<Shared>,
    address: IpAddr,
    open: Option<OpenConnection>,
) {
    let outbox = Outbox::with_budget(MIN_QUEUE_BYTES, shared.queues.clone());
    let conn = Conn { id: shared.next_conn_id(), outbox };
    let (sink, mut stream) = socket.split();
    let mut writer = tokio::spawn(write(sink, conn.outbox.clone(), shared.config.ping_interval));

    let now = shared.now();
    let limits = &shared.config.limits;
    let mut reader = Reader {
        shared: &shared,
        conn: &conn,
        seat: None,
        elsewhere: None,
        address,
        messages: limits.token_bucket(now),
        bytes: limits.sender_bytes(now),
        refused_bytes: 0,
        codes: guesses::connection_bucket(now),
        code_refusals: 0,
    };
    let ended = reader.read(&mut stream).await;

    // The others hear `Left` now, not after the close handshake below.
    match (&reader.seat, &reader.elsewhere) {
        (Some(seat), Some(nats)) => nats.left(conn.id, seat).await,
        (Some(seat), None) => shared.registry().disconnect(conn.id, seat, shared.now()),
        (None, _) => {}
    }
    // Unusual closes are worth a line; ordinary ones and the shutdown (said once) are not.
    if let Some(reason) = conn.outbox.close_reason()
        && reason.code != close_code::NORMAL
        && reason != CloseReason::shutdown()
    {
        let who = match &reader.seat {
            Some(seat) => format!("{}: #{}", seat.room, seat.id),
            None => format!("connection {}", conn.id),
        };
        shared
            .log
            .line(format_args!("{who} closed by the relay ({}: {})", reason.code, reason.reason));
    }
    conn.outbox.close(CloseReason::normal());
    if ended == Ended::ClosingByRelay {
        linger(&mut stream).await;
    }
    if timeout(LINGER, &mut writer).await.is_err() {
        writer.abort();
    }
    drop(open);
}

/// How the reading loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    /// The client closed, or the socket failed: nothing more to read.
    PeerGone,
    /// The relay asked for a close; the client still has to answer it.
    ClosingByRelay,
}

/// The reading half of a connection and what it knows about itself.
struct Reader<'a> {
    shared: &'a Arc<Shared>,
    conn: &'a Conn,
    seat: Option<Seat>,
    /// The broker, when the seat's room is hosted by another relay.
    elsewhere: Option<Arc<Nats>>,
    address: IpAddr,
    /// One token per frame.
    messages: TokenBucket,
    /// One token per byte.
    bytes: TokenBucket,
    /// Bytes refused for the byte budget or the size limit: past `byte_burst`, a flood.
    refused_bytes: u64,
    /// Wrong room codes this connection may still try.
    codes: TokenBucket,
    /// Joins refused for guessing.
    code_refusals: u32,
}

impl Reader<'_> {
    async fn read(&mut self, stream: &mut SplitStream<WebSocket>) -> Ended {
        let silent_limit = self.shared.config.ping_interval * SILENT_INTERVALS;
        loop {
            let next = tokio::select! {
                biased;
                _ = self.conn.outbox.closed() => return Ended::ClosingByRelay,
                _ = self.shared.shutting_down() => {
                    self.conn.outbox.close(CloseReason::shutdown());
                    continue;
                }
                next = timeout(silent_limit, stream.next()) => next,
            };
            match next {
                Err(_silent) => self.conn.outbox.close(CloseReason::silent(silent_limit)),
                Ok(None) => return Ended::PeerGone,
                Ok(Some(Err(error))) => {
                    let cap = self.shared.config.limits.socket_message_cap();
                    if let Some(reason) = close_for(error, cap) {
                        self.conn.outbox.close(reason);
                    }
                    // The stream cannot be read past a failed frame: no lingering.
                    return Ended::PeerGone;
                }
                Ok(Some(Ok(message))) => self.on_message(message).await,
            }
        }
    }

    async fn on_message(&mut self, message: Message) {
        let (size, text) = match message {
            Message::Text(text) => (text.len(), Some(text)),
            Message::Binary(bytes) => (bytes.len(), None),
            // The websocket library answers pings and closes; these only show the peer is alive.
            Message::Ping(_) | Message::Pong(_) | Message::Close(_) => return,
        };
        let now = self.shared.now();
        let outcome = match (self.admit(size, now), text) {
            (Err(refusal), _) => Err(refusal),
            (Ok(()), Some(text)) => self.on_text(&text, now).await,
            (Ok(()), None) => Err(Refusal::Binary),
        };
        if let Err(refusal) = outcome {
            let _ = self.conn.outbox.push_refusal(relay_frame_text(&refusal.to_frame()));
        }
    }

    /// The message rate, the size limit and the byte budget, before the frame is even parsed.
    fn admit(&mut self, size: usize, now: Duration) -> Result<(), Refusal> {
        let limits = &self.shared.config.limits;
        if !self.messages.try_take(now) {
            return Err(Refusal::RateLimited {
                per_second: limits.messages_per_second,
                burst: limits.burst,
            });
        }
        if size > limits.max_frame_bytes {
            self.refuse_bytes(size);
            return Err(Refusal::Oversized { size, limit: limits.max_frame_bytes });
        }
        if !self.bytes.try_take_n(now, size as u64) {
            self.refuse_bytes(size);
            return Err(Refusal::ByteRateLimited {
                who: "this connection",
                size,
                per_second: limits.bytes_per_second.into(),
                burst: limits.byte_burst.into(),
            });
        }
        Ok(())
    }

    /// Counts bytes sent over the budget; a sender that keeps at it is cut off, its room spared.
    fn refuse_bytes(&mut self, size: usize) {
        let limits = &self.shared.config.limits;
        self.refused_bytes = self.refused_bytes.saturating_add(size as u64);
        if self.refused_bytes > u64::from(limits.byte_burst) {
            self.conn.outbox.close(CloseReason::flooding(limits.bytes_per_second));
        }
    }

    /// Refuses every join while this connection or its address has no wrong code left to try.
    fn check_may_try_code(&mut self, now: Duration) -> Result<(), Refusal> {
        let who = if !self.codes.has(now, 1) {
            "this connection"
        } else if !self.shared.guesses.may_try(self.address, now) {
            "this address"
        } else {
            return Ok(());
        };
        self.code_refusals += 1;
        if self.code_refusals >= CUT_OFF_AFTER {
            self.conn.outbox.close(CloseReason::guessing());
        }
        Err(Refusal::TooManyWrongCodes { who, wait_secs: REFILL_PERIOD.as_secs() })
    }

    async fn on_text(&mut self, text: &str, now: Duration) -> Result<(), Refusal> {
        match parse_client_frame(text)? {
            ClientFrame::Create { name, .. } => {
                self.check_not_seated()?;
                check_name(&name)?;
                self.raise_queue();
                let created = broker::create(self.shared, self.conn, &name, now).await;
                self.take_seat(created.map(|seat| (seat, None)))?;
            }
            ClientFrame::Join { room, role, name, resume, .. } => {
                self.check_not_seated()?;
                check_name(&name)?;
                self.check_may_try_code(now)?;
                let request =
                    JoinRequest { room: &room, role, name: &name, resume: resume.as_deref() };
                self.raise_queue();
                let joined = broker::join(self.shared, self.conn, request, now).await;
                if let Err(Refusal::UnknownRoom { .. }) = joined {
                    self.codes.try_take(now);
                    self.shared.guesses.record_wrong(self.address, now);
                }
                self.take_seat(joined)?;
            }
            ClientFrame::Send { to, kind, payload, .. } => {
                let seat = self.seat.as_ref().ok_or(Refusal::NotInRoom)?;
                check_kind(&kind)?;
                // Serialised before taking the lock: payloads can be megabytes.
                let envelope = relay_frame_text(&RelayFrame::Envelope(Envelope {
                    v: WIRE_VERSION,
                    room: seat.room.to_string(),
                    from: seat.id,
                    to,
                    kind,
                    payload,
                }));
                match &self.elsewhere {
                    Some(nats) => nats.send(self.conn, seat, to, envelope).await?,
                    None => self.shared.registry().route(self.conn, seat, to, envelope, now)?,
                }
            }
            ClientFrame::Lock { locked, .. } => {
                let seat = self.seat.as_ref().ok_or(Refusal::NotInRoom)?;
                match &self.elsewhere {
                    Some(nats) => nats.lock(self.conn, seat, locked).await?,
                    None => self.shared.registry().lock(self.conn, seat, locked)?,
                }
            }
        }
        Ok(())
    }

    /// A connection about to take a seat gets the full outbox a seated connection has (raised
    /// first: others may write to it as soon as the registry lets go).
    fn raise_queue(&self) {
        self.conn.outbox.set_limit(self.shared.config.limits.max_queue_bytes);
    }

    /// Keeps the seat (and the broker, if its room is hosted elsewhere), or lowers the outbox
    /// back to an unseated connection's.
    fn take_seat(
        &mut self,
        seated: Result<(Seat, Option<Arc<Nats>>), Refusal>,
    ) -> Result<(), Refusal> {
        match seated {
            Ok((seat, elsewhere)) => {
                self.seat = Some(seat);
                self.elsewhere = elsewhere;
                Ok(())
            }
            Err(refusal) => {
                self.conn.outbox.set_limit(MIN_QUEUE_BYTES);
                Err(refusal)
            }
        }
    }

    fn check_not_seated(&self) -> Result<(), Refusal> {
        match &self.seat {
            Some(seat) => Err(Refusal::AlreadyInRoom { room: seat.room.to_string(), id: seat.id }),
            None => Ok(()),
        }
    }
}

/// Writes queued frames and pings until the outbox closes, then sends the close frame.
async fn write(mut sink: SplitSink<WebSocket, Message>, outbox: Outbox, ping_every: Duration) {
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + ping_every, ping_every);
    ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        // A finished outbox (`Outbox::finish`) closes once its last frame is written.
        if let Some(reason) = outbox.finished() {
            outbox.close(reason);
        }
        let message = tokio::select! {
            biased;
            reason = outbox.closed() => {
                let frame = CloseFrame { code: reason.code, reason: Utf8Bytes::from(reason.reason) };
                let _ = timeout(LINGER, sink.send(Message::Close(Some(frame)))).await;
                return;
            }
            frame = outbox.next() => Message::Text(frame),
            _ = ping.tick() => Message::Ping(Bytes::new()),
        };
        // A send blocked on a reader that does not read must not delay the close frame.
        let sent = tokio::select! {
            biased;
            _ = outbox.closed() => continue,
            sent = sink.send(message) => sent,
        };
        if sent.is_err() {
            // The socket is gone; the reader will see that too.
            outbox.close(CloseReason::normal());
            return;
        }
    }
}

/// Reads and drops frames until the client finishes closing, for at most [`LINGER`].
async fn linger(stream: &mut SplitStream<WebSocket>) {
    let _ = timeout(LINGER, async { while let Some(Ok(_)) = stream.next().await {} }).await;
}

/// The close a failed read calls for: 1009 past the size cap, 1002 for a protocol violation,
/// 1007 for a text frame that is not UTF-8; none if the socket is simply gone.
fn close_for(error: axum::Error, cap: usize) -> Option<CloseReason> {
    // axum wraps the websocket library's error; it must be the same tungstenite axum uses.
    match error.into_inner().downcast_ref::<tungstenite::Error>()? {
        tungstenite::Error::Capacity(_) => Some(CloseReason::too_big(cap)),
        tungstenite::Error::Protocol(violation) => {
            Some(CloseReason::protocol_error(&violation.to_string()))
        }
        tungstenite::Error::Utf8(_) => Some(CloseReason::invalid_text()),
        _ => None,
    }
}
