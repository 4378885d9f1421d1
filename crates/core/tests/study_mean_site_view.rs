//! What a site tab shows of its own study: the fresh noise g_s of its release (spec §2
//! Algorithm 2: â_s = f(x_s) + e_s + g_s, g_s ~ N(0, τ²/|U|)) and the name its ledger records the
//! releases under, which the dashboard matches against its rounds.

mod cape_support;
mod study_support;

use cape_support::{assert_variance, mean_square};
use capelab_core::study::mean::ledger_study_name;
use capelab_core::study::mean::sim::{StudySim, StudySimConfig};
use study_support::{ledger, rows};

const D: usize = 2000;
const N_S: usize = 10;

#[test]
fn fresh_noise_is_the_release_minus_the_value_and_the_zero_sum_noise() {
    let s = 4;
    let config = StudySimConfig::new(41, 0.5, 1e-5, N_S).with_dimension(D);
    let data = (0..s).map(|i| (rows(i, N_S, D), ledger(i, 100.0))).collect();
    let mut sim = StudySim::new(config, data).unwrap();
    let report = sim.run();
    let outcome = report.outcome.expect("finished");
    let tau2 = outcome.noise.local_sd * outcome.noise.local_sd;
    let study = outcome.study;
    for i in 0..s {
        let site = sim.site(i);
        let attempt = &site.attempts()[0];
        let g = site.fresh_noise(attempt).expect("released");
        let value = site.local_value().unwrap();
        let e = attempt.zero_sum_noise.as_ref().unwrap();
        let released = attempt.release.as_ref().unwrap();
        // â_s is put back together from its three parts
        for j in [0, D / 2, D - 1] {
            let sum = value[j] + e[j] + g[j];
            assert!((sum - released[j]).abs() < 1e-12, "site {i}, coordinate {j}");
        }
        // g_s carries variance τ²/|U| (D independent coordinates)
        assert_variance(&format!("g_{i}"), mean_square(&g), tau2 / s as f64, D);
        // the ledger names the study the dashboard ran
        assert!(site.spent().iter().all(|entry| entry.study == ledger_study_name(study)));
    }
    assert_eq!(ledger_study_name(study), format!("mean {}", study.to_hex()));
}

#[test]
fn no_fresh_noise_before_the_release() {
    let config = StudySimConfig::new(5, 0.5, 1e-5, N_S);
    let data = (0..3).map(|i| (rows(i, N_S, 1), ledger(i, 100.0))).collect();
    let mut sim = StudySim::new(config, data).unwrap();
    // a few passes: the sites are inside SecureAgg, nothing released yet
    for _ in 0..3 {
        sim.step();
    }
    let site = sim.site(0);
    let attempt = site.attempts().first().expect("attempt 1 began");
    assert!(attempt.release.is_none());
    assert_eq!(site.fresh_noise(attempt), None);
}
