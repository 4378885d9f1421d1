//! The studies' panels (private mean, private regression, neural network, Joint ICA): dashboard
//! (form and live study, results, privacy, wire) and site (local data, its part in the study, its
//! ledger). They render the study drivers' signals. `registry.rs` lists the dashboard's studies;
//! `frame.rs` (the picker and the picked study's section) and the presenter view read only it.

pub mod centrepiece;
pub mod download_button;
pub mod efpsn_panel;
pub mod efpsn_site_panel;
pub mod frame;
pub mod ica_panel;
pub mod ica_site_panel;
pub mod ledger_panel;
pub mod local_data_panel;
pub mod mean_panel;
pub mod nn_panel;
pub mod nn_site_panel;
pub mod privacy_panel;
pub mod registry;
pub mod regression_panel;
pub mod results_panel;
pub mod site_study_panel;
pub mod start;
pub mod text_input;
pub mod vvi_baseline;
pub mod vvi_own_card;
pub mod vvi_panel;
pub mod vvi_site_panel;
pub mod wire_panel;
