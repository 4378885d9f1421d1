//! `cape efpsn` and `cape efpsn-sweep`: EFPSN (seed 003) in one process, each agent a sans-IO
//! role exchanging real Paillier ciphertexts and iterates over the in-memory transport.

mod args;
mod attack;
mod run;
mod sweep;

pub use args::{EfpsnArgs, EfpsnSweepArgs};
pub use attack::{EfpsnAttackArgs, run as run_attack};
pub use run::run;
pub use sweep::run_sweep;
