//! The private mean: every site releases its mean plus CAPE noise, the zero-sum part summed by
//! SecureAgg; the dashboard averages. Its round machinery (form, step-by-step gate, results,
//! exports) is the regression's too: the protocol is the same, with another query.

pub mod centre;
pub mod export;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod form;
pub mod masked;
pub mod masking;
pub mod panel;
pub mod results;
pub mod results_panel;
pub mod round_charge;
pub mod site_panel;
pub mod step_gate;
