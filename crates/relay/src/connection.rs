/*!
One websocket connection: reads client frames, applies the limits, asks the registry to act,
and writes whatever the registry queued for it.

Each connection runs two tasks. The reader (this task) handles frames one at a time, in order:
token bucket, size, JSON and version, then the registry. The writer drains the connection's
[`Outbox`] into the socket and pings every `Config::ping_interval`, so a receiver that reads
slowly only ever slows itself down.

Every refusal goes back to the sender alone as an `Error` frame, and the connection stays open.
A connection closes only when:
- the client closes it or its socket fails;
- its outbox overflows (code 1008), the relay shuts down (1001), another connection resumes its
  identity (4001), or it sends nothing, not even a pong, for three ping intervals (1001);
- a message passes the websocket's hard size cap (1009; the stream cannot be read past it).

After asking for a close, the reader keeps reading (and ignoring) frames for a moment so the
client receives the close frame instead of a connection reset.
*/

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use capelab_core::wire::{ClientFrame, Envelope, RelayFrame, WIRE_VERSION};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::time::{MissedTickBehavior, timeout};

use crate::error::Refusal;
use crate::frame::{parse_client_frame, relay_frame_text};
use crate::limits::{TokenBucket, check_kind};
use crate::outbox::{CloseReason, Outbox, close_code};
use crate::registry::{Conn, JoinRequest, Seat};
use crate::server::Shared;

/// How long a closing connection is given to finish the close handshake.
const LINGER: Duration = Duration::from_secs(5);
/// A connection silent for this many ping intervals is given up on.
const SILENT_INTERVALS: u32 = 3;

/// Runs one upgraded websocket until it closes, then tells the room.
pub(crate) async fn run(socket: WebSocket, shared: Arc<Shared>) {
    let live = shared.open_connection();
    let conn = Conn { id: live.id, outbox: Outbox::new(shared.config.limits.max_queue_bytes) };
    let (sink, mut stream) = socket.split();
    let mut writer = tokio::spawn(write(sink, conn.outbox.clone(), shared.config.ping_interval));

    let bucket = shared.config.limits.token_bucket(shared.now());
    let mut reader = Reader { shared: &shared, conn: &conn, seat: None, bucket };
    let ended = reader.read(&mut stream).await;

    // The others hear `Left` now, not after the close handshake below.
    if let Some(seat) = &reader.seat {
        shared.registry().disconnect(conn.id, seat, shared.now());
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
    drop(live);
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
    shared: &'a Shared,
    conn: &'a Conn,
    seat: Option<Seat>,
    bucket: TokenBucket,
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
                    if is_over_socket_cap(error) {
                        let cap = self.shared.config.limits.socket_message_cap();
                        self.conn.outbox.close(CloseReason::too_big(cap));
                    }
                    // The stream cannot be read past a failed frame: no lingering.
                    return Ended::PeerGone;
                }
                Ok(Some(Ok(message))) => self.on_message(message),
            }
        }
    }

    fn on_message(&mut self, message: Message) {
        let text = match message {
            Message::Text(text) => Some(text),
            Message::Binary(_) => None,
            // The websocket library answers pings and closes; these only show the peer is alive.
            Message::Ping(_) | Message::Pong(_) | Message::Close(_) => return,
        };
        let now = self.shared.now();
        let outcome = if !self.bucket.try_take(now) {
            let limits = &self.shared.config.limits;
            Err(Refusal::RateLimited {
                per_second: limits.messages_per_second,
                burst: limits.burst,
            })
        } else {
            match text {
                Some(text) => self.on_text(&text, now),
                None => Err(Refusal::Binary),
            }
        };
        if let Err(refusal) = outcome {
            let _ = self.conn.outbox.push(relay_frame_text(&refusal.to_frame()));
        }
    }

    fn on_text(&mut self, text: &str, now: Duration) -> Result<(), Refusal> {
        let limit = self.shared.config.limits.max_frame_bytes;
        if text.len() > limit {
            return Err(Refusal::Oversized { size: text.len(), limit });
        }
        match parse_client_frame(text)? {
            ClientFrame::Create { name, .. } => {
                self.check_not_seated()?;
                self.seat = Some(self.shared.registry().create(self.conn, &name, now));
            }
            ClientFrame::Join { room, role, name, resume, .. } => {
                self.check_not_seated()?;
                let request =
                    JoinRequest { room: &room, role, name: &name, resume: resume.as_deref() };
                self.seat = Some(self.shared.registry().join(self.conn, request, now)?);
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
                self.shared.registry().route(self.conn, seat, to, envelope)?;
            }
        }
        Ok(())
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

/// Whether a read failed because a message passed the websocket's own size cap.
fn is_over_socket_cap(error: axum::Error) -> bool {
    // axum wraps the websocket library's error; it must be the same tungstenite axum uses.
    matches!(
        error.into_inner().downcast_ref::<tungstenite::Error>(),
        Some(tungstenite::Error::Capacity(_))
    )
}
