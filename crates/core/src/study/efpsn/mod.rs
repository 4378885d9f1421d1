/*!
EFPSN as a study of the room (seed 003; spec efpsn-vertical-dpvi Part A): every site tab is an
agent on a graph the dashboard chose; the agents run [`crate::efpsn`]'s Phase 1 and Phase 2
among themselves, peer to peer through the relay, and the dashboard only announces and observes.

```text
dashboard (EfpsnObserver)                      agent i (EfpsnStudySite)
  efpsn/start {runs: EFPSN, baseline,  ───────▶  check the task; ledger: record (ε, δ) of the
               noise-free; split, key}            EFPSN run; a Paillier key; an agent per run
                                                  efpsn/key, efpsn/noise ◀──▶ neighbours (Phase 1)
                                                  efpsn/iterate          ◀──▶ neighbours (Phase 2)
                                   ◀───────────  efpsn/report {status, iterates every R, ∇f̂_i(0)}
  all masks built: SecureAgg   ◀──efpsn/secagg──▶ input: the integer mask 10^P·η̄_i
  Σ_i η̄_i = 0 shown; ‖x̄ − x*‖, accuracy, per run
```

- [`task`]: the public task (`EfpsnTask`: the runs' plans, the data split, the key size).
- [`messages`]: `efpsn/start`, `efpsn/report`, `efpsn/stop`; why an agent declined a run
  ([`Decline`]: no consent, its budget with the [`Shortfall`](crate::accountant::ledger::Shortfall),
  its data) or stopped early ([`Stop`]: who left, who declined, the dashboard).
- [`site`]: an agent tab's role; the comparison runs need the user's consent.
- [`observer`]: the dashboard's role; the metrics of each run as reports arrive.
- [`residual`]: the zero-sum check: one SecureAgg over the agents' integer masks, so the
  dashboard learns Σ_i η̄_i (exactly 0) and no single mask.
- [`ledger`]: how a run's (ε, δ) enters the site's ledger.
- [`sim`]: the whole study in one process.
*/

pub mod ledger;
pub mod messages;
pub mod observer;
pub mod residual;
pub mod sim;
pub mod site;
pub mod task;

pub use messages::{Decline, Report, RunStatus, Stop, StudyBody, StudyMessage, kind};
pub use observer::{EfpsnObserver, ObservedRun};
pub use residual::Residual;
pub use site::{AgentData, EfpsnStudySite};
pub use task::{EfpsnTask, RunPlan};
