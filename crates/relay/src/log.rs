/*!
The relay's activity log: one concise line per room event on stderr, or nothing with `--quiet`.

Only room codes, participant ids, roles, display names (already cleaned to one short line) and
close reasons are ever logged; payloads, kinds and resume tokens never are.

**Logging never blocks routing.** Lines are often formed while the room registry's lock is held,
and a stderr nobody reads (a full pipe) blocks any write to it. So [`Log::line`] only formats the
line and offers it to a bounded queue; a dedicated thread does the writing. When the queue is full
the line is dropped and counted, and the writer reports the count once it can write again.
*/

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

/// Lines waiting for the writer thread before new ones are dropped.
pub const LOG_QUEUE_LINES: usize = 1024;

/// Where room events are reported. Cheap to clone; clones share the queue.
#[derive(Clone, Debug)]
pub struct Log {
    sink: Option<Arc<Sink>>,
}

#[derive(Debug)]
struct Sink {
    queue: SyncSender<String>,
    dropped: Arc<AtomicU64>,
}

impl Log {
    /// A log writing to stderr on its own thread, or a silent one if `quiet`.
    pub fn new(quiet: bool) -> Self {
        if quiet {
            return Log { sink: None };
        }
        Self::to_writer(std::io::stderr())
    }

    /// A log writing to `out` on its own thread (tests pass a writer that never returns).
    pub fn to_writer(out: impl std::io::Write + Send + 'static) -> Self {
        let (queue, lines) = sync_channel(LOG_QUEUE_LINES);
        let dropped = Arc::new(AtomicU64::new(0));
        let counter = dropped.clone();
        // Detached: it ends when every `Log` is gone, or stays blocked on a stuck stderr, which
        // then holds up nothing but itself.
        let spawned = std::thread::Builder::new()
            .name("relay-log".into())
            .spawn(move || write_lines(out, lines, &counter));
        Log { sink: spawned.is_ok().then(|| Arc::new(Sink { queue, dropped })) }
    }

    /// Queues one line for stderr; drops (and counts) it if the writer is behind. Never blocks.
    pub fn line(&self, message: fmt::Arguments<'_>) {
        let Some(sink) = &self.sink else { return };
        match sink.queue.try_send(message.to_string()) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(_)) => {
                sink.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Lines dropped so far and not yet reported.
    pub fn dropped(&self) -> u64 {
        self.sink.as_ref().map_or(0, |sink| sink.dropped.load(Ordering::Relaxed))
    }
}

fn write_lines(mut out: impl std::io::Write, lines: Receiver<String>, dropped: &AtomicU64) {
    for line in lines {
        let missed = dropped.swap(0, Ordering::Relaxed);
        if missed > 0 {
            let _ = writeln!(out, "({missed} log lines dropped: stderr was not being read)");
        }
        let _ = writeln!(out, "{line}");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Condvar, Mutex};

    use super::*;

    /// A writer that blocks until released, like a pipe nobody reads, then keeps what it got.
    #[derive(Clone, Default)]
    struct Stuck(Arc<(Mutex<bool>, Condvar)>, Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Stuck {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let (released, wake) = &*self.0;
            let mut released = released.lock().unwrap();
            while !*released {
                released = wake.wait(released).unwrap();
            }
            self.1.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Every line is either written, or dropped and counted: reported in a "(k log lines
    /// dropped …)" line once the writer moves again, or still pending in `dropped()`. When the
    /// writer thread picks up its first line decides how many are reported early, so the test
    /// counts all three rather than assuming an order.
    #[test]
    fn a_stuck_writer_never_blocks_the_caller_and_lines_are_counted() {
        let stuck = Stuck::default();
        let log = Log::to_writer(stuck.clone());
        let total = 3 * LOG_QUEUE_LINES as u64;
        for n in 0..total {
            log.line(format_args!("line {n}"));
        }
        // The caller got here although nothing could be written: it never blocked. The thread
        // holds at most one line and the queue LOG_QUEUE_LINES.
        let (released, wake) = &*stuck.0;
        *released.lock().unwrap() = true;
        wake.notify_all();
        let account = || {
            let text = String::from_utf8(stuck.1.lock().unwrap().clone()).unwrap();
            let written = text.lines().filter(|l| l.starts_with("line ")).count() as u64;
            let reported: u64 = text
                .lines()
                .filter_map(|l| l.strip_prefix('(')?.split(' ').next()?.parse::<u64>().ok())
                .sum();
            (written, reported + log.dropped())
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while account().0 + account().1 < total && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let (written, dropped) = account();
        assert_eq!(written + dropped, total, "{written} written, {dropped} dropped");
        assert!(written <= LOG_QUEUE_LINES as u64 + 1, "{written} written");
        assert!(dropped >= total - LOG_QUEUE_LINES as u64 - 1, "{dropped} dropped");
    }

    #[test]
    fn quiet_logs_nothing() {
        let log = Log::new(true);
        log.line(format_args!("x"));
        assert_eq!(log.dropped(), 0);
    }
}
