//! File names and digests, as trunk 0.21.14 makes them.

use base64::{Engine, engine::general_purpose::STANDARD};
use sha2::{Digest, Sha384};

/// trunk's cache-busting hash: seahash of the bytes, in lower-case hex without padding.
pub fn content_hash(bytes: &[u8]) -> String {
    format!("{:x}", seahash::hash(bytes))
}

/// A copied asset's name in dist (`style.css` -> `style-<hash>.css`), hashed over its bytes.
pub fn hashed_file_name(file_name: &str, bytes: &[u8]) -> String {
    let hash = content_hash(bytes);
    match file_name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => format!("{stem}-{hash}.{ext}"),
        _ => format!("{file_name}-{hash}."),
    }
}

/// The base name of the app's JS and wasm (`<bin>-<hash>`, then `.js` and `_bg.wasm`). trunk hashes
/// the wasm that cargo wrote, before wasm-bindgen and wasm-opt.
pub fn wasm_base_name(bin: &str, cargo_wasm: &[u8]) -> String {
    format!("{bin}-{}", content_hash(cargo_wasm))
}

/// A subresource-integrity value (`sha384-<base64>`), as trunk writes by default.
pub fn sri_sha384(bytes: &[u8]) -> String {
    format!("sha384-{}", STANDARD.encode(Sha384::digest(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_seahash_hex() {
        // seahash's own test vector: hash(b"to be or not to be") == 1988685042348123509.
        assert_eq!(content_hash(b"to be or not to be"), format!("{:x}", 1988685042348123509u64));
        // no zero padding, like trunk's `{:x}`
        assert!(content_hash(b"").len() <= 16);
    }

    #[test]
    fn names_follow_trunk() {
        let h = content_hash(b"body{}");
        assert_eq!(hashed_file_name("style.css", b"body{}"), format!("style-{h}.css"));
        assert_eq!(hashed_file_name("a.b.css", b"body{}"), format!("a.b-{h}.css"));
        assert_eq!(wasm_base_name("capelab-web", b"body{}"), format!("capelab-web-{h}"));
    }

    #[test]
    fn sri_is_sha384_base64() {
        // echo -n abc | openssl dgst -sha384 -binary | base64
        assert_eq!(
            sri_sha384(b"abc"),
            "sha384-ywB1P0WjXou1oD1pmsZQBycsMqsO3tFjGotgWkP/W+2AhgcroefMI1i67KE0yCWn"
        );
    }
}
