/*!
The protocol drivers: the one place where transport events meet the private-mean study's roles.

- [`dashboard`]: the dashboard runs the core's `MeanAggregator` (and the step-by-step mode of
  [`step_gate`]).
- [`site`]: a site tab runs a `MeanSite` per study, with its ledger and its local data.
- [`wire`]: the transport the roles send through, and the log of what the relay saw.
- [`form`]: the dashboard's study forms, checked by the core before anything is sent.
- [`target`]: "ε for the whole study": the multiplier calibrated under PLD (and RDP's).
- [`ica_form`], [`ica_run`]: the Joint ICA study (capePCA, then capeDJICA) on the dashboard; each
  site's part runs in its Web Worker ([`crate::worker`]).
- [`efpsn_run`]: the EFPSN study (seed 003) on the dashboard: the task from the form, the core's
  observer; each site's agent runs in its Web Worker (Paillier is heavy).
- [`vvi_run`]: the vertical synthetic-data study (DP-VI + MPC, seed 004): the task and the
  data announcement, the core's aggregator; the parties and the dealer run in their workers.
  [`vvi_own`]: a party's own CSV column block, read against the announced schema and N.
- [`nn_run`]: the NN study (CAPE gradient descent): the core's `IterativeAggregator` on the
  dashboard; [`dashboard`] and [`site`] route its messages (one study at a time per tab).

Components render these drivers' signals and call their methods; they never run protocol steps.
*/

pub mod dashboard;
pub mod efpsn_run;
pub mod form;
pub mod ica_form;
pub mod ica_run;
mod lesson;
pub mod nn_run;
pub mod site;
pub mod step_gate;
pub mod target;
pub mod vvi_data;
pub mod vvi_own;
pub mod vvi_run;
pub mod wire;

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
