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
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::extract::ws::Utf8Bytes;
use tokio::sync::{Notify, watch};

/// Websocket close codes the relay uses.
pub mod close_code {
    /// The client closed and the relay agrees.
    pub const NORMAL: u16 = 1000;
    /// The relay is shutting down, the peer stopped answering pings, or the relay's queues are
    /// full.
    pub const GOING_AWAY: u16 = 1001;
    /// The peer broke the websocket protocol (e.g. an unknown opcode).
    pub const PROTOCOL_ERROR: u16 = 1002;
    /// A text frame that is not UTF-8.
    pub const INVALID_PAYLOAD: u16 = 1007;
    /// The connection fell too far behind reading, sent more than its byte budget for too long,
    /// left its refusals unread, or kept guessing room codes.
    pub const POLICY: u16 = 1008;
    /// A message past the relay's hard size cap.
    pub const TOO_BIG: u16 = 1009;
    /// The relay lost its broker: try again later (the seat is kept for the resume grace).
    pub const TRY_AGAIN_LATER: u16 = 1013;
    /// Another connection resumed this identity (the client should not reconnect on its own).
    pub const SUPERSEDED: u16 = 4001;
}

/// Per-message bookkeeping counted against the queue bound on top of the text itself: the queue
/// slot (a `Bytes` and a flag, 40 bytes, in a `VecDeque` that may be half empty), the shared
/// header `Bytes` puts in front of the text (32) and two allocator headers (16 each). The text's
/// allocation is exactly its length ([`crate::frame::relay_frame_text`] shrinks it).
pub const PER_FRAME_OVERHEAD: usize = 144;
/// Refusals a connection may leave unread before the relay stops answering it and closes it.
pub const MAX_REFUSAL_BACKLOG_BYTES: usize = 64 * 1024;
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

    pub fn ignores_refusals(limit_bytes: usize) -> Self {
        Self::new(
            close_code::POLICY,
            &format!(
                "over {limit_bytes} bytes of refusals went unread; fix the client, then reconnect"
            ),
        )
    }

    pub fn relay_full(limit_bytes: usize) -> Self {
        Self::new(
            close_code::GOING_AWAY,
            &format!(
                "the relay's queues are full ({limit_bytes} bytes for everyone); reconnect soon"
            ),
        )
    }

    pub fn flooding(bytes_per_second: u32) -> Self {
        Self::new(
            close_code::POLICY,
            &format!("cut off: kept sending over {bytes_per_second} bytes/s after being refused"),
        )
    }

    pub fn broker_lost() -> Self {
        Self::new(
            close_code::TRY_AGAIN_LATER,
            "the relay lost its broker; reconnect to take your seat back once it is back",
        )
    }

    pub fn host_gone() -> Self {
        Self::new(
            close_code::GOING_AWAY,
            "the relay hosting this room stopped, so the room has ended; ask for a new room",
        )
    }

    pub fn guessing() -> Self {
        Self::new(close_code::POLICY, "too many joins with wrong room codes; check the code first")
    }

    pub fn protocol_error(detail: &str) -> Self {
        Self::new(close_code::PROTOCOL_ERROR, &format!("websocket protocol error: {detail}"))
    }

    pub fn invalid_text() -> Self {
        Self::new(close_code::INVALID_PAYLOAD, "a text frame was not valid UTF-8")
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
    /// This push passed a bound: the outbox is now closing with the reason for it.
    Overflowed,
    /// The outbox was already closing; the frame is dropped with the rest of the connection.
    Closed,
}

/// What the relay is willing to queue for all connections together. Clones share the count.
#[derive(Clone, Debug)]
pub struct QueueBudget {
    limit_bytes: usize,
    used: Arc<AtomicUsize>,
}

impl QueueBudget {
    pub fn new(limit_bytes: usize) -> Self {
        QueueBudget { limit_bytes, used: Arc::new(AtomicUsize::new(0)) }
    }

    /// Bytes queued across every connection right now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }

    fn try_take(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(bytes).filter(|&total| total <= self.limit_bytes)
            })
            .is_ok()
    }

    /// Counts bytes that must be queued whatever the bound (see [`Outbox::finish`]).
    fn force_take(&self, bytes: usize) {
        self.used.fetch_add(bytes, Ordering::SeqCst);
    }

    fn give_back(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::SeqCst);
    }
}

/// A connection's outbound queue. Clones share the queue.
#[derive(Clone, Debug)]
pub struct Outbox {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// Raised once the connection is seated; small before, so a connection that never joins
    /// cannot make the relay hold much for it.
    limit_bytes: AtomicUsize,
    global: QueueBudget,
    queue: Mutex<Queue>,
    /// Wakes the writer when a frame arrives (a stored permit covers the race with `pop`).
    ready: Notify,
    closing: watch::Sender<Option<CloseReason>>,
}

#[derive(Debug, Default)]
struct Queue {
    /// Each frame, and whether it is a refusal (an `Error` frame for this connection's own
    /// mistakes), counted separately so they cannot pile up.
    frames: VecDeque<(Utf8Bytes, bool)>,
    bytes: usize,
    refusal_bytes: usize,
    /// Set by [`Outbox::finish`]: close with this once the queue is written.
    finishing: Option<CloseReason>,
}

impl Outbox {
    /// An empty outbox holding at most `limit_bytes` (text plus [`PER_FRAME_OVERHEAD`] each),
    /// with no bound shared with other connections.
    pub fn new(limit_bytes: usize) -> Self {
        Self::with_budget(limit_bytes, QueueBudget::new(usize::MAX))
    }

    /// An empty outbox whose frames also count against the relay-wide `global` budget.
    pub fn with_budget(limit_bytes: usize, global: QueueBudget) -> Self {
        Outbox {
            shared: Arc::new(Shared {
                limit_bytes: AtomicUsize::new(limit_bytes),
                global,
                queue: Mutex::new(Queue::default()),
                ready: Notify::new(),
                closing: watch::Sender::new(None),
            }),
        }
    }

    /// Changes this connection's own bound (raised when it takes a seat).
    pub fn set_limit(&self, limit_bytes: usize) {
        self.shared.limit_bytes.store(limit_bytes, Ordering::SeqCst);
    }

    /// Queues a frame for the writer, or closes the connection if it would pass a bound.
    pub fn push(&self, frame: Utf8Bytes) -> Result<(), PushError> {
        self.push_as(frame, false)
    }

    /// Queues a refusal for this connection's own frame. Refusals left unread pile up only to
    /// [`MAX_REFUSAL_BACKLOG_BYTES`]; past that the sender is ignoring them, and is closed.
    pub fn push_refusal(&self, frame: Utf8Bytes) -> Result<(), PushError> {
        self.push_as(frame, true)
    }

    fn push_as(&self, frame: Utf8Bytes, refusal: bool) -> Result<(), PushError> {
        if self.close_reason().is_some() {
            return Err(PushError::Closed);
        }
        let cost = frame_cost(&frame);
        let limit = self.shared.limit_bytes.load(Ordering::SeqCst);
        let overflow = {
            let mut queue = self.lock();
            if queue.finishing.is_some() {
                return Err(PushError::Closed);
            }
            if refusal && queue.refusal_bytes + cost > MAX_REFUSAL_BACKLOG_BYTES {
                Some(CloseReason::ignores_refusals(MAX_REFUSAL_BACKLOG_BYTES))
            } else if queue.bytes + cost > limit {
                Some(CloseReason::fell_behind(limit))
            } else if !self.shared.global.try_take(cost) {
                Some(CloseReason::relay_full(self.shared.global.limit_bytes))
            } else {
                queue.bytes += cost;
                if refusal {
                    queue.refusal_bytes += cost;
                }
                queue.frames.push_back((frame, refusal));
                None
            }
        };
        if let Some(reason) = overflow {
            self.close(reason);
            return Err(PushError::Overflowed);
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
            self.shared.global.give_back(queue.bytes);
            queue.bytes = 0;
            queue.refusal_bytes = 0;
        }
    }

    /// Queues `last` after everything already queued, accepts nothing more, and closes with
    /// `reason` once the writer has written it all ([`Outbox::finished`]): unlike
    /// [`Outbox::close`], what the connection was already sent still reaches it, and `last`
    /// (an `Error` frame saying why) is the final frame. Does nothing once closing.
    pub fn finish(&self, last: Utf8Bytes, reason: CloseReason) {
        if self.close_reason().is_some() {
            return;
        }
        {
            let mut queue = self.lock();
            if queue.finishing.is_some() {
                return;
            }
            // Past every bound on purpose: one short frame, and nothing can follow it.
            let cost = frame_cost(&last);
            queue.bytes += cost;
            self.shared.global.force_take(cost);
            queue.frames.push_back((last, false));
            queue.finishing = Some(reason);
        }
        self.shared.ready.notify_one();
    }

    /// The close [`Outbox::finish`] asked for, once its queue is empty (the writer then closes).
    pub fn finished(&self) -> Option<CloseReason> {
        let queue = self.lock();
        queue.frames.is_empty().then(|| queue.finishing.clone()).flatten()
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
        let (frame, refusal) = queue.frames.pop_front()?;
        let cost = frame_cost(&frame);
        queue.bytes -= cost;
        if refusal {
            queue.refusal_bytes -= cost;
        }
        self.shared.global.give_back(cost);
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

/// What one queued frame costs: its text plus the bookkeeping around it.
fn frame_cost(frame: &Utf8Bytes) -> usize {
    frame.len() + PER_FRAME_OVERHEAD
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
            CloseReason::ignores_refusals(usize::MAX),
            CloseReason::relay_full(usize::MAX),
            CloseReason::flooding(u32::MAX),
            CloseReason::guessing(),
            CloseReason::broker_lost(),
            CloseReason::host_gone(),
            CloseReason::invalid_text(),
            CloseReason::superseded(),
            CloseReason::too_big(usize::MAX),
            CloseReason::silent(Duration::MAX),
        ] {
            // The built-in reasons are short enough not to be cut.
            assert!(reason.reason.len() < MAX_CLOSE_REASON_BYTES, "{reason:?}");
        }
    }

    #[test]
    fn unread_refusals_close_the_connection_but_ordinary_frames_do_not_count_as_refusals() {
        let outbox = Outbox::new(usize::MAX);
        for _ in 0..100 {
            outbox.push(text(1000)).unwrap();
        }
        let refusal = text(200);
        let fit = MAX_REFUSAL_BACKLOG_BYTES / frame_cost(&refusal);
        for _ in 0..fit {
            outbox.push_refusal(refusal.clone()).unwrap();
        }
        // Reading an ordinary frame frees no room for refusals.
        assert_eq!(outbox.pop().map(|t| t.len()), Some(1000));
        assert_eq!(outbox.push_refusal(refusal.clone()), Err(PushError::Overflowed));
        let reason = outbox.close_reason().unwrap();
        assert_eq!(reason.code, close_code::POLICY);
        assert!(reason.reason.contains("refusals went unread"), "{reason:?}");
    }

    #[test]
    fn the_relay_wide_budget_bounds_all_outboxes_together_and_is_given_back() {
        let budget = QueueBudget::new(3 * frame_cost(&text(100)));
        let a = Outbox::with_budget(usize::MAX, budget.clone());
        let b = Outbox::with_budget(usize::MAX, budget.clone());
        a.push(text(100)).unwrap();
        b.push(text(100)).unwrap();
        b.push(text(100)).unwrap();
        assert_eq!(a.push(text(100)), Err(PushError::Overflowed));
        assert_eq!(a.close_reason().unwrap().code, close_code::GOING_AWAY);
        assert_eq!(budget.used(), 2 * frame_cost(&text(100)), "a's backlog was given back");
        b.pop();
        b.close(CloseReason::normal());
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_raised_limit_applies_to_the_next_push() {
        let outbox = Outbox::new(frame_cost(&text(10)));
        outbox.push(text(10)).unwrap();
        outbox.set_limit(2 * frame_cost(&text(10)));
        outbox.push(text(10)).unwrap();
        assert_eq!(outbox.push(text(10)), Err(PushError::Overflowed));
    }

    #[test]
    fn finish_keeps_what_was_queued_puts_its_frame_last_and_then_asks_to_close() {
        let outbox = Outbox::new(10_000);
        outbox.push("a".into()).unwrap();
        outbox.finish("why".into(), CloseReason::broker_lost());
        assert_eq!(outbox.push("late".into()), Err(PushError::Closed));
        assert_eq!(outbox.finished(), None, "two frames still to write");
        assert_eq!(outbox.pop().as_deref(), Some("a"));
        assert_eq!(outbox.pop().as_deref(), Some("why"));
        assert_eq!(outbox.finished(), Some(CloseReason::broker_lost()));
        assert_eq!(outbox.close_reason(), None, "the writer closes once it has written them");
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
