//! How an EFPSN run enters a site's ledger: Theorem IV.1 gives one (ε, δ) for the whole run
//! (every iterate is a function of the perturbed cost f̂_i), so the site records one
//! [`ApproximateEvent`] before its first message of the run, composed with its other releases by
//! basic composition ([`crate::accountant::ledger`]).

use super::messages::Decline;
use crate::accountant::{ApproximateEvent, Ledger, Release};
use crate::efpsn::epsilon::TheoremEpsilon;
use crate::study::gate;

/// The label of an EFPSN run's entry.
pub const LABEL: &str = "EFPSN run (Theorem IV.1)";

/// Records the run's (ε, δ) under `study`, or says why the ledger refused it (nothing changed):
/// for its budget, with the [`Shortfall`](crate::accountant::ledger::Shortfall) that says what
/// the budget would have to be.
pub fn record_run(
    ledger: &mut Ledger,
    study: String,
    eps: &TheoremEpsilon,
    time_ms: u64,
) -> Result<(), Decline> {
    let event = ApproximateEvent::new(LABEL, eps.epsilon, eps.delta, 1)
        .map_err(|e| Decline::Refused(format!("the run's guarantee: {e}")))?;
    gate::spend(ledger, vec![Release::new(study, event, time_ms)]).map(|_| ()).map_err(|e| match e
        .shortfall()
    {
        Some(shortfall) => Decline::Budget { shortfall, run_epsilon: eps.epsilon },
        None => Decline::Refused(e.to_string()),
    })
}
