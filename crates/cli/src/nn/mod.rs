/*!
`cape nn` and `cape nn-sweep`: the two-layer network trained by distributed gradient descent with
CAPE, the conventional scheme, or without privacy (seed 002 §5.1, spec cape-fm §5), with the
privacy of all iterations accounted (`capelab_core::nn::privacy`).

Synthetic data: two Gaussian classes (D = 50, means ±0.25), N = 10 000 records in all, split 70/30
as in the authors' code; `--samples` is that total. Real data (e.g. `breast-cancer`) are split
70/30 and need `--bounds` or `--data-dependent-scaling`, as for `cape fm`.
*/

mod args;
mod run;
mod sweep;

pub use args::{NnArgs, NnSweepArgs};
pub use run::run;
pub use sweep::run_sweep;
