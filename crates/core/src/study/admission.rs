//! How an invitation ends when too few sites accept: one count and one sentence for the one-shot
//! studies ([`super::mean`]) and the iterative ones ([`super::iterative`]).

use serde::{Deserialize, Serialize};

/// Fewer than t sites accepted. `declined`: sites that said no (budget, data, settings);
/// `silent`: sites that had not answered, or had left, when t became out of reach (absent from
/// older exports: 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error(
    "only {accepted} site(s) accepted ({declined} declined, {silent} had not answered or had \
     left), the study needs t = {need}"
)]
pub struct TooFewAccepted {
    pub accepted: usize,
    #[serde(default)]
    pub declined: usize,
    #[serde(default)]
    pub silent: usize,
    pub need: usize,
}

impl TooFewAccepted {
    /// Of `invited` sites, `accepted` accepted and `declined` declined; the rest were silent.
    pub fn of(invited: usize, accepted: usize, declined: usize, need: usize) -> Self {
        let silent = invited.saturating_sub(accepted + declined);
        TooFewAccepted { accepted, declined, silent, need }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_silent_and_reads_as_one_sentence() {
        let t = TooFewAccepted::of(5, 1, 2, 3);
        assert_eq!(t.silent, 2);
        assert_eq!(
            t.to_string(),
            "only 1 site(s) accepted (2 declined, 2 had not answered or had left), the study needs \
             t = 3"
        );
        // older exports have neither count
        let old: TooFewAccepted = serde_json::from_str(r#"{"accepted":0,"need":3}"#).unwrap();
        assert_eq!(old, TooFewAccepted { accepted: 0, declined: 0, silent: 0, need: 3 });
    }
}
