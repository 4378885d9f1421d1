/*!
The two models of the papers (spec cape-fm §2.2, §2.3): their exact losses, predictions and the
metrics the experiments report.

- Linear regression: loss (y − xᵀw)², metric: mean squared error.
- Logistic regression: loss log(1 + e^{xᵀw}) − y·xᵀw with y ∈ {0, 1}; the classifier predicts 1
  when xᵀw ≥ 0 (the same as rounding sigmoid(xᵀw), as S1 does); metric: accuracy.

There is no intercept: as in the papers, w ∈ R^D acts on x directly.
*/

use nalgebra::DVector;
use serde::{Deserialize, Serialize};

use crate::data::{Dataset, TargetKind};

/// Which regression FM is applied to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Model {
    Linear,
    Logistic,
}

impl Model {
    pub fn name(&self) -> &'static str {
        match self {
            Model::Linear => "linear",
            Model::Logistic => "logistic",
        }
    }

    /// What the targets must be.
    pub fn target_kind(&self) -> TargetKind {
        match self {
            Model::Linear => TargetKind::Regression,
            Model::Logistic => TargetKind::Binary,
        }
    }

    /// The exact empirical loss f_D(w) = (1/N)Σ loss(x_n, y_n; w).
    pub fn loss(&self, w: &DVector<f64>, data: &Dataset) -> f64 {
        let scores = &data.x * w;
        let n = data.len() as f64;
        match self {
            Model::Linear => (&data.y - scores).norm_squared() / n,
            Model::Logistic => {
                scores.iter().zip(data.y.iter()).map(|(&s, &y)| softplus(s) - y * s).sum::<f64>()
                    / n
            }
        }
    }

    /// The metric the papers report: mean squared error (linear) or accuracy in [0, 1] (logistic).
    pub fn metric(&self, w: &DVector<f64>, data: &Dataset) -> f64 {
        match self {
            Model::Linear => self.loss(w, data),
            Model::Logistic => accuracy(w, data),
        }
    }

    /// The metric's name in reports.
    pub fn metric_name(&self) -> &'static str {
        match self {
            Model::Linear => "mse",
            Model::Logistic => "accuracy",
        }
    }
}

/// The share of records whose label the linear classifier sign(xᵀw) (with 0 ↦ class 1) gets right.
pub fn accuracy(w: &DVector<f64>, data: &Dataset) -> f64 {
    let scores = &data.x * w;
    let right =
        scores.iter().zip(data.y.iter()).filter(|&(&s, &y)| (s >= 0.0) == (y == 1.0)).count();
    right as f64 / data.len() as f64
}

/// log(1 + e^s) without overflow.
pub fn softplus(s: f64) -> f64 {
    if s > 0.0 { s + (-s).exp().ln_1p() } else { s.exp().ln_1p() }
}

/// 1/(1 + e^{−s}).
pub fn sigmoid(s: f64) -> f64 {
    if s >= 0.0 {
        1.0 / (1.0 + (-s).exp())
    } else {
        let e = s.exp();
        e / (1.0 + e)
    }
}
