/*!
CAPE, Correlation Assisted Private Estimation (seed 000 §III; spec cape-secagg-pca-djica §2, §7,
§8 and cape-fm-capefm-nn §1).

Each site s adds two noises to its local value f(x_s): a zero-sum part e_s (Algorithm 1), which
cancels in the aggregate, and a small independent part g_s. Every message still carries the full
local variance τ_s², but the average of the messages only carries Σg_s, so the aggregate is as
accurate as if the data had been pooled (Lemma 1), S times better in variance than the
conventional scheme (Proposition 1).

Code map, one concept per file:
- [`secure_sum`]: the seam to SecureAgg (what goes in, what comes back) and an in-process ideal
  secure sum for simulations.
- [`zero_sum`]: Algorithm 1 arithmetic: the noise's fixed-point format and the exact zero-sum split.
- [`site`]: Algorithm 2, site side: draw ê_s, then release â_s = f(x_s) + e_s + g_s.
- [`estimator`]: Algorithm 2, aggregator side: a_cape, with the dropout check of Remark 4.
- [`conventional`]: the baseline every site adds N(0, τ_s²) to, aggregated by the mean.
- [`adversary_view`]: the covariance of what the adversary sees, built from the mechanism itself.
- [`privacy`]: Theorem 1 with the errata: c_S, μ_z, σ_z, δ, and δ_conv and δ_pool for comparison.
- [`asymmetric`]: Section III-C: weights, the noise variances M·σ² = r, and its worst-case privacy.
- [`utility`]: Remark 3 (H(n)) and Proposition 1 (the gain G = S).
- [`simulation`]: one CAPE or conventional round run in process, for Monte Carlo and the CLI.
- [`figures`]: the data behind seed 000 Fig. 5.
- [`error`]: the errors of the protocol steps.

**Trust model (spec §1).** Honest-but-curious sites and aggregator; at most S_C = ⌈S/3⌉ − 1 sites
collude with the adversary; the secure sum reveals only Σê. Outside these bounds the paper makes
no privacy claim and neither does this module. Theorem 1's analysis leaves out the colluders' own
noise, which the adversary holds; [`privacy`] reports the release against that full view too
([`privacy::c_s_full_view`]), and it is the weaker guarantee.

**Dropouts (spec Remark 4).** "S" in e_s and τ_g² is |U|, the number of sites whose ê entered the
sum, never the planned S. A site in U that sends no â breaks the zero sum; the estimator refuses and
names the survivors to re-run with.
*/

pub mod adversary_view;
pub mod asymmetric;
pub mod conventional;
pub mod error;
pub mod estimator;
pub mod figures;
pub mod privacy;
pub mod secure_sum;
pub mod simulation;
pub mod site;
pub mod utility;
pub mod zero_sum;

pub use adversary_view::AdversaryView;
pub use asymmetric::{AsymmetricError, AsymmetricPlan, AsymmetricView, WorstCase};
pub use error::{EstimateError, SiteError};
pub use estimator::CapeEstimator;
pub use privacy::{Collusion, PrivacyError, PrivacyLoss, ReleasePrivacy};
pub use secure_sum::{IdealSecureSum, NoiseShare, NoiseSum, SecureSum};
pub use site::{PendingRelease, SiteNoise, SiteRelease, draw_noise};
pub use zero_sum::noise_format;
