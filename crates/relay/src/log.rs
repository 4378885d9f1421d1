/*!
The relay's activity log: one concise line per room event on stderr, or nothing with `--quiet`.

Only room codes, participant ids, roles, display names (already cleaned to one short line) and
close reasons are ever logged; payloads, kinds and resume tokens never are.
*/

use std::fmt;

/// Where room events are reported.
#[derive(Clone, Copy, Debug)]
pub struct Log {
    quiet: bool,
}

impl Log {
    pub fn new(quiet: bool) -> Self {
        Log { quiet }
    }

    /// Writes one line to stderr unless quiet.
    pub fn line(&self, message: fmt::Arguments<'_>) {
        if !self.quiet {
            eprintln!("{message}");
        }
    }
}
