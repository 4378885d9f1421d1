/*!
The non-private fits every figure compares against (spec cape-fm §6: "non-priv", pooled data).

- Linear regression: the least-squares solution, through the same eigen-solver as the private
  runs with only a numerical floor (the minimum-norm solution when XᵀX is singular).
- Logistic regression: the minimiser of the exact logistic loss (not its Taylor approximation),
  by Newton's method with a tiny ridge (1e-6) so that separable data still give a finite answer.
*/

use nalgebra::{DMatrix, DVector};

use crate::data::Dataset;

use super::coefficients::Coefficients;
use super::minimise::{Constraint, EigenFloor, MinimiserConfig, minimise};
use super::model::{Model, sigmoid};

/// Ridge of the logistic Newton iteration.
pub const LOGISTIC_RIDGE: f64 = 1e-6;

/// The exact, non-private ŵ of `model` on `data`.
pub fn fit(model: Model, data: &Dataset) -> DVector<f64> {
    match model {
        Model::Linear => least_squares(data),
        Model::Logistic => logistic_newton(data, LOGISTIC_RIDGE, 100),
    }
}

fn least_squares(data: &Dataset) -> DVector<f64> {
    let config = MinimiserConfig {
        floor: EigenFloor::Absolute(0.0),
        ridge: 0.0,
        constraint: Constraint::None,
    };
    minimise(&Coefficients::of(Model::Linear, data), 0.0, &config).0
}

/// Newton's method on (1/N)Σ[log(1 + e^{xᵀw}) − y·xᵀw] + (ridge/2)‖w‖².
pub fn logistic_newton(data: &Dataset, ridge: f64, max_iterations: usize) -> DVector<f64> {
    let d = data.features();
    let n = data.len() as f64;
    let mut w = DVector::zeros(d);
    for _ in 0..max_iterations {
        let scores = &data.x * &w;
        let p = scores.map(sigmoid);
        let gradient = data.x.tr_mul(&(&p - &data.y)) / n + &w * ridge;
        let weights = p.map(|q| q * (1.0 - q));
        let mut weighted = data.x.clone();
        for (mut row, &c) in weighted.row_iter_mut().zip(weights.iter()) {
            row *= c;
        }
        let hessian = data.x.tr_mul(&weighted) / n + DMatrix::identity(d, d) * ridge;
        let Some(chol) = hessian.cholesky() else { break };
        let step = chol.solve(&gradient);
        w -= &step;
        if step.norm() < 1e-12 * (1.0 + w.norm()) {
            break;
        }
    }
    w
}
