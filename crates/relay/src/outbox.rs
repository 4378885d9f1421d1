/*!
Each connection's outbound queue: bounded, and able to close the connection with a reason.

The registry routes by pushing already-serialised frames into the recipients' [`Outbox`]es and
never waits on a socket, so a slow receiver cannot hold up anybody else. Each connection's writer
task drains its own outbox into its websocket.

The queue is bounded in bytes ([`crate::RelayLimits::max_queue_bytes`]). When a push would pass
the bound, the outbox does not drop that one message (which would silently corrupt a protocol run
in the middle of a stream): it discards the backlog and asks for the whole connection to be closed
with [`CloseReason::fell_behind`], so the client knows to reconnect and resume. Once closed, an
outbox accepts nothing more, and the writer sends the close frame ahead of anything still queued.
*/

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::extract::ws::Utf8Bytes;
use tokio::sync::{Notify, watch};

/// Websocket close codes the relay uses.
pub mod close_code {
    /// The client closed and the relay agrees.
    pub const NORMAL: u16 = 1000;
    /// The relay is shutting down, or the peer stopped answering pings.
    pub const GOING_AWAY: u16 = 1001;
    /// The connection fell too far behind reading its messages.
    pub const POLICY: u16 = 1008;
    /// A message past the relay's hard size cap.
    pub const TOO_BIG: u16 = 1009;
    /// Another connection resumed this identity (the client should not reconnect on its own).
    pub const SUPERSEDED: u16 = 4001;
}

/// Per-message bookkeeping counted against the queue bound on top of the text itself.
const PER_FRAME_OVERHEAD: usize = 64;
/// The websocket protocol allows at most this many bytes of close reason.
const MAX_CLOSE_REASON_BYTES: usize = 123;

/// Why the relay is closing a connection: a websocket close code and a short reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CloseReason {
    pub code: u16,
    pub reason: String,
}

impl CloseReason {
    /// A close frame; the reason is cut at a character boundary to the protocol's 123 bytes.
    pub fn new(code: u16, reason: &str) -> Self {
        let mut end = reason.len().min(MAX_CLOSE_REASON_BYTES);
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        CloseReason { code, reason: reason[..end].to_owned() }
    }

    pub fn normal() -> Self {
        Self::new(close_code::NORMAL, "bye")
    }

    pub fn shutdown() -> Self {
        Self::new(close_code::GOING_AWAY, "the relay is shutting down; reconnect once it is back")
    }

    pub fn fell_behind(limit_bytes: usize) -> Self {
        Self::new(
            close_code::POLICY,
            &format!("fell behind: over {limit_bytes} bytes were waiting for this tab; reconnect"),
        )
    }

    pub fn superseded() -> Self {
        Self::new(close_code::SUPERSEDED, "this identity was resumed by another connection")
    }

    pub fn too_big(cap_bytes: usize) -> Self {
        Self::new(
            close_code::TOO_BIG,
            &format!("message over the relay's hard cap of {cap_bytes} bytes; send smaller ones"),
        )
    }

    pub fn silent(for_how_long: Duration) -> Self {
        Self::new(close_code::GOING_AWAY, &format!("no sign of life for {for_how_long:?}"))
    }
}

/// Why a push did not queue the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushError {
    /// This push passed the bound: the outbox is now closing with [`CloseReason::fell_behind`].
    Overflowed,
    /// The outbox was already closing; the frame is dropped with the rest of the connection.
    Closed,
}

/// A connection's outbound queue. Clones share the queue.
#[derive(Clone, Debug)]
pub struct Outbox {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    limit_bytes: usize,
    queue: Mutex<Queue>,
    /// Wakes the writer when a frame arrives (a stored permit covers the race with `pop`).
    ready: Notify,
    closing: watch::Sender<Option<CloseReason>>,
}

#[derive(Debug, Default)]
struct Queue {
    frames: VecDeque<Utf8Bytes>,
    bytes: usize,
}

impl Outbox {
    /// An empty outbox holding at most `limit_bytes` (text plus a small per-frame overhead).
    pub fn new(limit_bytes: usize) -> Self {
        Outbox {
            shared: Arc::new(Shared {
                limit_bytes,
                queue: Mutex::new(Queue::default()),
                ready: Notify::new(),
                closing: watch::Sender::new(None),
            }),
        }
    }

    /// Queues a frame for the writer, or closes the connection if it would pass the bound.
    pub fn push(&self, frame: Utf8Bytes) -> Result<(), PushError> {
        if self.close_reason().is_some() {
            return Err(PushError::Closed);
        }
        let cost = frame.len() + PER_FRAME_OVERHEAD;
        {
            let mut queue = self.lock();
            if queue.bytes + cost > self.shared.limit_bytes {
                drop(queue);
                self.close(CloseReason::fell_behind(self.shared.limit_bytes));
                return Err(PushError::Overflowed);
            }
            queue.bytes += cost;
            queue.frames.push_back(frame);
        }
        self.shared.ready.notify_one();
        Ok(())
    }

    /// Asks for the connection to close. The first reason wins; the backlog is discarded.
    pub fn close(&self, reason: CloseReason) {
        let first = self.shared.closing.send_if_modified(|current| {
            let first = current.is_none();
            if first {
                *current = Some(reason);
            }
            first
        });
        if first {
            let mut queue = self.lock();
            queue.frames.clear();
            queue.bytes = 0;
        }
    }

    /// Why the connection is closing, once it is.
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.shared.closing.borrow().clone()
    }

    /// Resolves once [`Outbox::close`] has been called, with its reason.
    pub async fn closed(&self) -> CloseReason {
        let mut watcher = self.shared.closing.subscribe();
        match watcher.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone().unwrap_or_else(CloseReason::normal),
            // Unreachable while `self` holds the sender; treat it as an ordinary close.
            Err(_) => CloseReason::normal(),
        }
    }

    /// The next frame to write, waiting for one if the queue is empty. Cancel-safe: a frame is
    /// only taken out of the queue when this returns it.
    pub async fn next(&self) -> Utf8Bytes {
        loop {
            if let Some(frame) = self.pop() {
                return frame;
            }
            self.shared.ready.notified().await;
        }
    }

    /// Takes the oldest queued frame, if any.
    pub fn pop(&self) -> Option<Utf8Bytes> {
        let mut queue = self.lock();
        let frame = queue.frames.pop_front()?;
        queue.bytes -= frame.len() + PER_FRAME_OVERHEAD;
        Some(frame)
    }

    /// Bytes currently counted against the bound.
    pub fn queued_bytes(&self) -> usize {
        self.lock().bytes
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic elsewhere cannot leave a `Queue` half-updated in a way that matters here.
        self.shared.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(len: usize) -> Utf8Bytes {
        "x".repeat(len).into()
    }

    #[test]
    fn frames_come_out_in_order_and_release_their_bytes() {
        let outbox = Outbox::new(10_000);
        outbox.push("a".into()).unwrap();
        outbox.push("b".into()).unwrap();
        assert_eq!(outbox.queued_bytes(), 2 * (1 + PER_FRAME_OVERHEAD));
        assert_eq!(outbox.pop().as_deref(), Some("a"));
        assert_eq!(outbox.pop().as_deref(), Some("b"));
        assert_eq!(outbox.pop(), None);
        assert_eq!(outbox.queued_bytes(), 0);
    }

    #[test]
    fn overflow_closes_the_connection_instead_of_dropping_one_message() {
        let limit = 3 * (100 + PER_FRAME_OVERHEAD);
        let outbox = Outbox::new(limit);
        for _ in 0..3 {
            outbox.push(text(100)).unwrap();
        }
        assert_eq!(outbox.push(text(1)), Err(PushError::Overflowed));
        let reason = outbox.close_reason().expect("closing");
        assert_eq!(reason.code, close_code::POLICY);
        assert!(reason.reason.contains(&limit.to_string()), "{reason:?}");
        // The backlog is gone and nothing more is accepted: no gap in the middle of a stream.
        assert_eq!(outbox.pop(), None);
        assert_eq!(outbox.push(text(1)), Err(PushError::Closed));
    }

    #[test]
    fn silence_is_reported_in_readable_units() {
        assert_eq!(CloseReason::silent(Duration::from_secs(45)).reason, "no sign of life for 45s");
        assert_eq!(
            CloseReason::silent(Duration::from_millis(750)).reason,
            "no sign of life for 750ms"
        );
    }

    #[test]
    fn the_first_close_reason_wins() {
        let outbox = Outbox::new(1000);
        outbox.close(CloseReason::shutdown());
        outbox.close(CloseReason::normal());
        assert_eq!(outbox.close_reason(), Some(CloseReason::shutdown()));
    }

    #[test]
    fn close_reasons_fit_the_protocol_limit() {
        let long = CloseReason::new(1000, &"é".repeat(100));
        assert!(long.reason.len() <= MAX_CLOSE_REASON_BYTES);
        assert_eq!(long.reason, "é".repeat(MAX_CLOSE_REASON_BYTES / 2));
        for reason in [
            CloseReason::shutdown(),
            CloseReason::fell_behind(usize::MAX),
            CloseReason::superseded(),
            CloseReason::too_big(usize::MAX),
            CloseReason::silent(Duration::MAX),
        ] {
            // The built-in reasons are short enough not to be cut.
            assert!(reason.reason.len() < MAX_CLOSE_REASON_BYTES, "{reason:?}");
        }
    }

    #[tokio::test]
    async fn next_waits_for_a_push_and_closed_resolves_on_close() {
        let outbox = Outbox::new(1000);
        let writer = {
            let outbox = outbox.clone();
            tokio::spawn(async move { outbox.next().await })
        };
        outbox.push("hello".into()).unwrap();
        assert_eq!(writer.await.unwrap().as_str(), "hello");

        let watcher = {
            let outbox = outbox.clone();
            tokio::spawn(async move { outbox.closed().await })
        };
        outbox.close(CloseReason::superseded());
        assert_eq!(watcher.await.unwrap(), CloseReason::superseded());
    }
}
