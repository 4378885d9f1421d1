//! The relay's frames for a page that holds its own `WebSocket` to `ws(s)://{relay}/ws`: the
//! frames to send ([`ClientFrame`] JSON, written by the core's wire types) and each frame received
//! read into a `RoomEvent`, the input [`Site`](crate::site::Site) takes. The wire format is
//! `capelab_core::wire` (version [`WIRE_VERSION`]); nothing here decides anything about a study.
//!
//! ```js
//! ws.onopen = () => ws.send(joinFrame({ room: "K7QX2M", name: "Clinic North" }));
//! ws.onmessage = (m) => site.handleEvent(readFrame(m.data), Date.now());
//! const transport = { send: (to, kind, payload) => ws.send(sendFrame(to, kind, payload)) };
//! ```

use capelab_core::wire::{
    ClientFrame, ErrorCode, ParticipantId, Peer, PresenceEvent, RelayFrame, Role, To, WIRE_VERSION,
    decode_payload, encode_payload,
};
use js_sys::{Object, Reflect, Uint8Array};
use serde::Deserialize;
use wasm_bindgen::prelude::*;

use crate::convert;

/// `JoinOptions` of `TYPES`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JoinOptions {
    room: String,
    name: String,
    #[serde(default)]
    role: Option<Role>,
    #[serde(default)]
    resume: Option<String>,
}

/// The frame that enters a room: send it first on a new socket (with `resume`, after a dropped
/// one, to come back with the same id).
#[wasm_bindgen(js_name = joinFrame)]
pub fn join_frame(
    #[wasm_bindgen(unchecked_param_type = "JoinOptions")] options: JsValue,
) -> Result<String, JsError> {
    let o: JoinOptions = convert::read(options, "JoinOptions")?;
    Ok(join(o))
}

fn join(o: JoinOptions) -> String {
    let frame = ClientFrame::Join {
        v: WIRE_VERSION,
        // The relay reads codes as people type them (case and spaces do not matter).
        room: o.room,
        role: o.role.unwrap_or(Role::Site),
        name: o.name,
        resume: o.resume,
    };
    serde_json::to_string(&frame).expect("a frame of strings serialises")
}

/// The frame that creates a room, its sender becoming the room's dashboard.
#[wasm_bindgen(js_name = createFrame)]
pub fn create_frame(name: String) -> String {
    serde_json::to_string(&ClientFrame::Create { v: WIRE_VERSION, name })
        .expect("a frame of strings serialises")
}

/// The frame that carries one message (`Outgoing`'s `to`, `kind`, `payload`).
#[wasm_bindgen(js_name = sendFrame)]
pub fn send_frame(
    #[wasm_bindgen(unchecked_param_type = "To")] to: JsValue,
    kind: String,
    payload: &[u8],
) -> Result<String, JsError> {
    let to: To = convert::read(to, "to")?;
    Ok(send(to, kind, payload))
}

fn send(to: To, kind: String, payload: &[u8]) -> String {
    let frame = ClientFrame::Send { v: WIRE_VERSION, to, kind, payload: encode_payload(payload) };
    serde_json::to_string(&frame).expect("a frame of strings serialises")
}

/// A frame from the relay as a `RoomEvent`. Throws for a frame this package cannot read (another
/// wire version: reload the page that serves it).
#[wasm_bindgen(js_name = readFrame, unchecked_return_type = "RoomEvent")]
pub fn read_frame(text: &str) -> Result<JsValue, JsError> {
    let event = event(text).map_err(|e| JsError::new(&e))?;
    let object = Object::new();
    let set = |key: &str, value: JsValue| {
        let _ = Reflect::set(&object, &JsValue::from_str(key), &value);
    };
    let peer = |p: &Peer| convert::object(p);
    match &event {
        Event::Connected { room, you, peers, resume } => {
            set("type", "connected".into());
            set("room", room.as_str().into());
            set("you", peer(you)?);
            set("peers", convert::object(peers)?);
            set("resume", resume.as_str().into());
        }
        Event::Presence { event, peer: p } => {
            let kind = match event {
                PresenceEvent::Joined => "peer_joined",
                PresenceEvent::Rejoined => "peer_rejoined",
                PresenceEvent::Left => "peer_left",
            };
            set("type", kind.into());
            set("peer", peer(p)?);
        }
        Event::Message { from, kind, payload } => {
            set("type", "message".into());
            set("from", (*from).into());
            set("kind", kind.as_str().into());
            set("payload", Uint8Array::from(payload.as_slice()).into());
        }
        Event::Refused { code, message } => {
            set("type", "refused".into());
            set("code", convert::object(code)?);
            set("message", message.as_str().into());
        }
    }
    Ok(object.into())
}

/// A relay frame, read.
#[derive(Debug, PartialEq)]
enum Event {
    Connected { room: String, you: Peer, peers: Vec<Peer>, resume: String },
    Presence { event: PresenceEvent, peer: Peer },
    Message { from: ParticipantId, kind: String, payload: Vec<u8> },
    Refused { code: ErrorCode, message: String },
}

fn event(text: &str) -> Result<Event, String> {
    let frame: RelayFrame = serde_json::from_str(text).map_err(|e| {
        format!("the relay sent a frame this package cannot read ({e}): another wire version?")
    })?;
    let v = match &frame {
        RelayFrame::Welcome { v, .. }
        | RelayFrame::Presence { v, .. }
        | RelayFrame::Error { v, .. } => *v,
        RelayFrame::Envelope(e) => e.v,
    };
    if v != WIRE_VERSION {
        return Err(format!("the relay speaks wire version {v}, this package {WIRE_VERSION}"));
    }
    Ok(match frame {
        RelayFrame::Welcome { room, you, resume, peers, .. } => {
            let peers = peers.into_iter().filter(|p| p.id != you.id).collect();
            Event::Connected { room, you, peers, resume }
        }
        RelayFrame::Presence { event, peer, .. } => Event::Presence { event, peer },
        RelayFrame::Envelope(envelope) => {
            let payload = decode_payload(&envelope.payload).map_err(|e| {
                format!("a {} message from {} is not base64: {e}", envelope.kind, envelope.from)
            })?;
            Event::Message { from: envelope.from, kind: envelope.kind, payload }
        }
        RelayFrame::Error { code, message, .. } => Event::Refused { code, message },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_out_are_the_wire_formats() {
        let join = join(JoinOptions {
            room: "K7QX2M".into(),
            name: "Clinic North".into(),
            role: None,
            resume: None,
        });
        assert_eq!(
            join,
            r#"{"type":"join","v":1,"room":"K7QX2M","role":"site","name":"Clinic North"}"#
        );
        assert_eq!(
            send(To::One(3), "mean/accept".into(), &[1, 2, 3]),
            r#"{"type":"send","v":1,"to":{"one":3},"kind":"mean/accept","payload":"AQID"}"#
        );
        assert_eq!(create_frame("T".into()), r#"{"type":"create","v":1,"name":"T"}"#);
    }

    #[test]
    fn frames_in_become_room_events() {
        let welcome = r#"{"type":"welcome","v":1,"room":"K7QX2M","resume":"tok",
            "you":{"id":2,"role":"site","name":"me"},
            "peers":[{"id":1,"role":"dashboard","name":"T"},{"id":2,"role":"site","name":"me"}],
            "limits":{"max_frame_bytes":1,"max_participants":2,"max_messages_per_second":3}}"#;
        let Event::Connected { peers, resume, .. } = event(welcome).unwrap() else {
            panic!("a welcome")
        };
        assert_eq!((peers.len(), peers[0].id, resume.as_str()), (1, 1, "tok"));
        let envelope = r#"{"type":"envelope","v":1,"room":"K7QX2M","from":1,"to":"all",
            "kind":"mean/start","payload":"AQID"}"#;
        assert_eq!(
            event(envelope).unwrap(),
            Event::Message { from: 1, kind: "mean/start".into(), payload: vec![1, 2, 3] }
        );
        let bad = envelope.replace("AQID", "not base64!");
        assert!(event(&bad).unwrap_err().contains("mean/start message from 1 is not base64"));
        let other = envelope.replace("\"v\":1", "\"v\":2");
        assert!(event(&other).unwrap_err().contains("wire version 2"));
        assert!(event("{}").unwrap_err().contains("cannot read"));
    }
}
