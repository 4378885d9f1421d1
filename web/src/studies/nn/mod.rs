//! The neural network (CAPE gradient descent): the core's iterative study over a two-layer
//! network, the dashboard's aggregator on the page, each site's role on its own records.

pub mod centre;
pub mod compare;
pub mod form;
pub mod panel;
pub mod run;
pub mod site_panel;
pub mod view;
