//! A finished round for the views' tests, run by the core's simulator.

use std::collections::BTreeMap;

use capelab_core::accountant::{Budget, Ledger};
use capelab_core::secagg::sim::DropMode;
use capelab_core::study::mean::sim::{StudyDropPoint, StudySim, StudySimConfig};

use crate::frame::dashboard::FinishedRound;

/// A study of `s` sites (d = 400, N_s = 200, seeded data) run by the core's simulator: the
/// same roles as in the browser. With `drop`, the last site vanishes there.
pub fn simulated(s: usize, conventional: bool, drop: Option<StudyDropPoint>) -> FinishedRound {
    let n = 200;
    let mut config =
        StudySimConfig::new(11, 0.5, 1e-5, n).with_dimension(400).with_conventional(conventional);
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
