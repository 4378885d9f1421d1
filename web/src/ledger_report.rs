//! A site's ledger report to the dashboards (`ledger/report`). It lives in the core
//! ([`capelab_core::study::ledger_report`]) so that every site sends the same message: the app's
//! tabs and pages built on the npm package (`crates/js`).

pub use capelab_core::study::ledger_report::*;
