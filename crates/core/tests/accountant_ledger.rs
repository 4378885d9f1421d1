//! The site ledger: refusal before spending, persistence, and rejection of bad imports.

use capelab_core::accountant::conversion::Conversion;
use capelab_core::accountant::ledger::{Bound, LEDGER_FORMAT_VERSION, LedgerError};
use capelab_core::accountant::{
    Budget, Event, Ledger, Mechanism, PldAccountant, PrivacyAccountant, RdpAccountant, Release,
};

fn release(study: &str, label: &str, z: f64, count: u64, time_ms: u64) -> Release {
    Release { study: study.into(), event: Event::gaussian(label, z, count).unwrap(), time_ms }
}

/// A ledger with two releases in it: a Gaussian run and a DP-SGD run.
fn busy_ledger() -> Ledger {
    let mut ledger = Ledger::new("site-1", Budget::new(3.0, 1e-5).unwrap()).unwrap();
    ledger.try_spend(release("pca", "capePCA covariance", 20.0, 1, 1_000)).unwrap();
    let sgd = Event::with_collusion_factor(
        "dp-sgd",
        Mechanism::PoissonSampledGaussian { noise_multiplier: 2.0, sampling_rate: 0.01 },
        500,
        1.295_238,
    )
    .unwrap();
    ledger.try_spend(Release { study: "nn".into(), event: sgd, time_ms: 2_000 }).unwrap();
    ledger
}

#[test]
fn running_total_is_the_tightest_accountants_epsilon() {
    let ledger = busy_ledger();
    let mut rdp = RdpAccountant::new(Conversion::Improved);
    let mut pld = PldAccountant::default();
    for e in ledger.entries() {
        rdp.compose(&e.event);
        pld.compose(&e.event);
    }
    let (rdp, pld) = (rdp.epsilon(1e-5).unwrap().epsilon, pld.epsilon(1e-5).unwrap().epsilon);
    assert!(pld < rdp, "PLD {pld} should beat RDP {rdp} on a DP-SGD run");
    let expected = pld;
    let spend = ledger.spend();
    assert_eq!((spend.rdp, spend.pld, spend.bound), (rdp, pld, Bound::Pld));
    assert_eq!(ledger.spent(), expected);
    assert_eq!(ledger.entries().last().unwrap().epsilon_after, expected);
    assert!((ledger.remaining() - (3.0 - expected)).abs() < 1e-15);
    assert!(ledger.entries()[0].epsilon_after < expected);
}

#[test]
fn over_budget_request_is_refused_and_the_ledger_is_unchanged() {
    let mut ledger = busy_ledger();
    let before = ledger.clone();
    let json_before = ledger.to_json();
    let greedy = release("ica", "capeDJICA", 3.0, 1000, 3_000);
    let preview = ledger.preview(&greedy).unwrap();
    assert!(!preview.within_budget && preview.spent_after > 3.0);

    let err = ledger.try_spend(greedy).unwrap_err();
    match &err {
        LedgerError::InsufficientBudget { spent, spent_after, remaining, budget, .. } => {
            assert_eq!(*spent, before.spent());
            assert_eq!(*spent_after, preview.spent_after);
            assert_eq!(*budget, 3.0);
            assert!((remaining - (3.0 - before.spent())).abs() < 1e-15);
        }
        other => panic!("expected InsufficientBudget, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("insufficient privacy budget") && msg.contains("capeDJICA"), "{msg}");
    assert!(msg.contains("by PLD, the tightest bound"), "{msg}");
    assert!(msg.contains("left"), "{msg}");
    assert_eq!(ledger, before);
    assert_eq!(ledger.to_json(), json_before);

    // A release that fits is still accepted afterwards.
    ledger.try_spend(release("ica", "small", 50.0, 1, 3_000)).unwrap();
    assert_eq!(ledger.entries().len(), 3);
}

#[test]
fn time_must_not_go_backwards() {
    let mut ledger = busy_ledger();
    let before = ledger.clone();
    let err = ledger.try_spend(release("pca", "late", 50.0, 1, 1_500)).unwrap_err();
    assert_eq!(err, LedgerError::TimeWentBackwards { time_ms: 1_500, last_ms: 2_000 });
    assert_eq!(ledger, before);
}

#[test]
fn budget_cannot_be_set_below_the_spend() {
    let mut ledger = busy_ledger();
    let before = ledger.clone();
    let spent = ledger.spent();
    assert!(matches!(
        ledger.set_budget(Budget::new(spent / 2.0, 1e-5).unwrap()),
        Err(LedgerError::BudgetBelowSpend { .. })
    ));
    assert_eq!(ledger, before);
    // Raising it, at another δ, restates the running totals at that δ.
    ledger.set_budget(Budget::new(10.0, 1e-8).unwrap()).unwrap();
    assert!(ledger.spent() > spent);
    assert_eq!(ledger.entries().last().unwrap().epsilon_after, ledger.spent());
    assert_eq!(Ledger::from_json(&ledger.to_json()).unwrap(), ledger);
}

#[test]
fn json_round_trip() {
    let ledger = busy_ledger();
    let json = ledger.to_json();
    assert!(json.contains(&format!("\"version\": {LEDGER_FORMAT_VERSION}")), "{json}");
    let back = Ledger::from_json(&json).unwrap();
    assert_eq!(back, ledger);
    assert_eq!(back.to_json(), json);

    let mut empty = Ledger::new("site-2", Budget::new(1.0, 1e-6).unwrap()).unwrap();
    assert_eq!(empty.spent(), 0.0);
    let copy = Ledger::from_json(&empty.to_json()).unwrap();
    assert_eq!(copy, empty);
    // load_json replaces a same-site ledger wholesale.
    let mut other = Ledger::new("site-1", Budget::new(1.0, 1e-6).unwrap()).unwrap();
    other.load_json(&json).unwrap();
    assert_eq!(other, ledger);
    // ...and refuses another site's.
    let err = empty.load_json(&json).unwrap_err();
    assert!(matches!(err, LedgerError::SiteMismatch { .. }), "{err}");
}

/// Edits the exported JSON of `busy_ledger` and checks that loading it fails with `expect`, leaving
/// the target ledger untouched.
fn assert_rejected(edit: impl Fn(&mut serde_json::Value), expect: impl Fn(&LedgerError) -> bool) {
    let source = busy_ledger();
    let mut value: serde_json::Value = serde_json::from_str(&source.to_json()).unwrap();
    edit(&mut value);
    let tampered = value.to_string();
    let mut target = Ledger::new("site-1", Budget::new(2.0, 1e-5).unwrap()).unwrap();
    target.try_spend(release("old", "kept", 40.0, 1, 10)).unwrap();
    let before = target.clone();
    let err = target.load_json(&tampered).unwrap_err();
    assert!(expect(&err), "unexpected error: {err:?}");
    assert!(!err.to_string().is_empty());
    assert_eq!(target, before, "a failed import must leave the ledger untouched");
}

#[test]
fn malformed_and_inconsistent_imports_are_rejected() {
    use LedgerError::*;
    // Not JSON at all.
    let mut target = busy_ledger();
    let before = target.clone();
    assert!(matches!(target.load_json("{ not json"), Err(Malformed(_))));
    assert_eq!(target, before);

    assert_rejected(
        |v| v["version"] = 3.into(),
        |e| matches!(e, UnsupportedVersion { found } if found == "3"),
    );
    assert_rejected(
        |v| v.as_object_mut().unwrap().remove("version").map(|_| ()).unwrap(),
        |e| matches!(e, Malformed(_)),
    );
    assert_rejected(
        |v| v.as_object_mut().unwrap().remove("budget").map(|_| ()).unwrap(),
        |e| matches!(e, Malformed(_)),
    );
    assert_rejected(|v| v["surprise"] = true.into(), |e| matches!(e, Malformed(_)));
    // An invalid event (negative multiplier) is caught by the event's own validation.
    assert_rejected(
        |v| v["releases"][0]["event"]["mechanism"]["noise_multiplier"] = (-1.0).into(),
        |e| matches!(e, Malformed(m) if m.contains("z = -1")),
    );
    assert_rejected(|v| v["budget"]["delta"] = 2.0.into(), |e| e.to_string().contains("δ = 2"));
    assert_rejected(|v| v["budget"]["epsilon"] = 0.0.into(), |e| matches!(e, BudgetEpsilon(_)));
    // A stored running total that the replay does not reproduce.
    assert_rejected(
        |v| v["releases"][1]["epsilon_after"] = 0.001.into(),
        |e| matches!(e, Inconsistent(m) if m.contains("replaying")),
    );
    // Releases out of time order.
    assert_rejected(
        |v| v["releases"][1]["time_ms"] = 5.into(),
        |e| matches!(e, Inconsistent(m) if m.contains("before")),
    );
    // Releases that exceed the ledger's own budget.
    assert_rejected(
        |v| v["budget"]["epsilon"] = 0.01.into(),
        |e| matches!(e, Inconsistent(m) if m.contains("over the ledger's own budget")),
    );
    // Orders that are not RDP orders.
    assert_rejected(
        |v| v["accounting"]["orders"] = serde_json::json!([0.5, 2.0]),
        |e| e.to_string().contains("α = 0.5"),
    );
}

/// A version-1 file (running totals were RDP's only) is read, its totals checked against the RDP
/// replay, and restated under both accountants; a tampered v1 total is still refused.
#[test]
fn version_1_ledgers_are_migrated() {
    let current = busy_ledger();
    let mut v1: serde_json::Value = serde_json::from_str(&current.to_json()).unwrap();
    v1["version"] = 1.into();
    for r in v1["releases"].as_array_mut().unwrap() {
        let rdp = r["epsilon_after_rdp"].clone();
        let o = r.as_object_mut().unwrap();
        for key in ["epsilon_after_rdp", "epsilon_after_pld", "bound"] {
            o.remove(key);
        }
        o.insert("epsilon_after".into(), rdp);
    }
    v1["accounting"].as_object_mut().unwrap().remove("pld_interval");
    let migrated = Ledger::from_json(&v1.to_string()).unwrap();
    assert_eq!(migrated, current);

    v1["releases"][0]["epsilon_after"] = 0.001.into();
    let err = Ledger::from_json(&v1.to_string()).unwrap_err();
    assert!(matches!(err, LedgerError::Inconsistent(ref m) if m.contains("release #0")), "{err}");
}

/// Unsampled Gaussian releases are charged their exact composition (PLD), below RDP's bound.
#[test]
fn gaussian_releases_are_charged_exactly() {
    let mut ledger = Ledger::new("site-1", Budget::new(10.0, 1e-5).unwrap()).unwrap();
    for t in 0..5 {
        ledger.try_spend(release("mean", "round", 4.0, 1, t)).unwrap();
    }
    let exact =
        capelab_core::accountant::analytic_gaussian::composed_epsilon(4.0, 5, 1e-5).unwrap();
    let spend = ledger.spend();
    assert!((spend.epsilon - exact).abs() < 1e-12 && spend.bound == Bound::Pld);
    assert!(spend.rdp > exact);
}
