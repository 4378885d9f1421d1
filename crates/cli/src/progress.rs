/*!
Progress of long commands, always on stderr, whatever stdout is: stdout carries only the result
(so `--json` output stays one JSON object), stderr says how far the work is.

- stderr is a terminal: an indicatif bar (or spinner), redrawn in place.
- stderr is a file or a pipe (a log, CI, `2> run.log`): plain lines, one when the work starts,
  one every `--progress-every` seconds (default 10) from a ticker thread, so a step that takes
  minutes still shows up, and one when it ends. No bar redraws end up in the log.
- `--quiet`: nothing (errors and warnings still print).

The settings come from the global flags (`main.rs` calls [`configure`] once).
*/

use std::fmt::Display;
use std::io::IsTerminal;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

#[derive(Clone, Copy, Debug)]
struct Settings {
    quiet: bool,
    every: Duration,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();

/// The default interval of the plain progress lines.
pub const DEFAULT_EVERY_SECONDS: f64 = 10.0;

/// Sets `--quiet` and `--progress-every` for the whole run (the first call wins).
pub fn configure(quiet: bool, every_seconds: f64) -> Result<(), String> {
    if !(every_seconds.is_finite() && every_seconds > 0.0) {
        return Err(format!("--progress-every {every_seconds}: need a positive number of seconds"));
    }
    let _ = SETTINGS.set(Settings { quiet, every: Duration::from_secs_f64(every_seconds) });
    Ok(())
}

fn settings() -> Settings {
    *SETTINGS.get_or_init(|| Settings {
        quiet: false,
        every: Duration::from_secs_f64(DEFAULT_EVERY_SECONDS),
    })
}

/// One line on stderr about what a command is doing (a phase starting, where it reads from);
/// nothing with `--quiet`.
pub fn note(message: impl Display) {
    if !settings().quiet {
        eprintln!("{message}");
    }
}

/// "42 s", "3 min 07 s", "1 h 05 min".
fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

/// The state the plain lines are made of.
struct Lines {
    what: String,
    unit: String,
    len: Option<u64>,
    pos: u64,
    message: String,
    start: Instant,
    done: bool,
}

impl Lines {
    fn line(&self, finished: bool) -> String {
        let elapsed = self.start.elapsed();
        let mut out = format!("{}: ", self.what);
        match self.len {
            Some(len) => {
                let share = if len == 0 { 100.0 } else { 100.0 * self.pos as f64 / len as f64 };
                out += &format!("{} {}/{len} ({share:.0}%)", self.unit, self.pos);
                if finished {
                    out += &format!(", done in {}", duration(elapsed));
                } else {
                    out += &format!(", {} elapsed", duration(elapsed));
                    if self.pos > 0 && self.pos < len {
                        let left = elapsed.mul_f64((len - self.pos) as f64 / self.pos as f64);
                        out += &format!(", about {} left", duration(left));
                    }
                }
            }
            None if finished => out += &format!("done in {}", duration(elapsed)),
            None => out += &format!("{} elapsed", duration(elapsed)),
        }
        if !self.message.is_empty() {
            out += &format!("; {}", self.message);
        }
        out
    }
}

type Shared = Arc<(Mutex<Lines>, Condvar)>;

/// Where the plain lines go: stderr, or a test's buffer.
type Emit = Arc<dyn Fn(&str) + Send + Sync>;

enum Inner {
    Hidden,
    Bar(ProgressBar),
    Lines(Shared, Emit),
}

/// The progress of one piece of work: a bar on a terminal, periodic lines otherwise, nothing with
/// `--quiet`. Shareable across threads (the sites' work runs on rayon).
pub struct Progress(Inner);

impl Progress {
    /// `len` steps of `unit` ("step", "run", "trial") of the work `what` ("vertical-vi mpc").
    pub fn new(what: &str, unit: &str, len: u64) -> Self {
        Self::start(what, unit, Some(len))
    }

    /// Work of unknown length (a phase): a spinner, or lines saying how long it has run.
    pub fn spinner(what: &str) -> Self {
        Self::start(what, "", None)
    }

    fn start(what: &str, unit: &str, len: Option<u64>) -> Self {
        let s = settings();
        if s.quiet {
            return Progress(Inner::Hidden);
        }
        if std::io::stderr().is_terminal() {
            // Braces in the names would be read as template keys.
            let esc = |t: &str| t.replace('{', "{{").replace('}', "}}");
            let template = match len {
                Some(_) => format!(
                    "{{spinner}} {}: {} {{pos}}/{{len}} [{{bar:30}}] {{elapsed}} (eta {{eta}}) {{msg}}",
                    esc(what),
                    esc(unit)
                ),
                None => format!("{{spinner}} {}: {{elapsed}} {{msg}}", esc(what)),
            };
            let bar = ProgressBar::new(len.unwrap_or(0))
                .with_style(ProgressStyle::default_bar().template(&template).expect("a template"));
            bar.enable_steady_tick(Duration::from_millis(250));
            return Progress(Inner::Bar(bar));
        }
        Self::lines(what, unit, len, s.every, Arc::new(|line: &str| eprintln!("{line}")))
    }

    /// Plain lines through `emit`: one now, one every `every` (from a ticker thread, so slow
    /// steps still show), one at [`Self::finish`].
    fn lines(what: &str, unit: &str, len: Option<u64>, every: Duration, emit: Emit) -> Self {
        let lines = Lines {
            what: what.to_string(),
            unit: unit.to_string(),
            len,
            pos: 0,
            message: String::new(),
            start: Instant::now(),
            done: false,
        };
        emit(&lines.line(false));
        let shared: Shared = Arc::new((Mutex::new(lines), Condvar::new()));
        let ticker = Arc::clone(&shared);
        let ticker_emit = Arc::clone(&emit);
        std::thread::spawn(move || {
            let (lock, wake) = &*ticker;
            let mut state = lock.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                let next = Instant::now() + every;
                // Sleep until the next line is due, unless the work ends first.
                while !state.done {
                    let now = Instant::now();
                    if now >= next {
                        break;
                    }
                    state =
                        wake.wait_timeout(state, next - now).unwrap_or_else(|p| p.into_inner()).0;
                }
                if state.done {
                    return;
                }
                ticker_emit(&state.line(false));
            }
        });
        Progress(Inner::Lines(shared, emit))
    }

    fn with_lines(&self, f: impl FnOnce(&mut Lines)) {
        if let Inner::Lines(shared, _) = &self.0 {
            let mut state = shared.0.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut state);
        }
    }

    pub fn set_position(&self, pos: u64) {
        match &self.0 {
            Inner::Bar(bar) => bar.set_position(pos),
            _ => self.with_lines(|l| l.pos = pos),
        }
    }

    pub fn inc(&self, n: u64) {
        match &self.0 {
            Inner::Bar(bar) => bar.inc(n),
            _ => self.with_lines(|l| l.pos += n),
        }
    }

    /// What the work is at (shown after the count).
    pub fn set_message(&self, message: impl Into<String>) {
        let message = message.into();
        match &self.0 {
            Inner::Bar(bar) => bar.set_message(message),
            _ => self.with_lines(|l| l.message = message),
        }
    }

    /// The work is done: the bar is cleared, or a last line says how long it took.
    pub fn finish(&self) {
        match &self.0 {
            Inner::Hidden => {}
            Inner::Bar(bar) => bar.finish_and_clear(),
            Inner::Lines(shared, emit) => {
                let mut state = shared.0.lock().unwrap_or_else(|p| p.into_inner());
                if !state.done {
                    if let Some(len) = state.len {
                        state.pos = state.pos.max(len);
                    }
                    emit(&state.line(true));
                    state.done = true;
                    shared.1.notify_all();
                }
            }
        }
    }
}

impl Drop for Progress {
    /// Work abandoned by an error: the ticker stops, without a "done" line.
    fn drop(&mut self) {
        match &self.0 {
            Inner::Lines(shared, _) => {
                let mut state = shared.0.lock().unwrap_or_else(|p| p.into_inner());
                state.done = true;
                shared.1.notify_all();
            }
            Inner::Bar(bar) => bar.finish_and_clear(),
            Inner::Hidden => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_give_the_count_the_share_and_the_time_left() {
        let mut l = Lines {
            what: "vertical-vi mpc".into(),
            unit: "step".into(),
            len: Some(200),
            pos: 50,
            message: "test NLL 6.0".into(),
            start: Instant::now() - Duration::from_secs(30),
            done: false,
        };
        let line = l.line(false);
        assert!(line.starts_with("vertical-vi mpc: step 50/200 (25%), 30 s elapsed"), "{line}");
        assert!(line.contains("about 1 min 30 s left"), "{line}");
        assert!(line.ends_with("; test NLL 6.0"), "{line}");
        l.pos = 200;
        assert!(l.line(true).contains("step 200/200 (100%), done in 30 s"));
        l.len = None;
        l.message.clear();
        assert_eq!(l.line(false), "vertical-vi mpc: 30 s elapsed");
    }

    #[test]
    fn a_ticker_prints_lines_while_nothing_moves_and_stops_at_the_end() {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = Arc::clone(&seen);
        let emit: Emit = Arc::new(move |l: &str| sink.lock().unwrap().push(l.to_string()));
        let p = Progress::lines("work", "step", Some(4), Duration::from_millis(20), emit);
        p.set_position(1);
        std::thread::sleep(Duration::from_millis(200));
        p.finish();
        let at_finish = seen.lock().unwrap().len();
        std::thread::sleep(Duration::from_millis(60));
        let lines = seen.lock().unwrap().clone();
        assert_eq!(lines.len(), at_finish, "the ticker stopped: {lines:?}");
        assert_eq!(lines[0], "work: step 0/4 (0%), 0 s elapsed");
        let periodic = &lines[1..lines.len() - 1];
        assert!(periodic.len() >= 2, "{lines:?}");
        assert!(periodic.iter().all(|l| l.starts_with("work: step 1/4 (25%)")), "{lines:?}");
        assert!(lines.last().unwrap().starts_with("work: step 4/4 (100%), done in"), "{lines:?}");
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(duration(Duration::from_secs(42)), "42 s");
        assert_eq!(duration(Duration::from_secs(187)), "3 min 07 s");
        assert_eq!(duration(Duration::from_secs(3900)), "1 h 05 min");
    }
}
