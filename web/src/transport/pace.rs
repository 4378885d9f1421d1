//! Keeps this tab under the relay's announced message rate: the relay refuses a frame over its
//! token bucket (`rate_limited`) and a protocol cannot skip a message, so a burst (an EFPSN agent
//! stepping as fast as its neighbours' iterates arrive) waits here instead, in order.
//!
//! A token bucket of its own at a fraction of the announced rate with a burst of one second's
//! worth (the relay's burst is larger), in milliseconds the caller passes: no clock here.

use std::collections::VecDeque;

/// The share of the announced rate this tab uses (room for the relay's own rounding).
const SHARE: f64 = 0.8;

#[derive(Debug)]
pub struct Pacer {
    per_ms: f64,
    capacity: f64,
    tokens: f64,
    last_ms: f64,
    queue: VecDeque<String>,
}

impl Pacer {
    /// A full bucket for `per_second` announced messages a second.
    pub fn new(per_second: u32, now_ms: f64) -> Self {
        let rate = (f64::from(per_second) * SHARE).max(1.0);
        Pacer {
            per_ms: rate / 1000.0,
            capacity: rate,
            tokens: rate,
            last_ms: now_ms,
            queue: VecDeque::new(),
        }
    }

    fn refill(&mut self, now_ms: f64) {
        let elapsed = (now_ms - self.last_ms).max(0.0);
        self.tokens = (self.tokens + elapsed * self.per_ms).min(self.capacity);
        self.last_ms = now_ms;
    }

    /// Queues `frame` behind any waiting ones.
    pub fn push(&mut self, frame: String) {
        self.queue.push_back(frame);
    }

    /// The frames that may go now, in order.
    pub fn due(&mut self, now_ms: f64) -> Vec<String> {
        self.refill(now_ms);
        let mut out = Vec::new();
        while self.tokens >= 1.0 {
            let Some(frame) = self.queue.pop_front() else { break };
            self.tokens -= 1.0;
            out.push(frame);
        }
        out
    }

    /// Milliseconds until the next waiting frame may go (`None`: nothing waits).
    pub fn wait_ms(&self) -> Option<u32> {
        if self.queue.is_empty() {
            return None;
        }
        let missing = (1.0 - self.tokens).max(0.0);
        Some((missing / self.per_ms).ceil() as u32 + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_goes_at_the_rate_in_order() {
        let mut p = Pacer::new(100, 0.0); // 80 a second, burst 80
        for i in 0..200 {
            p.push(i.to_string());
        }
        let first = p.due(0.0);
        assert_eq!(first.len(), 80);
        assert_eq!(first[0], "0");
        assert_eq!(p.wait_ms(), Some(14));
        // One second later, 80 more; never more than the bucket holds.
        let second = p.due(1000.0);
        assert_eq!(second.len(), 80);
        assert_eq!(second[0], "80");
        let third = p.due(10_000.0);
        assert_eq!(third.len(), 40);
        assert_eq!(p.wait_ms(), None);
        // Refills cap at one second's worth.
        for i in 0..100 {
            p.push(i.to_string());
        }
        assert_eq!(p.due(100_000.0).len(), 80);
    }
}
