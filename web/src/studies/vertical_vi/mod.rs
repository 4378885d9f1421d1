//! The vertical synthetic-data study (seed 004): DP variational inference over vertically
//! partitioned columns with MPC, and the synthetic twin. Parties and the dealer run in workers.

pub mod baseline;
pub mod baseline_card;
pub mod centre;
pub mod data;
pub mod figure;
pub mod form;
pub mod own;
pub mod own_card;
pub mod panel;
pub mod run;
pub mod site_panel;
pub mod view;
pub mod worker;
