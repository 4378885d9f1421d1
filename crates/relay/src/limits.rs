/*!
What the relay bounds, and the per-connection token bucket that enforces the message rate.

[`RelayLimits`] holds every configurable bound; the subset clients need is announced in each
`Welcome` as a [`wire::Limits`]. The websocket layer itself is configured with a larger
[`RelayLimits::socket_message_cap`] so that a frame a little over `max_frame_bytes` is answered
with an `Oversized` error instead of killing the connection; only a frame past that cap closes it
(code 1009).

Display names and envelope kinds are bounded here too, so the registry and the logs only ever see
short, single-line strings.
*/

use std::time::Duration;

use capelab_core::wire;

use crate::error::Refusal;

/// An envelope `kind` may have at most this many characters.
pub const MAX_KIND_CHARS: usize = 64;
/// A display name keeps at most this many characters after trimming.
pub const MAX_NAME_CHARS: usize = 40;
/// How many bytes an outgoing envelope may exceed the `Send` frame it came from (room, sender id
/// and field names); a connection's queue must hold one full-size envelope.
pub const ENVELOPE_OVERHEAD_BYTES: usize = 1024;

/// Every bound the relay enforces. The defaults suit a classroom of up to 64 tabs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RelayLimits {
    /// A text frame longer than this many bytes is refused with `Oversized`.
    pub max_frame_bytes: usize,
    /// Participants per room, counting those away within their resume grace period.
    pub max_participants: usize,
    /// Sustained messages per second per connection (token refill rate).
    pub messages_per_second: u32,
    /// Messages a connection may send at once before the rate applies (token bucket size).
    /// A SecureAgg aggregator fans out one message per site in a burst.
    pub burst: u32,
    /// Bytes waiting to be written to one connection before it is closed as too slow. Large, so
    /// a burst of big messages to a reader that keeps up is never mistaken for a slow reader; a
    /// broadcast is stored once however many queues it sits in.
    pub max_queue_bytes: usize,
}

impl Default for RelayLimits {
    fn default() -> Self {
        RelayLimits {
            max_frame_bytes: 16 * 1024 * 1024,
            max_participants: 64,
            messages_per_second: 200,
            burst: 400,
            max_queue_bytes: 256 * 1024 * 1024,
        }
    }
}

impl RelayLimits {
    /// The limits clients are told about in `Welcome`.
    pub fn announced(&self) -> wire::Limits {
        wire::Limits {
            max_frame_bytes: self.max_frame_bytes,
            max_participants: self.max_participants,
            max_messages_per_second: self.messages_per_second,
        }
    }

    /// The websocket library's own message limit: past it, the connection is closed with 1009.
    /// Twice our limit plus some slack, so ordinary mistakes get an `Oversized` answer instead.
    pub fn socket_message_cap(&self) -> usize {
        self.max_frame_bytes.saturating_mul(2).saturating_add(64 * 1024)
    }

    /// A fresh, full token bucket for a new connection.
    pub fn token_bucket(&self, now: Duration) -> TokenBucket {
        TokenBucket::new(self.messages_per_second, self.burst, now)
    }
}

/// A token bucket: holds up to `burst` tokens, refills at `per_second`, one token per message.
///
/// Kept in integer micro-tokens, so refills add up exactly: 99 ms and then 1 ms at 10 per
/// second make one whole token, as they should.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    /// In micro-tokens.
    capacity: u128,
    per_second: u128,
    /// In micro-tokens.
    level: u128,
    last_refill: Duration,
}

/// Micro-tokens in one token (and microseconds in one second).
const MICRO: u128 = 1_000_000;

impl TokenBucket {
    /// A full bucket. `per_second` and `burst` are validated by `Config::validate` (both ≥ 1).
    pub fn new(per_second: u32, burst: u32, now: Duration) -> Self {
        let capacity = u128::from(burst.max(1)) * MICRO;
        TokenBucket {
            capacity,
            per_second: u128::from(per_second.max(1)),
            level: capacity,
            last_refill: now,
        }
    }

    /// Takes one token if there is one. `now` never going backwards is the clock's job; a `now`
    /// earlier than the last call simply refills nothing.
    pub fn try_take(&mut self, now: Duration) -> bool {
        // Microseconds × tokens per second = micro-tokens.
        let refill = now.saturating_sub(self.last_refill).as_micros() * self.per_second;
        self.level = self.level.saturating_add(refill).min(self.capacity);
        self.last_refill = self.last_refill.max(now);
        if self.level >= MICRO {
            self.level -= MICRO;
            true
        } else {
            false
        }
    }
}

/// A display name as the relay stores and shows it: one line (control characters become
/// spaces), trimmed, at most [`MAX_NAME_CHARS`] characters. May be empty; the registry then
/// picks one.
pub fn clean_name(raw: &str) -> String {
    let printable: String = raw.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let bounded: String = printable.trim().chars().take(MAX_NAME_CHARS).collect();
    bounded.trim_end().to_owned()
}

/// Refuses an envelope kind longer than [`MAX_KIND_CHARS`].
pub fn check_kind(kind: &str) -> Result<(), Refusal> {
    let chars = kind.chars().count();
    if chars > MAX_KIND_CHARS {
        return Err(Refusal::KindTooLong { chars, limit: MAX_KIND_CHARS });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn bucket_allows_the_burst_then_refills_at_the_rate() {
        let start = Duration::from_secs(5);
        let mut bucket = TokenBucket::new(10, 4, start);
        assert_eq!((0..6).filter(|_| bucket.try_take(start)).count(), 4);
        // 10 per second: one token every 100 ms, not earlier, and partial refills add up.
        assert!(!bucket.try_take(start + 99 * MS));
        assert!(bucket.try_take(start + 100 * MS));
        assert!(!bucket.try_take(start + 100 * MS));
        assert!(!bucket.try_take(start + 133 * MS));
        assert!(!bucket.try_take(start + 166 * MS));
        assert!(bucket.try_take(start + 200 * MS));
        assert!(!bucket.try_take(start + 100 * MS));
        // A long pause refills to the burst, never beyond it.
        let later = start + Duration::from_secs(60);
        assert_eq!((0..10).filter(|_| bucket.try_take(later)).count(), 4);
    }

    #[test]
    fn bucket_sustains_exactly_the_rate() {
        let mut bucket = TokenBucket::new(200, 400, Duration::ZERO);
        let mut accepted = 0;
        // An attempt every millisecond for 9.997 s.
        for ms in 0..=9_997u64 {
            if bucket.try_take(Duration::from_millis(ms)) {
                accepted += 1;
            }
        }
        // The burst plus 200 per second: 400 + 200 × 9.997 = 2399.4 tokens, so 2399 messages.
        assert_eq!(accepted, 2399);
    }

    #[test]
    fn bucket_ignores_a_clock_going_backwards() {
        let mut bucket = TokenBucket::new(1, 1, Duration::from_secs(10));
        assert!(bucket.try_take(Duration::from_secs(10)));
        assert!(!bucket.try_take(Duration::from_secs(3)));
        assert!(bucket.try_take(Duration::from_secs(11)));
    }

    #[test]
    fn names_are_trimmed_single_line_and_bounded() {
        assert_eq!(clean_name("  Ana  "), "Ana");
        assert_eq!(clean_name("Ana\nroom K7QX2M closed\r"), "Ana room K7QX2M closed");
        assert_eq!(clean_name(" \t "), "");
        let long = "é".repeat(100);
        assert_eq!(clean_name(&long).chars().count(), MAX_NAME_CHARS);
        // Truncation never leaves trailing whitespace.
        let spaced = format!("{} x", "a".repeat(MAX_NAME_CHARS - 1));
        assert_eq!(clean_name(&spaced), "a".repeat(MAX_NAME_CHARS - 1));
    }

    #[test]
    fn kinds_are_bounded_in_characters() {
        assert!(check_kind(&"k".repeat(MAX_KIND_CHARS)).is_ok());
        assert_eq!(
            check_kind(&"k".repeat(MAX_KIND_CHARS + 1)),
            Err(Refusal::KindTooLong { chars: MAX_KIND_CHARS + 1, limit: MAX_KIND_CHARS })
        );
    }

    #[test]
    fn socket_cap_leaves_room_to_answer_oversized_frames() {
        let limits = RelayLimits::default();
        assert!(limits.socket_message_cap() > limits.max_frame_bytes);
        let huge = RelayLimits { max_frame_bytes: usize::MAX, ..limits };
        assert_eq!(huge.socket_message_cap(), usize::MAX);
    }
}
