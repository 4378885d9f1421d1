//! EFPSN (seed 003): every site tab an agent on a graph, Paillier-encrypted zero-sum masks, then
//! decentralised optimisation; the dashboard only observes. Each agent runs in its worker.

pub mod centre;
pub mod panel;
pub mod run;
pub mod site_panel;
pub mod view;
pub mod worker;
