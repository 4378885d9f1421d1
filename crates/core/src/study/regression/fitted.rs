/*!
The model the dashboard fits from a regression study's result, and what a tab compares it with
on its own records (spec cape-fm §2.5 and §7.7 for the minimiser; §4 for the aggregate noise).

Both are post-processing of the released estimate: no privacy cost. Every participant that saw
`mean/result` can compute [`fit_model`] and gets the same ŵ (the minimiser is deterministic).
*/

use nalgebra::DVector;
use serde::{Deserialize, Serialize};

use crate::cape::privacy::Collusion;
use crate::fm::calibration::{Calibrated, Formula};
use crate::fm::coefficients::pack_upper;
use crate::fm::minimise::{MinimiserConfig, MinimiserReport, minimise};
use crate::fm::{Block, Guarantee, Model, nonprivate};
use crate::study::mean::{Calibration, Query, StudyParams};

use super::query::{RegressionQuery, records_dataset};

/// ŵ from one estimate (CAPE's or the conventional one), with the arrays it was minimised from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FittedModel {
    pub model: Model,
    /// ŵ, D values.
    pub weights: Vec<f64>,
    /// Λ̂₀, Λ̂₁, and Λ̂₂'s upper triangle (row by row), scaled back from the released vector.
    pub lambda0: f64,
    pub lambda1: Vec<f64>,
    pub lambda2_upper: Vec<f64>,
    /// The standard deviation of the noise left on each entry of Λ̂₂ (the minimiser's floor).
    pub quadratic_noise_sd: f64,
    /// f̂(ŵ) = Λ̂₀ + Λ̂₁ᵀŵ + ŵᵀΛ̂₂ŵ: the room's training loss (linear; Taylor loss for
    /// logistic) estimated from the released arrays alone, noisy and biased low (ŵ minimises
    /// this very noise). `None` for linear regression without Λ₀.
    pub room_loss_estimate: Option<f64>,
    pub minimiser: MinimiserReport,
}

/// Why no model can be fitted from a result.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FitError {
    #[error("the study computed a mean, not a regression")]
    NotRegression,
    #[error("the estimate has {got} values, the regression's released vector has {expected}")]
    Length { expected: usize, got: usize },
}

/// ŵ from `estimate` (the CAPE or conventional mean of the released vectors) of a regression
/// study with `params`; `aggregate_sd` is the noise standard deviation left on each entry of the
/// estimate in the released (unit-sensitivity) scale: τ/|U| for CAPE, τ/√|U| conventional.
pub fn fit_model(
    params: &StudyParams,
    estimate: &[f64],
    aggregate_sd: f64,
) -> Result<FittedModel, FitError> {
    let Query::Regression(query) = params.query else { return Err(FitError::NotRegression) };
    let (d, n_s) = (params.dimension, params.values_per_site);
    let arrays = query
        .coefficients(estimate, d, n_s)
        .ok_or(FitError::Length { expected: query.vector_len(d), got: estimate.len() })?;
    let quadratic_noise_sd = aggregate_sd * delta_of(&query, Block::Quadratic, n_s);
    let (w, minimiser) = minimise(&arrays, quadratic_noise_sd, &MinimiserConfig::default());
    let has_loss = query.model == Model::Logistic || query.release_constant;
    Ok(FittedModel {
        model: query.model,
        weights: w.as_slice().to_vec(),
        lambda0: arrays.lambda0,
        lambda1: arrays.lambda1.as_slice().to_vec(),
        lambda2_upper: pack_upper(&arrays.lambda2),
        quadratic_noise_sd,
        room_loss_estimate: has_loss.then(|| arrays.objective(&w)),
        minimiser,
    })
}

fn delta_of(query: &RegressionQuery, block: Block, records: usize) -> f64 {
    query.block_sensitivities(records).into_iter().find(|(b, _)| *b == block).map_or(0.0, |b| b.1)
}

/// A tab's local view of the shared model: how it does on the tab's own records next to the
/// model the tab would fit alone without noise. Computed locally, never sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalComparison {
    pub model: Model,
    /// The exact loss (MSE, or logistic loss) of the shared private ŵ on this site's records.
    pub shared_loss: f64,
    /// Its metric: MSE (linear) or accuracy (logistic).
    pub shared_metric: f64,
    /// The non-private fit on this site's records alone.
    pub local_weights: Vec<f64>,
    pub local_loss: f64,
    pub local_metric: f64,
    pub metric_name: String,
}

/// The shared `weights` against this site's own non-private fit, on its `records` (D =
/// `features` features, then the label; they passed the study's checks).
pub fn local_comparison(
    model: Model,
    records: &[Vec<f64>],
    features: usize,
    weights: &[f64],
) -> LocalComparison {
    let data = records_dataset(records, features);
    let shared = DVector::from_column_slice(weights);
    let local = nonprivate::fit(model, &data);
    LocalComparison {
        model,
        shared_loss: model.loss(&shared, &data),
        shared_metric: model.metric(&shared, &data),
        local_weights: local.as_slice().to_vec(),
        local_loss: model.loss(&local, &data),
        local_metric: model.metric(&local, &data),
        metric_name: model.metric_name().to_string(),
    }
}

/// What one CAPE release of a regression study guarantees among `sites` = |U| sites, as
/// [`Guarantee::cape`] computes it for capeFM: strict mode (the study calibrates τ to the joint
/// sensitivity m), the default S_C = ⌈S/3⌉ − 1, and the full adversary view as the guarantee.
/// Its effective multiplier is the z the ledger records.
pub fn study_guarantee(params: &StudyParams, sites: usize) -> Result<Guarantee, GuaranteeError> {
    let Query::Regression(query) = params.query else { return Err(GuaranteeError::NotRegression) };
    let plan = params.noise().map_err(|e| GuaranteeError::Params(e.to_string()))?;
    let m = query.joint_multiplier();
    let formula = match (params.calibration, plan.classical_bound_covers) {
        (Calibration::Analytic, _) => Formula::Analytic,
        (Calibration::Classical, true) => Formula::Classical,
        (Calibration::Classical, false) => Formula::PaperExtrapolation,
    };
    // τ = m·z_target in the released units, so the target's multiplier is τ/m = z.
    let calibrated = Calibrated {
        multiplier: plan.noise_multiplier,
        formula,
        is_guarantee: plan.classical_bound_covers,
    };
    let collusion =
        Collusion::default_for(sites).map_err(|e| GuaranteeError::Params(e.to_string()))?;
    Guarantee::cape(params.epsilon, params.delta, calibrated, m, true, &collusion)
        .map_err(|e| GuaranteeError::Params(e.to_string()))
}

/// Why [`study_guarantee`] has nothing to say.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GuaranteeError {
    #[error("the study computed a mean, not a regression")]
    NotRegression,
    #[error("{0}")]
    Params(String),
}
