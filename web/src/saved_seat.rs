/*!
The seat this tab holds in a room, kept in `sessionStorage` so a reload resumes it.

A reloaded tab presents the saved resume token and gets its old id back (the relay keeps a dropped
identity for its grace period). `sessionStorage` belongs to one tab, so other tabs never pick the
seat up. A *duplicated* tab copies it, and the relay then hands the identity to the newer tab; the
older one is told so and stops (see `transport::link`).
*/

use capelab_core::wire::Role;
use gloo::storage::{SessionStorage, Storage};
use serde::{Deserialize, Serialize};

use crate::transport::Hello;

const KEY: &str = "capelab.seat";

/// Enough to walk back into the room as the same participant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedSeat {
    pub room: String,
    pub role: Role,
    pub name: String,
    pub resume: String,
}

impl SavedSeat {
    /// The `Join` that resumes this seat.
    pub fn into_hello(self) -> Hello {
        Hello::Join { room: self.room, role: self.role, name: self.name, resume: Some(self.resume) }
    }
}

/// The seat saved by an earlier page in this tab, if any (and readable).
pub fn load() -> Option<SavedSeat> {
    SessionStorage::get(KEY).ok()
}

pub fn save(seat: &SavedSeat) {
    // Storage can be full or disabled; the only loss is that a reload joins as someone new.
    let _ = SessionStorage::set(KEY, seat);
}

pub fn clear() {
    SessionStorage::delete(KEY);
}
