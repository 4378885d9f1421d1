/*!
Minimising a noisy quadratic f̂(w) = β̂ + α̂ᵀw + wᵀM̂w robustly (spec cape-fm §2.5, §7.7).

After noise, M̂ can be indefinite, singular, or negative definite, and f̂ may have no minimum:
along an eigenvector with eigenvalue λ < 0 it falls without bound, and with λ = 0 it is linear
wherever α̂ has a component. (S1 claims a PSD M̂ makes f̂ bounded; that is false in the second
case, and S1 leaves the all-negative case open.)

The method here (the spec's recommendation, equivalent to Zhang et al.'s spectral trimming):
1. optionally add a ridge λI to M̂;
2. eigendecompose M̂ = QΛQᵀ and keep the eigen-directions with λ_i above a floor;
3. ŵ = −½·Σ_kept (q_iᵀα̂/λ_i)·q_i, the minimiser of f̂ restricted to the kept subspace (the
   pseudo-inverse over those eigenvalues);
4. optionally project ŵ onto a ball or a box (a public bound on the model).

When no eigenvalue clears the floor (e.g. all negative), ŵ = 0 and the report says so. Every step
is post-processing of the noisy arrays, so the DP guarantee is unchanged. The floor can be tied to
the noise: eigenvalues of M̂ below the size of the noise matrix's spectrum carry more noise than
signal. With entries N(0, τ₂²) on the upper triangle, that spectrum has norm about 2τ₂√D (the
edge of Wigner's semicircle), which is the default floor ([`EigenFloor::NoiseScaled`] with k = 2):
an eigenvalue of M̂ above it is unlikely to be noise alone. (On the synthetic regression of spec
§6.1, k = 2 gave equal or lower test MSE than k = 1 or no floor at every ε tried.)
*/

use nalgebra::{DMatrix, DVector, SymmetricEigen};
use serde::{Deserialize, Serialize};

use super::coefficients::Coefficients;

/// Where to cut the spectrum.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum EigenFloor {
    /// Keep eigenvalues above this number.
    Absolute(f64),
    /// Keep eigenvalues above k·τ₂·√D, where τ₂ is the standard deviation of the noise on each
    /// entry of Λ₂ (k = 2: the expected spectral norm of the noise matrix).
    NoiseScaled(f64),
}

/// An optional public constraint on ŵ, applied by projection.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Constraint {
    None,
    /// ‖w‖₂ ≤ radius.
    Ball {
        radius: f64,
    },
    /// |w_d| ≤ half_width (the authors' code uses the box [−1, 1]^D, spec §2.5 \[R\]).
    Box {
        half_width: f64,
    },
}

/// How to minimise the noisy objective.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MinimiserConfig {
    pub floor: EigenFloor,
    /// λ ≥ 0 added to M̂'s diagonal before trimming.
    pub ridge: f64,
    pub constraint: Constraint,
}

impl Default for MinimiserConfig {
    fn default() -> Self {
        Self { floor: EigenFloor::NoiseScaled(2.0), ridge: 0.0, constraint: Constraint::None }
    }
}

/// What the minimiser did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MinimiserReport {
    pub method: String,
    /// The eigenvalue floor actually used.
    pub floor: f64,
    pub ridge: f64,
    pub kept_eigenvalues: usize,
    /// The eigenvalues (after the ridge) at or below the floor, ascending.
    pub trimmed_eigenvalues: Vec<f64>,
    /// How many eigenvalues were negative: directions along which f̂ is unbounded below.
    pub negative_eigenvalues: usize,
    /// True when no eigenvalue cleared the floor and ŵ = 0.
    pub all_trimmed: bool,
    /// ‖ŵ‖ before projection, when a projection moved it.
    pub projected_from_norm: Option<f64>,
    /// f̂(ŵ), the noisy objective at the answer.
    pub noisy_objective: f64,
}

/// ŵ for the (noisy) coefficients `c`, where `quadratic_noise_sd` is τ₂ (0 for exact arrays).
pub fn minimise(
    c: &Coefficients,
    quadratic_noise_sd: f64,
    config: &MinimiserConfig,
) -> (DVector<f64>, MinimiserReport) {
    let d = c.dim();
    let mut m = c.lambda2.clone();
    // Average the two triangles so that rounding never makes the eigensolver see asymmetry.
    m = (&m + m.transpose()) * 0.5;
    if config.ridge > 0.0 {
        m += DMatrix::identity(d, d) * config.ridge;
    }
    let eigen = SymmetricEigen::new(m);
    let largest = eigen.eigenvalues.iter().fold(0.0f64, |a, &l| a.max(l.abs()));
    // Below this the pseudo-inverse would only amplify rounding error.
    let numerical = 1e-12 * largest.max(f64::MIN_POSITIVE);
    let floor = match config.floor {
        EigenFloor::Absolute(f) => f.max(numerical),
        EigenFloor::NoiseScaled(k) => (k * quadratic_noise_sd * (d as f64).sqrt()).max(numerical),
    };
    let mut w = DVector::zeros(d);
    let mut trimmed = Vec::new();
    for (i, &lambda) in eigen.eigenvalues.iter().enumerate() {
        if lambda > floor {
            let q = eigen.eigenvectors.column(i);
            w -= q * (0.5 * q.dot(&c.lambda1) / lambda);
        } else {
            trimmed.push(lambda);
        }
    }
    trimmed.sort_by(f64::total_cmp);
    let negative = eigen.eigenvalues.iter().filter(|&&l| l < 0.0).count();
    let kept = d - trimmed.len();
    let norm_before = w.norm();
    let projected = match config.constraint {
        Constraint::None => false,
        Constraint::Ball { radius } => {
            if norm_before > radius {
                w *= radius / norm_before;
                true
            } else {
                false
            }
        }
        Constraint::Box { half_width } => {
            let outside = w.iter().any(|v| v.abs() > half_width);
            w.iter_mut().for_each(|v| *v = v.clamp(-half_width, half_width));
            outside
        }
    };
    let mut method =
        String::from("spectral trimming (pseudo-inverse over eigenvalues above the floor)");
    if config.ridge > 0.0 {
        method.push_str(&format!(", ridge {}", config.ridge));
    }
    match config.constraint {
        Constraint::None => {}
        Constraint::Ball { radius } => method.push_str(&format!(", projected onto ‖w‖ ≤ {radius}")),
        Constraint::Box { half_width } => {
            method.push_str(&format!(", projected onto the box [−{half_width}, {half_width}]^D"))
        }
    }
    let report = MinimiserReport {
        method,
        floor,
        ridge: config.ridge,
        kept_eigenvalues: kept,
        trimmed_eigenvalues: trimmed,
        negative_eigenvalues: negative,
        all_trimmed: kept == 0,
        projected_from_norm: projected.then_some(norm_before),
        noisy_objective: c.objective(&w),
    };
    (w, report)
}
