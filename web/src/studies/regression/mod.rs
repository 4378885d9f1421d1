//! The private regression (capeFM): the mean's protocol with capeFM's coefficient arrays as the
//! query, public bounds for sites' raw tables, and the model fitted from the noisy average.

pub mod centre;
pub mod form;
pub mod panel;
pub mod public_bounds;
pub mod view;
