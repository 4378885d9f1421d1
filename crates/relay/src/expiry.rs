/*!
When away identities run out of grace: an index of deadlines, so expiry only touches what is due.

Scanning every room on every join, leave and sweep made each room pay for all the others (the
routing lock was held for the whole scan). [`Deadlines`] keeps one entry per away identity, ordered
by the time it expires; [`Deadlines::pop_due`] hands out only entries whose time has come.
*/

use std::collections::BTreeSet;
use std::time::Duration;

use capelab_wire::ParticipantId;

use crate::room_code::RoomCode;

/// Away identities by expiry time.
#[derive(Debug, Default)]
pub struct Deadlines {
    due: BTreeSet<(Duration, RoomCode, ParticipantId)>,
    /// Entries looked at by `pop_due` so far: the work expiry has done.
    examined: u64,
}

impl Deadlines {
    /// `id` in `room` expires at `at` unless it comes back first.
    pub fn add(&mut self, at: Duration, room: &RoomCode, id: ParticipantId) {
        self.due.insert((at, room.clone(), id));
    }

    /// `id` came back: it no longer expires at `at`.
    pub fn remove(&mut self, at: Duration, room: &RoomCode, id: ParticipantId) {
        self.due.remove(&(at, room.clone(), id));
    }

    /// The next identity whose deadline is at or before `now`, removed from the index.
    pub fn pop_due(&mut self, now: Duration) -> Option<(RoomCode, ParticipantId)> {
        let first = self.due.first()?;
        if first.0 > now {
            return None;
        }
        self.examined += 1;
        self.due.pop_first().map(|(_, room, id)| (room, id))
    }

    /// How many entries expiry has handed out in total.
    pub fn examined(&self) -> u64 {
        self.examined
    }

    pub fn len(&self) -> usize {
        self.due.len()
    }

    pub fn is_empty(&self) -> bool {
        self.due.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_due_entries_come_out_in_deadline_order() {
        let (a, b) = (RoomCode::parse("AAAAAA").unwrap(), RoomCode::parse("BBBBBB").unwrap());
        let mut deadlines = Deadlines::default();
        let s = Duration::from_secs;
        deadlines.add(s(30), &a, 1);
        deadlines.add(s(10), &b, 2);
        deadlines.add(s(20), &a, 3);
        deadlines.remove(s(20), &a, 3);
        assert_eq!(deadlines.pop_due(s(9)), None);
        assert_eq!(deadlines.pop_due(s(10)), Some((b, 2)));
        assert_eq!(deadlines.pop_due(s(29)), None);
        assert_eq!(deadlines.pop_due(s(99)), Some((a, 1)));
        assert!(deadlines.is_empty());
        assert_eq!(deadlines.examined(), 2);
    }
}
