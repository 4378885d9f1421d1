//! Small views that render signals; no protocol logic.

pub mod charts;
pub mod connection_badge;
pub mod copy_link;
pub mod fold;
pub mod presence_list;
pub mod present;
pub mod qr;
pub mod refusals;
pub mod session_card;
