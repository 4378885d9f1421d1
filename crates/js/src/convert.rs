//! Values across the boundary: JS numbers checked into ids and clocks (a fractional or negative id
//! is refused by name, never wrapped), outgoing messages and room events to and from the plain
//! objects of `TYPES`, and core records to JSON.

use capelab_core::driver::Outgoing;
use capelab_core::transport::TransportEvent;
use capelab_core::wire::{ParticipantId, Peer, To};
use js_sys::{Array, Object, Reflect, Uint8Array};
use serde::{Deserialize, Deserializer, Serialize};
use wasm_bindgen::prelude::*;

/// A participant id from a JS number: an integer in 1..=2^32 − 1.
pub fn participant(value: f64, what: &str) -> Result<ParticipantId, String> {
    if value.fract() == 0.0 && value >= 0.0 && value <= f64::from(u32::MAX) {
        Ok(value as ParticipantId)
    } else {
        Err(format!("{what} = {value} is not a participant id (a whole number from 0 to 2^32 − 1)"))
    }
}

/// 2^53: every whole number below is exact in a JS number.
const SAFE: f64 = 9_007_199_254_740_992.0;

/// Whether `value` is a whole number in 0..2^53 (NaN and ±∞ are not).
pub fn whole(value: f64) -> bool {
    value.fract() == 0.0 && (0.0..SAFE).contains(&value)
}

/// A clock reading in milliseconds from a JS number (e.g. `Date.now()`; a fraction is dropped).
pub fn millis(value: f64) -> Result<u64, String> {
    if (0.0..SAFE).contains(&value) {
        Ok(value as u64)
    } else {
        Err(format!("nowMs = {value} is not a time in milliseconds (a finite number ≥ 0)"))
    }
}

/// A fixed seed from a JS number: a whole number in 0..2^53.
pub fn seed(value: f64) -> Result<u64, String> {
    if whole(value) {
        Ok(value as u64)
    } else {
        Err(format!("seed = {value} must be a whole number from 0 to 2^53 − 1"))
    }
}

/// `To` as the relay's JSON writes it: `"all"` or `{ one: id }`.
pub fn to_js(to: To) -> JsValue {
    match to {
        To::All => JsValue::from_str("all"),
        To::One(id) => {
            let object = Object::new();
            set(&object, "one", &JsValue::from(id));
            object.into()
        }
    }
}

/// The messages a role returned, as `Outgoing[]` (each payload copied into its own
/// `Uint8Array`: the caller may keep it).
pub fn outgoing(messages: Vec<Outgoing>) -> Array {
    messages.into_iter().map(|m| JsValue::from(outgoing_object(m.to, m.kind, &m.payload))).collect()
}

pub fn outgoing_object(to: To, kind: &str, payload: &[u8]) -> Object {
    let object = Object::new();
    set(&object, "to", &to_js(to));
    set(&object, "kind", &JsValue::from_str(kind));
    set(&object, "payload", &Uint8Array::from(payload).into());
    object
}

fn set(object: &Object, key: &str, value: &JsValue) {
    // Defining a property on a fresh plain object cannot fail.
    let _ = Reflect::set(object, &JsValue::from_str(key), value);
}

/// A core record as the plain object its JSON describes (the same JSON the CLI writes).
pub fn json<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    let text = serde_json::to_string(value).map_err(|e| JsError::new(&e.to_string()))?;
    js_sys::JSON::parse(&text).map_err(|_| JsError::new("the record did not parse as JSON"))
}

/// A plain object of this crate's own (camelCase, `null` for nothing).
pub fn object<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    let serializer = serde_wasm_bindgen::Serializer::json_compatible();
    value.serialize(&serializer).map_err(|e| JsError::new(&e.to_string()))
}

/// A plain object the caller passed, read into `T`; `what` names it in the error.
///
/// A key `T` does not have is refused by name: serde-wasm-bindgen reads only the fields it
/// knows, so a misspelt `samplingrate` would otherwise be dropped without a word (and account
/// an unsampled release).
pub fn read<T: for<'de> Deserialize<'de>>(value: JsValue, what: &str) -> Result<T, JsError> {
    if let (Some(fields), Some(object)) = (struct_fields::<T>(), value.dyn_ref::<Object>()) {
        for key in Object::keys(object).iter().filter_map(|k| k.as_string()) {
            if !fields.contains(&key.as_str()) {
                let known = fields.join(", ");
                return Err(JsError::new(&format!(
                    "{what} has no field `{key}` (its fields: {known})"
                )));
            }
        }
    }
    serde_wasm_bindgen::from_value(value).map_err(|e| {
        // The error's text is JS `String(error)`: drop the "Error: " it starts with.
        let text = e.to_string();
        JsError::new(&format!("{what}: {}", text.strip_prefix("Error: ").unwrap_or(&text)))
    })
}

/// The field names of a struct `T` as serde sees them (what `deserialize_struct` is told),
/// `None` for anything else.
fn struct_fields<T: for<'de> Deserialize<'de>>() -> Option<&'static [&'static str]> {
    struct Fields(Option<&'static [&'static str]>);
    #[derive(Debug)]
    struct Stop;
    impl std::fmt::Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("stop")
        }
    }
    impl std::error::Error for Stop {}
    impl serde::de::Error for Stop {
        fn custom<M: std::fmt::Display>(_: M) -> Self {
            Stop
        }
    }
    impl<'de> Deserializer<'de> for &mut Fields {
        type Error = Stop;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            self.0 = Some(fields);
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    let mut fields = Fields(None);
    let _ = T::deserialize(&mut fields);
    fields.0
}

/// A `RoomEvent` as the caller hands it in (see `TYPES`).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RoomEvent {
    Connected {
        room: String,
        you: Peer,
        peers: Vec<Peer>,
    },
    PeerJoined {
        peer: Peer,
    },
    PeerRejoined {
        peer: Peer,
    },
    PeerLeft {
        peer: Peer,
    },
    Message {
        from: ParticipantId,
        kind: String,
        #[serde(deserialize_with = "bytes")]
        payload: Vec<u8>,
    },
    Refused {
        code: String,
        message: String,
    },
}

impl RoomEvent {
    /// The core's event, or the relay's refusal in words (which no role takes).
    pub fn into_transport_event(self) -> Result<TransportEvent, String> {
        Ok(match self {
            RoomEvent::Connected { room, you, peers } => {
                // The relay lists us among the peers of a Welcome; the core's event does not.
                let peers = peers.into_iter().filter(|p| p.id != you.id).collect();
                TransportEvent::Connected { room, you, peers }
            }
            RoomEvent::PeerJoined { peer } => TransportEvent::PeerJoined(peer),
            RoomEvent::PeerRejoined { peer } => TransportEvent::PeerRejoined(peer),
            RoomEvent::PeerLeft { peer } => TransportEvent::PeerLeft(peer),
            RoomEvent::Message { from, kind, payload } => {
                TransportEvent::Message { from, kind, payload }
            }
            RoomEvent::Refused { code, message } => {
                return Err(format!("the relay refused a frame ({code}): {message}"));
            }
        })
    }
}

/// A `Uint8Array` (or `ArrayBuffer`, or an array of bytes) into bytes, in one copy.
fn bytes<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
    struct Bytes;
    impl<'de> serde::de::Visitor<'de> for Bytes {
        type Value = Vec<u8>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a Uint8Array")
        }
        fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }
        fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
            while let Some(b) = seq.next_element::<u8>()? {
                out.push(b);
            }
            Ok(out)
        }
    }
    deserializer.deserialize_byte_buf(Bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_that_are_not_ids_or_times_are_named() {
        assert_eq!(participant(3.0, "from"), Ok(3));
        assert!(participant(2.5, "from").unwrap_err().contains("from = 2.5"));
        assert!(participant(-1.0, "who").is_err());
        assert!(participant(f64::NAN, "who").is_err());
        assert!(participant(4_294_967_296.0, "who").is_err());
        assert_eq!(millis(1_700_000_000_123.0), Ok(1_700_000_000_123));
        assert!(millis(-5.0).unwrap_err().contains("nowMs = -5"));
        assert!(millis(f64::INFINITY).is_err());
        assert_eq!(seed(7.0), Ok(7));
        assert!(seed(0.5).is_err());
    }

    #[test]
    fn struct_fields_are_serdes_names() {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        #[allow(dead_code)]
        struct Options {
            noise_multiplier: f64,
            sampling_rate: Option<f64>,
        }
        assert_eq!(struct_fields::<Options>(), Some(&["noiseMultiplier", "samplingRate"][..]));
        assert_eq!(struct_fields::<Vec<f64>>(), None);
        assert_eq!(struct_fields::<RoomEvent>(), None, "a tagged enum is read as a whole");
    }

    #[test]
    fn a_welcome_lists_the_others_only() {
        let peer =
            |id, name: &str| Peer { id, role: capelab_core::wire::Role::Site, name: name.into() };
        let event = RoomEvent::Connected {
            room: "K7QX2M".into(),
            you: peer(2, "me"),
            peers: vec![peer(1, "a"), peer(2, "me")],
        };
        let Ok(TransportEvent::Connected { peers, .. }) = event.into_transport_event() else {
            panic!("a welcome is a Connected event")
        };
        assert_eq!(peers, vec![peer(1, "a")]);
        let refused = RoomEvent::Refused { code: "rate_limited".into(), message: "x".into() };
        assert_eq!(
            refused.into_transport_event().unwrap_err(),
            "the relay refused a frame (rate_limited): x"
        );
    }
}
