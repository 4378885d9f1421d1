/*!
The relay's notion of "now": the one place time enters the routing and limiting logic.

Rate limits and the resume grace period read [`Clock::now`] instead of the system clock directly,
so the registry and the token bucket stay plain data that tests drive with a [`ManualClock`]
(advance it by exactly the refill time instead of sleeping). The websocket keep-alive uses tokio's
timers and is not affected: it only decides when a silent peer is given up on.
*/

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Where the relay's time comes from. Cheap to clone; clones share the same time.
#[derive(Clone, Debug)]
pub enum Clock {
    /// Monotonic time since the clock was created.
    System(Instant),
    /// Time that moves only when a test says so.
    Manual(ManualClock),
}

impl Clock {
    /// The monotonic system clock, starting now.
    pub fn system() -> Self {
        Clock::System(Instant::now())
    }

    /// Time elapsed since this clock started.
    pub fn now(&self) -> Duration {
        match self {
            Clock::System(start) => start.elapsed(),
            Clock::Manual(manual) => manual.now(),
        }
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::system()
    }
}

/// A clock for tests: starts at zero and moves only on [`ManualClock::advance`].
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    micros: Arc<AtomicU64>,
}

impl ManualClock {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn now(&self) -> Duration {
        Duration::from_micros(self.micros.load(Ordering::SeqCst))
    }

    pub fn advance(&self, by: Duration) {
        let micros = u64::try_from(by.as_micros()).unwrap_or(u64::MAX);
        self.micros.fetch_add(micros, Ordering::SeqCst);
    }
}

impl From<ManualClock> for Clock {
    fn from(manual: ManualClock) -> Self {
        Clock::Manual(manual)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_advanced_and_clones_share_it() {
        let manual = ManualClock::new();
        let clock = Clock::from(manual.clone());
        assert_eq!(clock.now(), Duration::ZERO);
        manual.advance(Duration::from_millis(250));
        assert_eq!(clock.now(), Duration::from_millis(250));
    }
}
