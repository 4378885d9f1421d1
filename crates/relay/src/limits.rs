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

use capelab_wire as wire;

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
    /// Bytes waiting for all connections together before the relay closes the one that would
    /// pass it (code 1001, reconnect soon).
    pub max_total_queue_bytes: usize,
    /// Open TCP connections (websockets and plain HTTP) before new ones get a 503. The binary
    /// keeps it within the descriptor limit (`crate::descriptors`).
    pub max_connections: usize,
    /// Open connections one address (an IPv6 /64) may hold before its next gets a 429
    /// (`crate::fair_share`).
    pub max_connections_per_address: usize,
    /// Connections told "busy" (503) or "over your share" (429) at once; past that, new ones
    /// are closed without a word.
    pub max_refusing: usize,
    /// Sustained bytes per second one connection may send (token refill rate, in bytes).
    pub bytes_per_second: u32,
    /// Bytes one connection may send at once before `bytes_per_second` applies. A sender that
    /// keeps sending after that is refused, and once its refused bytes pass this much again it
    /// is cut off (code 1008).
    pub byte_burst: u32,
    /// Sustained bytes per second into one room from all its members together.
    pub room_bytes_per_second: u32,
    /// Bytes one room may take at once before `room_bytes_per_second` applies.
    pub room_byte_burst: u32,
}

impl Default for RelayLimits {
    fn default() -> Self {
        RelayLimits {
            max_frame_bytes: 16 * 1024 * 1024,
            max_participants: 64,
            messages_per_second: 200,
            burst: 400,
            max_queue_bytes: 256 * 1024 * 1024,
            max_total_queue_bytes: 1024 * 1024 * 1024,
            max_connections: 512,
            max_connections_per_address: 128,
            max_refusing: crate::descriptors::MAX_REFUSING,
            bytes_per_second: 8 * MIB,
            byte_burst: 40 * MIB,
            room_bytes_per_second: 32 * MIB,
            room_byte_burst: 160 * MIB,
        }
    }
}

const MIB: u32 = 1024 * 1024;

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

    /// A fresh, full byte budget for a new connection.
    pub fn sender_bytes(&self, now: Duration) -> TokenBucket {
        TokenBucket::new(self.bytes_per_second, self.byte_burst, now)
    }

    /// A fresh, full byte budget for a new room.
    pub fn room_bytes(&self, now: Duration) -> TokenBucket {
        TokenBucket::new(self.room_bytes_per_second, self.room_byte_burst, now)
    }
}

/// A token bucket: holds up to `burst` tokens, refills at `per_second`; a message takes one
/// token, or (for byte budgets) one per byte.
///
/// Kept in integer micro-tokens, so refills add up exactly: 99 ms and then 1 ms at 10 per
/// second make one whole token, as they should.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    /// In micro-tokens.
    capacity: u128,
    /// In micro-tokens per second.
    rate: u128,
    /// In micro-tokens.
    level: u128,
    last_refill: Duration,
}

/// Micro-tokens in one token (and microseconds in one second).
const MICRO: u128 = 1_000_000;

impl TokenBucket {
    /// A full bucket. `per_second` and `burst` are validated by `Config::validate` (both ≥ 1).
    pub fn new(per_second: u32, burst: u32, now: Duration) -> Self {
        Self::with_period(per_second, Duration::from_secs(1), burst, now)
    }

    /// A full bucket refilling `tokens` every `period` (for rates below one per second).
    pub fn with_period(tokens: u32, period: Duration, burst: u32, now: Duration) -> Self {
        let capacity = u128::from(burst.max(1)) * MICRO;
        let period_micros = period.as_micros().max(1);
        let rate = (u128::from(tokens.max(1)) * MICRO * MICRO / period_micros).max(1);
        TokenBucket { capacity, rate, level: capacity, last_refill: now }
    }

    /// Takes one token if there is one. `now` never going backwards is the clock's job; a `now`
    /// earlier than the last call simply refills nothing.
    pub fn try_take(&mut self, now: Duration) -> bool {
        self.try_take_n(now, 1)
    }

    /// Takes `n` tokens if there are that many, otherwise none.
    pub fn try_take_n(&mut self, now: Duration, n: u64) -> bool {
        let wanted = u128::from(n) * MICRO;
        if self.has(now, n) {
            self.level -= wanted;
            true
        } else {
            false
        }
    }

    /// Whether `n` tokens are there, without taking them.
    pub fn has(&mut self, now: Duration, n: u64) -> bool {
        // Microseconds × micro-tokens per second / 10⁶ = micro-tokens.
        let refill = now.saturating_sub(self.last_refill).as_micros() * self.rate / MICRO;
        self.level = self.level.saturating_add(refill).min(self.capacity);
        self.last_refill = self.last_refill.max(now);
        self.level >= u128::from(n) * MICRO
    }

    /// Whether the bucket is full (nothing taken that has not refilled), as of `now`.
    pub fn is_full(&mut self, now: Duration) -> bool {
        self.has(now, 0);
        self.level == self.capacity
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

/// Refuses a display name with a character that hides text or reorders it on screen: bidi
/// controls could make a name read as another participant's, and zero-width ones make two names
/// look the same.
pub fn check_name(raw: &str) -> Result<(), Refusal> {
    match raw.chars().find(|&c| is_invisible(c)) {
        Some(c) => Err(Refusal::BadName { code_point: format!("U+{:04X}", u32::from(c)) }),
        None => Ok(()),
    }
}

/// Format characters that render as nothing or change the direction of the text around them.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'                       // soft hyphen
            | '\u{034F}'                 // combining grapheme joiner
            | '\u{061C}'                 // Arabic letter mark
            | '\u{115F}' | '\u{1160}'     // Hangul fillers
            | '\u{17B4}' | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'     // Mongolian selectors and vowel separator
            | '\u{200B}'..='\u{200F}'     // zero-width space, (non-)joiner, LRM, RLM
            | '\u{202A}'..='\u{202E}'     // bidi embeddings and overrides
            | '\u{2060}'..='\u{206F}'     // word joiner, invisible operators, bidi isolates
            | '\u{3164}'                 // Hangul filler
            | '\u{FEFF}'                 // zero-width no-break space
            | '\u{FFA0}'
            | '\u{FFF9}'..='\u{FFFB}'     // interlinear annotation
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E007F}'   // tags
    )
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
    fn byte_budgets_take_a_frame_whole_or_not_at_all() {
        let start = Duration::from_secs(1);
        let mut bytes = TokenBucket::new(1000, 3000, start);
        assert!(bytes.try_take_n(start, 2500));
        assert!(!bytes.try_take_n(start, 501), "only 500 left");
        assert!(bytes.try_take_n(start, 500));
        assert!(!bytes.try_take_n(start + 999 * MS, 1000));
        assert!(bytes.try_take_n(start + 1000 * MS, 1000));
        assert!(!bytes.is_full(start + 3999 * MS));
        assert!(bytes.is_full(start + 4000 * MS));
    }

    #[test]
    fn a_slow_bucket_refills_one_token_per_period() {
        let mut slow = TokenBucket::with_period(1, Duration::from_secs(2), 2, Duration::ZERO);
        assert!(slow.try_take(Duration::ZERO) && slow.try_take(Duration::ZERO));
        assert!(!slow.try_take(Duration::from_millis(1999)));
        assert!(slow.try_take(Duration::from_secs(2)));
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
    fn names_with_bidi_or_zero_width_characters_are_refused_by_code_point() {
        assert_eq!(check_name("Ana María 李"), Ok(()));
        for (name, point) in [
            ("Ana\u{202E}nimda", "U+202E"),
            ("A\u{200B}na", "U+200B"),
            ("\u{2067}Bo", "U+2067"),
            ("Cy\u{FEFF}", "U+FEFF"),
            ("\u{E0041}", "U+E0041"),
        ] {
            let refused = check_name(name).unwrap_err();
            assert_eq!(refused, Refusal::BadName { code_point: point.into() });
            assert!(refused.to_string().contains("type the name without it"));
        }
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
