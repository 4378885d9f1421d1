/*!
Randomness: one cryptographically secure generator type for everything that touches privacy.

All privacy noise, key material and masks come from [`CapeRng`] (ChaCha20). A run either seeds it
from the operating system ([`Seed::Os`], `crypto.getRandomValues` in a browser) or from a number
([`Seed::Fixed`]) so that a native run reproduces bit for bit. A fixed seed is for experiments and
tests: its output is as predictable as the seed, so the app and the CLI say so when one is used.

Sub-streams ([`derive()`]) give each site or trial its own independent generator from one run seed,
so adding a site never changes another site's numbers.
*/

use rand_core::SeedableRng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The generator for privacy noise, keys and masks.
pub type CapeRng = chacha20::ChaCha20Rng;

/// Where a run's randomness comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Seed {
    /// Fresh entropy from the operating system: the only choice that gives the privacy guarantee.
    Os,
    /// Reproducible: the same seed gives the same run. Not private against anyone who knows it.
    Fixed(u64),
}

impl Seed {
    /// A generator for this seed and `label` (e.g. `"site/3"`), independent across labels.
    pub fn rng(self, label: &str) -> CapeRng {
        match self {
            Seed::Os => os_rng(),
            Seed::Fixed(seed) => derive(seed, label),
        }
    }
}

/// A generator seeded from the operating system's entropy source.
pub fn os_rng() -> CapeRng {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).expect("the operating system's random source is unavailable");
    CapeRng::from_seed(key)
}

/// A reproducible generator for `label` under the run seed `seed`: ChaCha20 keyed by
/// SHA-256(seed ‖ label).
pub fn derive(seed: u64, label: &str) -> CapeRng {
    let mut h = Sha256::new();
    h.update(b"capelab/rng/v1");
    h.update(seed.to_le_bytes());
    h.update(label.as_bytes());
    CapeRng::from_seed(h.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    #[test]
    fn fixed_seeds_reproduce_and_labels_separate() {
        let a: [u64; 4] = Seed::Fixed(7).rng("site/1").random();
        let b: [u64; 4] = Seed::Fixed(7).rng("site/1").random();
        let c: [u64; 4] = Seed::Fixed(7).rng("site/2").random();
        let d: [u64; 4] = Seed::Fixed(8).rng("site/1").random();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }

    #[test]
    fn os_seeds_differ() {
        let a: [u64; 4] = Seed::Os.rng("x").random();
        let b: [u64; 4] = Seed::Os.rng("x").random();
        assert_ne!(a, b);
    }
}
