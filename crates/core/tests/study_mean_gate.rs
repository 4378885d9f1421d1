//! The privacy gate of the private-mean study: a site checks its ledger before it sends anything,
//! declines with the accountant's message when over budget (the transport log shows nothing else
//! left), records every release (the conventional one as a second release, each re-run as one
//! more) in the call that sends it, and declines at the last moment if its ledger changed.

mod study_support;

use std::cell::RefCell;
use std::rc::Rc;

use capelab_core::accountant::{
    Conversion, Event, Ledger, Mechanism, PldAccountant, PrivacyAccountant, RdpAccountant,
};
use capelab_core::secagg::sim::DropMode;
use capelab_core::study::mean::sim::{StudyDropPoint, StudySim, StudySimConfig};
use capelab_core::study::mean::{
    AbortReason, DeclineReason, SitePhase, StudyParams, TooFewAccepted, collusion_factor, kind,
};
use study_support::{ledger, rows};

const N_S: usize = 10;
const EPSILON: f64 = 0.5;
const DELTA: f64 = 1e-5;

/// ε (at the ledgers' δ = 1e-5) of a sequence of releases at z, computed with the accountant
/// directly: `cape` lists the collusion factors of the CAPE releases.
/// What a ledger charges for these releases: the tighter of RDP and PLD, computed independently.
fn cost(z: f64, cape: &[f64], conventional: bool) -> f64 {
    let mut rdp = RdpAccountant::new(Conversion::Improved);
    let mut pld = PldAccountant::default();
    let mut events: Vec<Event> = cape
        .iter()
        .map(|&c| {
            Event::with_collusion_factor("cape", Mechanism::Gaussian { noise_multiplier: z }, 1, c)
                .unwrap()
        })
        .collect();
    if conventional {
        events.push(Event::gaussian("conventional", z, 1).unwrap());
    }
    for e in &events {
        rdp.compose(e);
        pld.compose(e);
    }
    rdp.epsilon(1e-5).unwrap().epsilon.min(pld.epsilon(1e-5).unwrap().epsilon)
}

fn noise_multiplier(sites: usize) -> f64 {
    StudyParams::new((1..=sites as u32).collect(), EPSILON, DELTA, N_S)
        .unwrap()
        .noise()
        .unwrap()
        .noise_multiplier
}

#[test]
fn an_over_budget_site_declines_and_sends_nothing_else() {
    // S = 5, t = 4: site 2's budget cannot pay for one release
    let data =
        (0..5).map(|i| (rows(i, N_S, 1), ledger(i, if i == 2 { 0.05 } else { 10.0 }))).collect();
    let mut sim = StudySim::new(StudySimConfig::new(1, EPSILON, DELTA, N_S), data).unwrap();
    let report = sim.run();

    assert_eq!(report.sites[2].sent, vec![kind::DECLINE], "the transport log of site 2");
    assert!(report.sites[2].spent.is_empty());
    assert_eq!(report.sites[2].phase, SitePhase::Declined);
    assert!(sim.site_mut(2).ledger_mut().entries().is_empty());

    let outcome = report.outcome.unwrap();
    assert_eq!(outcome.declined.len(), 1);
    let declined = &outcome.declined[0];
    assert_eq!((declined.site, declined.attempt), (sim.site_id(2), 0));
    match &declined.reason {
        DeclineReason::Budget { message, shortfall } => {
            let s = shortfall.expect("a budget refusal names the budget it needs");
            assert!(s.needed.is_some_and(|n| n > s.budget), "{s:?}");
            assert!(message.contains("insufficient privacy budget"), "{message}");
            assert!(message.contains("nothing was recorded or sent"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let est = outcome.estimates().expect("four sites are enough");
    assert!(!est.survivors.contains(&sim.site_id(2)));
    assert_eq!(est.survivors.len(), 4);
}

#[test]
fn the_conventional_release_is_accounted_as_a_second_release() {
    // a budget that pays for CAPE's release (at the worst-case c_S the site previews with) but
    // not for CAPE's and the conventional one together
    let z = noise_multiplier(4);
    let worst = StudyParams::new(vec![1, 2, 3, 4], EPSILON, DELTA, N_S)
        .unwrap()
        .worst_case_collusion_factor();
    let cape_only = cost(z, &[worst], false);
    let both = cost(z, &[worst], true);
    assert!(both > cape_only);
    let budget = (cape_only + both) / 2.0;

    let data = || (0..4).map(|i| (rows(i, N_S, 1), ledger(i, budget))).collect();
    let with =
        StudySim::new(StudySimConfig::new(2, EPSILON, DELTA, N_S).with_conventional(true), data())
            .unwrap()
            .run();
    assert_eq!(
        with.outcome.as_ref().unwrap().abort_reason(),
        // t = 3 is out of reach after two declines; the other two had not answered yet
        Some(&AbortReason::TooFewAccepted(TooFewAccepted {
            accepted: 0,
            declined: 2,
            silent: 2,
            need: 3
        }))
    );
    for site in &with.sites {
        assert_eq!(site.sent, vec![kind::DECLINE]);
        assert!(site.spent.is_empty());
    }
    let reason = &with.outcome.as_ref().unwrap().declined[0].reason;
    assert!(
        reason.to_string().contains("mean/conventional"),
        "refused at the second release: {reason}"
    );

    let without = StudySim::new(StudySimConfig::new(2, EPSILON, DELTA, N_S), data()).unwrap().run();
    assert!(without.outcome.as_ref().unwrap().estimates().is_some());
    for site in &without.sites {
        assert_eq!(site.spent.len(), 1, "one CAPE release");
        // recorded with the c_S of the actual |U| = 4, which the preview's worst case covers
        assert_eq!(site.spent[0].event.gaussian().unwrap().collusion_factor(), collusion_factor(4));
        let expected = cost(z, &[collusion_factor(4)], false);
        assert!((site.spent[0].epsilon_after - expected).abs() < 1e-9);
    }
}

#[test]
fn each_rerun_is_checked_and_a_site_that_cannot_pay_for_it_declines() {
    // S = 6, t = 4. Site 1 breaks attempt 1's zero sum; site 0 can pay for attempt 1's releases
    // but not for attempt 2's: it declines at attempt 2's start and sends nothing after.
    let z = noise_multiplier(6);
    let params = StudyParams::new((1..=6).collect(), EPSILON, DELTA, N_S)
        .unwrap()
        .with_threshold(4)
        .unwrap();
    let first = cost(z, &[params.worst_case_collusion_factor()], true);
    let worst2 = (4..=5).map(collusion_factor).fold(1.0, f64::max);
    let second = cost(z, &[collusion_factor(6), worst2], true);
    assert!(second > first);
    let data = (0..6)
        .map(|i| (rows(i, N_S, 1), ledger(i, if i == 0 { (first + second) / 2.0 } else { 10.0 })))
        .collect();
    let config = StudySimConfig::new(3, EPSILON, DELTA, N_S)
        .with_conventional(true)
        .with_threshold(4)
        .with_dropout(1, StudyDropPoint::BeforeRelease { attempt: 1 }, DropMode::Disconnect);
    let mut sim = StudySim::new(config, data).unwrap();
    let report = sim.run();

    let outcome = report.outcome.as_ref().unwrap();
    let est = outcome.estimates().unwrap_or_else(|| panic!("{:?}", outcome.result));
    assert_eq!(est.attempt, 2);
    assert_eq!(est.survivors, [2, 3, 4, 5].map(|i| sim.site_id(i)).to_vec());
    let site0 = &report.sites[0];
    assert_eq!(site0.sent.last(), Some(&kind::DECLINE));
    let release_at = site0.sent.iter().position(|k| *k == kind::RELEASE).unwrap();
    assert_eq!(
        &site0.sent[release_at + 1..],
        [kind::DECLINE],
        "nothing after the release but the decline"
    );
    let labels: Vec<&str> = site0.spent.iter().map(|e| e.event.label()).collect();
    assert_eq!(labels, ["mean/cape attempt 1", "mean/conventional"]);
    let declined = outcome.declined.iter().find(|d| d.site == sim.site_id(0)).unwrap();
    assert_eq!(declined.attempt, 2);
    assert!(matches!(declined.reason, DeclineReason::Budget { .. }));
    // the others paid for both attempts
    let labels: Vec<&str> = report.sites[2].spent.iter().map(|e| e.event.label()).collect();
    assert_eq!(labels, ["mean/cape attempt 1", "mean/conventional", "mean/cape attempt 2"]);
}

#[test]
fn a_ledger_that_changes_before_the_release_stops_it_at_the_last_moment() {
    // The ledgers are shared with the "UI" (Rc<RefCell<Ledger>>). Site 0 accepts; while SecureAgg
    // runs, its budget is lowered to what it has spent (nothing): the release is refused by
    // try_spend, the site declines instead of releasing, and the study re-runs without it.
    let ledgers: Vec<Rc<RefCell<Ledger>>> =
        (0..5).map(|i| Rc::new(RefCell::new(ledger(i, 10.0)))).collect();
    let data = (0..5).map(|i| (rows(i, N_S, 1), Rc::clone(&ledgers[i]))).collect();
    let mut sim = StudySim::new(StudySimConfig::new(4, EPSILON, DELTA, N_S), data).unwrap();
    while !matches!(sim.site(0).phase(), SitePhase::Summing { .. }) {
        assert!(sim.step(), "the study ended before site 0 joined SecureAgg");
    }
    let budget = ledgers[0].borrow().budget();
    ledgers[0]
        .borrow_mut()
        .set_budget(capelab_core::accountant::Budget { epsilon: 1e-9, ..budget })
        .unwrap();
    let report = sim.run();

    let site0 = &report.sites[0];
    assert!(!site0.sent.contains(&kind::RELEASE), "{:?}", site0.sent);
    assert_eq!(site0.sent.last(), Some(&kind::DECLINE));
    assert!(
        site0.sent.contains(&capelab_core::secagg::messages::kind::MASKED_INPUT),
        "its noise was summed"
    );
    assert!(ledgers[0].borrow().entries().is_empty());
    let outcome = report.outcome.as_ref().unwrap();
    let est = outcome.estimates().unwrap_or_else(|| panic!("{:?}", outcome.result));
    assert_eq!((est.attempt, est.survivors.len()), (2, 4));
    assert_eq!(outcome.attempts[0].missing, vec![sim.site_id(0)]);
    for l in &ledgers[1..] {
        assert_eq!(l.borrow().entries().len(), 2, "two CAPE releases, one per attempt");
    }
}
