/*!
Algorithm 2, aggregator side (spec §2 step 3; Section III-C step 5).

a_cape = (1/|U|)·Σ_{s∈U} â_s, or Σ_s μ_s·â_s in a weighted round. The zero-sum noise cancels only if
*every* site of U released: a site that vanished after its noise entered the sum leaves its −e_s
share in the others' messages (Remark 4). The estimator therefore compares the senders with U and
refuses with [`EstimateError::ZeroSumBroken`], naming the survivors to re-run the round with.
*/

use crate::wire::ParticipantId;

use super::error::EstimateError;
use super::site::SiteRelease;

/// How the aggregator combines the releases.
#[derive(Clone, Debug, PartialEq)]
pub enum CapeEstimator {
    /// Algorithm 2 step 3: the mean over U.
    Mean,
    /// Section III-C step 5: Σμ_s·â_s over the planned sites, `weights` sorted by site.
    /// Build it with [`super::AsymmetricPlan::estimator`].
    Weighted { weights: Vec<(ParticipantId, f64)> },
}

impl CapeEstimator {
    /// The CAPE estimate from `releases`, where `contributors` is U, the set of sites whose noise
    /// entered the secure sum ([`super::NoiseSum::contributors`]).
    pub fn estimate(
        &self,
        contributors: &[ParticipantId],
        releases: &[SiteRelease],
    ) -> Result<Vec<f64>, EstimateError> {
        if contributors.is_empty() {
            return Err(EstimateError::NoContributors);
        }
        let len = check_releases(releases)?;
        let mut senders: Vec<ParticipantId> = releases.iter().map(|r| r.site).collect();
        senders.sort_unstable();
        if let Some(&site) = senders.iter().find(|s| !contributors.contains(s)) {
            return Err(EstimateError::UnexpectedSender {
                site,
                contributors: contributors.to_vec(),
            });
        }
        let missing: Vec<ParticipantId> =
            contributors.iter().copied().filter(|c| senders.binary_search(c).is_err()).collect();
        if !missing.is_empty() {
            return Err(EstimateError::ZeroSumBroken { missing, survivors: senders });
        }
        let mut estimate = vec![0.0; len];
        match self {
            CapeEstimator::Mean => {
                let share = 1.0 / releases.len() as f64;
                for release in releases {
                    for (a, v) in estimate.iter_mut().zip(&release.values) {
                        *a += share * v;
                    }
                }
            }
            CapeEstimator::Weighted { weights } => {
                let planned: Vec<ParticipantId> = weights.iter().map(|(s, _)| *s).collect();
                if planned != senders {
                    return Err(EstimateError::WeightedRoundChanged {
                        planned,
                        contributors: contributors.to_vec(),
                    });
                }
                for release in releases {
                    let weight = weights.iter().find(|(s, _)| *s == release.site).map(|w| w.1);
                    let weight = weight.expect("every sender is planned, checked above");
                    for (a, v) in estimate.iter_mut().zip(&release.values) {
                        *a += weight * v;
                    }
                }
            }
        }
        Ok(estimate)
    }
}

/// Checks that the releases are non-empty, from distinct sites, of one length and finite; returns
/// the length.
pub(super) fn check_releases(releases: &[SiteRelease]) -> Result<usize, EstimateError> {
    let first = releases.first().ok_or(EstimateError::NoReleases)?;
    let len = first.values.len();
    for (i, release) in releases.iter().enumerate() {
        if releases[..i].iter().any(|r| r.site == release.site) {
            return Err(EstimateError::DuplicateSender { site: release.site });
        }
        if release.values.len() != len {
            return Err(EstimateError::LengthMismatch {
                site: release.site,
                expected: len,
                got: release.values.len(),
            });
        }
        if let Some((index, &value)) =
            release.values.iter().enumerate().find(|(_, v)| !v.is_finite())
        {
            return Err(EstimateError::NotFinite { site: release.site, index, value });
        }
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(site: ParticipantId, values: &[f64]) -> SiteRelease {
        SiteRelease { site, values: values.to_vec() }
    }

    #[test]
    fn mean_and_weighted_sums() {
        let releases = [rel(1, &[1.0, 2.0]), rel(2, &[3.0, -2.0])];
        assert_eq!(CapeEstimator::Mean.estimate(&[1, 2], &releases).unwrap(), vec![2.0, 0.0]);
        let weighted = CapeEstimator::Weighted { weights: vec![(1, 0.25), (2, 0.75)] };
        assert_eq!(weighted.estimate(&[1, 2], &releases).unwrap(), vec![2.5, -1.0]);
    }

    #[test]
    fn a_missing_contributor_breaks_the_zero_sum() {
        let releases = [rel(3, &[1.0]), rel(1, &[1.0])];
        assert_eq!(
            CapeEstimator::Mean.estimate(&[1, 2, 3], &releases),
            Err(EstimateError::ZeroSumBroken { missing: vec![2], survivors: vec![1, 3] })
        );
        let message = CapeEstimator::Mean.estimate(&[1, 2, 3], &releases).unwrap_err().to_string();
        assert!(message.contains("re-run") && message.contains("[1, 3]"), "{message}");
    }

    #[test]
    fn malformed_releases_are_refused() {
        let m = CapeEstimator::Mean;
        assert_eq!(m.estimate(&[1], &[]), Err(EstimateError::NoReleases));
        assert_eq!(m.estimate(&[], &[rel(1, &[0.0])]), Err(EstimateError::NoContributors));
        assert_eq!(
            m.estimate(&[1], &[rel(1, &[0.0]), rel(1, &[0.0])]),
            Err(EstimateError::DuplicateSender { site: 1 })
        );
        assert_eq!(
            m.estimate(&[1, 2], &[rel(1, &[0.0]), rel(2, &[0.0, 1.0])]),
            Err(EstimateError::LengthMismatch { site: 2, expected: 1, got: 2 })
        );
        assert!(matches!(
            m.estimate(&[1], &[rel(1, &[0.0, f64::NAN])]),
            Err(EstimateError::NotFinite { site: 1, index: 1, .. })
        ));
        assert_eq!(
            m.estimate(&[1], &[rel(1, &[0.0]), rel(5, &[0.0])]),
            Err(EstimateError::UnexpectedSender { site: 5, contributors: vec![1] })
        );
        let weighted = CapeEstimator::Weighted { weights: vec![(1, 0.5), (2, 0.5)] };
        assert_eq!(
            weighted.estimate(&[1], &[rel(1, &[0.0])]),
            Err(EstimateError::WeightedRoundChanged { planned: vec![1, 2], contributors: vec![1] })
        );
    }
}
