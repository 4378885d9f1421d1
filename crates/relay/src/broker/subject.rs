//! The broker subjects relays use. Room codes and relay ids are plain `[A-Z0-9a-f]`, so they are
//! always single, valid subject tokens.

use super::message::RelayId;
use crate::room_code::RoomCode;

/// Operations for the relay hosting `room`.
pub fn room(room: &RoomCode) -> String {
    format!("capelab.room.{room}")
}

/// Frames for the connections on relay `relay`.
pub fn relay(relay: &str) -> String {
    format!("capelab.relay.{relay}")
}

/// Everything else for relay `relay`: the replies below.
pub fn relay_replies(relay: &str) -> String {
    format!("capelab.relay.{relay}.>")
}

/// Where the broker tells edge `me` that nobody hosts `room` any more ("no responders").
pub fn gone(me: &str, room: &RoomCode) -> String {
    format!("capelab.relay.{me}.gone.{room}")
}

/// Where the broker tells host `me` that relay `edge` no longer listens ("no responders").
pub fn lost(me: &str, edge: &str) -> String {
    format!("capelab.relay.{me}.lost.{edge}")
}

/// What a "no responders" notice on one of `me`'s reply subjects is about.
#[derive(Debug, PartialEq, Eq)]
pub enum Notice {
    RoomGone(RoomCode),
    EdgeLost(RelayId),
}

/// Reads a reply subject of `me` (see [`gone`] and [`lost`]).
pub fn notice(me: &str, subject: &str) -> Option<Notice> {
    let rest = subject.strip_prefix("capelab.relay.")?.strip_prefix(me)?.strip_prefix('.')?;
    if let Some(code) = rest.strip_prefix("gone.") {
        return RoomCode::parse(code).map(Notice::RoomGone);
    }
    rest.strip_prefix("lost.").map(|edge| Notice::EdgeLost(edge.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_subjects_read_back() {
        let code = RoomCode::parse("K7QX2M").unwrap();
        assert_eq!(notice("ab", &gone("ab", &code)), Some(Notice::RoomGone(code.clone())));
        assert_eq!(notice("ab", &lost("ab", "cd")), Some(Notice::EdgeLost("cd".into())));
        assert_eq!(notice("zz", &gone("ab", &code)), None);
        assert_eq!(notice("ab", &relay("ab")), None);
    }
}
