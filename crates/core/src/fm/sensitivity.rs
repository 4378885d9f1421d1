/*!
Sensitivities of the coefficient arrays under replace-one neighbours (bounded DP), on the domain
‖x‖₂ ≤ 1, y ∈ [−1, 1] (linear) or y ∈ {0, 1} (logistic). Spec cape-fm §2.2, §2.3, §7.1, §7.2.

| | Λ₀ | Λ₁ | Λ₂ (upper triangle, L2 = Frobenius bound) |
|---|---|---|---|
| linear, Gaussian FM | 1/N | 4/N | √2/N |
| logistic, Gaussian FM | no data | 1/N | √2/(8N) |

**Λ₂ needs the Frobenius bound** (spec §7.2): entrywise noise is a Gaussian mechanism on the vector
of entries, whose L2 sensitivity is ‖xxᵀ − x′x′ᵀ‖_F/N. With x = e₁, x′ = e₂ that is √2/N (on the
upper triangle too: both changes sit on the diagonal). S1 prints the spectral norm 1/N
([`s1_printed_quadratic`]), which this pair exceeds; it is kept only to show that.

**Baselines**, one sensitivity for every coefficient:
- Laplace FM (Zhang et al. 2012), L1: 2(1 + D)²/N (linear), (D²/4 + 3D)/N (logistic).
- relaxed FM (Ding et al. 2020), L2: (2/N)·sqrt(1 + 4D + D²) (linear), (1/N)·sqrt(D²/16 + D)
  (logistic). Both are valid on ‖x‖ ≤ 1 (they were derived for |x_d| ≤ 1, a larger domain).

**Joint multiplier m** (spec §7.1). Each block j gets N(0, τ_j²) with τ_j = Δ_j·z. Divided by
its noise, the blocks released together form one Gaussian mechanism of multiplier z/m, where
m = max over neighbouring records of sqrt(Σ_j (‖ΔΛ_j‖/Δ_j)²). Maximising over record pairs gives
m = 1.5 for linear regression with Λ₀, Λ₁, Λ₂ (attained at y = 1, x = e₁ against y′ = 0,
x′ = e₂), m = 1.25 for linear regression with Λ₁, Λ₂ only, and m = 1.25 for logistic regression
(`tests/fm_sensitivity.rs` checks these by optimisation over record pairs). The crude bound is
m ≤ √k for k data-dependent blocks.
*/

use super::coefficients::Block;
use super::model::Model;

/// Δ_j of each released block for Gaussian FM at N records (`None`: the block carries no data and
/// gets no noise).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockSensitivities {
    pub constant: Option<f64>,
    pub linear: f64,
    pub quadratic: f64,
}

impl BlockSensitivities {
    /// Δ of `block`, `None` if it carries no data.
    pub fn of(&self, block: Block) -> Option<f64> {
        match block {
            Block::Constant => self.constant,
            Block::Linear => Some(self.linear),
            Block::Quadratic => Some(self.quadratic),
        }
    }
}

/// Gaussian FM's L2 sensitivities (Frobenius for Λ₂) at `n` records. `release_constant` says
/// whether Λ₀ is released (linear regression only; spec §7.5: not needed when only ŵ is).
pub fn gaussian_fm(model: Model, n: usize, release_constant: bool) -> BlockSensitivities {
    let n = n as f64;
    match model {
        Model::Linear => BlockSensitivities {
            constant: release_constant.then_some(1.0 / n),
            linear: 4.0 / n,
            quadratic: std::f64::consts::SQRT_2 / n,
        },
        Model::Logistic => BlockSensitivities {
            constant: None,
            linear: 1.0 / n,
            quadratic: std::f64::consts::SQRT_2 / (8.0 * n),
        },
    }
}

/// S1's printed Λ₂ sensitivity (spectral norm): 1/N (linear), 1/(8N) (logistic). **Too small**
/// for entrywise noise (spec §7.2); for comparison only.
pub fn s1_printed_quadratic(model: Model, n: usize) -> f64 {
    match model {
        Model::Linear => 1.0 / n as f64,
        Model::Logistic => 1.0 / (8.0 * n as f64),
    }
}

/// Laplace FM's L1 sensitivity over all coefficients (Zhang et al. 2012, spec §2.2–§2.3).
pub fn laplace_fm_l1(model: Model, n: usize, d: usize) -> f64 {
    let (n, d) = (n as f64, d as f64);
    match model {
        Model::Linear => 2.0 * (1.0 + d).powi(2) / n,
        Model::Logistic => (d * d / 4.0 + 3.0 * d) / n,
    }
}

/// Relaxed FM's L2 sensitivity over all coefficients (Ding et al. 2020, spec §2.2–§2.3).
pub fn relaxed_fm_l2(model: Model, n: usize, d: usize) -> f64 {
    let (n, d) = (n as f64, d as f64);
    match model {
        Model::Linear => 2.0 / n * (1.0 + 4.0 * d + d * d).sqrt(),
        Model::Logistic => (d * d / 16.0 + d).sqrt() / n,
    }
}

/// The joint multiplier m of the Gaussian FM blocks released together (module docs).
pub fn joint_multiplier(model: Model, release_constant: bool) -> f64 {
    match (model, release_constant) {
        (Model::Linear, true) => 1.5,
        (Model::Linear, false) | (Model::Logistic, _) => 1.25,
    }
}

/// The blocks that carry data and get noise.
pub fn noisy_blocks(model: Model, release_constant: bool) -> Vec<Block> {
    let s = gaussian_fm(model, 1, release_constant);
    Block::ALL.into_iter().filter(|b| s.of(*b).is_some()).collect()
}
