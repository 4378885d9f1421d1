/*!
What the adversary sees of a CAPE round, and its covariance, built from the mechanism itself
(spec §2 Theorem 1 and "Privacy analysis" of Section III-C).

Each site's noise is a fixed linear combination of the independent noises
n = [ê_1 … ê_S, g_1 … g_S]: with weights μ_i (μ_i = 1/S in a symmetric round),

  â_j − f(x_j) = ê_j − (1/(μ_j S))·Σ_i μ_i ê_i + g_j.

An observation y made of such combinations has Cov(y) = A·diag(Var n)·Aᵀ, with A read off these
definitions. This module builds that matrix directly, without any of the paper's closed forms, so
that it can check them ([`super::privacy`], [`super::asymmetric`]).

**Theorem 1's view** ([`AdversaryView::Theorem1`]): y = [â_h for h ∈ H, T], T = Σ_{h∈H} ê_h. The
colluders' noise ê_c inside each â_h is treated as unknown.

**The full view** ([`AdversaryView::Full`]): the threat model (spec §1) also hands the adversary
each colluder's ê_c and g_c, so it can remove the −(1/(μ_h S))·μ_c·ê_c terms from every â_h.
Adding the ê_c as observed coordinates of y conditions on them. This view is never less
informative than Theorem 1's; the two agree when S_C = 0.

Which T? In Algorithm 1 the secure sum is Σ_i ê_i and T = Σ_{h∈H} ê_h. In the weighted scheme of
Section III-C the secure sum is Σ_i μ_i ê_i, so what the adversary can actually subtract its way to is
Σ_{h∈H} μ_h ê_h ([`NoiseSumView::Weighted`]); the paper's analysis uses the unweighted Σ_{h∈H} ê_h
([`NoiseSumView::Unweighted`]). With equal weights the two are the same up to a constant factor,
which changes nothing.
*/

use nalgebra::DMatrix;

/// The honest part of the secure sum the adversary observes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum NoiseSumView {
    /// T = Σ_{h∈H} ê_h, as in Theorem 1 and the paper's asymmetric analysis.
    Unweighted,
    /// T = Σ_{h∈H} μ_h·ê_h, what a weighted secure sum reveals.
    Weighted,
}

/// Whether the adversary's knowledge of the colluders' own noise enters its view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AdversaryView {
    /// y = [â_H, T], as Theorem 1 and the paper's asymmetric analysis model it.
    Theorem1,
    /// y = [â_H, T, ê_C]: the colluders' noise, which the adversary holds, is conditioned on.
    Full,
}

/// The noise of one round: per site s, Var ê_s = `ehat_var[s]`, Var g_s = `g_var[s]`, weight
/// `weights[s]` (all of length S, weights positive).
#[derive(Clone, Debug, PartialEq)]
pub struct RoundNoise<'a> {
    pub ehat_var: &'a [f64],
    pub g_var: &'a [f64],
    pub weights: &'a [f64],
}

impl RoundNoise<'_> {
    pub fn sites(&self) -> usize {
        self.weights.len()
    }

    /// The matrix A with y = A·n: one row per honest site in `honest` (0-based indices, in that
    /// order), one for T per `sum_view`, and under [`AdversaryView::Full`] one per colluder
    /// (every site not in `honest`) for its ê_c. 2S columns. (The colluders' g_c enter no honest
    /// message, so observing them changes nothing and they are left out.)
    pub fn observation_map(
        &self,
        honest: &[usize],
        sum_view: NoiseSumView,
        view: AdversaryView,
    ) -> DMatrix<f64> {
        let s = self.sites();
        let s_f = s as f64;
        let colluders: Vec<usize> = match view {
            AdversaryView::Theorem1 => Vec::new(),
            AdversaryView::Full => (0..s).filter(|i| !honest.contains(i)).collect(),
        };
        let mut a = DMatrix::zeros(honest.len() + 1 + colluders.len(), 2 * s);
        for (row, &j) in honest.iter().enumerate() {
            for i in 0..s {
                a[(row, i)] = -self.weights[i] / (self.weights[j] * s_f);
            }
            a[(row, j)] += 1.0;
            a[(row, s + j)] = 1.0;
        }
        let t_row = honest.len();
        for &h in honest {
            a[(t_row, h)] = match sum_view {
                NoiseSumView::Unweighted => 1.0,
                NoiseSumView::Weighted => self.weights[h],
            };
        }
        for (k, &c) in colluders.iter().enumerate() {
            a[(t_row + 1 + k, c)] = 1.0;
        }
        a
    }

    /// Cov(y) = A·diag(Var n)·Aᵀ for [`Self::observation_map`].
    pub fn covariance(
        &self,
        honest: &[usize],
        sum_view: NoiseSumView,
        view: AdversaryView,
    ) -> DMatrix<f64> {
        let a = self.observation_map(honest, sum_view, view);
        let variances: Vec<f64> = self.ehat_var.iter().chain(self.g_var).copied().collect();
        let scaled = DMatrix::from_fn(a.nrows(), a.ncols(), |r, c| a[(r, c)] * variances[c]);
        &scaled * a.transpose()
    }
}

/// μ_z = ½·ṽᵀΣ⁻¹ṽ with ṽ = [Δ, 0, …, 0] (Theorem 1): the mean of the privacy loss when the first
/// coordinate of an observation with covariance `covariance` moves by `sensitivity`. Inverts Σ
/// through its Cholesky factor; `None` if Σ is not positive definite (not a covariance).
pub fn privacy_loss_mean(covariance: &DMatrix<f64>, sensitivity: f64) -> Option<f64> {
    let inverse = covariance.clone().cholesky()?.inverse();
    Some(0.5 * sensitivity * sensitivity * inverse[(0, 0)])
}

/// ½·Δ²·[Σ⁻¹]₁₁ through an LU inverse, with no check that Σ is a covariance. Only for showing what
/// a wrong formula (the paper's printed asymmetric Σ_âê) would give; `None` if Σ is singular.
pub fn inverse_entry_unchecked(covariance: &DMatrix<f64>, sensitivity: f64) -> Option<f64> {
    let inverse = covariance.clone().try_inverse()?;
    Some(0.5 * sensitivity * sensitivity * inverse[(0, 0)])
}
