/*!
The seam between CAPE and the secure sum (spec §2 Algorithm 1 step 2, §3).

A site hands a [`NoiseShare`] (its noise as ring elements of Z_{2^64}, from
[`crate::fixed::FixedPoint`]) to the secure sum, and gets back a [`NoiseSum`]: the ring sum over the
set U of sites whose share entered it, and U itself. CAPE needs nothing else from SecureAgg.

The sum stays in the ring, not remapped to a real, so that each site can split it exactly
([`super::zero_sum`]): a real SecureAgg round should hand over the u64 sum it unmasked.

[`SecureSum`] is the trait for running the whole sum in process (simulations, Monte Carlo, the
CLI); [`IdealSecureSum`] computes exactly the sum the protocol produces, directly. A real
SecureAgg round in process can implement the same trait.
*/

use serde::{Deserialize, Serialize};

use crate::fixed;
use crate::wire::ParticipantId;

/// What a site puts into the secure sum: its encoded noise, one ring element per coordinate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoiseShare {
    pub site: ParticipantId,
    pub ring: Vec<u64>,
}

/// What the secure sum hands back to every site: the wrapping sum of the shares of U, and U
/// (sorted ascending, without repeats).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoiseSum {
    pub contributors: Vec<ParticipantId>,
    pub ring_sum: Vec<u64>,
}

/// Runs one secure sum over the shares of the sites that are present.
pub trait SecureSum {
    type Error: std::error::Error;

    /// Sums `shares` (one per site, all of one length). The result's `contributors` is the set U of
    /// sites whose share entered the sum.
    fn sum(&mut self, shares: &[NoiseShare]) -> Result<NoiseSum, Self::Error>;
}

/// Why the ideal secure sum refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdealSumError {
    #[error("only {got} sites sent noise, the secure sum needs at least t = {threshold}")]
    BelowThreshold { got: usize, threshold: usize },
    #[error("site {site} sent {got} noise coordinates, the first site sent {expected}")]
    LengthMismatch { site: ParticipantId, expected: usize, got: usize },
    #[error("site {site} sent two noise shares; each site contributes once")]
    Duplicate { site: ParticipantId },
}

/// The sum SecureAgg would output, computed in the clear: the functionality without the protocol.
/// For simulations only: it sees every share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdealSecureSum {
    /// The least number of shares to sum, as SecureAgg's threshold t (spec §1: t ≥ ⌊2S/3⌋ + 1).
    pub threshold: usize,
}

impl IdealSecureSum {
    /// An ideal sum that accepts any non-empty set of shares.
    pub fn new() -> Self {
        Self { threshold: 1 }
    }

    /// An ideal sum that, like SecureAgg, refuses fewer than `threshold` shares.
    pub fn with_threshold(threshold: usize) -> Self {
        Self { threshold: threshold.max(1) }
    }
}

impl Default for IdealSecureSum {
    fn default() -> Self {
        Self::new()
    }
}

impl SecureSum for IdealSecureSum {
    type Error = IdealSumError;

    fn sum(&mut self, shares: &[NoiseShare]) -> Result<NoiseSum, IdealSumError> {
        if shares.len() < self.threshold {
            return Err(IdealSumError::BelowThreshold {
                got: shares.len(),
                threshold: self.threshold,
            });
        }
        let len = shares[0].ring.len();
        let mut ring_sum = vec![0u64; len];
        let mut contributors = Vec::with_capacity(shares.len());
        for share in shares {
            if share.ring.len() != len {
                return Err(IdealSumError::LengthMismatch {
                    site: share.site,
                    expected: len,
                    got: share.ring.len(),
                });
            }
            if contributors.contains(&share.site) {
                return Err(IdealSumError::Duplicate { site: share.site });
            }
            fixed::add_assign(&mut ring_sum, &share.ring);
            contributors.push(share.site);
        }
        contributors.sort_unstable();
        Ok(NoiseSum { contributors, ring_sum })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_wrap_and_list_the_contributors_sorted() {
        let shares = [
            NoiseShare { site: 7, ring: vec![u64::MAX, 5] },
            NoiseShare { site: 2, ring: vec![3, (-9i64) as u64] },
        ];
        let sum = IdealSecureSum::new().sum(&shares).unwrap();
        assert_eq!(sum.contributors, vec![2, 7]);
        assert_eq!(sum.ring_sum, vec![2, (-4i64) as u64]);
    }

    #[test]
    fn refuses_what_secure_agg_would_refuse() {
        let one = [NoiseShare { site: 1, ring: vec![1] }];
        assert_eq!(
            IdealSecureSum::with_threshold(3).sum(&one),
            Err(IdealSumError::BelowThreshold { got: 1, threshold: 3 })
        );
        assert!(IdealSecureSum::new().sum(&[]).is_err());
        let ragged =
            [NoiseShare { site: 1, ring: vec![1, 2] }, NoiseShare { site: 2, ring: vec![1] }];
        assert_eq!(
            IdealSecureSum::new().sum(&ragged),
            Err(IdealSumError::LengthMismatch { site: 2, expected: 2, got: 1 })
        );
        let twice = [NoiseShare { site: 4, ring: vec![1] }, NoiseShare { site: 4, ring: vec![1] }];
        assert_eq!(IdealSecureSum::new().sum(&twice), Err(IdealSumError::Duplicate { site: 4 }));
    }
}
