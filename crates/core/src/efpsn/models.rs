//! The local costs f_i that EFPSN's agents minimise together (spec efpsn-vertical-dpvi §A4):
//! softmax (multinomial logistic) regression, as the paper's convex MNIST model, and least
//! squares, whose minimiser has a closed form. Both carry a ridge term λ/2·‖x‖² so that F has one
//! minimiser x* to measure ‖x̄ − x*‖ against (unregularised softmax on separable data has none).

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use super::EfpsnError;

/// The model family, as the CLI and the browser name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    Logistic,
    LeastSquares,
}

impl ModelKind {
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Logistic => "logistic",
            ModelKind::LeastSquares => "least-squares",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [ModelKind::Logistic, ModelKind::LeastSquares].into_iter().find(|m| m.name() == name)
    }
}

/// Labelled examples: `rows × features` values, row-major, and one target per row (a class
/// index for softmax, a real value for least squares).
#[derive(Clone, Debug, PartialEq)]
pub struct Examples {
    pub features: usize,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

impl Examples {
    pub fn new(features: usize, x: Vec<f64>, y: Vec<f64>) -> Result<Self, EfpsnError> {
        if features == 0 || x.len() != features * y.len() {
            return Err(EfpsnError::Data(format!(
                "{} values for {} rows of {features} features",
                x.len(),
                y.len()
            )));
        }
        if let Some(i) = x.iter().chain(&y).position(|v| !v.is_finite()) {
            return Err(EfpsnError::Data(format!("value {i} of the table is not a finite number")));
        }
        Ok(Examples { features, x, y })
    }

    pub fn rows(&self) -> usize {
        self.y.len()
    }

    pub fn row(&self, r: usize) -> &[f64] {
        &self.x[r * self.features..(r + 1) * self.features]
    }

    /// The rows `index` picks, in that order.
    pub fn select(&self, index: &[usize]) -> Examples {
        let mut x = Vec::with_capacity(index.len() * self.features);
        for &r in index {
            x.extend_from_slice(self.row(r));
        }
        Examples { features: self.features, x, y: index.iter().map(|&r| self.y[r]).collect() }
    }
}

/// One agent's private cost f_i(x) = (1/N_i) Σ_r ℓ(x; r) + λ/2·‖x‖².
#[derive(Clone, Debug, PartialEq)]
pub struct LocalCost {
    pub model: Model,
    pub data: Examples,
    pub ridge: f64,
}

/// The loss ℓ and the layout of x.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Model {
    /// x = (W row-major, classes × features, then the `classes` biases).
    Softmax { classes: usize },
    /// x = the coefficients; ℓ = ½(aᵀx − b)².
    LeastSquares,
}

impl Model {
    pub fn dim(&self, features: usize) -> usize {
        match *self {
            Model::Softmax { classes } => classes * (features + 1),
            Model::LeastSquares => features,
        }
    }

    /// The indices of the bias entries in x (softmax), or of every coefficient.
    pub fn bias_indices(&self, features: usize) -> Vec<usize> {
        match *self {
            Model::Softmax { classes } => (classes * features..classes * (features + 1)).collect(),
            Model::LeastSquares => (0..features).collect(),
        }
    }
}

impl LocalCost {
    pub fn new(model: Model, data: Examples, ridge: f64) -> Result<Self, EfpsnError> {
        if !(ridge >= 0.0 && ridge.is_finite()) {
            return Err(EfpsnError::Parameter(format!("ridge λ = {ridge} must be ≥ 0")));
        }
        if let Model::Softmax { classes } = model
            && let Some(&bad) =
                data.y.iter().find(|&&y| !(y >= 0.0 && y < classes as f64 && y.fract() == 0.0))
        {
            return Err(EfpsnError::Data(format!("label {bad} is not a class in 0..{classes}")));
        }
        Ok(LocalCost { model, data, ridge })
    }

    pub fn dim(&self) -> usize {
        self.model.dim(self.data.features)
    }

    /// f_i(x) over all local rows.
    pub fn loss(&self, x: &[f64]) -> f64 {
        let n = self.data.rows().max(1) as f64;
        let mut total = 0.0;
        let mut scores = Vec::new();
        for r in 0..self.data.rows() {
            total += match self.model {
                Model::Softmax { classes } => {
                    self.scores(x, r, classes, &mut scores);
                    let lse = log_sum_exp(&scores);
                    lse - scores[self.data.y[r] as usize]
                }
                Model::LeastSquares => {
                    let e = dot(self.data.row(r), x) - self.data.y[r];
                    0.5 * e * e
                }
            };
        }
        total / n + 0.5 * self.ridge * dot(x, x)
    }

    /// ∇f_i(x) averaged over `rows` (all rows when `None`), written into `out`.
    pub fn gradient(&self, x: &[f64], rows: Option<&[usize]>, out: &mut [f64]) {
        out.iter_mut().zip(x).for_each(|(o, xi)| *o = self.ridge * xi);
        let all: Vec<usize>;
        let rows = match rows {
            Some(r) => r,
            None => {
                all = (0..self.data.rows()).collect();
                &all
            }
        };
        if rows.is_empty() {
            return;
        }
        let scale = 1.0 / rows.len() as f64;
        let f = self.data.features;
        let mut scores = Vec::new();
        for &r in rows {
            let a = self.data.row(r);
            match self.model {
                Model::Softmax { classes } => {
                    self.scores(x, r, classes, &mut scores);
                    let lse = log_sum_exp(&scores);
                    for c in 0..classes {
                        let p = (scores[c] - lse).exp();
                        let d = scale * (p - if self.data.y[r] as usize == c { 1.0 } else { 0.0 });
                        for (o, ai) in out[c * f..(c + 1) * f].iter_mut().zip(a) {
                            *o += d * ai;
                        }
                        out[classes * f + c] += d;
                    }
                }
                Model::LeastSquares => {
                    let d = scale * (dot(a, x) - self.data.y[r]);
                    for (o, ai) in out.iter_mut().zip(a) {
                        *o += d * ai;
                    }
                }
            }
        }
    }

    fn scores(&self, x: &[f64], r: usize, classes: usize, scores: &mut Vec<f64>) {
        let f = self.data.features;
        let a = self.data.row(r);
        scores.clear();
        scores.extend((0..classes).map(|c| dot(&x[c * f..(c + 1) * f], a) + x[classes * f + c]));
    }
}

/// The share of `test` rows a softmax model classifies right, or for least squares the root
/// mean squared error.
pub fn evaluate(model: Model, x: &[f64], test: &Examples) -> f64 {
    let f = test.features;
    match model {
        Model::Softmax { classes } => {
            let right = (0..test.rows())
                .filter(|&r| {
                    let a = test.row(r);
                    let best = (0..classes)
                        .map(|c| dot(&x[c * f..(c + 1) * f], a) + x[classes * f + c])
                        .enumerate()
                        .max_by(|p, q| p.1.total_cmp(&q.1))
                        .map(|(c, _)| c);
                    best == Some(test.y[r] as usize)
                })
                .count();
            right as f64 / test.rows().max(1) as f64
        }
        Model::LeastSquares => {
            let sse: f64 =
                (0..test.rows()).map(|r| (dot(test.row(r), x) - test.y[r]).powi(2)).sum();
            (sse / test.rows().max(1) as f64).sqrt()
        }
    }
}

/// x* = argmin (1/n) Σ_i f_i, centrally: by the normal equations for least squares, by
/// accelerated gradient descent with restarts to ‖∇F‖ ≤ 1e−9 for softmax.
pub fn centralised_minimiser(costs: &[LocalCost]) -> Vec<f64> {
    let d = costs[0].dim();
    let n = costs.len() as f64;
    match costs[0].model {
        Model::LeastSquares => {
            let mut h = DMatrix::<f64>::zeros(d, d);
            let mut g = DVector::<f64>::zeros(d);
            for c in costs {
                let rows = c.data.rows().max(1) as f64;
                let a = DMatrix::from_row_slice(c.data.rows(), d, &c.data.x);
                let b = DVector::from_column_slice(&c.data.y);
                h += a.transpose() * &a / (rows * n);
                g += a.transpose() * b / (rows * n);
                for i in 0..d {
                    h[(i, i)] += c.ridge / n;
                }
            }
            match h.clone().cholesky() {
                Some(ch) => ch.solve(&g).as_slice().to_vec(),
                // Singular without a ridge: the minimum-norm minimiser.
                None => h
                    .pseudo_inverse(1e-12)
                    .map(|p| (p * g).as_slice().to_vec())
                    .unwrap_or(vec![0.0; d]),
            }
        }
        Model::Softmax { .. } => accelerated_descent(costs, d),
    }
}

fn accelerated_descent(costs: &[LocalCost], d: usize) -> Vec<f64> {
    let n = costs.len() as f64;
    let grad = |x: &[f64], out: &mut Vec<f64>| {
        out.iter_mut().for_each(|o| *o = 0.0);
        let mut gi = vec![0.0; d];
        for c in costs {
            c.gradient(x, None, &mut gi);
            out.iter_mut().zip(&gi).for_each(|(o, g)| *o += g / n);
        }
    };
    let value = |x: &[f64]| costs.iter().map(|c| c.loss(x)).sum::<f64>() / n;
    let mut x = vec![0.0; d];
    let mut z = x.clone();
    let mut g = vec![0.0; d];
    let mut lipschitz = 1.0;
    let mut momentum = 1.0f64;
    for _ in 0..50_000 {
        grad(&z, &mut g);
        let fz = value(&z);
        // Backtracking on the Lipschitz estimate.
        let next = loop {
            let cand: Vec<f64> = z.iter().zip(&g).map(|(zi, gi)| zi - gi / lipschitz).collect();
            let g2 = dot(&g, &g);
            if value(&cand) <= fz - 0.5 * g2 / lipschitz + 1e-15 * fz.abs() {
                break cand;
            }
            lipschitz *= 2.0;
        };
        let next_momentum = 0.5 * (1.0 + (1.0 + 4.0 * momentum * momentum).sqrt());
        let beta = (momentum - 1.0) / next_momentum;
        // Restart when the step goes against the gradient (O'Donoghue & Candès).
        let restart = dot(&g, &next.iter().zip(&x).map(|(a, b)| a - b).collect::<Vec<_>>()) > 0.0;
        z = if restart {
            momentum = 1.0;
            next.clone()
        } else {
            momentum = next_momentum;
            next.iter().zip(&x).map(|(a, b)| a + beta * (a - b)).collect()
        };
        x = next;
        lipschitz *= 0.9;
        grad(&x, &mut g);
        if dot(&g, &g).sqrt() <= 1e-9 {
            break;
        }
    }
    x
}

pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn log_sum_exp(v: &[f64]) -> f64 {
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    max + v.iter().map(|s| (s - max).exp()).sum::<f64>().ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::derive;
    use rand::RngExt;

    fn random_examples(
        rows: usize,
        features: usize,
        classes: Option<usize>,
        seed: u64,
    ) -> Examples {
        let mut rng = derive(seed, "test");
        let x: Vec<f64> = (0..rows * features).map(|_| rng.random_range(-1.0..1.0)).collect();
        let y = (0..rows)
            .map(|_| match classes {
                Some(c) => rng.random_range(0..c) as f64,
                None => rng.random_range(-1.0..1.0),
            })
            .collect();
        Examples::new(features, x, y).unwrap()
    }

    #[test]
    fn gradients_match_finite_differences() {
        for (model, classes) in
            [(Model::Softmax { classes: 3 }, Some(3)), (Model::LeastSquares, None)]
        {
            let cost = LocalCost::new(model, random_examples(20, 4, classes, 1), 0.1).unwrap();
            let d = cost.dim();
            let x: Vec<f64> = (0..d).map(|i| (i as f64 * 0.7).sin()).collect();
            let mut g = vec![0.0; d];
            cost.gradient(&x, None, &mut g);
            for i in 0..d {
                let h = 1e-6;
                let (mut up, mut down) = (x.clone(), x.clone());
                up[i] += h;
                down[i] -= h;
                let fd = (cost.loss(&up) - cost.loss(&down)) / (2.0 * h);
                assert!((fd - g[i]).abs() < 1e-6, "{model:?} ∂{i}: {fd} vs {}", g[i]);
            }
        }
    }

    #[test]
    fn the_centralised_minimiser_zeroes_the_gradient() {
        for (model, classes) in
            [(Model::Softmax { classes: 3 }, Some(3)), (Model::LeastSquares, None)]
        {
            let costs: Vec<LocalCost> = (0..3)
                .map(|s| LocalCost::new(model, random_examples(30, 4, classes, s), 0.01).unwrap())
                .collect();
            let x = centralised_minimiser(&costs);
            let d = costs[0].dim();
            let mut total = vec![0.0; d];
            let mut g = vec![0.0; d];
            for c in &costs {
                c.gradient(&x, None, &mut g);
                total.iter_mut().zip(&g).for_each(|(t, gi)| *t += gi / 3.0);
            }
            assert!(
                dot(&total, &total).sqrt() < 1e-8,
                "{model:?}: ‖∇F(x*)‖ = {}",
                dot(&total, &total).sqrt()
            );
        }
    }

    #[test]
    fn bad_tables_are_refused() {
        assert!(Examples::new(2, vec![1.0; 5], vec![0.0; 2]).is_err());
        assert!(
            Examples::new(1, vec![f64::NAN], vec![0.0]).unwrap_err().to_string().contains("finite")
        );
        let ex = Examples::new(1, vec![0.0], vec![7.0]).unwrap();
        assert!(
            LocalCost::new(Model::Softmax { classes: 3 }, ex, 0.0)
                .unwrap_err()
                .to_string()
                .contains("label 7")
        );
    }
}
