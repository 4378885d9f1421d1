/*!
What relays say to each other through the broker, and how it is laid out on the wire.

A message is one line of JSON (the header: what to do, for which connection) and then, after a
`\n`, the body: a relay frame's text exactly as the client will receive it, or nothing. The body
is carried as bytes and never parsed here, so an envelope's payload crosses the broker untouched.
*/

use bytes::{BufMut as _, Bytes, BytesMut};
use capelab_wire::{ErrorCode, ParticipantId, Role, To};
use serde::{Deserialize, Serialize};

use crate::registry::ConnId;

/// A relay's name on the broker: random, fresh every start, so a restarted relay is a new one.
pub type RelayId = String;

/// To the relay hosting a room, on the room's subject.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ToHost {
    /// A relay about to open a room under this code asks whether another already has it; the
    /// host answers (any answer means taken), and nobody answering means free.
    Probe,
    /// `conn` on relay `relay` asks for a seat; answered with a [`JoinAnswer`].
    Join {
        relay: RelayId,
        conn: ConnId,
        role: Role,
        name: String,
        resume: Option<String>,
    },
    /// `conn`, seated as `seat`, sends the envelope in the body (its frame text, `from` filled in).
    Send {
        relay: RelayId,
        conn: ConnId,
        seat: ParticipantId,
        to: To,
    },
    Lock {
        relay: RelayId,
        conn: ConnId,
        seat: ParticipantId,
        locked: bool,
    },
    /// `conn`'s socket is gone.
    Left {
        relay: RelayId,
        conn: ConnId,
    },
    /// Nothing to do: sent with a reply subject so that "no responders" says the host is gone.
    Alive,
}

/// The host's answer to a [`ToHost::Join`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum JoinAnswer {
    Seated { id: ParticipantId },
    Refused { code: ErrorCode, message: String },
}

/// To a relay where participants of rooms hosted elsewhere are connected, on its subject.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum ToEdge {
    /// The frame in the body is for `conn`.
    Frame { conn: ConnId },
    /// The host closed `conn`'s seat with this websocket close.
    Close { conn: ConnId, code: u16, reason: String },
    /// Nothing to do: sent with a reply subject so that "no responders" says the relay is gone.
    Alive,
}

/// A header line and a body, as one broker message.
pub fn encode(header: &impl Serialize, body: &[u8]) -> Bytes {
    // Headers are plain structs and enums with string keys: serialising cannot fail.
    let line = serde_json::to_vec(header).expect("broker headers always serialise");
    let mut out = BytesMut::with_capacity(line.len() + 1 + body.len());
    out.put_slice(&line);
    out.put_u8(b'\n');
    out.put_slice(body);
    out.freeze()
}

/// Splits a broker message into its header and its body (shared, not copied).
pub fn decode<H: for<'de> Deserialize<'de>>(message: &Bytes) -> Option<(H, Bytes)> {
    let end = message.iter().position(|&b| b == b'\n')?;
    let header = serde_json::from_slice(&message[..end]).ok()?;
    Some((header, message.slice(end + 1..)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_body_round_trip_and_the_body_is_not_touched() {
        let body = br#"{"type":"envelope","v":1,"room":"K7QX2M","from":2,"to":"all","kind":"k","payload":"AA\n=="}"#;
        let header = ToHost::Send { relay: "ab12".into(), conn: 7, seat: 2, to: To::All };
        let message = encode(&header, body);
        let (got, rest) = decode::<ToHost>(&message).unwrap();
        assert_eq!(got, header);
        assert_eq!(&rest[..], &body[..]);

        let close = ToEdge::Close { conn: 3, code: 4001, reason: "superseded".into() };
        assert_eq!(decode::<ToEdge>(&encode(&close, b"")), Some((close, Bytes::new())));
        assert_eq!(decode::<ToEdge>(&Bytes::from_static(b"no header line")), None);
        assert_eq!(decode::<ToEdge>(&Bytes::from_static(b"{\"what\":\"dance\"}\n")), None);
    }
}
