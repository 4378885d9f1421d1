/*!
Adam (Kingma & Ba 2015), the optimiser of the authors' network code (spec cape-fm §5 \[R\]: learning
rate 0.01). It only sees the aggregated noisy gradients, so it is post-processing: it changes
nothing in the privacy analysis.
*/

/// Adam's state for a flat parameter vector.
#[derive(Clone, Debug, PartialEq)]
pub struct Adam {
    pub learning_rate: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub epsilon: f64,
    m: Vec<f64>,
    v: Vec<f64>,
    t: i32,
}

impl Adam {
    /// Adam with the usual β₁ = 0.9, β₂ = 0.999, ε = 1e-8.
    pub fn new(params: usize, learning_rate: f64) -> Self {
        Self {
            learning_rate,
            beta1: 0.9,
            beta2: 0.999,
            epsilon: 1e-8,
            m: vec![0.0; params],
            v: vec![0.0; params],
            t: 0,
        }
    }

    /// One step on `params` along `gradient` (descent).
    pub fn step(&mut self, params: &mut [f64], gradient: &[f64]) {
        self.update(params, gradient, -1.0);
    }

    /// One step up `gradient` (ascent, e.g. on an ELBO).
    pub fn ascend(&mut self, params: &mut [f64], gradient: &[f64]) {
        self.update(params, gradient, 1.0);
    }

    fn update(&mut self, params: &mut [f64], gradient: &[f64], sign: f64) {
        self.t += 1;
        let c1 = 1.0 - self.beta1.powi(self.t);
        let c2 = 1.0 - self.beta2.powi(self.t);
        for i in 0..params.len() {
            let g = gradient[i];
            self.m[i] = self.beta1 * self.m[i] + (1.0 - self.beta1) * g;
            self.v[i] = self.beta2 * self.v[i] + (1.0 - self.beta2) * g * g;
            let m_hat = self.m[i] / c1;
            let v_hat = self.v[i] / c2;
            params[i] += sign * self.learning_rate * m_hat / (v_hat.sqrt() + self.epsilon);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimises_a_quadratic() {
        // f(p) = (p₀ − 3)² + 10(p₁ + 1)²
        let mut p = vec![0.0, 0.0];
        let mut adam = Adam::new(2, 0.05);
        for _ in 0..3000 {
            let g = [2.0 * (p[0] - 3.0), 20.0 * (p[1] + 1.0)];
            adam.step(&mut p, &g);
        }
        assert!((p[0] - 3.0).abs() < 1e-3 && (p[1] + 1.0).abs() < 1e-3, "{p:?}");
    }
}
