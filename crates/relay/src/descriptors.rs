/*!
The connection cap from the process's file-descriptor limit (`RLIMIT_NOFILE`, `ulimit -n`).

A cap above what the process may open is no cap: with `ulimit -n 64` and the old fixed cap of 512,
80 idle sockets from one address used every descriptor, `accept` failed for everyone else, and
nobody was even told "busy". So at start the relay raises its soft limit to the hard one (what
Go's runtime and most servers do; nothing is asked of the user), and sizes the cap to fit:

- [`RESERVED`] descriptors stay for the process itself: stdio, the listener, tokio's epoll and
  wake-ups, the signal pipe, the broker's socket, the log thread (an idle relay holds 11, measured
  with `ls /proc/PID/fd`; the rest is headroom);
- the connections being refused at once (`RelayLimits::max_refusing`), each holding its socket
  while it is told why: [`refusing_budget`];
- two per open connection: its socket, and the file of the app it may be sending (tower-http
  keeps the file open while the body streams), so the cap holds even when every connection is
  loading the app at once.

`--max-connections` then only lowers the cap; asking for more than the limit allows is an error
that says how to raise it.
*/

/// Descriptors kept for the process's own use (not per connection).
pub const RESERVED: u64 = 32;
/// Descriptors one open connection may hold: its socket and a file of the app being sent.
pub const PER_CONNECTION: u64 = 2;
/// Most connections told "busy" at once (each holds its socket meanwhile).
pub const MAX_REFUSING: usize = 64;

/// The limit in force, and what it was before [`raise_soft_limit`] raised it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptors {
    /// The soft `RLIMIT_NOFILE` now (`u64::MAX` for unlimited).
    pub limit: u64,
    /// The soft limit found at start, when it was raised.
    pub raised_from: Option<u64>,
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit, and returns the limit now in force.
#[cfg(unix)]
pub fn raise_soft_limit() -> Descriptors {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let found = getrlimit(Resource::Nofile);
    let soft = found.current.unwrap_or(u64::MAX);
    let hard = found.maximum.unwrap_or(u64::MAX);
    if soft >= hard {
        return Descriptors { limit: soft, raised_from: None };
    }
    match setrlimit(Resource::Nofile, Rlimit { current: found.maximum, maximum: found.maximum }) {
        Ok(()) => Descriptors { limit: hard, raised_from: Some(soft) },
        // Not allowed (some sandboxes): live within the soft limit.
        Err(_) => Descriptors { limit: soft, raised_from: None },
    }
}

/// Without `RLIMIT_NOFILE` (not unix), no bound from descriptors.
#[cfg(not(unix))]
pub fn raise_soft_limit() -> Descriptors {
    Descriptors { limit: u64::MAX, raised_from: None }
}

/// How many connections may be refused at once within `limit`: 1 in 16 descriptors, at most
/// [`MAX_REFUSING`], at least 1.
pub fn refusing_budget(limit: u64) -> usize {
    usize::try_from(limit / 16).unwrap_or(usize::MAX).clamp(1, MAX_REFUSING)
}

/// The most connections that fit in `limit` descriptors (see the module's text); 0 when even the
/// reserve does not fit.
pub fn connection_budget(limit: u64) -> usize {
    let spare = limit.saturating_sub(RESERVED).saturating_sub(refusing_budget(limit) as u64);
    usize::try_from(spare / PER_CONNECTION).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_leaves_the_reserve_and_the_refusals_their_descriptors() {
        // The outside probe's limit: 64 = 32 reserved + 4 refusing + 2 × 14.
        assert_eq!(refusing_budget(64), 4);
        assert_eq!(connection_budget(64), 14);
        // Debian's default soft limit, were it not raised: 1024 = 32 + 64 + 2 × 464.
        assert_eq!(connection_budget(1024), 464);
        assert_eq!(connection_budget(RESERVED), 0);
        assert_eq!(connection_budget(0), 0);
        assert_eq!(connection_budget(u64::MAX), usize::try_from((u64::MAX - 96) / 2).unwrap());
        for limit in [40u64, 64, 100, 1024, 4096, 1 << 20] {
            let used = RESERVED
                + refusing_budget(limit) as u64
                + PER_CONNECTION * connection_budget(limit) as u64;
            assert!(used <= limit, "{limit}: {used}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn raising_leaves_the_soft_limit_at_the_hard_one() {
        let after = raise_soft_limit();
        let now = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        assert_eq!(now.current.unwrap_or(u64::MAX), after.limit);
        assert!(after.limit > 0);
    }
}
