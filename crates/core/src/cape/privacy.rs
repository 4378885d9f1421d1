/*!
The privacy of one CAPE release: Theorem 1 of seed 000 with its errata (spec §2 "Theorem 1",
"Erratum", "Appendix F definitions"; cape-fm §1.5).

For the symmetric case (N_s = N/S, τ_s = τ) the adversary's privacy loss about one honest site is
Gaussian, L ~ N(μ_z, σ_z²) with σ_z² = 2μ_z and

  μ_z = c_S / (2z²),   z = τ/Δ_s (the noise multiplier; Δ_s = 1/N_s for a mean of [0, 1] values),

where c_S = τ²[Σ⁻¹]₁₁ is the price of the adversary's side information (c = 1 for a plain Gaussian
mechanism). A release is then (ε, δ)-DP for every ε > μ_z with

- δ = 2·(σ_z/(ε − μ_z))·φ((ε − μ_z)/σ_z), the paper's bound (from Q(x) < φ(x)/x), or
- δ = 2·Q((ε − μ_z)/σ_z), the exact two-sided tail, which is tighter.

Both only exist for ε > μ_z (spec §8 pitfall 9): below that the loss exceeds ε on average.
Theorem 1 is stated for ε ∈ (0, 1); the tail argument P(|L| > ε) ≤ δ itself holds for every ε > 0,
so ε ≥ 1 is accepted (cape-fm's own test vector uses ε = 1).

**Erratum (spec §2).** The paper's eq. (1) inverts Σ_â with the wrong Sherman–Morrison factor
2/S_H instead of 1/(S_C + 1); it is exact only for S ≡ 2 (mod 3). c_S here is exact, in two closed
forms that must agree ([`c_s_closed_form`], [`c_s_inverse_entry`]) and by numerically inverting the
covariance built from the mechanism ([`c_s_numeric`]). Eq. (1) is kept, labelled as the paper's,
to show the erratum ([`c_s_paper_eq1`]).

**Beyond the spec: the full view.** Theorem 1's observation y = [â_H, ê_H] treats the colluders'
ê_c inside each honest â_h as unknown noise, although the threat model hands ê_c to the
adversary. An adversary that subtracts them learns more: [`c_s_full_view`] is the c_S of that
view (S(S + S_H)/((S + 1)S_H), e.g. 1.8667 instead of 1.2952 at S = 4, S_C = 1). Theorem 1's c_S
even *decreases* from S_C = 0 to S_C = 1 (1.6 → 1.2952 at S = 4), which no adversary with more
information can show. Both are reported ([`ReleasePrivacy::full_view`]); see
[`super::adversary_view`].
*/

use serde::{Deserialize, Serialize};

use crate::gaussian::{self, CalibrationError};
use crate::special::{normal_pdf, normal_sf};

use super::adversary_view::{AdversaryView, NoiseSumView, RoundNoise, privacy_loss_mean};

/// Why a privacy computation was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PrivacyError {
    #[error("CAPE needs at least 2 sites, got S = {sites}")]
    TooFewSites { sites: usize },
    #[error(
        "S_C = {colluders} colluding sites is more than ⌈S/3⌉ − 1 = {max} for S = {sites}: the \
         paper makes no privacy claim there (SecureAgg's threshold t ≥ ⌊2S/3⌋ + 1); assume at \
         most {max}, or use Collusion::beyond_trust_model for an analysis outside the trust model"
    )]
    TooManyColluders { sites: usize, colluders: usize, max: usize },
    #[error(
        "S_C = {colluders} colluding sites out of S = {sites} leaves no honest site to protect; \
         S_C must be at most S − 1 = {}", sites.saturating_sub(1)
    )]
    NoHonestSite { sites: usize, colluders: usize },
    #[error("ε = {0} must be positive and finite")]
    Epsilon(f64),
    #[error("δ = {0} must lie strictly between 0 and 1")]
    Delta(f64),
    #[error("noise multiplier z = τ/Δ = {0} must be positive and finite")]
    NoiseMultiplier(f64),
    #[error("privacy-loss mean μ_z = {0} must be positive and finite")]
    LossMean(f64),
    #[error(
        "ε = {epsilon} is not above the privacy-loss mean μ_z = {mu_z}: the loss exceeds ε more \
         often than not, and Theorem 1 gives no δ (spec §8 pitfall 9); raise ε above μ_z or add \
         noise (a larger z)"
    )]
    EpsilonNotAboveMean { epsilon: f64, mu_z: f64 },
    #[error("the adversary's covariance is not positive definite; the noise variances are invalid")]
    NotPositiveDefinite,
}

/// How many sites there are and how many of them may collude with the adversary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Collusion {
    sites: usize,
    colluders: usize,
}

impl Collusion {
    /// ⌈S/3⌉ − 1, the most colluders the paper's trust model allows (spec §1).
    pub fn max_colluders(sites: usize) -> usize {
        sites.div_ceil(3).saturating_sub(1)
    }

    /// S sites with the default S_C = ⌈S/3⌉ − 1.
    pub fn default_for(sites: usize) -> Result<Self, PrivacyError> {
        Self::new(sites, Self::max_colluders(sites))
    }

    /// S sites of which `colluders` collude, within the trust model: S_C ≤ ⌈S/3⌉ − 1.
    pub fn new(sites: usize, colluders: usize) -> Result<Self, PrivacyError> {
        let max = Self::max_colluders(sites);
        let collusion = Self::beyond_trust_model(sites, colluders)?;
        if colluders > max {
            return Err(PrivacyError::TooManyColluders { sites, colluders, max });
        }
        Ok(collusion)
    }

    /// Any S_C ≤ S − 1, for sweeps such as Fig. 5(c, d). Beyond ⌈S/3⌉ − 1 the numbers assume the
    /// secure sum still hides each ê_s from the colluders, which the paper's SecureAgg threshold
    /// does not promise: label such results accordingly.
    pub fn beyond_trust_model(sites: usize, colluders: usize) -> Result<Self, PrivacyError> {
        if sites < 2 {
            return Err(PrivacyError::TooFewSites { sites });
        }
        if colluders >= sites {
            return Err(PrivacyError::NoHonestSite { sites, colluders });
        }
        Ok(Self { sites, colluders })
    }

    /// S.
    pub fn sites(&self) -> usize {
        self.sites
    }

    /// S_C.
    pub fn colluders(&self) -> usize {
        self.colluders
    }

    /// S_H = S − S_C.
    pub fn honest(&self) -> usize {
        self.sites - self.colluders
    }

    /// Whether S_C is within the paper's trust model.
    pub fn within_trust_model(&self) -> bool {
        self.colluders <= Self::max_colluders(self.sites)
    }
}

/// c_S = τ²[Σ⁻¹]₁₁ in the cape spec's closed form (§2 "Exact value"):
/// S(S_C+2)/((S+1)(S_C+1)) + S·S_C²/((S_C+1)·S_H·(S(S_C+1) − S_C²)).
pub fn c_s_closed_form(collusion: &Collusion) -> f64 {
    let s = collusion.sites() as f64;
    let c = collusion.colluders() as f64;
    let h = collusion.honest() as f64;
    s * (c + 2.0) / ((s + 1.0) * (c + 1.0)) + s * c * c / ((c + 1.0) * h * (s * (c + 1.0) - c * c))
}

/// c_S = τ²[Σ⁻¹]₁₁ in the cape-fm spec's form (§1.5):
/// S·(S_H²(S_C+1) + S²) / ((S+1)·S_H·(S_H·S_C + S)).
pub fn c_s_inverse_entry(collusion: &Collusion) -> f64 {
    let s = collusion.sites() as f64;
    let c = collusion.colluders() as f64;
    let h = collusion.honest() as f64;
    s * (h * h * (c + 1.0) + s * s) / ((s + 1.0) * h * (h * c + s))
}

/// c_S by inverting the adversary's covariance, built from the mechanism's definition with τ = 1
/// ([`super::adversary_view`]): ê_s ~ N(0, 1), g_s ~ N(0, 1/S), honest sites 1..S_H.
/// [`AdversaryView::Theorem1`] must agree with [`c_s_closed_form`]; [`AdversaryView::Full`] with
/// [`c_s_full_view`].
pub fn c_s_numeric(collusion: &Collusion, view: AdversaryView) -> Result<f64, PrivacyError> {
    let s = collusion.sites();
    let ehat_var = vec![1.0; s];
    let g_var = vec![1.0 / s as f64; s];
    let weights = vec![1.0 / s as f64; s];
    let noise = RoundNoise { ehat_var: &ehat_var, g_var: &g_var, weights: &weights };
    let honest: Vec<usize> = (0..collusion.honest()).collect();
    let covariance = noise.covariance(&honest, NoiseSumView::Unweighted, view);
    // μ_z = ½·[Σ⁻¹]₁₁ at Δ = 1, τ = 1.
    privacy_loss_mean(&covariance, 1.0).map(|mu| 2.0 * mu).ok_or(PrivacyError::NotPositiveDefinite)
}

/// c_S when the adversary also uses the colluders' own noise ê_c, which the threat model gives it
/// (spec §1) but Theorem 1's view leaves out: S(S + S_H)/((S + 1)·S_H).
///
/// Derivation: from the broadcast Σê and the colluders' ê_c the adversary gets
/// u_h = â_h + (1/S)Σê = f(x_h) + ê_h + g_h for every honest h, and T = Σ_{h∈H} ê_h. With τ = 1,
/// Var u_h = 1 + 1/S, Cov(u_h, u_k) = 0, Cov(u_h, T) = 1, Var T = S_H; the Schur complement gives
/// [Σ⁻¹]₁₁ = ((1 + 1/S)I − (1/S_H)11ᵀ)⁻¹₁₁ = (S/(S+1))·(1 + S/S_H). It equals Theorem 1's c_S at
/// S_C = 0, grows with S_C (more colluders, more knowledge), and reaches S at S_H = 1, where only
/// g_h ~ N(0, τ²/S) protects the last honest site.
pub fn c_s_full_view(collusion: &Collusion) -> f64 {
    let s = collusion.sites() as f64;
    let h = collusion.honest() as f64;
    s * (s + h) / ((s + 1.0) * h)
}

/// The paper's eq. (1), written as c_S (μ_z = c_S/(2z²) with N_s = N/S):
/// S/(1+S)·[(S−S_C+2)/(S−S_C) + (9/(S−S_C))·S_C²/(S(1+S) − 3S_C²)].
/// **Not exact** unless S ≡ 2 (mod 3) (spec §2 Erratum); for showing the erratum only.
/// `None` where the formula's last denominator is not positive (S_C well beyond the trust model).
pub fn c_s_paper_eq1(collusion: &Collusion) -> Option<f64> {
    let s = collusion.sites() as f64;
    let c = collusion.colluders() as f64;
    let h = s - c;
    let denominator = s * (1.0 + s) - 3.0 * c * c;
    (denominator > 0.0).then(|| s / (1.0 + s) * ((h + 2.0) / h + (9.0 / h) * c * c / denominator))
}

/// The privacy-loss distribution L ~ N(μ_z, σ_z²), σ_z² = 2μ_z (Theorem 1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrivacyLoss {
    pub mu_z: f64,
    pub sigma_z: f64,
}

impl PrivacyLoss {
    /// The loss with mean `mu_z` (e.g. ½ṽᵀΣ⁻¹ṽ computed numerically).
    pub fn from_mean(mu_z: f64) -> Result<Self, PrivacyError> {
        if !(mu_z.is_finite() && mu_z > 0.0) {
            return Err(PrivacyError::LossMean(mu_z));
        }
        Ok(Self { mu_z, sigma_z: (2.0 * mu_z).sqrt() })
    }

    /// μ_z = c_S/(2z²) for a given c_S and noise multiplier z = τ/Δ_s.
    pub fn from_c_s(c_s: f64, noise_multiplier: f64) -> Result<Self, PrivacyError> {
        check_multiplier(noise_multiplier)?;
        Self::from_mean(c_s / (2.0 * noise_multiplier * noise_multiplier))
    }

    /// The symmetric case as in Theorem 1 with the spec's erratum: the exact c_S of
    /// [`c_s_closed_form`].
    pub fn symmetric(collusion: &Collusion, noise_multiplier: f64) -> Result<Self, PrivacyError> {
        Self::from_c_s(c_s_closed_form(collusion), noise_multiplier)
    }

    /// The symmetric case with the adversary's full view ([`c_s_full_view`]).
    pub fn symmetric_full_view(
        collusion: &Collusion,
        noise_multiplier: f64,
    ) -> Result<Self, PrivacyError> {
        Self::from_c_s(c_s_full_view(collusion), noise_multiplier)
    }

    /// (ε − μ_z)/σ_z, after refusing ε ≤ μ_z.
    fn standardised(&self, epsilon: f64) -> Result<f64, PrivacyError> {
        check_epsilon(epsilon)?;
        if epsilon <= self.mu_z {
            return Err(PrivacyError::EpsilonNotAboveMean { epsilon, mu_z: self.mu_z });
        }
        Ok((epsilon - self.mu_z) / self.sigma_z)
    }

    /// The paper's δ = 2·(σ_z/(ε − μ_z))·φ((ε − μ_z)/σ_z) (Theorem 1).
    pub fn delta_phi_bound(&self, epsilon: f64) -> Result<f64, PrivacyError> {
        let x = self.standardised(epsilon)?;
        Ok(2.0 * normal_pdf(x) / x)
    }

    /// The exact two-sided tail δ = 2·Q((ε − μ_z)/σ_z) = P(|L| > ε) bound; tighter than
    /// [`Self::delta_phi_bound`].
    pub fn delta_tail(&self, epsilon: f64) -> Result<f64, PrivacyError> {
        let x = self.standardised(epsilon)?;
        Ok(2.0 * normal_sf(x))
    }
}

/// δ_pool = 1.25·exp(−(εz)²/2) (spec Appendix F): the δ the classical Gaussian mechanism on pooled
/// data would claim at the same aggregate variance τ²/S².
pub fn delta_pool(epsilon: f64, noise_multiplier: f64) -> Result<f64, PrivacyError> {
    check_epsilon(epsilon)?;
    check_multiplier(noise_multiplier)?;
    let c = epsilon * noise_multiplier;
    Ok(1.25 * (-c * c / 2.0).exp())
}

/// δ_conv = 1.25·exp(−(εz)²/(2S)) (spec Appendix F; cape-fm §1.5): the δ the conventional scheme
/// could claim at the same aggregate variance, each site adding only τ/√S.
pub fn delta_conv(epsilon: f64, noise_multiplier: f64, sites: usize) -> Result<f64, PrivacyError> {
    check_epsilon(epsilon)?;
    check_multiplier(noise_multiplier)?;
    if sites < 1 {
        return Err(PrivacyError::TooFewSites { sites });
    }
    let c = epsilon * noise_multiplier;
    Ok(1.25 * (-c * c / (2.0 * sites as f64)).exp())
}

/// Everything Theorem 1 says about one release, next to the baselines (spec §2 test-vector table).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReleasePrivacy {
    pub sites: usize,
    pub colluders: usize,
    /// z = τ/Δ_s.
    pub noise_multiplier: f64,
    pub epsilon: f64,
    /// c_S, exact.
    pub c_s: f64,
    pub loss: PrivacyLoss,
    /// The paper's φ-bound with the exact μ_z.
    pub delta_phi_bound: f64,
    /// 2Q((ε − μ_z)/σ_z) with the exact μ_z.
    pub delta_tail: f64,
    /// c_S from the paper's eq. (1), for showing the erratum.
    pub paper_eq1_c_s: Option<f64>,
    /// The φ-bound δ with eq. (1)'s μ_z; `None` where ε ≤ that μ_z or eq. (1) is undefined.
    pub paper_eq1_delta_phi_bound: Option<f64>,
    pub delta_conv: f64,
    pub delta_pool: f64,
    /// The same release against the adversary's full view ([`c_s_full_view`]).
    pub full_view: FullViewPrivacy,
}

/// A release's privacy when the adversary also uses the colluders' noise ([`c_s_full_view`]).
/// The δ's are `None` where ε ≤ μ_z.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FullViewPrivacy {
    pub c_s: f64,
    pub loss: PrivacyLoss,
    pub delta_phi_bound: Option<f64>,
    pub delta_tail: Option<f64>,
}

/// Theorem 1 for a release at noise multiplier z = τ/Δ_s and target ε.
pub fn release_privacy(
    collusion: &Collusion,
    noise_multiplier: f64,
    epsilon: f64,
) -> Result<ReleasePrivacy, PrivacyError> {
    let loss = PrivacyLoss::symmetric(collusion, noise_multiplier)?;
    let paper_eq1_c_s = c_s_paper_eq1(collusion);
    let paper_eq1_delta_phi_bound = paper_eq1_c_s.and_then(|c| {
        let paper = PrivacyLoss::from_mean(c / (2.0 * noise_multiplier * noise_multiplier)).ok()?;
        paper.delta_phi_bound(epsilon).ok()
    });
    let full_loss = PrivacyLoss::symmetric_full_view(collusion, noise_multiplier)?;
    let full_view = FullViewPrivacy {
        c_s: c_s_full_view(collusion),
        loss: full_loss,
        delta_phi_bound: full_loss.delta_phi_bound(epsilon).ok(),
        delta_tail: full_loss.delta_tail(epsilon).ok(),
    };
    Ok(ReleasePrivacy {
        sites: collusion.sites(),
        colluders: collusion.colluders(),
        noise_multiplier,
        epsilon,
        c_s: c_s_closed_form(collusion),
        loss,
        delta_phi_bound: loss.delta_phi_bound(epsilon)?,
        delta_tail: loss.delta_tail(epsilon)?,
        paper_eq1_c_s,
        paper_eq1_delta_phi_bound,
        delta_conv: delta_conv(epsilon, noise_multiplier, collusion.sites())?,
        delta_pool: delta_pool(epsilon, noise_multiplier)?,
        full_view,
    })
}

/// z = c(δ)/ε, the noise multiplier of the classical calibration τ = Δ·c(δ)/ε
/// ([`crate::gaussian`]), at any ε > 0 as the papers use it (a guarantee of the classical
/// mechanism only for ε < 1; CAPE's own δ then comes from Theorem 1).
pub fn classical_noise_multiplier(epsilon: f64, delta: f64) -> Result<f64, PrivacyError> {
    check_epsilon(epsilon)?;
    gaussian::classical_sigma_as_in_papers(1.0, epsilon, delta).map_err(|e| match e {
        CalibrationError::Delta(d) => PrivacyError::Delta(d),
        _ => PrivacyError::Epsilon(epsilon),
    })
}

pub(super) fn check_epsilon(epsilon: f64) -> Result<(), PrivacyError> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(PrivacyError::Epsilon(epsilon));
    }
    Ok(())
}

fn check_multiplier(z: f64) -> Result<(), PrivacyError> {
    if !(z.is_finite() && z > 0.0) {
        return Err(PrivacyError::NoiseMultiplier(z));
    }
    Ok(())
}
