/*!
The functional mechanism (FM) for linear and logistic regression, its Gaussian version, and
capeFM across sites (spec cape-fm §2–§4, §6, §7; seeds 001 and 002).

FM writes the empirical loss as a polynomial f(w) = Λ₀ + Λ₁ᵀw + wᵀΛ₂w whose coefficient arrays
are the only data-dependent parts, adds noise to the arrays, and minimises the noisy polynomial.

Code map, one concept per file:
- [`model`]: the two models, their exact losses and metrics.
- [`coefficients`]: Λ₀, Λ₁, Λ₂ (exact for linear, second-order Taylor for logistic, with the
  Taylor error bound), and their packing into released entries.
- [`sensitivity`]: Δ_j of Gaussian FM (Frobenius for Λ₂), the baselines' sensitivities, and the
  joint multiplier m of the blocks (§7.1).
- [`calibration`]: ε, δ → noise multiplier: classical below 1, analytic or the papers'
  extrapolation above.
- [`noise`]: Gaussian, Laplace and norm-Laplace draws.
- [`mechanism`]: the compared mechanisms and the pooled noisy releases.
- [`distributed`]: capeFM (over the [`crate::cape::SecureSum`] seam), conventional, local.
- [`output_perturbation`]: the authors' "objPert", named for what it is.
- [`nonprivate`]: the exact fits.
- [`minimise`]: spectral trimming with a reported floor, ridge and projection.
- [`guarantee`]: the (ε, δ) actually guaranteed, and how.
- [`mod@fit`]: one run end to end and its evaluation.
- [`error`]: why a run was refused.
*/

pub mod calibration;
pub mod coefficients;
pub mod distributed;
pub mod error;
pub mod fit;
pub mod guarantee;
pub mod mechanism;
pub mod minimise;
pub mod model;
pub mod noise;
pub mod nonprivate;
pub mod output_perturbation;
pub mod sensitivity;

pub use calibration::{Calibrated, Calibration, Formula};
pub use coefficients::{Block, Coefficients};
pub use error::FmError;
pub use fit::{Evaluation, FmConfig, FmFit, evaluate, fit, fit_with};
pub use guarantee::{Guarantee, GuaranteeKind};
pub use mechanism::Mechanism;
pub use minimise::{Constraint, EigenFloor, MinimiserConfig, MinimiserReport};
pub use model::Model;
