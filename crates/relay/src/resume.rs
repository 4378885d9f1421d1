/*!
Resume tokens: the secret that lets a reconnecting tab take back its participant id.

128 bits from the thread-local CSPRNG, written as 32 lower-case hex digits. Whoever presents a
token speaks as that participant, so tokens are compared in constant time and never logged.
*/

use std::fmt;

/// Random bytes in a token.
const TOKEN_BYTES: usize = 16;

/// A participant's resume secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ResumeToken(String);

impl ResumeToken {
    /// A fresh token with 128 random bits.
    pub fn random() -> Self {
        let mut bytes = [0u8; TOKEN_BYTES];
        rand::fill(&mut bytes);
        ResumeToken(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `presented` is this token, in time independent of where they differ.
    pub fn matches(&self, presented: &str) -> bool {
        let ours = self.0.as_bytes();
        let theirs = presented.as_bytes();
        ours.len() == theirs.len()
            && ours.iter().zip(theirs).fold(0u8, |diff, (a, b)| diff | (a ^ b.to_ascii_lowercase()))
                == 0
    }
}

/// Never prints the secret.
impl fmt::Debug for ResumeToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ResumeToken(…)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_128_bit_hex_and_distinct() {
        let a = ResumeToken::random();
        let b = ResumeToken::random();
        assert_eq!(a.as_str().len(), 2 * TOKEN_BYTES);
        assert!(a.as_str().bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
    }

    #[test]
    fn matching_is_exact_up_to_hex_case() {
        let token = ResumeToken::random();
        assert!(token.matches(token.as_str()));
        assert!(token.matches(&token.as_str().to_ascii_uppercase()));
        assert!(!token.matches(&token.as_str()[1..]));
        assert!(!token.matches(""));
        let mut flipped = token.as_str().to_owned();
        let last = if flipped.ends_with('0') { "1" } else { "0" };
        flipped.replace_range(31.., last);
        assert!(!token.matches(&flipped));
        assert!(!format!("{token:?}").contains(token.as_str()));
    }
}
