/*!
What the dashboard shows of the studies, derived from the core's outcomes and ledger reports:
chart specifications, sentences and exports. Pure functions, tested natively against studies the
core simulates; the components render what they return.

- [`results`]: messages vs the aggregate, the noise-variance gain, dropouts in words.
- [`masked`]: the masked SecureAgg vectors as bits, with uniformity statistics.
- [`privacy`]: ε spent per site round by round, the accountings compared, Fig. 5.
- [`export`]: a round as JSON and CSV.
- [`ledger_groups`]: a site's ledger by study (name, ε before → after, its releases).
- [`vvi`]: the vertical synthetic-data study: status, ε per player, the twin, marginals.
- [`vvi_baseline`]: a `cape vertical-vi --json` run read for the NLL chart, and how it differs.
- [`compare`]: the session's NN runs and regression rounds side by side.
- [`bounds`]: a guarantee under PLD and RDP side by side, and which one a ledger charges.
*/

pub mod bounds;
pub mod compare;
pub mod efpsn;
pub mod export;
pub mod ica;
pub mod ledger_groups;
pub mod masked;
pub mod masking;
pub mod nn;
pub mod privacy;
pub mod regression;
pub mod results;
pub mod round_charge;
pub mod vvi;
pub mod vvi_baseline;

#[cfg(test)]
pub(crate) mod fixtures {
    use std::collections::BTreeMap;

    use capelab_core::accountant::{Budget, Ledger};
    use capelab_core::secagg::sim::DropMode;
    use capelab_core::study::mean::sim::{StudyDropPoint, StudySim, StudySimConfig};

    use crate::study_driver::dashboard::FinishedRound;

    /// A study of `s` sites (d = 400, N_s = 200, seeded data) run by the core's simulator: the
    /// same roles as in the browser. With `drop`, the last site vanishes there.
    pub fn simulated(s: usize, conventional: bool, drop: Option<StudyDropPoint>) -> FinishedRound {
        let n = 200;
        let mut config = StudySimConfig::new(11, 0.5, 1e-5, n)
            .with_dimension(400)
            .with_conventional(conventional);
        if let Some(at) = drop {
            config = config.with_dropout(s - 1, at, DropMode::Disconnect);
        }
        let data = (0..s)
            .map(|i| {
                let rows = crate::local_data::generate(i as u64, n, 400);
                (rows, Ledger::new(format!("s{i}"), Budget::new(100.0, 1e-5).unwrap()).unwrap())
            })
            .collect();
        let mut sim = StudySim::new(config, data).unwrap();
        let outcome = sim.run().outcome.unwrap();
        let names: BTreeMap<u32, String> =
            (0..s).map(|i| (sim.site_id(i), format!("Clinic {i}"))).collect();
        FinishedRound { number: 1, outcome, names, step_mode: false }
    }
}
