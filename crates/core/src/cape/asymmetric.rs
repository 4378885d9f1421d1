/*!
CAPE with weights and unequal sites: Section III-C of seed 000 (spec §2 "Asymmetric extension",
§8 pitfall 2).

Inputs, all public: weights μ_s > 0 with Σμ_s = 1 (default μ_s = N_s/N), each site's local noise
target τ_s and the pooled target τ_pool. Site s draws ê_s ~ N(0, σ_s²) and g_s ~ N(0, τ_gs²), the
secure sum gives Σμ_iê_i, e_s = ê_s − (1/(μ_s S))Σμ_iê_i (so Σμ_s e_s = 0) and the aggregator
outputs Σμ_s â_s. The paper's solution of the variance constraints:

- τ_gs² = τ_pool²/(μ_s² S), so that Var(Σμ_s g_s) = τ_pool²;
- σ² solves M·σ² = r with M_ss = (1 − 1/S)², M_si = μ_i²/(μ_s² S²) (i ≠ s) and
  r_s = τ_s² − τ_pool²/(μ_s² S), so that Var(e_s + g_s) = τ_s².

Not every input is feasible: r_s ≤ 0 or a solution with σ_s² ≤ 0 is refused, naming the site
(μ_s = 1/S with unequal N_s is such a case; μ_s = N_s/N gives σ_s² = τ_s²). M is singular for S = 2
(then e_2 = −(μ_1/μ_2)e_1), so the plan needs S ≥ 3.

**Privacy.** The adversary's covariance has Cov(â_i, â_j) = Ψ(i, j) =
−(1/S)(μ_iσ_i²/μ_j + μ_jσ_j²/μ_i) + Σ_s μ_s²σ_s²/(μ_iμ_jS²), Var(ê_H) = Σ_{h∈H}σ_h² and the
**corrected** \[Σ_âê\]_s = σ_s² − (1/(μ_s S))Σ_{i∈H} μ_i σ_i² (the paper prints μ_i²: spec §2
Erratum). There is no closed form: μ_z = ½ṽᵀΣ⁻¹ṽ is computed numerically and maximised over every
target site and every colluding set of size S_C ([`AsymmetricPlan::worst_case`]).

Two further views ([`AsymmetricView`]): the weighted secure sum reveals Σ_{h∈H} μ_h ê_h, not the
Σ_{h∈H} ê_h the paper's analysis uses, and the adversary also holds the colluders' ê_c (see
[`super::adversary_view`]). With μ_s = N_s/N and τ_s ∝ 1/N_s, scaling â_s by μ_s·S turns the
weighted round into a symmetric one, so those views reproduce the symmetric c_S exactly.
*/

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use crate::wire::ParticipantId;

use super::adversary_view::{
    AdversaryView, NoiseSumView, RoundNoise, inverse_entry_unchecked, privacy_loss_mean,
};
use super::estimator::CapeEstimator;
use super::privacy::{Collusion, PrivacyError, PrivacyLoss, classical_noise_multiplier};
use super::site::SiteNoise;

/// The most (target, colluding set) pairs [`AsymmetricPlan::worst_case`] enumerates.
pub const MAX_WORST_CASE_PAIRS: usize = 200_000;

const WEIGHT_SUM_TOLERANCE: f64 = 1e-9;

const SUGGESTION: &str = "use μ_s = N_s/N (AsymmetricPlan::from_sample_sizes)";

/// Why an asymmetric plan or its privacy analysis was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AsymmetricError {
    #[error(
        "the weighted scheme needs at least 3 sites (M is singular for S = 2), got S = {sites}"
    )]
    TooFewSites { sites: usize },
    #[error("{what} has {got} entries, there are {expected} sites")]
    LengthMismatch { what: &'static str, expected: usize, got: usize },
    #[error("the site ids {sites:?} must be sorted ascending and distinct")]
    SitesNotSorted { sites: Vec<ParticipantId> },
    #[error(
        "site {site}: weight μ_s = {weight} must be positive and finite (leave a site with \
         weight 0 out of the round); {SUGGESTION}"
    )]
    WeightNotPositive { site: ParticipantId, weight: f64 },
    #[error("the weights add up to {sum}, not 1; {SUGGESTION}")]
    WeightsDoNotSumToOne { sum: f64 },
    #[error("site {site}: sample size N_s = 0; leave the site out of the round")]
    EmptySite { site: ParticipantId },
    #[error("site {site}: local noise τ_s = {value} must be positive and finite")]
    LocalSd { site: ParticipantId, value: f64 },
    #[error("pooled noise τ_pool = {value} must be positive and finite")]
    PooledSd { value: f64 },
    #[error("site {site}: sensitivity Δ_s = {value} must be positive and finite")]
    Sensitivity { site: ParticipantId, value: f64 },
    #[error(
        "site {site}: r_s = τ_s² − τ_pool²/(μ_s²S) = {r:e} ≤ 0 (μ_s = {weight}, τ_s = {local_sd}): \
         the independent noise alone would exceed the site's local noise, so no σ_s² works; \
         {SUGGESTION}"
    )]
    RNotPositive { site: ParticipantId, r: f64, weight: f64, local_sd: f64 },
    #[error(
        "site {site}: solving M·σ² = r gives σ_s² = {sigma2:e} ≤ 0 (μ_s = {weight}): these weights \
         are infeasible for these local noise levels; {SUGGESTION}"
    )]
    SigmaNotPositive { site: ParticipantId, sigma2: f64, weight: f64 },
    #[error("M·σ² = r could not be solved (M is singular)")]
    Singular,
    #[error("{0}")]
    Privacy(#[from] PrivacyError),
    #[error("the collusion model is for S = {collusion} sites but the plan has {plan}")]
    CollusionSites { plan: usize, collusion: usize },
    #[error(
        "{pairs} (target, colluding set) pairs is more than the {limit} the worst case enumerates; \
         use fewer sites or colluders"
    )]
    TooManyPairs { pairs: usize, limit: usize },
    #[error(
        "the adversary's covariance for target {target} with colluders {colluders:?} is not \
         positive definite"
    )]
    NotPositiveDefinite { target: ParticipantId, colluders: Vec<ParticipantId> },
}

/// Local targets for the mean of values in [0, 1] under the classical calibration (Remark 3): Δ_s
/// = 1/N_s, τ_s = z/N_s, τ_pool = z/N with z = c(δ)/ε, and the default weights μ_s = N_s/N.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeanTargets {
    pub sensitivities: Vec<f64>,
    pub local_sd: Vec<f64>,
    pub pooled_sd: f64,
    pub default_weights: Vec<f64>,
}

impl MeanTargets {
    pub fn new(
        sites: &[ParticipantId],
        sizes: &[u64],
        epsilon: f64,
        delta: f64,
    ) -> Result<Self, AsymmetricError> {
        check_len("the sample sizes", sites.len(), sizes.len())?;
        if let Some(i) = sizes.iter().position(|&n| n == 0) {
            return Err(AsymmetricError::EmptySite { site: sites[i] });
        }
        let z = classical_noise_multiplier(epsilon, delta)?;
        let total: u64 = sizes.iter().sum();
        let total = total as f64;
        Ok(Self {
            sensitivities: sizes.iter().map(|&n| 1.0 / n as f64).collect(),
            local_sd: sizes.iter().map(|&n| z / n as f64).collect(),
            pooled_sd: z / total,
            default_weights: sizes.iter().map(|&n| n as f64 / total).collect(),
        })
    }
}

/// Which covariance the worst-case analysis inverts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AsymmetricView {
    /// The paper's model (T = Σ_{h∈H} ê_h) with the corrected Σ_âê (μ_i): the spec's choice.
    PaperCorrected,
    /// The paper's model with Σ_âê as printed (μ_i²): wrong, kept to show the erratum.
    PaperAsPrinted,
    /// What the weighted secure sum reveals, T = Σ_{h∈H} μ_h ê_h, in Theorem 1's view (colluders'
    /// ê_c inside â_h treated as unknown), built from the mechanism ([`super::adversary_view`]).
    WeightedSum,
    /// T = Σ_{h∈H} μ_h ê_h and the colluders' ê_c conditioned on: everything the threat model
    /// gives the adversary ([`AdversaryView::Full`]).
    WeightedSumFullView,
}

/// Which form of \[Σ_âê\]_s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrossTerm {
    /// σ_s² − (1/(μ_s S))Σ_{i∈H} μ_i σ_i².
    Corrected,
    /// σ_s² − (1/(μ_s S))Σ_{i∈H} μ_i² σ_i², as the paper prints it.
    AsPrinted,
}

/// A feasible noise plan for a weighted round (Section III-C).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AsymmetricPlan {
    sites: Vec<ParticipantId>,
    weights: Vec<f64>,
    local_sd: Vec<f64>,
    pooled_sd: f64,
    noise_var: Vec<f64>,
    correction_var: Vec<f64>,
}

impl AsymmetricPlan {
    /// Solves the paper's variance constraints for `sites` (sorted ids) with weights μ_s, local
    /// noise targets τ_s and the pooled target τ_pool; refuses infeasible inputs.
    pub fn new(
        sites: &[ParticipantId],
        weights: &[f64],
        local_sd: &[f64],
        pooled_sd: f64,
    ) -> Result<Self, AsymmetricError> {
        let s = sites.len();
        if s < 3 {
            return Err(AsymmetricError::TooFewSites { sites: s });
        }
        if sites.windows(2).any(|w| w[0] >= w[1]) {
            return Err(AsymmetricError::SitesNotSorted { sites: sites.to_vec() });
        }
        check_len("the weights", s, weights.len())?;
        check_len("the local noise levels", s, local_sd.len())?;
        for (&site, &weight) in sites.iter().zip(weights) {
            if !(weight.is_finite() && weight > 0.0) {
                return Err(AsymmetricError::WeightNotPositive { site, weight });
            }
        }
        let sum: f64 = weights.iter().sum();
        if (sum - 1.0).abs() > WEIGHT_SUM_TOLERANCE {
            return Err(AsymmetricError::WeightsDoNotSumToOne { sum });
        }
        for (&site, &value) in sites.iter().zip(local_sd) {
            if !(value.is_finite() && value > 0.0) {
                return Err(AsymmetricError::LocalSd { site, value });
            }
        }
        if !(pooled_sd.is_finite() && pooled_sd > 0.0) {
            return Err(AsymmetricError::PooledSd { value: pooled_sd });
        }
        let s_f = s as f64;
        let correction_var: Vec<f64> =
            weights.iter().map(|m| pooled_sd * pooled_sd / (m * m * s_f)).collect();
        let (m, r) = noise_system(weights, local_sd, pooled_sd);
        for i in 0..s {
            if r[i] <= 0.0 {
                return Err(AsymmetricError::RNotPositive {
                    site: sites[i],
                    r: r[i],
                    weight: weights[i],
                    local_sd: local_sd[i],
                });
            }
        }
        let sigma2 = m.lu().solve(&r).ok_or(AsymmetricError::Singular)?;
        if let Some(i) = (0..s).find(|&i| sigma2[i].is_nan() || sigma2[i] <= 0.0) {
            return Err(AsymmetricError::SigmaNotPositive {
                site: sites[i],
                sigma2: sigma2[i],
                weight: weights[i],
            });
        }
        Ok(Self {
            sites: sites.to_vec(),
            weights: weights.to_vec(),
            local_sd: local_sd.to_vec(),
            pooled_sd,
            noise_var: sigma2.iter().copied().collect(),
            correction_var,
        })
    }

    /// The plan for the mean of values in [0, 1] with N_s samples per site, calibrated at (ε, δ)
    /// ([`MeanTargets`]) and the default weights μ_s = N_s/N.
    pub fn from_sample_sizes(
        sites: &[ParticipantId],
        sizes: &[u64],
        epsilon: f64,
        delta: f64,
    ) -> Result<Self, AsymmetricError> {
        let targets = MeanTargets::new(sites, sizes, epsilon, delta)?;
        Self::new(sites, &targets.default_weights, &targets.local_sd, targets.pooled_sd)
    }

    pub fn sites(&self) -> &[ParticipantId] {
        &self.sites
    }

    /// μ_s.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// τ_s.
    pub fn local_sd(&self) -> &[f64] {
        &self.local_sd
    }

    /// τ_pool.
    pub fn pooled_sd(&self) -> f64 {
        self.pooled_sd
    }

    /// σ_s², the variance of ê_s.
    pub fn noise_var(&self) -> &[f64] {
        &self.noise_var
    }

    /// τ_gs² = τ_pool²/(μ_s²S), the variance of g_s.
    pub fn correction_var(&self) -> &[f64] {
        &self.correction_var
    }

    /// The largest standard deviation a site puts into the secure sum (μ_s·S·σ_s), for
    /// [`super::noise_format`].
    pub fn max_encoded_sd(&self) -> f64 {
        let s = self.sites.len() as f64;
        self.weights.iter().zip(&self.noise_var).map(|(m, v)| m * s * v.sqrt()).fold(0.0, f64::max)
    }

    /// What site `site` draws, or `None` if it is not in the plan.
    pub fn site_noise(&self, site: ParticipantId) -> Option<SiteNoise> {
        let i = self.sites.binary_search(&site).ok()?;
        Some(SiteNoise::Weighted {
            noise_sd: self.noise_var[i].sqrt(),
            correction_sd: self.correction_var[i].sqrt(),
            weight: self.weights[i],
            planned: self.sites.clone(),
        })
    }

    /// The aggregator's Σμ_s â_s.
    pub fn estimator(&self) -> CapeEstimator {
        CapeEstimator::Weighted {
            weights: self.sites.iter().copied().zip(self.weights.iter().copied()).collect(),
        }
    }

    /// Ψ(i, j) = Cov(â_i, â_j) for sites at indices i ≠ j (Section III-C).
    pub fn psi(&self, i: usize, j: usize) -> f64 {
        let s = self.sites.len() as f64;
        let (mi, mj) = (self.weights[i], self.weights[j]);
        let spread: f64 = self.weights.iter().zip(&self.noise_var).map(|(m, v)| m * m * v).sum();
        -(mi * self.noise_var[i] / mj + mj * self.noise_var[j] / mi) / s
            + spread / (mi * mj * s * s)
    }

    /// \[Σ_âê\]_s = Cov(â_s, Σ_{h∈H} ê_h) for the site at index `s` and honest indices `honest`.
    pub fn cross_cov(&self, s: usize, honest: &[usize], term: CrossTerm) -> f64 {
        let n = self.sites.len() as f64;
        let sum: f64 = honest
            .iter()
            .map(|&i| match term {
                CrossTerm::Corrected => self.weights[i] * self.noise_var[i],
                CrossTerm::AsPrinted => self.weights[i] * self.weights[i] * self.noise_var[i],
            })
            .sum();
        self.noise_var[s] - sum / (self.weights[s] * n)
    }

    /// The paper's Σ for the honest indices `honest` (in that order): Σ_â from τ_i² and Ψ, Σ_âê
    /// per `term`, τ_ê² = Σ_{h∈H}σ_h².
    pub fn paper_covariance(&self, honest: &[usize], term: CrossTerm) -> DMatrix<f64> {
        let h = honest.len();
        let mut sigma = DMatrix::zeros(h + 1, h + 1);
        for (a, &i) in honest.iter().enumerate() {
            for (b, &j) in honest.iter().enumerate() {
                sigma[(a, b)] =
                    if i == j { self.local_sd[i] * self.local_sd[i] } else { self.psi(i, j) };
            }
            let cross = self.cross_cov(i, honest, term);
            sigma[(a, h)] = cross;
            sigma[(h, a)] = cross;
        }
        sigma[(h, h)] = honest.iter().map(|&i| self.noise_var[i]).sum();
        sigma
    }

    /// The round's noise as the mechanism defines it, for [`super::adversary_view`].
    pub fn round_noise(&self) -> RoundNoise<'_> {
        RoundNoise {
            ehat_var: &self.noise_var,
            g_var: &self.correction_var,
            weights: &self.weights,
        }
    }

    /// The largest μ_z over every target site and every colluding set of size S_C
    /// (`collusion.colluders()`), with `sensitivities[s]` = Δ_s. Reports the worst pair and the worst
    /// set for each target.
    pub fn worst_case(
        &self,
        sensitivities: &[f64],
        collusion: &Collusion,
        view: AsymmetricView,
    ) -> Result<WorstCase, AsymmetricError> {
        let s = self.sites.len();
        if collusion.sites() != s {
            return Err(AsymmetricError::CollusionSites { plan: s, collusion: collusion.sites() });
        }
        check_len("the sensitivities", s, sensitivities.len())?;
        for (&site, &value) in self.sites.iter().zip(sensitivities) {
            if !(value.is_finite() && value > 0.0) {
                return Err(AsymmetricError::Sensitivity { site, value });
            }
        }
        let k = collusion.colluders();
        let pairs = s.saturating_mul(binomial(s - 1, k));
        if pairs > MAX_WORST_CASE_PAIRS {
            return Err(AsymmetricError::TooManyPairs { pairs, limit: MAX_WORST_CASE_PAIRS });
        }
        let mut per_target = Vec::with_capacity(s);
        let mut positive_definite = true;
        for (target, &delta) in sensitivities.iter().enumerate() {
            let others: Vec<usize> = (0..s).filter(|&i| i != target).collect();
            let mut worst: Option<TargetCase> = None;
            for chosen in subsets(others.len(), k) {
                let colluders: Vec<usize> = chosen.iter().map(|&c| others[c]).collect();
                let mut honest = vec![target];
                honest.extend(others.iter().copied().filter(|i| !colluders.contains(i)));
                let covariance = match view {
                    AsymmetricView::PaperCorrected => {
                        self.paper_covariance(&honest, CrossTerm::Corrected)
                    }
                    AsymmetricView::PaperAsPrinted => {
                        self.paper_covariance(&honest, CrossTerm::AsPrinted)
                    }
                    AsymmetricView::WeightedSum => self.round_noise().covariance(
                        &honest,
                        NoiseSumView::Weighted,
                        AdversaryView::Theorem1,
                    ),
                    AsymmetricView::WeightedSumFullView => self.round_noise().covariance(
                        &honest,
                        NoiseSumView::Weighted,
                        AdversaryView::Full,
                    ),
                };
                let colluder_ids: Vec<ParticipantId> =
                    colluders.iter().map(|&c| self.sites[c]).collect();
                let checked = privacy_loss_mean(&covariance, delta);
                positive_definite &= checked.is_some();
                let mu_z = match (checked, view) {
                    (Some(mu_z), _) => mu_z,
                    // The printed formula is not a covariance; show what it would give anyway.
                    (None, AsymmetricView::PaperAsPrinted) => {
                        inverse_entry_unchecked(&covariance, delta).unwrap_or(f64::NAN)
                    }
                    (None, _) => {
                        return Err(AsymmetricError::NotPositiveDefinite {
                            target: self.sites[target],
                            colluders: colluder_ids,
                        });
                    }
                };
                if worst.as_ref().is_none_or(|w| mu_z.total_cmp(&w.mu_z).is_gt()) {
                    worst = Some(TargetCase {
                        target: self.sites[target],
                        colluders: colluder_ids,
                        mu_z,
                    });
                }
            }
            per_target.push(worst.expect("every target has at least one colluding set"));
        }
        let worst = per_target
            .iter()
            .max_by(|a, b| a.mu_z.total_cmp(&b.mu_z))
            .expect("the plan has at least 3 sites")
            .clone();
        Ok(WorstCase {
            view,
            loss: PrivacyLoss::from_mean(worst.mu_z)?,
            positive_definite,
            worst,
            per_target,
        })
    }
}

/// μ_z for one target site under its worst colluding set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetCase {
    pub target: ParticipantId,
    pub colluders: Vec<ParticipantId>,
    pub mu_z: f64,
}

/// The result of [`AsymmetricPlan::worst_case`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorstCase {
    pub view: AsymmetricView,
    /// The privacy loss at the worst (target, colluding set): use it for δ.
    pub loss: PrivacyLoss,
    /// Whether every covariance was positive definite. Only [`AsymmetricView::PaperAsPrinted`]
    /// can be false (the printed Σ_âê does not give a covariance), and then `loss` is meaningless.
    pub positive_definite: bool,
    pub worst: TargetCase,
    /// Each target's worst colluding set, in site order.
    pub per_target: Vec<TargetCase>,
}

/// M and r of the system M·σ² = r (Section III-C).
pub fn noise_system(
    weights: &[f64],
    local_sd: &[f64],
    pooled_sd: f64,
) -> (DMatrix<f64>, DVector<f64>) {
    let s = weights.len();
    let s_f = s as f64;
    let diagonal = (1.0 - 1.0 / s_f).powi(2);
    let m = DMatrix::from_fn(s, s, |r, c| {
        if r == c { diagonal } else { weights[c].powi(2) / (weights[r].powi(2) * s_f * s_f) }
    });
    let r = DVector::from_fn(s, |i, _| {
        local_sd[i].powi(2) - pooled_sd.powi(2) / (weights[i].powi(2) * s_f)
    });
    (m, r)
}

fn check_len(what: &'static str, expected: usize, got: usize) -> Result<(), AsymmetricError> {
    if expected != got {
        return Err(AsymmetricError::LengthMismatch { what, expected, got });
    }
    Ok(())
}

fn binomial(n: usize, k: usize) -> usize {
    if k > n {
        return 0;
    }
    (0..k).fold(1usize, |acc, i| acc.saturating_mul(n - i) / (i + 1))
}

/// Every k-subset of 0..n, as sorted index lists, in lexicographic order.
fn subsets(n: usize, k: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut current: Vec<usize> = (0..k).collect();
    if k > n {
        return out;
    }
    loop {
        out.push(current.clone());
        let Some(i) = (0..k).rev().find(|&i| current[i] < n - k + i) else {
            return out;
        };
        current[i] += 1;
        for j in i + 1..k {
            current[j] = current[j - 1] + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsets_are_all_k_combinations() {
        assert_eq!(subsets(4, 2).len(), 6);
        assert_eq!(subsets(3, 0), vec![Vec::<usize>::new()]);
        assert_eq!(subsets(3, 3), vec![vec![0, 1, 2]]);
        assert_eq!(subsets(5, 2)[9], vec![3, 4]);
        assert_eq!(binomial(29, 9), 10_015_005);
        assert_eq!(binomial(3, 0), 1);
    }
}
