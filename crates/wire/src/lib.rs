/*!
The wire format between participants and the relay: the only part of capelab the relay reads.

Every frame is one JSON text message. A participant sends [`ClientFrame`]s; the relay answers with
[`RelayFrame`]s. Protocol traffic travels inside [`Envelope`]s whose `payload` is an opaque
base64 string: the relay routes on `room`, `from` and `to` and never decodes the payload.

**Invariant:** the relay fills in `from` itself; a participant cannot speak for another one.

Every frame carries the wire-format version `v`; a relay answers a frame with another version with
[`ErrorCode::VersionMismatch`] and never guesses.
*/

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// The wire-format version this build speaks. Bump it on any incompatible change.
pub const WIRE_VERSION: u32 = 1;

/// A participant's id inside one room, assigned by the relay (1, 2, 3, … in join order).
pub type ParticipantId = u32;

/// What a participant is in a room.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Holds private data and runs the site side of the protocols.
    Site,
    /// Runs the aggregator side and shows the results.
    Dashboard,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Site => "site",
            Role::Dashboard => "dashboard",
        })
    }
}

/// Who an envelope is for: everybody else in the room, or one participant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum To {
    All,
    One(ParticipantId),
}

/// A participant as others see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peer {
    pub id: ParticipantId,
    pub role: Role,
    /// A display name chosen by the participant (trimmed, at most 40 characters).
    pub name: String,
}

/// Protocol traffic as the relay routes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    pub v: u32,
    pub room: String,
    pub from: ParticipantId,
    pub to: To,
    /// What the payload is, e.g. `secagg/masked-input`. Routing never depends on it.
    pub kind: String,
    /// Opaque to the relay: base64 (standard alphabet, padded) of the protocol message bytes.
    pub payload: String,
}

impl Envelope {
    /// Decodes the payload bytes.
    pub fn payload_bytes(&self) -> Result<Vec<u8>, base64::DecodeError> {
        decode_payload(&self.payload)
    }
}

/// Frames a participant sends to the relay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientFrame {
    /// Create a new room and join it as its dashboard.
    Create { v: u32, name: String },
    /// Join an existing room. `resume` is the token of an earlier session in this room: when it is
    /// still known, the participant gets its old id back (a reconnect, not a new participant).
    Join {
        v: u32,
        room: String,
        role: Role,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resume: Option<String>,
    },
    /// Send protocol traffic to one participant or to everyone else in the room.
    Send { v: u32, to: To, kind: String, payload: String },
    /// The room's dashboard closes the room to new participants (`locked: true`, e.g. once a
    /// study starts) or opens it again. Participants already seated can still come back with
    /// their resume tokens. Added after v1 shipped; a relay that predates it answers `Malformed`.
    Lock { v: u32, locked: bool },
}

/// Frames the relay sends to a participant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RelayFrame {
    /// The answer to `Create` or `Join`: who you are and who is already here.
    Welcome {
        v: u32,
        room: String,
        you: Peer,
        /// Present this token in a later `Join` to resume this identity after a dropped connection.
        resume: String,
        peers: Vec<Peer>,
        /// The relay's limits, so clients can refuse to build frames that would be rejected.
        limits: Limits,
    },
    /// Somebody joined, came back or left.
    Presence { v: u32, event: PresenceEvent, peer: Peer },
    /// Protocol traffic from another participant.
    Envelope(Envelope),
    /// A frame was refused. Only the sender of the offending frame receives this.
    Error { v: u32, code: ErrorCode, message: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PresenceEvent {
    Joined,
    /// Came back after a dropped connection, with the same id.
    Rejoined,
    Left,
}

/// Why the relay refused a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Not JSON, or not one of the frames above.
    Malformed,
    /// Larger than `Limits::max_frame_bytes`.
    Oversized,
    /// `Join` named a room that does not exist.
    UnknownRoom,
    /// The room already has `Limits::max_participants`.
    RoomFull,
    /// More than `Limits::max_messages_per_second`.
    RateLimited,
    /// The frame's `v` is not this relay's `WIRE_VERSION`.
    VersionMismatch,
    /// `Send` before `Create`/`Join`, or `Join` twice.
    NotInRoom,
    AlreadyInRoom,
    /// `To::One` named nobody in this room.
    UnknownRecipient,
    /// The frame asks for something this participant may not do, e.g. a second dashboard in a
    /// room. Added after v1 shipped; older clients never receive it for frames they send.
    NotAllowed,
}

/// The limits a relay enforces, announced in `Welcome`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub max_frame_bytes: usize,
    pub max_participants: usize,
    pub max_messages_per_second: u32,
}

/// Encodes protocol bytes for [`Envelope::payload`].
pub fn encode_payload(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes [`Envelope::payload`].
pub fn decode_payload(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    base64::engine::general_purpose::STANDARD.decode(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_have_the_documented_json_shape() {
        let send = ClientFrame::Send {
            v: WIRE_VERSION,
            to: To::One(3),
            kind: "secagg/masked-input".into(),
            payload: encode_payload(&[1, 2, 3]),
        };
        assert_eq!(
            serde_json::to_string(&send).unwrap(),
            r#"{"type":"send","v":1,"to":{"one":3},"kind":"secagg/masked-input","payload":"AQID"}"#
        );
        let join: ClientFrame = serde_json::from_str(
            r#"{"type":"join","v":1,"room":"K7QX2M","role":"site","name":"Ana"}"#,
        )
        .unwrap();
        assert_eq!(
            join,
            ClientFrame::Join {
                v: 1,
                room: "K7QX2M".into(),
                role: Role::Site,
                name: "Ana".into(),
                resume: None
            }
        );
        let lock = ClientFrame::Lock { v: WIRE_VERSION, locked: true };
        assert_eq!(serde_json::to_string(&lock).unwrap(), r#"{"type":"lock","v":1,"locked":true}"#);
        let all: To = serde_json::from_str(r#""all""#).unwrap();
        assert_eq!(all, To::All);
    }

    #[test]
    fn payload_round_trips() {
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(decode_payload(&encode_payload(&bytes)).unwrap(), bytes);
        assert!(decode_payload("not base64!").is_err());
    }
}
