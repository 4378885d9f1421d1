/*!
Room codes as people type them: "k7qx 2m" from a projector becomes `K7QX2M`.

The relay hands out codes of capital letters and digits; a code is only ever compared, so cleaning
up what a person typed (spaces, dashes, lower case) is safe and saves a round trip to the relay
for an "unknown room".
*/

/// Longest code accepted from a form; the relay's codes are much shorter.
const MAX_LEN: usize = 32;

/// Why a typed room code cannot be a code.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RoomCodeError {
    #[error("Enter the room code shown on the dashboard.")]
    Empty,
    #[error("A room code has only letters and digits; {0:?} is not one.")]
    BadCharacter(char),
    #[error("A room code is at most {MAX_LEN} characters; this one has {0}.")]
    TooLong(usize),
}

/// Cleans up a typed code: drops spaces and dashes, upper-cases letters.
pub fn normalize(typed: &str) -> Result<String, RoomCodeError> {
    let code: String = typed
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| c.to_ascii_uppercase())
        .collect();
    if code.is_empty() {
        return Err(RoomCodeError::Empty);
    }
    if let Some(bad) = code.chars().find(|c| !c.is_ascii_alphanumeric()) {
        return Err(RoomCodeError::BadCharacter(bad));
    }
    let len = code.chars().count();
    if len > MAX_LEN {
        return Err(RoomCodeError::TooLong(len));
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_codes_are_cleaned_up() {
        assert_eq!(normalize(" k7qx 2m ").as_deref(), Ok("K7QX2M"));
        assert_eq!(normalize("K7Q-X2M").as_deref(), Ok("K7QX2M"));
    }

    #[test]
    fn bad_codes_say_what_is_wrong() {
        assert_eq!(normalize("  "), Err(RoomCodeError::Empty));
        assert_eq!(normalize("K7/QX"), Err(RoomCodeError::BadCharacter('/')));
        assert_eq!(normalize(&"A".repeat(40)), Err(RoomCodeError::TooLong(40)));
        assert!(RoomCodeError::BadCharacter('/').to_string().contains("'/'"));
    }
}
