/*!
The shared frame every study plugs into: the one place where transport events meet the studies'
roles, and the views all studies share.

- [`dashboard`]: the dashboard's driver: routes the room's messages to the running study's
  aggregator and keeps its timer; [`site`]: a site tab's driver: its ledger, and the role of the
  study it takes part in.
- [`wire`]: the transport the roles send through, and the log of what the relay saw.
- [`form`]: what every study form shares: its errors, named by field, and the field readers.
- [`target`]: "ε for the whole study": the multiplier calibrated under PLD (and RDP's).
- [`picker`]: the study picker and the picked study's section; [`centre`]: the presenter's frame.
- [`start`]: the start button, the refusal to start, what a round will charge.
- [`ledger_panel`], [`ledger_groups`], [`privacy_panel`], [`privacy`], [`bounds`]: the ledgers
  and budgets; [`local_data_panel`], [`text_input`], [`download_button`], [`wire_panel`].

Components render these drivers' signals and call their methods; they never run protocol steps.
*/

pub mod bounds;
pub mod budget;
pub mod centre;
pub mod consent;
pub mod dashboard;
pub mod download_button;
pub mod form;
pub mod ledger_groups;
pub mod ledger_panel;
mod lesson;
pub mod local_data_panel;
pub mod picker;
pub mod privacy;
pub mod privacy_panel;
pub mod site;
pub mod start;
pub mod target;
pub mod text_input;
pub mod wire;
pub mod wire_panel;

/// The wall clock in milliseconds (`Date.now()`): ledger entries are stamped with it.
pub fn wall_ms() -> u64 {
    js_sys::Date::now() as u64
}

/// The inputs a role's driver refused, in words (naming the sender): for the curious.
pub fn refusal_lines<E: std::fmt::Display>(
    log: &[capelab_core::driver::DriverEvent<E>],
) -> Vec<String> {
    log.iter()
        .filter_map(|e| match e {
            capelab_core::driver::DriverEvent::Refused { from, error, .. } => Some(match from {
                Some(from) => format!("from participant {from}: {error}"),
                None => error.to_string(),
            }),
            _ => None,
        })
        .collect()
}
