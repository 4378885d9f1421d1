//! Joint ICA (fMRI): capePCA then capeDJICA. The dashboard's aggregators and each site's roles run
//! in Web Workers ([`worker_dashboard`], [`worker_site`]); the page forwards messages.

pub mod centre;
pub mod form;
pub mod panel;
pub mod run;
pub mod site_panel;
pub mod site_view;
pub mod view;
pub mod worker_dashboard;
pub mod worker_site;
