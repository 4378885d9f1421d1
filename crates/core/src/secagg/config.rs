//! The public parameters of one SecureAgg instance, and the aggregator's local settings.
//!
//! [`Params`] is what the aggregator announces in `Begin` and every site checks before it sends
//! anything: who takes part, the threshold t, the vector length, and how ring elements decode.

use serde::{Deserialize, Serialize};

use super::error::ConfigError;
use super::graph::Graph;
use crate::fixed::FixedPoint;
use crate::wire::ParticipantId;

/// How the summed ring elements read back.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Encoding {
    /// Raw elements of Z_{2^64}; the caller decodes.
    Ring,
    /// Reals in [`FixedPoint`] (spec §3 "Quantisation"): the sum is also returned decoded.
    Fixed(FixedPoint),
}

/// The public parameters every participant agrees on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// The invited sites (U0), strictly ascending.
    pub sites: Vec<ParticipantId>,
    /// Shamir threshold t: any t sites can unmask, t − 1 cannot.
    pub threshold: usize,
    /// Coordinates per input vector.
    pub vector_len: usize,
    pub encoding: Encoding,
    /// Who shares keys and masks with whom ([`Graph::Complete`] unless SecAgg+ is asked for);
    /// with [`Graph::Harary`], `threshold` counts within each neighbourhood of k + 1 sites.
    #[serde(default)]
    pub graph: Graph,
}

impl Params {
    /// The spec's default threshold t = ⌊2n/3⌋ + 1 (§1): tolerates n − t dropouts and keeps
    /// t above the ⌈n/3⌉ − 1 colluders CAPE allows.
    pub fn default_threshold(sites: usize) -> usize {
        2 * sites / 3 + 1
    }

    /// Parameters with the default threshold; `sites` may come in any order.
    pub fn new(
        mut sites: Vec<ParticipantId>,
        vector_len: usize,
        encoding: Encoding,
    ) -> Result<Self, ConfigError> {
        sites.sort_unstable();
        let threshold = Self::default_threshold(sites.len());
        let params = Params { sites, threshold, vector_len, encoding, graph: Graph::Complete };
        params.validate()?;
        Ok(params)
    }

    /// The same parameters on `graph` with threshold `t` (per neighbourhood for SecAgg+).
    pub fn with_graph(self, graph: Graph, t: usize) -> Result<Self, ConfigError> {
        let params = Params { graph, threshold: t, ..self };
        params.validate()?;
        Ok(params)
    }

    /// SecAgg+ with degree `k` and threshold `t` (e.g. from [`super::choose_harary`]) on a
    /// permutation drawn from `rng`: the public seed is fresh, drawn once the sites are known.
    pub fn with_harary(
        self,
        k: usize,
        t: usize,
        rng: &mut crate::rng::CapeRng,
    ) -> Result<Self, ConfigError> {
        use rand_core::Rng;
        self.with_graph(Graph::Harary { k, seed: rng.next_u64() }, t)
    }

    /// The same parameters with threshold `t`.
    pub fn with_threshold(self, t: usize) -> Result<Self, ConfigError> {
        let params = Params { threshold: t, ..self };
        params.validate()?;
        Ok(params)
    }

    /// Checks everything a participant must check before taking part. Sites run this on the
    /// aggregator's `Begin`, so it must hold for parameters that came off the network.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let n = self.sites.len();
        if n < 2 {
            return Err(ConfigError::TooFewSites { sites: n });
        }
        if let Some(w) = self.sites.windows(2).find(|w| w[0] >= w[1]) {
            return Err(if w[0] == w[1] {
                ConfigError::DuplicateSite { site: w[0] }
            } else {
                ConfigError::UnsortedSites
            });
        }
        let t = self.threshold;
        match self.graph {
            Graph::Complete => {
                if t > n {
                    return Err(ConfigError::ThresholdAboveSites { threshold: t, sites: n });
                }
                if 2 * t <= n {
                    return Err(ConfigError::ThresholdAtMostHalf { threshold: t, sites: n });
                }
            }
            Graph::Harary { k, .. } => {
                if k < 2 || k + 1 >= n {
                    return Err(ConfigError::HararyDegreeOutOfRange { k, sites: n });
                }
                if k % 2 == 1 {
                    return Err(ConfigError::HararyDegreeOdd { k });
                }
                if t > k + 1 {
                    return Err(ConfigError::ThresholdAboveNeighbourhood { threshold: t, k });
                }
                if 2 * t <= k + 1 {
                    return Err(ConfigError::ThresholdAtMostHalfNeighbourhood { threshold: t, k });
                }
            }
        }
        if self.vector_len == 0 {
            return Err(ConfigError::EmptyVector);
        }
        if let Encoding::Fixed(fp) = self.encoding {
            // Deserialized values bypass FixedPoint::new: check them again.
            FixedPoint::new(fp.frac_bits(), fp.bound())?;
            fp.check_capacity(n)?;
        }
        Ok(())
    }

    pub fn is_invited(&self, site: ParticipantId) -> bool {
        self.sites.binary_search(&site).is_ok()
    }
}

/// The aggregator's settings: the public [`Params`] plus what only the aggregator needs.
#[derive(Clone, Debug, PartialEq)]
pub struct AggregatorConfig {
    pub params: Params,
    /// How long the aggregator waits in each round before it goes on with whoever answered
    /// (if at least t did). Virtual milliseconds: the driver supplies `now_ms`.
    pub round_timeout_ms: u64,
    /// Keep every masked vector y_u for display ([`super::Aggregator::masked_inputs`]); a
    /// benchmark turns this off to save S·D·8 bytes.
    pub retain_masked_inputs: bool,
}

impl AggregatorConfig {
    pub const DEFAULT_ROUND_TIMEOUT_MS: u64 = 30_000;

    pub fn new(params: Params) -> Result<Self, ConfigError> {
        params.validate()?;
        Ok(Self {
            params,
            round_timeout_ms: Self::DEFAULT_ROUND_TIMEOUT_MS,
            retain_masked_inputs: true,
        })
    }

    pub fn with_round_timeout_ms(self, round_timeout_ms: u64) -> Self {
        Self { round_timeout_ms, ..self }
    }

    pub fn with_retain_masked_inputs(self, retain_masked_inputs: bool) -> Self {
        Self { retain_masked_inputs, ..self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed::FixedPointError;

    #[test]
    fn default_threshold_matches_the_spec_table() {
        // §1: S = 4 gives t = 3; §2's table: S = 5 → 4, 6 → 5, 10 → 7.
        for (s, t) in [(2, 2), (3, 3), (4, 3), (5, 4), (6, 5), (10, 7), (64, 43)] {
            assert_eq!(Params::default_threshold(s), t, "S = {s}");
            let p = Params::new((1..=s as u32).collect(), 4, Encoding::Ring).unwrap();
            assert_eq!(p.threshold, t);
        }
    }

    #[test]
    fn bad_parameters_are_named() {
        let p = Params::new(vec![5, 3, 4, 6], 10, Encoding::Ring).unwrap();
        assert_eq!(p.sites, vec![3, 4, 5, 6], "sites are sorted");
        assert_eq!(
            p.clone().with_threshold(5),
            Err(ConfigError::ThresholdAboveSites { threshold: 5, sites: 4 })
        );
        let low = p.clone().with_threshold(2).unwrap_err();
        assert_eq!(low, ConfigError::ThresholdAtMostHalf { threshold: 2, sites: 4 });
        assert!(low.to_string().contains("half"), "{low}");
        assert_eq!(
            Params::new(vec![1, 2, 2], 1, Encoding::Ring),
            Err(ConfigError::DuplicateSite { site: 2 })
        );
        assert_eq!(
            Params::new(vec![1], 1, Encoding::Ring),
            Err(ConfigError::TooFewSites { sites: 1 })
        );
        assert_eq!(Params::new(vec![1, 2], 0, Encoding::Ring), Err(ConfigError::EmptyVector));
        let unsorted = Params { sites: vec![2, 1, 3], ..p.clone() };
        assert_eq!(unsorted.validate(), Err(ConfigError::UnsortedSites));
        // overflow refused up front: 4 × 2^30 × 2^32 = 2^64 > 2^62
        let fp = FixedPoint::new(32, (1u64 << 30) as f64).unwrap();
        assert!(matches!(
            Params::new(vec![1, 2, 3, 4], 1, Encoding::Fixed(fp)),
            Err(ConfigError::FixedPoint(FixedPointError::Capacity { parties: 4, .. }))
        ));
    }
}
