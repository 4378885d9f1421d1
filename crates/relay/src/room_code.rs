/*!
Room codes: six characters a teacher can read aloud and a student can type.

The alphabet leaves out the look-alikes 0/O, 1/I/L, so a code copied from a projector is never
ambiguous; codes are matched case-insensitively. 31 symbols over 6 places give ~8.9 × 10⁸ codes,
drawn from the thread-local CSPRNG; the registry redraws on the (rare) clash with a live room.
*/

use std::fmt;

use rand::RngExt as _;

/// The symbols a room code is made of: digits and capitals without 0, O, 1, I, L.
pub const ROOM_CODE_ALPHABET: &[u8; 31] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";
/// Characters in a room code.
pub const ROOM_CODE_LEN: usize = 6;
/// How much of a bad room string an error message repeats back.
const ECHO_CHARS: usize = 16;

/// A well-formed room code, in canonical (upper-case) form.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RoomCode(String);

impl RoomCode {
    /// A fresh random code.
    pub fn random() -> Self {
        let mut rng = rand::rng();
        let code = (0..ROOM_CODE_LEN)
            .map(|_| char::from(ROOM_CODE_ALPHABET[rng.random_range(0..ROOM_CODE_ALPHABET.len())]))
            .collect();
        RoomCode(code)
    }

    /// Reads a code as a person typed it: surrounding spaces and letter case do not matter.
    /// `None` if it cannot be a room code at all.
    pub fn parse(typed: &str) -> Option<Self> {
        let canonical = typed.trim().to_ascii_uppercase();
        let well_formed = canonical.len() == ROOM_CODE_LEN
            && canonical.bytes().all(|b| ROOM_CODE_ALPHABET.contains(&b));
        well_formed.then_some(RoomCode(canonical))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RoomCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A bounded, single-line copy of what a client sent as a room code, for error messages.
pub fn echo(typed: &str) -> String {
    typed.trim().chars().filter(|c| !c.is_control()).take(ECHO_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alphabet_has_no_look_alikes_and_no_repeats() {
        for ambiguous in [b'0', b'O', b'1', b'I', b'L'] {
            assert!(!ROOM_CODE_ALPHABET.contains(&ambiguous));
        }
        let mut sorted = ROOM_CODE_ALPHABET.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ROOM_CODE_ALPHABET.len());
    }

    #[test]
    fn random_codes_are_well_formed_and_use_the_whole_alphabet() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..500 {
            let code = RoomCode::random();
            assert_eq!(RoomCode::parse(code.as_str()), Some(code.clone()));
            seen.extend(code.as_str().bytes());
        }
        // 3000 draws from 31 symbols: missing one has probability < 31 · (30/31)^3000 ≈ 1e-41.
        assert_eq!(seen.len(), ROOM_CODE_ALPHABET.len());
    }

    #[test]
    fn parsing_ignores_case_and_surrounding_space() {
        assert_eq!(RoomCode::parse(" k7qx2m\n").map(|c| c.to_string()), Some("K7QX2M".into()));
        assert_eq!(RoomCode::parse("K7QX2"), None, "too short");
        assert_eq!(RoomCode::parse("K7QX2MM"), None, "too long");
        assert_eq!(RoomCode::parse("K0QX2M"), None, "0 is not in the alphabet");
        assert_eq!(RoomCode::parse("KLQX2M"), None, "L is not in the alphabet");
        assert_eq!(RoomCode::parse("K7QX2é"), None);
    }

    #[test]
    fn echo_is_short_and_single_line() {
        assert_eq!(echo(&format!(" ab\ncd{}", "x".repeat(100))), format!("abcd{}", "x".repeat(12)));
    }
}
