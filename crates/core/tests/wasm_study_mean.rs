//! The private-mean study inside a browser: the roles the tabs and the dashboard run, compiled to
//! wasm32-unknown-unknown and driven on a MemoryRoom in headless Chromium.
//!
//! `cargo test -p capelab-core --target wasm32-unknown-unknown --test wasm_study_mean`
#![cfg(target_arch = "wasm32")]

use capelab_core::accountant::{Budget, Ledger};
use capelab_core::secagg::sim::DropMode;
use capelab_core::study::mean::sim::{StudyDropPoint, StudySim, StudySimConfig};
use capelab_core::study::mean::{SitePhase, kind, row_mean};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn rows(site: usize, n: usize, d: usize) -> Vec<Vec<f64>> {
    (0..n)
        .map(|i| (0..d).map(|j| ((site * 37 + i * 11 + j * 5) % 101) as f64 / 100.0).collect())
        .collect()
}

#[wasm_bindgen_test]
fn a_full_study_with_a_rerun() {
    // S = 5, t = 4: site 3 vanishes after the noise sum, so the study re-runs among four sites
    let (n, d) = (20, 3);
    let data = (0..5)
        .map(|i| {
            let ledger =
                Ledger::new(format!("site {i}"), Budget::new(10.0, 1e-5).unwrap()).unwrap();
            (rows(i, n, d), ledger)
        })
        .collect();
    let config = StudySimConfig::new(11, 0.5, 1e-5, n)
        .with_dimension(d)
        .with_conventional(true)
        .with_dropout(3, StudyDropPoint::BeforeRelease { attempt: 1 }, DropMode::Disconnect);
    let mut sim = StudySim::new(config, data).unwrap();
    let report = sim.run();
    let outcome = report.outcome.expect("finished");
    let est = outcome.estimates().expect("estimated");
    let survivors = [0usize, 1, 2, 4];
    assert_eq!(est.survivors, survivors.iter().map(|&i| sim.site_id(i)).collect::<Vec<_>>());
    assert_eq!((est.attempt, outcome.attempts.len()), (2, 2));

    // Σ e_s = 0 exactly in the re-run, and the estimate is the mean of the releases
    for j in 0..d {
        let total: f64 = survivors
            .iter()
            .map(|&i| report.sites[i].attempts[1].zero_sum_noise.as_ref().unwrap()[j])
            .sum();
        assert_eq!(total, 0.0);
        let mean = est.messages.iter().map(|m| m.values[j]).sum::<f64>() / 4.0;
        assert!((mean - est.cape[j]).abs() < 1e-12);
        let pooled = survivors.iter().map(|&i| row_mean(&rows(i, n, d), d)[j]).sum::<f64>() / 4.0;
        let sd = outcome.theory.as_ref().unwrap().var_cape.sqrt();
        assert!((est.cape[j] - pooled).abs() < 8.0 * sd);
    }
    for &i in &survivors {
        assert_eq!(report.sites[i].phase, SitePhase::Done);
        assert_eq!(report.sites[i].spent.len(), 3, "two CAPE releases and the conventional one");
        assert_eq!(report.sites[i].sent.iter().filter(|k| **k == kind::RELEASE).count(), 2);
    }
    assert!(serde_json::to_string(&outcome).unwrap().contains("\"masked_inputs\""));
}
