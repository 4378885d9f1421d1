/*!
Source time courses: GARCH(1,1) processes (spec §6 proposal), with Gaussian or heavier-tailed
innovations (spec §9.7: heavier tails make the sources clearly non-Gaussian after clipping).

x_t = σ_t·ε_t, σ_t² = ω + a·x_{t−1}² + b·σ_{t−1}², with ω = 1 − a − b (unit unconditional
variance), a and b drawn per component and subject. The innovations ε_t have unit variance. Each
series is standardised (zero mean, unit variance) after generation.
*/

use crate::rng::CapeRng;
use rand::RngExt;
use rand_distr::{Distribution, Exp1, StandardNormal, StudentT};
use serde::{Deserialize, Serialize};

/// The distribution of the GARCH innovations ε_t, all scaled to unit variance.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Innovations {
    /// N(0, 1): the spec §6 proposal.
    Gaussian,
    /// Laplace with unit variance (excess kurtosis 3).
    Laplace,
    /// Student's t with `dof` > 2 degrees of freedom, scaled to unit variance.
    StudentT {
        /// Degrees of freedom ν (> 2 for a finite variance; ≤ 4 has infinite kurtosis).
        dof: f64,
    },
}

/// Ranges the GARCH coefficients are drawn from, uniformly (spec §6: a ∈ [0.1, 0.3],
/// b ∈ [0.5, 0.65]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GarchRanges {
    /// Range of the ARCH coefficient a.
    pub a: (f64, f64),
    /// Range of the GARCH coefficient b.
    pub b: (f64, f64),
}

impl Default for GarchRanges {
    fn default() -> Self {
        GarchRanges { a: (0.1, 0.3), b: (0.5, 0.65) }
    }
}

impl GarchRanges {
    /// True when every draw gives a stationary process with ω > 0: 0 ≤ a, 0 ≤ b, a + b < 1.
    pub fn is_valid(&self) -> bool {
        let ok = |(lo, hi): (f64, f64)| lo.is_finite() && hi.is_finite() && 0.0 <= lo && lo <= hi;
        ok(self.a) && ok(self.b) && self.a.1 + self.b.1 < 1.0
    }
}

/// Steps discarded before recording, so the series starts near stationarity.
const BURN_IN: usize = 100;

/// One standardised GARCH(1,1) series of length `len` (at least 2).
pub fn garch_series(
    rng: &mut CapeRng,
    len: usize,
    ranges: GarchRanges,
    innovations: Innovations,
) -> Vec<f64> {
    let a = uniform(rng, ranges.a);
    let b = uniform(rng, ranges.b);
    let omega = 1.0 - a - b;
    let mut sigma_sq = 1.0;
    let mut prev = 0.0;
    let mut out = Vec::with_capacity(len);
    for t in 0..BURN_IN + len {
        sigma_sq = omega + a * prev * prev + b * sigma_sq;
        prev = sigma_sq.sqrt() * innovation(rng, innovations);
        if t >= BURN_IN {
            out.push(prev);
        }
    }
    standardise(&mut out);
    out
}

fn uniform(rng: &mut CapeRng, (lo, hi): (f64, f64)) -> f64 {
    if hi > lo { rng.random_range(lo..hi) } else { lo }
}

fn innovation(rng: &mut CapeRng, kind: Innovations) -> f64 {
    match kind {
        Innovations::Gaussian => rng.sample(StandardNormal),
        Innovations::Laplace => {
            // Exp(1) with a random sign is Laplace(0, 1), variance 2.
            let magnitude: f64 = Exp1.sample(rng);
            let sign = if rng.random::<bool>() { 1.0 } else { -1.0 };
            sign * magnitude * std::f64::consts::FRAC_1_SQRT_2
        }
        Innovations::StudentT { dof } => {
            let t: f64 = StudentT::new(dof).expect("dof validated by SyntheticConfig").sample(rng);
            t * ((dof - 2.0) / dof).sqrt()
        }
    }
}

/// Zero mean and unit variance (population), in place; a constant series becomes all zeros.
pub fn standardise(series: &mut [f64]) {
    let n = series.len() as f64;
    let mean = series.iter().sum::<f64>() / n;
    let var = series.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    let scale = if var > 0.0 { 1.0 / var.sqrt() } else { 0.0 };
    for v in series.iter_mut() {
        *v = (*v - mean) * scale;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::derive;

    fn excess_kurtosis(x: &[f64]) -> f64 {
        let n = x.len() as f64;
        x.iter().map(|v| v.powi(4)).sum::<f64>() / n - 3.0
    }

    #[test]
    fn series_are_standardised_and_heavy_tails_are_heavier() {
        let ranges = GarchRanges::default();
        let mut rng = derive(1, "garch-test");
        let mut kurt = |kind| {
            let mut total = 0.0;
            for _ in 0..40 {
                let s = garch_series(&mut rng, 2000, ranges, kind);
                let mean = s.iter().sum::<f64>() / s.len() as f64;
                let var = s.iter().map(|v| v * v).sum::<f64>() / s.len() as f64;
                assert!(mean.abs() < 1e-12 && (var - 1.0).abs() < 1e-12);
                total += excess_kurtosis(&s);
            }
            total / 40.0
        };
        let gaussian = kurt(Innovations::Gaussian);
        let laplace = kurt(Innovations::Laplace);
        // GARCH alone makes Gaussian innovations leptokurtic; Laplace innovations add more.
        assert!(gaussian > 0.2, "GARCH excess kurtosis {gaussian}");
        assert!(laplace > gaussian + 1.0, "{laplace} vs {gaussian}");
    }
}
