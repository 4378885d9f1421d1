//! EFPSN (seed 003): every site tab an agent on a graph, Paillier-encrypted zero-sum masks, then
//! decentralised optimisation; the dashboard only observes. Each agent runs in its worker.
//!
//! - [`form`]: the form, read and checked before anything is sent (the step's bound, each
//!   site's budget against Theorem IV.1's ε).
//! - [`run`]: the dashboard's observer on the room's socket.
//! - [`view`]: what the panels say (names, one note per cause) and chart; [`graph`]: the graph.
//! - [`panel`], [`centre`], [`site_panel`]: the dashboard's panel, the presenter's
//!   centrepiece, a site's panel; [`worker`]: a site's agent in its worker.

pub mod centre;
pub mod form;
pub mod graph;
pub mod panel;
pub mod run;
pub mod site_panel;
pub mod view;
pub mod worker;
