/*!
The coefficient arrays of the functional mechanism (spec cape-fm §2.1–§2.3).

The objective is written f(w) = Λ₀ + Λ₁ᵀw + wᵀΛ₂w:
- linear regression (exact): Λ₀ = (1/N)Σy², Λ₁ = −(2/N)Σ y_n x_n, Λ₂ = XᵀX/N;
- logistic regression (second-order Taylor expansion of log(1 + e^z) at 0):
  Λ₀ = log 2 (no data), Λ₁ = (1/N)Σ(½ − y_n)x_n, Λ₂ = XᵀX/(8N).

**Taylor error (logistic).** With g(z) = log(1 + e^z), g(z) − z/2 is even, so the cubic Taylor
term vanishes and the Lagrange remainder of order 3 is g⁗(ξ)z⁴/24. Writing p = σ(1 − σ) ∈ (0, ¼],
g″ = p ≤ ¼ and g⁗ = p(1 − 6p) ∈ [−⅛, 1/24], so for every z

  0 ≤ (log 2 + z/2 + z²/8) − g(z) ≤ z⁴/192

(the left inequality because g″ ≤ ¼ makes the quadratic an upper bound). Averaging over records
with z = x_nᵀw and ‖x_n‖ ≤ 1: **0 ≤ f̃_D(w) − f_D(w) ≤ (1/N)Σ(x_nᵀw)⁴/192 ≤ ‖w‖⁴/192**
([`logistic_taylor_error_bound`]). The papers call this only "a small constant" (spec §7.10).

**Packing.** Noise goes on the distinct entries: Λ₀, Λ₁, and the upper triangle of Λ₂ including
its diagonal, row by row ([`pack_upper`]); the lower triangle is a mirror image ([`unpack_upper`]).
This is how the symmetric noise of spec §2.5 (Analyze-Gauss) and the zero-sum CAPE noise of §4
step 2 are both kept symmetric.
*/

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use crate::data::Dataset;

use super::model::Model;

/// Λ₀, Λ₁, Λ₂ of one data set (or their noisy versions).
#[derive(Clone, Debug, PartialEq)]
pub struct Coefficients {
    pub lambda0: f64,
    pub lambda1: DVector<f64>,
    /// Symmetric D×D.
    pub lambda2: DMatrix<f64>,
}

/// One coefficient array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Block {
    /// Λ₀, a scalar.
    Constant,
    /// Λ₁, a D-vector.
    Linear,
    /// Λ₂, symmetric D×D, released as its D(D+1)/2 upper-triangle entries.
    Quadratic,
}

impl Block {
    pub const ALL: [Block; 3] = [Block::Constant, Block::Linear, Block::Quadratic];

    pub fn name(&self) -> &'static str {
        match self {
            Block::Constant => "lambda0",
            Block::Linear => "lambda1",
            Block::Quadratic => "lambda2",
        }
    }

    /// The number of released entries for D features.
    pub fn len(&self, d: usize) -> usize {
        match self {
            Block::Constant => 1,
            Block::Linear => d,
            Block::Quadratic => d * (d + 1) / 2,
        }
    }
}

impl Coefficients {
    /// The coefficient arrays of `model` on `data` (the 1/N averages).
    pub fn of(model: Model, data: &Dataset) -> Self {
        let n = data.len() as f64;
        let gram = data.x.tr_mul(&data.x) / n;
        match model {
            Model::Linear => Self {
                lambda0: data.y.norm_squared() / n,
                lambda1: data.x.tr_mul(&data.y) * (-2.0 / n),
                lambda2: gram,
            },
            Model::Logistic => {
                let centred = data.y.map(|y| 0.5 - y);
                Self {
                    lambda0: std::f64::consts::LN_2,
                    lambda1: data.x.tr_mul(&centred) / n,
                    lambda2: gram / 8.0,
                }
            }
        }
    }

    /// D.
    pub fn dim(&self) -> usize {
        self.lambda1.len()
    }

    /// f(w) = Λ₀ + Λ₁ᵀw + wᵀΛ₂w.
    pub fn objective(&self, w: &DVector<f64>) -> f64 {
        self.lambda0 + self.lambda1.dot(w) + w.dot(&(&self.lambda2 * w))
    }

    /// The released entries of `block`.
    pub fn block(&self, block: Block) -> Vec<f64> {
        match block {
            Block::Constant => vec![self.lambda0],
            Block::Linear => self.lambda1.as_slice().to_vec(),
            Block::Quadratic => pack_upper(&self.lambda2),
        }
    }

    /// Replaces `block` with the entries `values` (as produced by [`Self::block`]).
    pub fn set_block(&mut self, block: Block, values: &[f64]) {
        match block {
            Block::Constant => self.lambda0 = values[0],
            Block::Linear => self.lambda1.copy_from_slice(values),
            Block::Quadratic => self.lambda2 = unpack_upper(self.dim(), values),
        }
    }
}

/// The upper triangle of a square matrix including the diagonal, row by row.
pub fn pack_upper(m: &DMatrix<f64>) -> Vec<f64> {
    let d = m.nrows();
    let mut out = Vec::with_capacity(d * (d + 1) / 2);
    for i in 0..d {
        for j in i..d {
            out.push(m[(i, j)]);
        }
    }
    out
}

/// The symmetric D×D matrix whose upper triangle is `values` (as [`pack_upper`] lays it out).
pub fn unpack_upper(d: usize, values: &[f64]) -> DMatrix<f64> {
    let mut m = DMatrix::zeros(d, d);
    let mut k = 0;
    for i in 0..d {
        for j in i..d {
            m[(i, j)] = values[k];
            m[(j, i)] = values[k];
            k += 1;
        }
    }
    m
}

/// The proven bound on the logistic Taylor error at `w` for `data` (module docs):
/// (1/N)Σ(x_nᵀw)⁴/192, itself at most ‖w‖⁴/192 on FM's domain.
pub fn logistic_taylor_error_bound(w: &DVector<f64>, data: &Dataset) -> f64 {
    let scores = &data.x * w;
    scores.iter().map(|s| s.powi(4)).sum::<f64>() / (192.0 * data.len() as f64)
}
