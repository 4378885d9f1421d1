//! The private-mean study end to end on a MemoryRoom (spec cape-secagg-pca-djica §2–§3): full
//! rounds with S = 3..8 through the real SecureAgg, Monte Carlo checks of every variance of
//! Lemma 1 / Proposition 1, the exact zero sum, and the ledger entries.
//!
//! Coordinates of one study are independent draws of every noise, so one study with d coordinates
//! gives d samples. Tolerances are chi-square bounds at 5 standard deviations (cape_support).

mod cape_support;
mod study_support;

use cape_support::{assert_variance, mean_square};
use capelab_core::accountant::{Conversion, PldAccountant, PrivacyAccountant, RdpAccountant};
use capelab_core::study::mean::sim::{StudySim, StudySimConfig};
use capelab_core::study::mean::{StudyOutcome, collusion_factor, kind, row_mean};
use study_support::{ledger, rows};

const D: usize = 3000;
const N_S: usize = 20;

fn minus(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}

#[test]
fn full_rounds_give_the_pooled_variance_and_beat_conventional_by_s() {
    for s in 3..=8usize {
        let config = StudySimConfig::new(100 + s as u64, 0.5, 1e-5, N_S)
            .with_dimension(D)
            .with_conventional(true);
        let data: Vec<_> = (0..s).map(|i| (rows(i, N_S, D), ledger(i, 100.0))).collect();
        let locals: Vec<Vec<f64>> = data.iter().map(|(r, _)| row_mean(r, D)).collect();
        let mut sim = StudySim::new(config, data).unwrap();
        let report = sim.run();
        let outcome: StudyOutcome = report.outcome.clone().expect("finished");
        let est = outcome.estimates().unwrap_or_else(|| panic!("S = {s}: {:?}", outcome.result));
        let ids: Vec<u32> = (0..s).map(|i| sim.site_id(i)).collect();
        assert_eq!(est.survivors, ids, "S = {s}: everyone is in U");
        assert_eq!((outcome.attempts.len(), est.attempt), (1, 1));
        assert!(outcome.dropouts.is_empty() && outcome.declined.is_empty());

        let tau = outcome.noise.local_sd;
        let tau2 = tau * tau;
        let sf = s as f64;
        let pooled: Vec<f64> =
            (0..D).map(|j| locals.iter().map(|l| l[j]).sum::<f64>() / sf).collect();

        // Lemma 1: a_cape − pooled = (1/S)Σg_s, variance τ²/S² = τ_pool²
        assert_variance(
            &format!("CAPE, S = {s}"),
            mean_square(&minus(&est.cape, &pooled)),
            tau2 / (sf * sf),
            D,
        );
        // Proposition 1: the conventional mean with the same τ has variance τ²/S
        let conv = est.conventional.as_ref().expect("asked for");
        assert_variance(
            &format!("conventional, S = {s}"),
            mean_square(&minus(conv, &pooled)),
            tau2 / sf,
            D,
        );
        // every single message still carries the full local variance τ²
        let first = &est.messages[0];
        assert_eq!(first.site, ids[0]);
        assert_variance(
            &format!("â_1, S = {s}"),
            mean_square(&minus(&first.values, &locals[0])),
            tau2,
            D,
        );
        // the aggregate is the mean of the messages
        for j in [0, D / 2, D - 1] {
            let mean = est.messages.iter().map(|m| m.values[j]).sum::<f64>() / sf;
            assert!((mean - est.cape[j]).abs() < 1e-9 * (1.0 + mean.abs()));
        }

        // Algorithm 1: e_s from each site's quantised ê_s; Σ_{s∈U} e_s = 0 exactly, and each e_s
        // has variance (1 − 1/S)τ²
        let e: Vec<&Vec<f64>> = report
            .sites
            .iter()
            .map(|site| site.attempts[0].zero_sum_noise.as_ref().expect("in U"))
            .collect();
        for j in 0..D {
            assert_eq!(e.iter().map(|v| v[j]).sum::<f64>(), 0.0, "S = {s}, coordinate {j}");
        }
        assert_variance(&format!("e_1, S = {s}"), mean_square(e[0]), (1.0 - 1.0 / sf) * tau2, D);
        // and e_s is ê_s minus the mean of U's quantised ê
        let q0 = &report.sites[0].attempts[0].quantised_noise;
        let noise_sum = outcome.attempts[0].noise_sum.as_ref().expect("broadcast");
        for j in [0, D - 1] {
            let textbook = q0[j] - noise_sum[j] / sf;
            assert!((e[0][j] - textbook).abs() <= 2.0 * outcome.noise.format.resolution());
        }

        // the theory reported next to the numbers
        let theory = outcome.theory.as_ref().expect("a noise sum was formed");
        assert_eq!(theory.sites, s);
        assert!((theory.var_cape - tau2 / (sf * sf)).abs() < 1e-12 * tau2);
        assert!((theory.var_conventional - tau2 / sf).abs() < 1e-12 * tau2);
        assert_eq!(theory.gain, sf);

        // what the aggregator saw in SecureAgg: S masked vectors, nothing like ê_s
        let masked = &outcome.attempts[0].masked_inputs;
        assert_eq!(masked.len(), s);
        let largest = masked[0].decoded.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(largest > 1e6 * tau, "masked y_u looks like noise of order 2^31, got {largest}");

        // each site's ledger: one CAPE release (full-view c_S at |U| = S) and one conventional
        for site in &report.sites {
            assert_eq!(site.sent.first(), Some(&kind::ACCEPT));
            assert_eq!(site.sent.last(), Some(&kind::RELEASE));
            assert!(site.refusals.is_empty(), "{:?}", site.refusals);
            let labels: Vec<&str> = site.spent.iter().map(|e| e.event.label()).collect();
            assert_eq!(labels, ["mean/cape attempt 1", "mean/conventional"]);
            assert!(
                (site.spent[0].event.gaussian().unwrap().collusion_factor() - collusion_factor(s))
                    .abs()
                    < 1e-15
            );
            assert_eq!(site.spent[1].event.gaussian().unwrap().collusion_factor(), 1.0);
            // the running totals are the two releases composed, computed independently: RDP's,
            // and the charged one, the exact (PLD) composition, which is tighter
            let mut rdp = RdpAccountant::new(Conversion::Improved);
            rdp.compose(site.spent[0].event.gaussian().unwrap());
            rdp.compose(site.spent[1].event.gaussian().unwrap());
            let expected = rdp.epsilon(1e-5).unwrap().epsilon;
            assert!((site.spent[1].epsilon_after_rdp - expected).abs() < 1e-9 * expected);
            let mut pld = PldAccountant::default();
            pld.compose(site.spent[0].event.gaussian().unwrap());
            pld.compose(site.spent[1].event.gaussian().unwrap());
            let exact = pld.epsilon(1e-5).unwrap();
            assert_eq!(exact.interval, None, "unsampled Gaussians compose exactly");
            assert!((site.spent[1].epsilon_after - exact.epsilon).abs() < 1e-12);
            assert!(exact.epsilon < expected);
            let z = site.spent[0].event.gaussian().unwrap().mechanism().noise_multiplier();
            assert!((z - outcome.noise.noise_multiplier).abs() < 1e-12);
        }
        assert!(report.aggregator_refusals.is_empty(), "{:?}", report.aggregator_refusals);
    }
}

#[test]
fn the_same_seed_reproduces_the_study_and_the_outcome_is_json() {
    let run = || {
        let config =
            StudySimConfig::new(7, 0.8, 1e-6, 10).with_dimension(3).with_conventional(true);
        let data = (0..4).map(|i| (rows(i, 10, 3), ledger(i, 10.0))).collect();
        StudySim::new(config, data).unwrap().run()
    };
    let (a, b) = (run(), run());
    assert_eq!(a, b);
    let outcome = a.outcome.unwrap();
    let json = serde_json::to_string(&outcome).unwrap();
    let back: StudyOutcome = serde_json::from_str(&json).unwrap();
    assert_eq!(back, outcome);
    for field in
        ["\"estimated\"", "\"masked_inputs\"", "\"full_view\"", "\"theorem1\"", "\"delta_pool\""]
    {
        assert!(json.contains(field), "{field} missing from {json}");
    }
}
