/*!
Protocol messages to bytes and back: postcard (compact, deterministic, works on wasm32).

These bytes become an envelope's opaque payload ([`crate::wire::Envelope::payload`]).
*/

use serde::{Serialize, de::DeserializeOwned};

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed {what} message: {reason}")]
pub struct DecodeError {
    pub what: &'static str,
    pub reason: String,
}

pub fn encode<T: Serialize>(msg: &T) -> Vec<u8> {
    postcard::to_allocvec(msg).expect("protocol messages always serialize")
}

/// Decodes a message; `what` names the expected message in the error.
pub fn decode<T: DeserializeOwned>(what: &'static str, bytes: &[u8]) -> Result<T, DecodeError> {
    postcard::from_bytes(bytes).map_err(|e| DecodeError { what, reason: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Msg {
        round: u32,
        values: Vec<u64>,
    }

    #[test]
    fn round_trip_and_garbage() {
        let m = Msg { round: 2, values: vec![0, u64::MAX, 42] };
        assert_eq!(decode::<Msg>("test", &encode(&m)).unwrap(), m);
        let err = decode::<Msg>("test", &[0xff, 0xff, 0xff]).unwrap_err();
        assert_eq!(err.what, "test");
    }
}
