//! The mixture model and DP-VI around it (spec B2–B4, B6): parameters and their transform
//! ([`params`]), the parties' local step ([`local`]), the aggregator's ADVI step ([`gradient`]),
//! training ([`train`]), test NLL ([`nll`]), the synthetic twin ([`twin`]), a generated Adult-like
//! table ([`generate`]) and per-column total variation ([`tv`]).

pub mod generate;
pub mod gradient;
pub mod local;
pub mod nll;
pub mod params;
pub mod train;
pub mod tv;
pub mod twin;

pub use gradient::{Aggregator, Sampling, Variational};
pub use params::Model;
pub use train::{NoisyClippedSum, PlainSum, Posterior, TrainConfig, train, train_plain};
