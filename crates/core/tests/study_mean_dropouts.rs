//! Dropouts in every phase of the private-mean study (spec §2 Remark 4, §3): before SecureAgg,
//! inside each SecureAgg round, after the noise sum before the release, after the release, in a
//! re-run; and too many dropouts, which end the study without anything that could unmask a site.

mod study_support;

use capelab_core::secagg::messages::kind as secagg_kind;
use capelab_core::secagg::sim::{DropMode, DropPoint};
use capelab_core::secagg::{DropReason, Phase};
use capelab_core::study::mean::sim::{StudyDropPoint, StudySim, StudySimConfig, StudySimReport};
use capelab_core::study::mean::{
    AbortReason, SitePhase, StudyDropout, StudyOutcome, StudyPhase, TooFewAccepted, kind, row_mean,
};
use capelab_core::wire::ParticipantId;
use study_support::{ledger, rows};

const N_S: usize = 8;
const D: usize = 4;

fn run(sites: usize, config: StudySimConfig) -> (StudySim, StudySimReport) {
    let data = (0..sites).map(|i| (rows(i, N_S, D), ledger(i, 100.0))).collect();
    let mut sim = StudySim::new(config.with_dimension(D).with_conventional(true), data).unwrap();
    let report = sim.run();
    (sim, report)
}

fn config(seed: u64) -> StudySimConfig {
    StudySimConfig::new(seed, 0.5, 1e-5, N_S)
}

fn ids(sim: &StudySim, sites: &[usize]) -> Vec<ParticipantId> {
    sites.iter().map(|&i| sim.site_id(i)).collect()
}

/// The estimate is over exactly `expected` (site indices), after `attempts` attempts, and is the
/// mean of their releases; the zero sum of the last attempt holds exactly.
fn assert_estimated(sim: &StudySim, report: &StudySimReport, expected: &[usize], attempts: u32) {
    let outcome: &StudyOutcome = report.outcome.as_ref().expect("finished");
    let est = outcome.estimates().unwrap_or_else(|| panic!("{:?}", outcome.result));
    assert_eq!(est.survivors, ids(sim, expected));
    assert_eq!(est.attempt, attempts);
    assert_eq!(outcome.attempts.len() as u32, attempts);
    let s = expected.len() as f64;
    for j in 0..D {
        let mean = est.messages.iter().map(|m| m.values[j]).sum::<f64>() / s;
        assert!((mean - est.cape[j]).abs() < 1e-12 * (1.0 + mean.abs()));
    }
    let mut total = [0.0; D];
    for &i in expected {
        let e = report.sites[i].attempts.last().unwrap().zero_sum_noise.clone().unwrap();
        assert_eq!(report.sites[i].attempts.last().unwrap().attempt, attempts);
        for j in 0..D {
            total[j] += e[j];
        }
    }
    assert_eq!(total, [0.0; D], "Σ e_s over U");
    // the conventional estimate averages the same sites' conventional messages
    let conv = est.conventional.as_ref().unwrap();
    assert_eq!(est.conventional_messages.iter().map(|m| m.site).collect::<Vec<_>>(), est.survivors);
    let pooled: Vec<f64> = (0..D)
        .map(|j| expected.iter().map(|&i| row_mean(&rows(i, N_S, D), D)[j]).sum::<f64>() / s)
        .collect();
    // the estimates are noisy versions of the survivors' pooled mean (|error| < 8 sd)
    let theory = outcome.theory.as_ref().unwrap();
    for j in 0..D {
        assert!((est.cape[j] - pooled[j]).abs() < 8.0 * theory.var_cape.sqrt());
        assert!((conv[j] - pooled[j]).abs() < 8.0 * theory.var_conventional.sqrt());
    }
    assert_eq!(theory.sites, expected.len());
}

fn dropouts_of(report: &StudySimReport, site: ParticipantId) -> Vec<StudyDropout> {
    let outcome = report.outcome.as_ref().unwrap();
    outcome.dropouts.iter().copied().filter(|d| d.site == site).collect()
}

#[test]
fn a_site_that_leaves_before_secure_agg_is_left_out() {
    // S = 5, t = 4
    for (at, mode, reason) in [
        (StudyDropPoint::OnStart, DropMode::Disconnect, DropReason::Left),
        (StudyDropPoint::OnStart, DropMode::Silent, DropReason::TimedOut),
        (StudyDropPoint::AfterAccept, DropMode::Disconnect, DropReason::Left),
    ] {
        let (sim, report) = run(5, config(1).with_dropout(2, at, mode));
        assert_estimated(&sim, &report, &[0, 1, 3, 4], 1);
        let drops = dropouts_of(&report, sim.site_id(2));
        assert_eq!(drops.len(), 1, "{at:?} {mode:?}: {drops:?}");
        assert_eq!(
            (drops[0].attempt, drops[0].phase, drops[0].reason),
            (0, StudyPhase::Invitation, reason)
        );
        assert!(report.sites[2].spent.is_empty(), "it released nothing");
        assert!(!report.sites[2].sent.iter().any(|k| k.starts_with("secagg/")));
    }
}

#[test]
fn a_site_that_drops_inside_secure_agg_before_its_input_is_summed_is_left_out() {
    for (n, at) in
        [DropPoint::BeforeAdvertise, DropPoint::AfterAdvertise, DropPoint::AfterShareKeys]
            .into_iter()
            .enumerate()
    {
        for mode in [DropMode::Disconnect, DropMode::Silent] {
            let point = StudyDropPoint::SecAgg { attempt: 1, at };
            let (sim, report) = run(5, config(10 + n as u64).with_dropout(4, point, mode));
            assert_estimated(&sim, &report, &[0, 1, 2, 3], 1);
            let drops = dropouts_of(&report, sim.site_id(4));
            assert_eq!(drops.len(), 1, "{at:?} {mode:?}: {drops:?}");
            let round = match at {
                DropPoint::BeforeAdvertise => Phase::AdvertiseKeys,
                DropPoint::AfterAdvertise => Phase::ShareKeys,
                _ => Phase::MaskedInput,
            };
            assert_eq!((drops[0].attempt, drops[0].phase), (1, StudyPhase::SecAgg { round }));
            assert!(report.sites[4].spent.is_empty());
        }
    }
}

#[test]
fn a_site_whose_noise_is_summed_but_never_releases_forces_a_rerun_with_fresh_noise() {
    // After its masked input, during the unmask round, after it, or once the sum is broadcast:
    // its ê_s is in the sum, so the others' e_s no longer cancel; the study re-runs without it.
    let points = [
        StudyDropPoint::SecAgg { attempt: 1, at: DropPoint::AfterMaskedInput },
        StudyDropPoint::SecAgg { attempt: 1, at: DropPoint::DuringUnmask },
        StudyDropPoint::SecAgg { attempt: 1, at: DropPoint::AfterUnmask },
        StudyDropPoint::BeforeRelease { attempt: 1 },
    ];
    for (n, at) in points.into_iter().enumerate() {
        for mode in [DropMode::Disconnect, DropMode::Silent] {
            let (sim, report) = run(5, config(20 + n as u64).with_dropout(1, at, mode));
            assert_estimated(&sim, &report, &[0, 2, 3, 4], 2);
            let outcome = report.outcome.as_ref().unwrap();
            let first = &outcome.attempts[0];
            assert_eq!(
                first.survivors,
                ids(&sim, &[0, 1, 2, 3, 4]),
                "{at:?}: its input was summed"
            );
            assert_eq!(first.missing, vec![sim.site_id(1)]);
            assert_eq!(first.releases.len(), 4);
            assert_eq!(outcome.attempts[1].invited, ids(&sim, &[0, 2, 3, 4]));
            // the dropout is named: in SecureAgg's unmask round, or at the release
            let drops = dropouts_of(&report, sim.site_id(1));
            assert!(
                drops.iter().all(|d| d.attempt == 1)
                    && drops.iter().any(|d| matches!(
                        d.phase,
                        StudyPhase::Release | StudyPhase::SecAgg { round: Phase::Unmask }
                    )),
                "{at:?} {mode:?}: {drops:?}"
            );
            // fresh noise in the re-run, and one more release in every survivor's ledger
            for i in [0, 2, 3, 4] {
                let site = &report.sites[i];
                assert_eq!(site.attempts.len(), 2);
                assert_ne!(site.attempts[0].quantised_noise, site.attempts[1].quantised_noise);
                let labels: Vec<&str> = site.spent.iter().map(|e| e.event.label()).collect();
                assert_eq!(
                    labels,
                    ["mean/cape attempt 1", "mean/conventional", "mean/cape attempt 2"]
                );
                assert_eq!(site.sent.iter().filter(|k| **k == kind::RELEASE).count(), 2);
            }
            assert!(report.sites[1].spent.is_empty(), "the dropped site never released");
        }
    }
}

#[test]
fn a_site_that_leaves_after_its_release_still_counts() {
    let at = StudyDropPoint::AfterRelease { attempt: 1 };
    let (sim, report) = run(4, config(30).with_dropout(0, at, DropMode::Disconnect));
    assert_estimated(&sim, &report, &[0, 1, 2, 3], 1);
    assert_eq!(report.sites[0].vanished, Some(at));
}

#[test]
fn dropouts_in_the_rerun_are_handled_like_the_first_round() {
    // S = 7, t = 5: site 3 breaks attempt 1's zero sum, site 5 drops inside attempt 2's SecureAgg
    let config = config(40)
        .with_dropout(3, StudyDropPoint::BeforeRelease { attempt: 1 }, DropMode::Disconnect)
        .with_dropout(
            5,
            StudyDropPoint::SecAgg { attempt: 2, at: DropPoint::AfterShareKeys },
            DropMode::Disconnect,
        );
    let (sim, report) = run(7, config);
    assert_estimated(&sim, &report, &[0, 1, 2, 4, 6], 2);
    let drops = dropouts_of(&report, sim.site_id(5));
    assert_eq!(drops.len(), 1);
    assert_eq!(
        (drops[0].attempt, drops[0].phase),
        (2, StudyPhase::SecAgg { round: Phase::MaskedInput })
    );
    // site 5 released in attempt 1 (which was discarded), so its ledger shows that release
    let labels: Vec<&str> = report.sites[5].spent.iter().map(|e| e.event.label()).collect();
    assert_eq!(labels, ["mean/cape attempt 1", "mean/conventional"]);
}

#[test]
fn too_many_dropouts_in_secure_agg_abort_without_unmasking() {
    // S = 4, t = 3: two sites vanish after sharing keys, leaving 2 masked inputs
    let point = StudyDropPoint::SecAgg { attempt: 1, at: DropPoint::AfterShareKeys };
    for mode in [DropMode::Disconnect, DropMode::Silent] {
        let config = config(50).with_dropout(1, point, mode).with_dropout(2, point, mode);
        let (_, report) = run(4, config);
        let outcome = report.outcome.as_ref().unwrap();
        assert!(
            matches!(
                outcome.abort_reason(),
                Some(AbortReason::SecAgg {
                    attempt: 1,
                    phase: Phase::MaskedInput | Phase::Unmask,
                    ..
                })
            ),
            "{:?}",
            outcome.result
        );
        for site in &report.sites {
            assert!(!site.sent.contains(&secagg_kind::UNMASK_SHARES), "{:?}", site.sent);
            assert!(!site.sent.contains(&kind::RELEASE));
            assert!(site.spent.is_empty());
        }
        for i in [0, 3] {
            assert_eq!(report.sites[i].phase, SitePhase::Aborted, "{mode:?}");
        }
        assert!(outcome.theory.is_none(), "no noise sum was formed");
    }
}

#[test]
fn too_few_sites_for_a_rerun_or_no_reruns_left_end_the_study() {
    // S = 4, t = 3: two sites break the zero sum; two remain, fewer than t
    let before = StudyDropPoint::BeforeRelease { attempt: 1 };
    let config2 = config(60).with_dropout(0, before, DropMode::Disconnect).with_dropout(
        3,
        before,
        DropMode::Silent,
    );
    let (sim, report) = run(4, config2);
    let outcome = report.outcome.as_ref().unwrap();
    match outcome.abort_reason() {
        Some(AbortReason::TooFewToRerun { attempt: 1, missing, survivors: 2, need: 3 }) => {
            assert_eq!(missing, &ids(&sim, &[0, 3]));
        }
        other => panic!("{other:?}"),
    }
    // the two that released spent one CAPE release (and the conventional one), in vain
    assert_eq!(report.sites[1].spent.len(), 2);
    assert_eq!(report.sites[1].phase, SitePhase::Aborted);

    // max_reruns = 0: one broken round is the end
    let config0 = config(61).with_max_reruns(0).with_dropout(2, before, DropMode::Disconnect);
    let (_, report) = run(4, config0);
    assert!(matches!(
        report.outcome.unwrap().abort_reason(),
        Some(AbortReason::RerunsExhausted { attempt: 1, max: 1, .. })
    ));
}

#[test]
fn too_few_acceptances_abort_before_secure_agg() {
    let config = config(70)
        .with_dropout(0, StudyDropPoint::OnStart, DropMode::Disconnect)
        .with_dropout(1, StudyDropPoint::OnStart, DropMode::Silent);
    let (_, report) = run(4, config);
    let outcome = report.outcome.as_ref().unwrap();
    let too_few = AbortReason::TooFewAccepted(TooFewAccepted {
        accepted: 2,
        declined: 0,
        silent: 2,
        need: 3,
    });
    assert_eq!(outcome.abort_reason(), Some(&too_few));
    assert_eq!(
        too_few.to_string(),
        "only 2 site(s) accepted (0 declined, 2 had not answered or had left), the study needs t = 3"
    );
    assert!(outcome.attempts.is_empty());
    for site in &report.sites {
        assert!(site.sent.iter().all(|k| !k.starts_with("secagg/")), "{:?}", site.sent);
    }
}
