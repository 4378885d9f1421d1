/*!
Reading client frames and writing relay frames: the only place JSON is handled.

[`parse_client_frame`] checks the wire version before anything else it could misread: a frame
whose `v` is not [`WIRE_VERSION`] is a [`Refusal::VersionMismatch`] even when its shape is
unknown, since a newer client may have changed the shape. The `payload` string of a `Send` is
carried through as the same string; the relay never base64-decodes it.
*/

use axum::extract::ws::Utf8Bytes;
use capelab_wire::{ClientFrame, RelayFrame, WIRE_VERSION};
use serde::Deserialize;

use crate::error::Refusal;

/// Reads one text frame from a client.
pub fn parse_client_frame(text: &str) -> Result<ClientFrame, Refusal> {
    match serde_json::from_str::<ClientFrame>(text) {
        Ok(frame) => {
            let v = match &frame {
                ClientFrame::Create { v, .. }
                | ClientFrame::Join { v, .. }
                | ClientFrame::Send { v, .. }
                | ClientFrame::Lock { v, .. } => *v,
            };
            if v == WIRE_VERSION { Ok(frame) } else { Err(Refusal::VersionMismatch { got: v }) }
        }
        Err(error) => {
            if let Some(got) = foreign_version(text) {
                return Err(Refusal::VersionMismatch { got });
            }
            let detail = error.to_string();
            Err(match error.classify() {
                serde_json::error::Category::Data => Refusal::UnknownFrame { detail },
                _ => Refusal::NotJson { detail },
            })
        }
    }
}

/// The `v` of a frame this build cannot read, if it names another version.
fn foreign_version(text: &str) -> Option<u32> {
    #[derive(Deserialize)]
    struct VersionOnly {
        v: u32,
    }
    let VersionOnly { v } = serde_json::from_str(text).ok()?;
    (v != WIRE_VERSION).then_some(v)
}

/// Serialises a frame for the wire.
pub fn relay_frame_text(frame: &RelayFrame) -> Utf8Bytes {
    // Relay frames are plain structs and enums with string keys: serialising cannot fail.
    let mut text = serde_json::to_string(frame).expect("relay frames always serialise");
    // Queues count a frame's length; its allocation must not be up to twice that.
    text.shrink_to_fit();
    text.into()
}

#[cfg(test)]
mod tests {
    use capelab_wire::{Envelope, To};

    use super::*;

    #[test]
    fn a_current_frame_parses() {
        let frame = parse_client_frame(r#"{"type":"create","v":1,"name":"Ana"}"#).unwrap();
        assert_eq!(frame, ClientFrame::Create { v: 1, name: "Ana".into() });
    }

    #[test]
    fn another_version_is_a_mismatch_whatever_its_shape() {
        let known_shape = r#"{"type":"create","v":2,"name":"Ana"}"#;
        assert_eq!(parse_client_frame(known_shape), Err(Refusal::VersionMismatch { got: 2 }));
        let new_shape = r#"{"type":"hello","v":7,"caps":["x"]}"#;
        assert_eq!(parse_client_frame(new_shape), Err(Refusal::VersionMismatch { got: 7 }));
    }

    #[test]
    fn not_json_and_unknown_frames_are_told_apart() {
        assert!(matches!(parse_client_frame("hello"), Err(Refusal::NotJson { .. })));
        assert!(matches!(parse_client_frame(r#"{"type":"join""#), Err(Refusal::NotJson { .. })));
        let unknown = parse_client_frame(r#"{"type":"dance","v":1}"#);
        assert!(matches!(unknown, Err(Refusal::UnknownFrame { .. })), "{unknown:?}");
        let missing = parse_client_frame(r#"{"type":"send","v":1,"to":"all"}"#);
        assert!(matches!(missing, Err(Refusal::UnknownFrame { .. })), "{missing:?}");
    }

    #[test]
    fn payload_strings_pass_through_unchanged() {
        let payload = "AAEC/+8=";
        let text =
            format!(r#"{{"type":"send","v":1,"to":{{"one":2}},"kind":"k","payload":"{payload}"}}"#);
        let ClientFrame::Send { payload: parsed, to, kind, .. } =
            parse_client_frame(&text).unwrap()
        else {
            panic!("not a send frame")
        };
        let out = relay_frame_text(&RelayFrame::Envelope(Envelope {
            v: WIRE_VERSION,
            room: "K7QX2M".into(),
            from: 1,
            to,
            kind,
            payload: parsed,
        }));
        assert_eq!(
            out.as_str(),
            r#"{"type":"envelope","v":1,"room":"K7QX2M","from":1,"to":{"one":2},"kind":"k","payload":"AAEC/+8="}"#
        );
        assert!(matches!(
            serde_json::from_str::<RelayFrame>(out.as_str()).unwrap(),
            RelayFrame::Envelope(Envelope { to: To::One(2), .. })
        ));
    }
}
