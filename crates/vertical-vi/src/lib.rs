/*!
DP variational inference over vertically partitioned data with MPC (seed 004; spec
`efpsn-vertical-dpvi.md` Part B).

Parties hold different columns of the same individuals. Together they fit a mixture model under
differential privacy (DP-SGD on a mean-field Gaussian variational posterior) without any party
seeing another's columns: the per-example gradients are computed under additive secret sharing,
clipped jointly, noised in shares, and only the noisy clipped batch sum is opened. Anyone can then
sample a synthetic twin of the joint table from the released posterior.

This crate sits on the algorithms floor above `capelab-core` (accountant, ledger, CSPRNG, study
machinery); it is sans-IO like the rest of capelab.
*/
#![forbid(unsafe_code)]

pub mod batch;
pub mod cps1988;
pub mod model;
pub mod modes;
pub mod mpc;
pub mod privacy;
pub mod report;
pub mod schema;
pub mod study;
pub mod table;
