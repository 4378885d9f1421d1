/*!
The noise draws of the pooled mechanisms, all from [`CapeRng`].

Noise goes on the packed entries of each block ([`super::coefficients::Coefficients::block`]), so
Λ₂'s noise is drawn on the upper triangle and mirrored (spec §2.5, Analyze-Gauss): a symmetric
noisy matrix.
*/

use rand::RngExt;
use rand_distr::{Distribution, Gamma, StandardNormal};

use crate::rng::CapeRng;

/// Adds N(0, `sd`²) to every entry.
pub fn add_gaussian(values: &mut [f64], sd: f64, rng: &mut CapeRng) {
    for v in values {
        let z: f64 = StandardNormal.sample(rng);
        *v += sd * z;
    }
}

/// Adds Laplace(0, `scale`) to every entry (density ∝ exp(−|b|/scale), variance 2·scale²), by
/// inversion: b = −scale·sgn(u)·ln(1 − 2|u|), u uniform on (−½, ½).
pub fn add_laplace(values: &mut [f64], scale: f64, rng: &mut CapeRng) {
    for v in values {
        let u: f64 = rng.random::<f64>() - 0.5;
        *v -= scale * u.signum() * (-2.0 * u.abs()).ln_1p();
    }
}

/// A vector b ∈ R^D with density ∝ exp(−‖b‖/`scale`): uniform direction, norm ~ Gamma(D, scale).
/// This is the noise of output perturbation (Chaudhuri et al. 2011) with scale Δ/ε.
pub fn draw_norm_laplace(d: usize, scale: f64, rng: &mut CapeRng) -> Vec<f64> {
    let mut dir: Vec<f64> = (0..d).map(|_| StandardNormal.sample(rng)).collect();
    let len = dir.iter().map(|v| v * v).sum::<f64>().sqrt();
    let radius = Gamma::new(d as f64, scale).expect("shape D ≥ 1 and a positive scale").sample(rng);
    dir.iter_mut().for_each(|v| *v *= radius / len);
    dir
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::derive;

    #[test]
    fn moments_match_the_distributions() {
        let mut rng = derive(1, "test/noise");
        let n = 40_000;
        let mut lap = vec![0.0; n];
        add_laplace(&mut lap, 2.0, &mut rng);
        let var = lap.iter().map(|v| v * v).sum::<f64>() / n as f64;
        // Var = 2·scale² = 8; the sample variance's sd is sqrt((E b⁴ − 64)/n) = sqrt(320/n).
        assert!((var - 8.0).abs() < 4.0 * (320.0 / n as f64).sqrt(), "{var}");
        let mean_abs = lap.iter().map(|v| v.abs()).sum::<f64>() / n as f64;
        assert!((mean_abs - 2.0).abs() < 4.0 * 2.0 / (n as f64).sqrt(), "{mean_abs}");

        // ‖b‖ ~ Gamma(D, scale): mean D·scale.
        let norms: Vec<f64> = (0..4000)
            .map(|_| draw_norm_laplace(5, 0.5, &mut rng).iter().map(|v| v * v).sum::<f64>().sqrt())
            .collect();
        let mean = norms.iter().sum::<f64>() / norms.len() as f64;
        // sd of ‖b‖ is sqrt(D)·scale = 1.118; standard error 0.018.
        assert!((mean - 2.5).abs() < 0.08, "{mean}");
    }
}
