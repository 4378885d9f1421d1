/*!
The private-regression study: capeFM (spec cape-fm §4) over the real SecureAgg, run by the
private-mean study's own roles ([`crate::study::mean`]) with a different query
([`crate::study::mean::Query::Regression`]). Dropouts, re-runs, the ledger gate, the conventional
baseline and the outcome are the mean study's; this module holds only what differs: what a site
releases, and what the dashboard and the tabs make of the result.

# What a site releases (decided here)
Site s holds N_s records (x, y) in FM's domain (‖x‖₂ ≤ 1; y ∈ [−1, 1] for linear, y ∈ {0, 1}
for logistic regression; [`check_records`]). Its coefficient arrays Λ_j^s (1/N_s averages,
[`crate::fm::Coefficients`]) have L2 sensitivities Δ_j(N_s) ([`crate::fm::sensitivity`]). The
site releases **one** vector: every noisy block's packed entries divided by its Δ_j(N_s)
([`RegressionQuery::site_vector`]). In these units every block has sensitivity 1, and the blocks
together have the joint sensitivity m of spec §7.1 (1.5 for linear with Λ₀, 1.25 otherwise). So
one CAPE round with one local noise τ on this vector is exactly capeFM's per-block noise
τ_j = Δ_j·τ, and:
- the study calibrates τ to the study's (ε, δ) for sensitivity m: this is the spec's **strict**
  mode (z_block = m·z_target), the joint release is (ε, δ) as announced. The papers' per-block
  calibration (paper-faithful, only (ε′ > ε, δ)) is not offered in a study: the ledger and the
  announced ε would disagree.
- the ledger records each attempt as ONE Gaussian release with noise multiplier z = τ/m (the
  joint mechanism), with the full-view collusion factor, the blocks and m named in its label.
  [`study_guarantee`] reports the same numbers through [`crate::fm::Guarantee::cape`].

The aggregator's CAPE mean of these vectors, scaled back block by block, is the pooled arrays plus
noise of standard deviation Δ_j(N_s)·τ/|U| per entry (Lemma 1); [`fit_model`] minimises it
([`crate::fm::minimise`], post-processing).

# Linear regression releases Λ₀ (decided here)
ŵ does not need Λ₀ (spec §7.5), but without it nobody can say how well ŵ fits the room's data.
With Λ₀ released, the noisy objective f̂(ŵ) = Λ̂₀ + Λ̂₁ᵀŵ + ŵᵀΛ̂₂ŵ estimates the room's training
loss at no further privacy cost ([`FittedModel::room_loss_estimate`]); the price is m = 1.5
instead of 1.25. For logistic regression Λ₀ = log 2 is no data, and f̂ estimates the room's
Taylor-approximated loss.

# What stays local
A tab compares the shared model with its own non-private fit on its own records
([`local_comparison`]); nothing of it is sent.
*/

pub mod fitted;
pub mod query;

pub use fitted::{
    FitError, FittedModel, GuaranteeError, LocalComparison, fit_model, local_comparison,
    study_guarantee,
};
pub use query::{RegressionQuery, check_records, records_dataset};
