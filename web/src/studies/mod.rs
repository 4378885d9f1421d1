/*!
The studies, one folder each: its dashboard form and run, its site panel, its view model (pure,
tested natively), its worker role where it has one, and its presenter centrepiece. They plug into
the shared frame ([`crate::frame`]): the picker, the drivers that route a room's messages, the
ledger and the charts. [`registry`] lists them; a new study is one folder plus one entry there.

- [`mean`]: the private mean (CAPE over SecureAgg), the round machinery the regression shares.
- [`regression`]: capeFM, a query of the mean's protocol, with public bounds for raw tables.
- [`nn`]: CAPE gradient descent for a small network.
- [`ica`]: capePCA + capeDJICA (Joint ICA of fMRI), its numerics in Web Workers.
- [`efpsn`]: EFPSN, Paillier-masked decentralised optimisation among the tabs.
- [`vertical_vi`]: DP variational inference over vertically partitioned data with MPC.
*/

pub mod efpsn;
pub mod ica;
pub mod mean;
pub mod nn;
pub mod registry;
pub mod regression;
pub mod vertical_vi;
