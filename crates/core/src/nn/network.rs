/*!
The two-layer network of seed 002 §5.1 (spec cape-fm §5): ŷ = sigmoid(w₂ᵀ·ReLU(W₁x + b₁) + b₂),
trained on the cross-entropy −y log ŷ − (1 − y) log(1 − ŷ).

Parameters are handled as one flat vector, in the order [W₁ (row by row), b₁, w₂, b₂], so that a
gradient is one vector for clipping, noise and the optimiser.

**Per-example clipping.** Each record's gradient g_n is scaled to norm at most C before averaging,
so the site's average (1/N_s)Σ clip(g_n) moves by at most 2C/N_s when one record is replaced: the
L2 sensitivity the noise is calibrated to.
*/

use nalgebra::{DMatrix, DVector};
use rand_distr::{Distribution, StandardNormal};

use crate::data::Dataset;
use crate::fm::model::{sigmoid, softplus};
use crate::rng::CapeRng;

/// W₁ (H×D), b₁ (H), w₂ (H), b₂.
#[derive(Clone, Debug, PartialEq)]
pub struct Network {
    pub w1: DMatrix<f64>,
    pub b1: DVector<f64>,
    pub w2: DVector<f64>,
    pub b2: f64,
}

impl Network {
    /// He initialisation: W₁ ~ N(0, 2/D), w₂ ~ N(0, 2/H), zero biases.
    pub fn init(d: usize, hidden: usize, rng: &mut CapeRng) -> Self {
        let mut normal = |sd: f64| -> f64 {
            let z: f64 = StandardNormal.sample(rng);
            sd * z
        };
        let sd1 = (2.0 / d as f64).sqrt();
        let w1 = DMatrix::from_fn(hidden, d, |_, _| normal(sd1));
        let sd2 = (2.0 / hidden as f64).sqrt();
        let w2 = DVector::from_fn(hidden, |_, _| normal(sd2));
        Self { w1, b1: DVector::zeros(hidden), w2, b2: 0.0 }
    }

    pub fn inputs(&self) -> usize {
        self.w1.ncols()
    }

    pub fn hidden(&self) -> usize {
        self.w1.nrows()
    }

    /// H·D + 2H + 1.
    pub fn num_params(&self) -> usize {
        self.hidden() * self.inputs() + 2 * self.hidden() + 1
    }

    /// The flat parameter vector [W₁ row by row, b₁, w₂, b₂].
    pub fn params(&self) -> Vec<f64> {
        let mut p = Vec::with_capacity(self.num_params());
        for i in 0..self.hidden() {
            p.extend(self.w1.row(i).iter());
        }
        p.extend(self.b1.iter());
        p.extend(self.w2.iter());
        p.push(self.b2);
        p
    }

    /// Sets the parameters from a flat vector laid out as [`Self::params`].
    pub fn set_params(&mut self, p: &[f64]) {
        let (h, d) = (self.hidden(), self.inputs());
        for i in 0..h {
            for j in 0..d {
                self.w1[(i, j)] = p[i * d + j];
            }
        }
        let mut k = h * d;
        for i in 0..h {
            self.b1[i] = p[k + i];
        }
        k += h;
        for i in 0..h {
            self.w2[i] = p[k + i];
        }
        self.b2 = p[k + h];
    }

    /// The pre-sigmoid score of one record and its hidden pre-activations.
    fn forward(&self, x: &[f64]) -> (f64, DVector<f64>) {
        let mut a = self.b1.clone();
        for (i, ai) in a.iter_mut().enumerate() {
            *ai += self.w1.row(i).iter().zip(x).map(|(w, v)| w * v).sum::<f64>();
        }
        let score =
            self.b2 + a.iter().zip(self.w2.iter()).map(|(&ai, w)| ai.max(0.0) * w).sum::<f64>();
        (score, a)
    }

    /// P(y = 1 | x).
    pub fn predict(&self, x: &[f64]) -> f64 {
        sigmoid(self.forward(x).0)
    }

    /// The share of records classified right (ŷ ≥ ½ ↦ 1).
    pub fn accuracy(&self, data: &Dataset) -> f64 {
        let right = (0..data.len())
            .filter(|&n| {
                let x: Vec<f64> = data.x.row(n).iter().copied().collect();
                (self.forward(&x).0 >= 0.0) == (data.y[n] == 1.0)
            })
            .count();
        right as f64 / data.len() as f64
    }

    /// The mean cross-entropy.
    pub fn loss(&self, data: &Dataset) -> f64 {
        let total: f64 = (0..data.len())
            .map(|n| {
                let x: Vec<f64> = data.x.row(n).iter().copied().collect();
                let s = self.forward(&x).0;
                softplus(s) - data.y[n] * s
            })
            .sum();
        total / data.len() as f64
    }

    /// The cross-entropy gradient of one record, flat as [`Self::params`].
    pub fn example_gradient(&self, x: &[f64], y: f64, out: &mut [f64]) {
        let (h, d) = (self.hidden(), self.inputs());
        let (score, a) = self.forward(x);
        let err = sigmoid(score) - y;
        let (w1_part, rest) = out.split_at_mut(h * d);
        let (b1_part, rest) = rest.split_at_mut(h);
        let (w2_part, b2_part) = rest.split_at_mut(h);
        for i in 0..h {
            let active = a[i] > 0.0;
            let da = if active { err * self.w2[i] } else { 0.0 };
            for j in 0..d {
                w1_part[i * d + j] = da * x[j];
            }
            b1_part[i] = da;
            w2_part[i] = if active { err * a[i] } else { 0.0 };
        }
        b2_part[0] = err;
    }

    /// (1/N)Σ g_n over `data` with each g_n clipped to norm `clip` (`None`: no clipping), and the
    /// share of records that were clipped.
    pub fn mean_gradient(&self, data: &Dataset, clip: Option<f64>) -> (Vec<f64>, f64) {
        let p = self.num_params();
        let mut sum = vec![0.0; p];
        let mut g = vec![0.0; p];
        let mut clipped = 0usize;
        let mut x = vec![0.0; self.inputs()];
        for n in 0..data.len() {
            for (j, v) in x.iter_mut().enumerate() {
                *v = data.x[(n, j)];
            }
            self.example_gradient(&x, data.y[n], &mut g);
            let mut factor = 1.0;
            if let Some(c) = clip {
                let norm = g.iter().map(|v| v * v).sum::<f64>().sqrt();
                if norm > c {
                    factor = c / norm;
                    clipped += 1;
                }
            }
            for (s, v) in sum.iter_mut().zip(&g) {
                *s += factor * v;
            }
        }
        let n = data.len() as f64;
        sum.iter_mut().for_each(|s| *s /= n);
        (sum, clipped as f64 / n)
    }
}
