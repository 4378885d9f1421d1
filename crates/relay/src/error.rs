/*!
Why the relay refuses a frame, in words the person at the keyboard can act on.

A [`Refusal`] goes back to the sender of the offending frame alone, as
`RelayFrame::Error { code, message }`; its connection stays open. [`Refusal::code`] maps each
variant to the wire's [`ErrorCode`], which clients branch on; the `Display` text is for people.
*/

use capelab_wire::{ErrorCode, ParticipantId, RelayFrame, WIRE_VERSION};

use crate::room_code::ROOM_CODE_LEN;

/// A frame the relay did not act on, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "that frame is not JSON ({detail}); send text frames such as \
         {{\"type\":\"join\",\"v\":{WIRE_VERSION},\"room\":\"K7QX2M\",\"role\":\"site\",\"name\":\"Ana\"}}"
    )]
    NotJson { detail: String },

    #[error(
        "that JSON is not a capelab frame ({detail}); expected \"type\" to be \"create\", \
         \"join\", \"send\" or \"lock\" with its fields"
    )]
    UnknownFrame { detail: String },

    #[error("binary websocket frames are not accepted: send each frame as JSON text")]
    Binary,

    #[error("\"kind\" is {chars} characters long; the limit is {limit}: use a shorter kind")]
    KindTooLong { chars: usize, limit: usize },

    #[error(
        "that frame is {size} bytes, over this relay's limit of {limit} bytes: send smaller \
         messages, or start the relay with a larger --max-frame-bytes"
    )]
    Oversized { size: usize, limit: usize },

    #[error(
        "there is no room {room:?} on this relay: check the {ROOM_CODE_LEN}-character code, or ask \
         the dashboard for a fresh link (a room ends once everyone has left)"
    )]
    UnknownRoom { room: String },

    #[error(
        "room {room} is full ({max} participants): ask the dashboard to open another room, or \
         restart the relay with a larger --max-participants"
    )]
    RoomFull { room: String, max: usize },

    #[error(
        "more than {per_second} messages per second (bursts up to {burst}): this frame was \
         dropped; send it again a little later"
    )]
    RateLimited { per_second: u32, burst: u32 },

    #[error(
        "more than {per_second} bytes per second (bursts up to {burst}) from {who}: this frame \
         of {size} bytes was dropped; send less, or send it again a little later"
    )]
    ByteRateLimited { who: &'static str, size: usize, per_second: u64, burst: u64 },

    #[error(
        "too many joins with room codes that do not exist, from {who}: wait {wait_secs} s, then \
         check the code with the dashboard before trying again"
    )]
    TooManyWrongCodes { who: &'static str, wait_secs: u64 },

    #[error(
        "room {room} already has its dashboard, the tab that created it: join as a site, or \
         reopen that dashboard tab (it takes its seat back); to run another study, create a room"
    )]
    DashboardTaken { room: String },

    #[error(
        "room {room} is locked: its study has started and takes no new participants; ask the \
         dashboard to unlock it, or join the next study"
    )]
    RoomLocked { room: String },

    #[error("only room {room}'s dashboard can lock or unlock it")]
    NotDashboard { room: String },

    #[error(
        "the name contains an invisible or text-direction character ({code_point}): type the \
         name without it"
    )]
    BadName { code_point: String },

    #[error(
        "this relay speaks wire v{WIRE_VERSION}, the frame says v{got}: reload the page so the app \
         and the relay match"
    )]
    VersionMismatch { got: u32 },

    #[error("this connection has not joined a room yet: send \"create\" or \"join\" first")]
    NotInRoom,

    #[error(
        "this identity was resumed by another connection, so this one no longer speaks for it: \
         use the newer tab"
    )]
    Superseded,

    #[error(
        "this connection is already participant {id} in room {room}: open a new connection to \
         join another room"
    )]
    AlreadyInRoom { room: String, id: ParticipantId },

    #[error("there is no participant {id} in room {room}: check the id in the latest presence")]
    UnknownRecipient { room: String, id: ParticipantId },

    #[error(
        "participant {id} in room {room} is disconnected (it may come back): the message was not \
         delivered"
    )]
    RecipientAway { room: String, id: ParticipantId },

    #[error(
        "the relay lost its broker at {url}, so it cannot open rooms or reach the rooms of other \
         relays right now: try again in a moment (the relay reconnects on its own); if this \
         lasts, ask whoever runs the relay to restart nats-server"
    )]
    BrokerDown { url: String },

    #[error(
        "the relay lost its broker at {url}; this connection is closed so that no message goes \
         missing unnoticed: reconnect, and the app takes its seat back once the broker is back \
         (if it stays down, ask whoever runs the relay to restart nats-server)"
    )]
    BrokerLost { url: String },

    #[error(
        "the relay has just reconnected to its broker at {url}, and the relays hosting rooms may \
         still be reconnecting: try again in a moment"
    )]
    BrokerSettling { url: String },

    #[error(
        "room {room} is hosted by another relay, which no longer answers (it stopped, or lost the \
         broker): the room has ended; ask the dashboard to create a new room"
    )]
    HostGone { room: String },

    /// A refusal decided by the relay that hosts the room, passed on as it was worded there.
    #[error("{message}")]
    Forwarded { code: ErrorCode, message: String },
}

impl Refusal {
    /// The machine-readable code clients branch on.
    pub fn code(&self) -> ErrorCode {
        match self {
            Refusal::NotJson { .. }
            | Refusal::UnknownFrame { .. }
            | Refusal::Binary
            | Refusal::KindTooLong { .. } => ErrorCode::Malformed,
            Refusal::Oversized { .. } => ErrorCode::Oversized,
            Refusal::UnknownRoom { .. } => ErrorCode::UnknownRoom,
            Refusal::RoomFull { .. } => ErrorCode::RoomFull,
            Refusal::RateLimited { .. }
            | Refusal::ByteRateLimited { .. }
            | Refusal::TooManyWrongCodes { .. } => ErrorCode::RateLimited,
            Refusal::DashboardTaken { .. }
            | Refusal::RoomLocked { .. }
            | Refusal::NotDashboard { .. } => ErrorCode::NotAllowed,
            Refusal::BadName { .. } => ErrorCode::Malformed,
            Refusal::VersionMismatch { .. } => ErrorCode::VersionMismatch,
            Refusal::NotInRoom | Refusal::Superseded => ErrorCode::NotInRoom,
            Refusal::AlreadyInRoom { .. } => ErrorCode::AlreadyInRoom,
            Refusal::UnknownRecipient { .. } | Refusal::RecipientAway { .. } => {
                ErrorCode::UnknownRecipient
            }
            // The wire's one "try again later": the app retries a join refused with it.
            Refusal::BrokerDown { .. }
            | Refusal::BrokerLost { .. }
            | Refusal::BrokerSettling { .. } => ErrorCode::RateLimited,
            Refusal::HostGone { .. } => ErrorCode::UnknownRoom,
            Refusal::Forwarded { code, .. } => *code,
        }
    }

    /// The `Error` frame that tells the sender.
    pub fn to_frame(&self) -> RelayFrame {
        RelayFrame::Error { v: WIRE_VERSION, code: self.code(), message: self.to_string() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_bad_value_and_the_way_out() {
        let mismatch = Refusal::VersionMismatch { got: 2 };
        assert_eq!(mismatch.code(), ErrorCode::VersionMismatch);
        assert!(mismatch.to_string().starts_with("this relay speaks wire v1, the frame says v2"));
        let oversized = Refusal::Oversized { size: 2000, limit: 1024 };
        assert!(oversized.to_string().contains("2000 bytes"));
        assert!(oversized.to_string().contains("--max-frame-bytes"));
        let frame = Refusal::UnknownRoom { room: "ZZZZZZ".into() }.to_frame();
        let RelayFrame::Error { code, message, .. } = frame else { panic!("not an error frame") };
        assert_eq!(code, ErrorCode::UnknownRoom);
        assert!(message.contains("\"ZZZZZZ\""), "{message}");
    }
}
