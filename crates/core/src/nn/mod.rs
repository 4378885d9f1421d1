/*!
CAPE gradient descent for a two-layer network (seed 002 §5.1, spec cape-fm §5), with the privacy
of all iterations accounted (seed 002 reports ε per iteration only).

- [`network`]: the ReLU/sigmoid network, its cross-entropy gradients and per-example clipping.
- [`adam`]: the optimiser (post-processing of the noisy gradients).
- [`mod@train`]: the distributed loop: CAPE, conventional, or non-private aggregation per iteration.
- [`privacy`]: ε over all iterations (RDP both conversions, exact Gaussian composition) under the
  aggregator's, Theorem 1's and the full adversary view.
*/

pub mod adam;
pub mod network;
pub mod privacy;
pub mod train;

pub use network::Network;
pub use privacy::{NnPrivacy, ViewAccount, account, epsilon_per_iteration_for_target};
pub use train::{NnConfig, NnError, NnMechanism, NnReport, train, train_with};
