/*!
The public parameters of one private-mean study, and the noise they imply (spec §2 Lemma 1, the
Conventions; cape::privacy for c_S).

The query is the mean of a site's N_s rows, each in [0, 1]^d. Under replace-one neighbours its L2
sensitivity is Δ = √d/N_s. The local noise τ is calibrated to (ε, δ) for that Δ, and the noise
multiplier z = τ/Δ is what the ledger accounts.

**Calibration and ε ≥ 1 (decided here).** [`Calibration::Classical`] uses the papers' formula
τ = Δ·c(δ)/ε ([`gaussian::classical_sigma_as_in_papers`]) at any ε > 0, and
[`NoisePlan::classical_bound_covers`] says whether the classical theorem backs the (ε, δ) claim
(only for ε < 1): the UI must say so when it does not. [`Calibration::Analytic`] uses the analytic
Gaussian mechanism (Balle & Wang 2018), valid for every ε. Neither choice can understate a site's
spend: the ledger accounts each release from z (and the collusion factor), never from the ε it was
calibrated for.
*/

use serde::{Deserialize, Serialize};

use crate::accountant::analytic_gaussian::analytic_sigma;
use crate::cape::noise_format;
use crate::cape::privacy::{Collusion, c_s_full_view};
use crate::fixed::FixedPoint;
use crate::gaussian;
use crate::secagg::{self, Encoding};
use crate::wire::ParticipantId;

use super::error::StudyConfigError;
use super::query::Query;

/// How the local noise τ is calibrated to (ε, δ).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Calibration {
    /// τ = Δ·c(δ)/ε, c(δ) = √(2 ln(1.25/δ)), as in the papers; a theorem only for ε < 1.
    #[default]
    Classical,
    /// The analytic Gaussian mechanism: the smallest τ that is (ε, δ)-DP, for every ε > 0.
    Analytic,
}

/// Who masks with whom in each attempt's SecureAgg round (issue 14 item 3; the guarantees of each
/// graph are stated in [`crate::secagg::graph`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Masking {
    /// Every pair of sites (Bonawitz et al. 2017): SecureAgg's threshold is the study's t.
    #[default]
    Complete,
    /// SecAgg+ (Bell et al. 2020): each site masks with k neighbours on a Harary graph over a
    /// permutation the aggregator draws afresh for every attempt, once its sites are known, and
    /// Shamir-shares its secrets within its neighbourhood of k + 1 sites at `threshold`. The
    /// study's t keeps its other meaning: the fewest sites an estimate is formed from.
    SecAggPlus { k: usize, threshold: usize },
}

impl Masking {
    /// SecAgg+ for `sites` sites when no degree is asked for: k = 2⌈log₂ S⌉ (as SecAgg+ grows
    /// it), at most the largest even k with k + 1 < S, and the smallest threshold above half the
    /// neighbourhood, t = k/2 + 1 (the most dropouts tolerated, and so the fewest colluding
    /// neighbours: t of them could unmask a site). `None` below 4 sites, where no Harary graph
    /// is sparser than the complete one.
    pub fn secagg_plus_for(sites: usize) -> Option<Masking> {
        if sites < 4 {
            return None;
        }
        let log = (usize::BITS - (sites - 1).leading_zeros()) as usize; // ⌈log₂ S⌉
        let largest = (sites - 2) & !1;
        let k = (2 * log).min(largest);
        Some(Masking::SecAggPlus { k, threshold: k / 2 + 1 })
    }

    /// SecureAgg's graph for an attempt (`harary_seed` is the permutation's public seed) and its
    /// threshold, given the study's t.
    fn graph(self, study_threshold: usize, harary_seed: u64) -> (secagg::Graph, usize) {
        match self {
            Masking::Complete => (secagg::Graph::Complete, study_threshold),
            Masking::SecAggPlus { k, threshold } => {
                (secagg::Graph::Harary { k, seed: harary_seed }, threshold)
            }
        }
    }

    /// Whether an attempt's SecureAgg `params` use this masking (any seed) for a study of
    /// threshold `study_threshold`.
    pub fn matches(self, params: &secagg::Params, study_threshold: usize) -> bool {
        let (graph, threshold) = self.graph(study_threshold, 0);
        let same_graph = match (graph, params.graph) {
            (secagg::Graph::Complete, secagg::Graph::Complete) => true,
            (secagg::Graph::Harary { k, .. }, secagg::Graph::Harary { k: got, .. }) => k == got,
            _ => false,
        };
        same_graph && params.threshold == threshold
    }
}

impl std::fmt::Display for Masking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Masking::Complete => write!(f, "the complete graph"),
            Masking::SecAggPlus { k, threshold } => {
                write!(f, "SecAgg+ with k = {k} neighbours, t = {threshold} per neighbourhood")
            }
        }
    }
}

/// What the aggregator announces in `mean/start` and every site checks before it answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StudyParams {
    /// The invited sites, strictly ascending.
    pub sites: Vec<ParticipantId>,
    /// The (ε, δ) the local noise is calibrated to.
    pub epsilon: f64,
    pub delta: f64,
    /// N_s: rows per site (the symmetric case of spec §2: every site holds the same number).
    pub values_per_site: usize,
    /// d: values per row, each in [0, 1].
    pub dimension: usize,
    /// SecureAgg's threshold t, also the fewest sites a CAPE estimate is formed from.
    pub threshold: usize,
    /// Whether every site also sends the conventional release f(x_s) + N(0, τ²) (spec §2
    /// Proposition 1) for comparison: a second release, accounted as one.
    pub also_conventional: bool,
    pub calibration: Calibration,
    /// How many times the aggregator may re-run the round among the survivors after a site broke
    /// the zero sum (spec Remark 4). Each re-run is one more release per site; sites refuse more.
    pub max_reruns: u32,
    /// What the sites compute: their rows' mean (the default) or capeFM's arrays.
    #[serde(default)]
    pub query: Query,
    /// Who masks with whom in SecureAgg: all pairs (the default) or SecAgg+.
    #[serde(default)]
    pub masking: Masking,
}

/// The noise one study implies, computed from [`StudyParams`] alone (all public).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoisePlan {
    /// Δ of the released vector: √d/N_s for a mean, m for a regression ([`Query::sensitivity`]).
    pub sensitivity: f64,
    /// τ: the standard deviation of each site's message noise (ê_s, and the conventional noise).
    pub local_sd: f64,
    /// z = τ/Δ.
    pub noise_multiplier: f64,
    pub calibration: Calibration,
    /// Whether the calibration's theorem covers the chosen ε (false: classical at ε ≥ 1).
    pub classical_bound_covers: bool,
    /// The fixed-point format of ê_s in SecureAgg ([`crate::cape::noise_format`]).
    pub format: FixedPoint,
}

impl StudyParams {
    pub const DEFAULT_MAX_RERUNS: u32 = 2;
    /// More re-runs than this would let an aggregator drain budgets by breaking rounds.
    pub const MAX_RERUNS: u32 = 10;
    /// A bound on d that keeps one study's vectors displayable and its messages small.
    pub const MAX_DIMENSION: usize = 1 << 16;
    /// A bound on a regression's D: Λ₂ alone releases D(D+1)/2 values.
    pub const MAX_FEATURES: usize = 64;

    /// A study of `sites` (any order) with d = 1, the default threshold ⌊2S/3⌋ + 1, no
    /// conventional release, classical calibration and [`Self::DEFAULT_MAX_RERUNS`].
    pub fn new(
        mut sites: Vec<ParticipantId>,
        epsilon: f64,
        delta: f64,
        values_per_site: usize,
    ) -> Result<Self, StudyConfigError> {
        sites.sort_unstable();
        let threshold = secagg::Params::default_threshold(sites.len());
        let params = StudyParams {
            sites,
            epsilon,
            delta,
            values_per_site,
            dimension: 1,
            threshold,
            also_conventional: false,
            calibration: Calibration::Classical,
            max_reruns: Self::DEFAULT_MAX_RERUNS,
            query: Query::Mean,
            masking: Masking::Complete,
        };
        params.validate()?;
        Ok(params)
    }

    pub fn with_dimension(self, dimension: usize) -> Result<Self, StudyConfigError> {
        Self { dimension, ..self }.validated()
    }

    pub fn with_threshold(self, threshold: usize) -> Result<Self, StudyConfigError> {
        Self { threshold, ..self }.validated()
    }

    pub fn with_conventional(self, also_conventional: bool) -> Self {
        Self { also_conventional, ..self }
    }

    pub fn with_calibration(self, calibration: Calibration) -> Result<Self, StudyConfigError> {
        Self { calibration, ..self }.validated()
    }

    /// The same study computing `query` instead (the dimension is then D, the features).
    pub fn with_query(self, query: Query) -> Result<Self, StudyConfigError> {
        Self { query, ..self }.validated()
    }

    /// The length of the vector each site releases.
    pub fn vector_len(&self) -> usize {
        self.query.vector_len(self.dimension)
    }

    /// The same study masked as `masking` says (SecAgg+ needs k + 1 < S and a neighbourhood
    /// threshold above (k + 1)/2).
    pub fn with_masking(self, masking: Masking) -> Result<Self, StudyConfigError> {
        Self { masking, ..self }.validated()
    }

    pub fn with_max_reruns(self, max_reruns: u32) -> Result<Self, StudyConfigError> {
        Self { max_reruns, ..self }.validated()
    }

    fn validated(self) -> Result<Self, StudyConfigError> {
        self.validate()?;
        Ok(self)
    }

    pub fn is_invited(&self, site: ParticipantId) -> bool {
        self.sites.binary_search(&site).is_ok()
    }

    /// S, the number of invited sites.
    pub fn site_count(&self) -> usize {
        self.sites.len()
    }

    /// The most attempts (first round plus re-runs) a site will take part in.
    pub fn max_attempts(&self) -> u32 {
        1 + self.max_reruns
    }

    /// Everything a participant checks; sites run it on parameters that came off the network.
    pub fn validate(&self) -> Result<(), StudyConfigError> {
        self.noise().map(|_| ())
    }

    /// Validates and returns Δ, τ, z and the noise format.
    pub fn noise(&self) -> Result<NoisePlan, StudyConfigError> {
        if !(self.epsilon.is_finite() && self.epsilon > 0.0) {
            return Err(StudyConfigError::Epsilon(self.epsilon));
        }
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(StudyConfigError::Delta(self.delta));
        }
        if self.values_per_site == 0 {
            return Err(StudyConfigError::NoValues);
        }
        let max = match self.query {
            Query::Mean => Self::MAX_DIMENSION,
            Query::Regression(_) => Self::MAX_FEATURES,
        };
        if !(1..=max).contains(&self.dimension) {
            return Err(StudyConfigError::Dimension { dimension: self.dimension, max });
        }
        if self.max_reruns > Self::MAX_RERUNS {
            return Err(StudyConfigError::TooManyReruns {
                max_reruns: self.max_reruns,
                max: Self::MAX_RERUNS,
            });
        }
        let sensitivity = self.query.sensitivity(self.dimension, self.values_per_site);
        let local_sd = match self.calibration {
            Calibration::Classical => {
                gaussian::classical_sigma_as_in_papers(sensitivity, self.epsilon, self.delta)
            }
            Calibration::Analytic => analytic_sigma(sensitivity, self.epsilon, self.delta),
        }
        .map_err(StudyConfigError::Calibration)?;
        let format = noise_format(local_sd, self.sites.len().max(1))
            .map_err(|e| StudyConfigError::NoiseFormat(e.to_string()))?;
        // SecureAgg's own checks: at least 2 sites, sorted and distinct, n/2 < t ≤ n, capacity;
        // under SecAgg+ the same for its degree and neighbourhood threshold, and the study's t
        // still n/2 < t ≤ n of the invited sites (the fewest sites of an estimate).
        self.secagg_params(self.sites.clone(), format, 0)?;
        if self.masking != Masking::Complete {
            Self { masking: Masking::Complete, ..self.clone() }.secagg_params(
                self.sites.clone(),
                format,
                0,
            )?;
        }
        Ok(NoisePlan {
            sensitivity,
            local_sd,
            noise_multiplier: local_sd / sensitivity,
            calibration: self.calibration,
            classical_bound_covers: match self.calibration {
                Calibration::Classical => self.epsilon < 1.0,
                Calibration::Analytic => true,
            },
            format,
        })
    }

    /// The SecureAgg parameters of one attempt among `sites` (ascending): ê_s in `format`, the
    /// study's masking with its threshold; `harary_seed` is SecAgg+'s public permutation seed
    /// (unused on the complete graph).
    pub fn secagg_params(
        &self,
        sites: Vec<ParticipantId>,
        format: FixedPoint,
        harary_seed: u64,
    ) -> Result<secagg::Params, StudyConfigError> {
        let (graph, threshold) = self.masking.graph(self.threshold, harary_seed);
        let params = secagg::Params {
            sites,
            threshold,
            vector_len: self.vector_len(),
            encoding: Encoding::Fixed(format),
            graph,
        };
        params.validate().map_err(StudyConfigError::SecAgg)?;
        Ok(params)
    }

    /// The collusion factor a site's CAPE release is accounted with before it knows |U|: the
    /// largest full-view c_S over every |U| from t to S (spec §1's S_C = ⌈|U|/3⌉ − 1). At release
    /// time the site uses the c_S of the actual |U|, never larger than this.
    pub fn worst_case_collusion_factor(&self) -> f64 {
        (self.threshold.max(2)..=self.sites.len().max(2)).map(collusion_factor).fold(1.0, f64::max)
    }
}

/// c_S of the adversary's full view (cape::privacy::c_s_full_view) for a release among `sites`
/// sites with the default S_C = ⌈S/3⌉ − 1: the factor a CAPE release is accounted with.
pub fn collusion_factor(sites: usize) -> f64 {
    match Collusion::default_for(sites) {
        Ok(collusion) => c_s_full_view(&collusion),
        // Fewer than 2 sites cannot form a CAPE round; the caller never gets here.
        Err(_) => f64::INFINITY,
    }
}

impl NoisePlan {
    /// Whether (ε, δ) is a theorem for this calibration, as a sentence for the UI.
    pub fn calibration_note(&self, epsilon: f64) -> Option<String> {
        (!self.classical_bound_covers).then(|| {
            format!(
                "ε = {epsilon} ≥ 1: the classical calibration τ = Δ·c(δ)/ε is the papers' formula, \
                 not an (ε, δ) guarantee there; the δ's below come from CAPE's Theorem 1 and the \
                 ledger from the noise multiplier z = {:.4}. Choose the analytic calibration for \
                 a guarantee at this ε.",
                self.noise_multiplier
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a site checks in an attempt's `Begin`: the study's graph and threshold, any seed.
    #[test]
    fn a_begin_matches_the_masking_only_with_its_graph_and_threshold() {
        let plus = Masking::SecAggPlus { k: 2, threshold: 2 };
        let study = StudyParams::new(vec![1, 2, 3, 4, 5], 0.5, 1e-5, 10).unwrap();
        let format = study.noise().unwrap().format;
        let complete = study.secagg_params(study.sites.clone(), format, 0).unwrap();
        let study_plus = study.clone().with_masking(plus).unwrap();
        let harary = study_plus.secagg_params(study.sites.clone(), format, 99).unwrap();
        assert_eq!(harary.graph, secagg::Graph::Harary { k: 2, seed: 99 });
        assert_eq!((complete.threshold, harary.threshold), (study.threshold, 2));
        assert!(Masking::Complete.matches(&complete, study.threshold));
        assert!(plus.matches(&harary, study.threshold));
        // a complete-graph Begin for a SecAgg+ study, or the other way round, or another k or t
        assert!(!plus.matches(&complete, study.threshold));
        assert!(!Masking::Complete.matches(&harary, study.threshold));
        assert!(!Masking::SecAggPlus { k: 2, threshold: 3 }.matches(&harary, study.threshold));
        assert!(!Masking::SecAggPlus { k: 4, threshold: 2 }.matches(&harary, study.threshold));
    }

    #[test]
    fn noise_follows_the_spec_conventions() {
        // Appendix A toy example: N = 1000, ε = 0.5, δ = 1e-5 gives τ_pool = 9.69e-3; with S = 4
        // sites of N_s = 250 rows the local τ is S·τ_pool.
        let p = StudyParams::new(vec![4, 2, 3, 5], 0.5, 1e-5, 250).unwrap();
        assert_eq!(p.sites, vec![2, 3, 4, 5]);
        assert_eq!(p.threshold, 3);
        let plan = p.noise().unwrap();
        assert!((plan.sensitivity - 1.0 / 250.0).abs() < 1e-15);
        assert!((plan.local_sd - 4.0 * 9.69e-3).abs() < 4.0 * 5e-6, "{}", plan.local_sd);
        assert!((plan.noise_multiplier - 4.84481 / 0.5).abs() < 1e-4);
        assert!(plan.classical_bound_covers);
        // d = 4: Δ doubles, z does not change
        let p4 = p.clone().with_dimension(4).unwrap().noise().unwrap();
        assert!((p4.sensitivity - 2.0 / 250.0).abs() < 1e-15);
        assert!((p4.noise_multiplier - plan.noise_multiplier).abs() < 1e-9);
    }

    #[test]
    fn epsilon_at_least_one_is_flagged_or_calibrated_analytically() {
        let p = StudyParams::new(vec![1, 2, 3], 2.0, 1e-5, 100).unwrap();
        let classical = p.noise().unwrap();
        assert!(!classical.classical_bound_covers);
        assert!(classical.calibration_note(2.0).unwrap().contains("analytic"));
        let analytic = p.with_calibration(Calibration::Analytic).unwrap().noise().unwrap();
        assert!(analytic.classical_bound_covers && analytic.calibration_note(2.0).is_none());
        // the analytic mechanism needs less noise than the classical formula at ε = 2
        assert!(analytic.local_sd < classical.local_sd);
    }

    #[test]
    fn bad_parameters_are_named() {
        let p = StudyParams::new(vec![1, 2, 3, 4], 0.5, 1e-5, 10).unwrap();
        assert_eq!(
            StudyParams::new(vec![1, 2], -1.0, 1e-5, 10),
            Err(StudyConfigError::Epsilon(-1.0))
        );
        assert_eq!(StudyParams::new(vec![1, 2], 0.5, 1.0, 10), Err(StudyConfigError::Delta(1.0)));
        assert_eq!(StudyParams::new(vec![1, 2], 0.5, 1e-5, 0), Err(StudyConfigError::NoValues));
        assert!(matches!(p.clone().with_dimension(0), Err(StudyConfigError::Dimension { .. })));
        assert!(matches!(
            p.clone().with_threshold(2),
            Err(StudyConfigError::SecAgg(secagg::ConfigError::ThresholdAtMostHalf { .. }))
        ));
        assert!(matches!(
            StudyParams::new(vec![1], 0.5, 1e-5, 10),
            Err(StudyConfigError::SecAgg(secagg::ConfigError::TooFewSites { sites: 1 }))
        ));
        assert!(matches!(p.with_max_reruns(11), Err(StudyConfigError::TooManyReruns { .. })));
    }

    #[test]
    fn the_preview_collusion_factor_covers_every_possible_u() {
        // S = 7, t = 5: |U| ∈ {5, 6, 7}; c_S(full view) = 1.875, 1.8857, 2.1
        let p = StudyParams::new((1..=7).collect(), 0.5, 1e-5, 10).unwrap();
        let worst = p.worst_case_collusion_factor();
        assert!((worst - 2.1).abs() < 1e-12, "{worst}");
        for n in 5..=7 {
            assert!(collusion_factor(n) <= worst);
        }
        assert!((collusion_factor(4) - 28.0 / 15.0).abs() < 1e-12);
    }
}
