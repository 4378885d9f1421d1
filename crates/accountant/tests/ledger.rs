//! The site ledger: refusal before spending, persistence, and rejection of bad imports.

use capelab_accountant::conversion::Conversion;
use capelab_accountant::ledger::{Bound, LEDGER_FORMAT_VERSION, LedgerError};
use capelab_accountant::{
    ApproximateEvent, Budget, Event, Ledger, Mechanism, PldAccountant, PrivacyAccountant,
    RdpAccountant, Release,
};

fn release(study: &str, label: &str, z: f64, count: u64, time_ms: u64) -> Release {
    Release::new(study, Event::gaussian(label, z, count).unwrap(), time_ms)
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
    ledger.try_spend(Release::new("nn", sgd, 2_000)).unwrap();
    ledger
}

#[test]
fn running_total_is_the_tightest_accountants_epsilon() {
    let ledger = busy_ledger();
    let mut rdp = RdpAccountant::new(Conversion::Improved);
    let mut pld = PldAccountant::default();
    for e in ledger.entries() {
        rdp.compose(e.event.gaussian().unwrap());
        pld.compose(e.event.gaussian().unwrap());
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
    // the least budget that admits it is the total it would reach: raising to it is enough
    let shortfall = err.shortfall().expect("a budget refusal has a shortfall");
    assert_eq!((shortfall.budget, shortfall.needed), (3.0, Some(preview.spent_after)));
    assert!((shortfall.raise_by().unwrap() - (preview.spent_after - 3.0)).abs() < 1e-12);
    let mut raised = before.clone();
    raised.set_budget(Budget::new(preview.spent_after, 1e-5).unwrap()).unwrap();
    assert!(raised.try_spend(release("ica", "capeDJICA", 3.0, 1000, 3_000)).is_ok());
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
        |v| v["version"] = 4.into(),
        |e| matches!(e, UnsupportedVersion { found } if found == "4"),
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
        for key in [
            "epsilon_after_rdp",
            "epsilon_after_pld",
            "bound",
            "epsilon_after_basic",
            "delta_after_basic",
        ] {
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
    let exact = capelab_accountant::analytic_gaussian::composed_epsilon(4.0, 5, 1e-5).unwrap();
    let spend = ledger.spend();
    assert!((spend.epsilon - exact).abs() < 1e-12 && spend.bound == Bound::Pld);
    assert!(spend.rdp > exact);
}

/// A version-2 file (Gaussian releases only, no basic-composition fields) is read as it is; one
/// that holds an (ε, δ)-DP release was written by no build and is refused.
#[test]
fn version_2_ledgers_are_read() {
    let current = busy_ledger();
    let mut v2: serde_json::Value = serde_json::from_str(&current.to_json()).unwrap();
    v2["version"] = 2.into();
    for r in v2["releases"].as_array_mut().unwrap() {
        let o = r.as_object_mut().unwrap();
        assert_eq!(o.remove("epsilon_after_basic"), Some(0.0.into()));
        assert_eq!(o.remove("delta_after_basic"), Some(0.0.into()));
    }
    assert_eq!(Ledger::from_json(&v2.to_string()).unwrap(), current);

    let mut mixed: serde_json::Value = serde_json::from_str(&mixed_ledger().to_json()).unwrap();
    mixed["version"] = 2.into();
    let err = Ledger::from_json(&mixed.to_string()).unwrap_err();
    assert!(matches!(err, LedgerError::Malformed(ref m) if m.contains("version-2")), "{err}");
}

// --- Releases known only to be (ε, δ)-DP: basic composition with the Gaussian part. ---

const BUDGET_DELTA: f64 = 1e-5;

fn approximate(study: &str, epsilon: f64, delta: f64, count: u64, time_ms: u64) -> Release {
    Release::new(study, ApproximateEvent::new("efpsn run", epsilon, delta, count).unwrap(), time_ms)
}

/// (0.5, 1e-6)-DP, a Gaussian z = 5, (0.5, 1e-6)-DP again; budget (10, 1e-5).
fn mixed_ledger() -> Ledger {
    let mut ledger = Ledger::new("site-1", Budget::new(10.0, BUDGET_DELTA).unwrap()).unwrap();
    ledger.try_spend(approximate("efpsn a", 0.5, 1e-6, 1, 1_000)).unwrap();
    ledger.try_spend(release("mean", "round", 5.0, 1, 2_000)).unwrap();
    ledger.try_spend(approximate("efpsn b", 0.5, 1e-6, 1, 3_000)).unwrap();
    ledger
}

/// ε_G(δ) of `events` by a fresh RDP and a fresh PLD accountant: (RDP, PLD).
fn gaussian_epsilon(events: &[Event], delta: f64) -> (f64, f64) {
    let mut rdp = RdpAccountant::new(Conversion::Improved);
    let mut pld = PldAccountant::default();
    for e in events {
        rdp.compose(e);
        pld.compose(e);
    }
    (rdp.epsilon(delta).unwrap().epsilon, pld.epsilon(delta).unwrap().epsilon)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}

#[test]
fn approximate_releases_compose_basically_with_the_gaussian_part() {
    let ledger = mixed_ledger();
    let z5 = [Event::gaussian("round", 5.0, 1).unwrap()];
    let e = ledger.entries();

    // Before any Gaussian release the total is the basic part alone: ε_G = 0.
    assert_eq!(
        (e[0].epsilon_after, e[0].epsilon_after_rdp, e[0].epsilon_after_pld),
        (0.5, 0.5, 0.5)
    );
    assert_eq!((e[0].epsilon_after_basic, e[0].delta_after_basic), (0.5, 1e-6));

    // After the Gaussian: 0.5 + ε_G(1e-5 − 1e-6).
    let (rdp, pld) = gaussian_epsilon(&z5, BUDGET_DELTA - 1e-6);
    assert!(close(e[1].epsilon_after_rdp, 0.5 + rdp) && close(e[1].epsilon_after_pld, 0.5 + pld));
    assert!(close(e[1].epsilon_after, 0.5 + pld.min(rdp)));
    assert_eq!((e[1].epsilon_after_basic, e[1].delta_after_basic), (0.5, 1e-6));

    // After both (ε, δ) releases: Σ k·ε = 1.0 plus ε_G(1e-5 − 2e-6), the tightest of RDP and PLD.
    let (rdp, pld) = gaussian_epsilon(&z5, BUDGET_DELTA - 2e-6);
    let spend = ledger.spend();
    assert!(pld < rdp, "PLD is exact for one Gaussian: {pld} vs {rdp}");
    assert!(close(spend.epsilon, 1.0 + pld), "{} vs {}", spend.epsilon, 1.0 + pld);
    assert!(close(spend.rdp, 1.0 + rdp) && close(spend.pld, 1.0 + pld));
    assert_eq!(spend.bound, Bound::Pld);
    assert_eq!((spend.basic_epsilon, spend.basic_delta), (1.0, 2e-6));
    assert_eq!(ledger.spent(), e[2].epsilon_after);
    // The same Gaussian part from the closed form (one Gaussian release: PLD is exact).
    let exact = capelab_accountant::analytic_gaussian::composed_epsilon(5.0, 1, 8e-6).unwrap();
    assert!(close(spend.epsilon, 1.0 + exact), "{} vs {}", spend.epsilon, 1.0 + exact);
    assert!((ledger.remaining() - (10.0 - spend.epsilon)).abs() < 1e-15);

    // k runs in one release are the same as k releases of one run.
    let mut counted = Ledger::new("site-1", Budget::new(10.0, BUDGET_DELTA).unwrap()).unwrap();
    counted.try_spend(approximate("efpsn", 0.5, 1e-6, 2, 1_000)).unwrap();
    counted.try_spend(release("mean", "round", 5.0, 1, 2_000)).unwrap();
    assert!(close(counted.spent(), ledger.spent()));

    // A preview states the same numbers.
    let base = {
        let mut l = mixed_ledger();
        l.set_budget(Budget::new(10.0, BUDGET_DELTA).unwrap()).unwrap();
        l
    };
    let p = base.preview(&approximate("efpsn c", 0.25, 1e-6, 2, 4_000)).unwrap();
    let (rdp, pld) = gaussian_epsilon(&z5, BUDGET_DELTA - 4e-6);
    assert!(p.within_budget && close(p.spent_after, 1.5 + pld.min(rdp)));
    assert_eq!((p.after.basic_epsilon, p.after.basic_delta), (1.5, 4e-6));
    assert!(close(p.cost, p.spent_after - ledger.spent()));
}

#[test]
fn a_release_that_uses_up_the_budget_delta_is_refused() {
    let mut ledger = mixed_ledger();
    let before = ledger.clone();
    let json_before = ledger.to_json();
    // Σ k·δ would be 2e-6 + 8·1e-6 = 1e-5 = δ_B: nothing is left for the Gaussian part. (In
    // floats the sum is 9.999999999999999e-6: the 1.7e-21 left over is rounding, not δ.)
    let greedy = approximate("efpsn c", 0.01, 1e-6, 8, 4_000);
    let preview = ledger.preview(&greedy).unwrap();
    assert!(!preview.within_budget && preview.spent_after == f64::INFINITY);

    let err = ledger.try_spend(greedy).unwrap_err();
    match &err {
        LedgerError::InsufficientBudget { spent_after, basic_delta, delta, spent, .. } => {
            assert_eq!(*spent_after, f64::INFINITY);
            assert!(close(*basic_delta, 1e-5) && *delta == 1e-5);
            assert_eq!(*spent, before.spent());
        }
        other => panic!("expected InsufficientBudget, got {other:?}"),
    }
    // δ runs out: no ε would admit it, so the shortfall names none
    let shortfall = err.shortfall().expect("a budget refusal has a shortfall");
    assert_eq!((shortfall.needed, shortfall.raise_by(), shortfall.delta), (None, None, 1e-5));
    let msg = err.to_string();
    assert!(msg.contains("insufficient privacy budget") && msg.contains("efpsn run"), "{msg}");
    assert!(msg.contains("leaves nothing of the budget's δ = 1e-5"), "{msg}");
    assert!(msg.contains("basic composition") && !msg.contains("inf"), "{msg}");
    assert_eq!(ledger, before);
    assert_eq!(ledger.to_json(), json_before);

    // δ over the budget's, from a single release on an empty ledger, too.
    let mut empty = Ledger::new("site-2", Budget::new(10.0, BUDGET_DELTA).unwrap()).unwrap();
    let err = empty.try_spend(approximate("efpsn", 0.01, 2e-5, 1, 0)).unwrap_err();
    assert!(err.to_string().contains("2e-5"), "{err}");
    // ...and at exactly δ_B (2 × 5e-6), even with no Gaussian part: Σ k·δ ≥ δ_B is +∞.
    let err = empty.try_spend(approximate("efpsn", 0.01, 5e-6, 2, 0)).unwrap_err();
    assert!(
        matches!(err, LedgerError::InsufficientBudget { spent_after, .. } if spent_after.is_infinite())
    );
    assert!(empty.entries().is_empty());

    // Within δ but over ε: the usual message, naming the basic part.
    let err = ledger.try_spend(approximate("efpsn c", 9.5, 0.0, 1, 4_000)).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("would raise ε from") && msg.contains("by PLD, the tightest bound"),
        "{msg}"
    );
    assert!(msg.contains("spending 9.500000"), "{msg}");
    assert!(msg.contains("releases by basic composition using δ = 2e-6"), "{msg}");
    assert_eq!(ledger, before);

    // A pure ε-DP release (δ = 0) leaves the Gaussian part's δ as it was.
    ledger.try_spend(approximate("efpsn c", 0.25, 0.0, 1, 4_000)).unwrap();
    let z5 = [Event::gaussian("round", 5.0, 1).unwrap()];
    let (_, pld) = gaussian_epsilon(&z5, BUDGET_DELTA - 2e-6);
    assert!(close(ledger.spent(), 1.25 + pld));
}

#[test]
fn ledgers_with_approximate_releases_round_trip_and_replay() {
    let ledger = mixed_ledger();
    let json = ledger.to_json();
    assert!(json.contains("\"version\": 3"), "{json}");
    assert!(json.contains("\"approximate\": {"), "{json}");
    assert!(json.contains("\"epsilon_after_basic\": 1.0"), "{json}");
    let back = Ledger::from_json(&json).unwrap();
    assert_eq!(back, ledger);
    assert_eq!(back.to_json(), json);
    // The replayed ledger goes on composing where the original was.
    let (mut a, mut b) = (ledger.clone(), back);
    for l in [&mut a, &mut b] {
        l.try_spend(approximate("efpsn c", 0.5, 1e-6, 1, 4_000)).unwrap();
        l.try_spend(release("mean", "round", 5.0, 1, 5_000)).unwrap();
    }
    assert_eq!(a, b);

    // An approximate release's JSON shape.
    let entry: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        entry["releases"][0]["event"],
        serde_json::json!({"label": "efpsn run", "approximate": {"epsilon": 0.5, "delta": 1e-6}, "count": 1})
    );

    // Tampered imports are refused, the target untouched.
    let refuse = |edit: &dyn Fn(&mut serde_json::Value), expect: &dyn Fn(&LedgerError) -> bool| {
        let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
        edit(&mut v);
        let mut target = busy_ledger();
        let before = target.clone();
        let err = target.load_json(&v.to_string()).unwrap_err();
        assert!(expect(&err), "unexpected error: {err:?}");
        assert_eq!(target, before);
    };
    use LedgerError::*;
    // A smaller ε than the one charged: the stored total no longer replays.
    refuse(
        &|v| v["releases"][0]["event"]["approximate"]["epsilon"] = 0.25.into(),
        &|e| matches!(e, Inconsistent(m) if m.contains("replaying")),
    );
    refuse(
        &|v| v["releases"][2]["event"]["approximate"]["delta"] = 1.0.into(),
        &|e| matches!(e, Malformed(m) if m.contains("δ in [0, 1)")),
    );
    refuse(
        &|v| v["releases"][0]["event"]["approximate"]["epsilon"] = 0.0.into(),
        &|e| matches!(e, Malformed(m) if m.contains("ε > 0")),
    );
    refuse(
        &|v| v["releases"][0]["event"]["collusion_factor"] = 2.0.into(),
        &|e| matches!(e, Malformed(m) if m.contains("collusion_factor")),
    );
    refuse(
        &|v| {
            v["releases"][0]["event"]["mechanism"] = v["releases"][1]["event"]["mechanism"].clone()
        },
        &|e| matches!(e, Malformed(m) if m.contains("not both")),
    );
    refuse(
        &|v| {
            v["releases"][0]["event"].as_object_mut().unwrap().remove("approximate");
        },
        &|e| matches!(e, Malformed(m) if m.contains("missing field `mechanism`")),
    );
    // A budget δ the stored releases' Σ k·δ reaches (at release #0 already).
    refuse(
        &|v| v["budget"]["delta"] = 1e-6.into(),
        &|e| matches!(e, Inconsistent(m) if m.contains("over the ledger's own budget δ")),
    );
}

#[test]
fn set_budget_restates_the_basic_composition_at_the_new_delta() {
    let mut ledger = mixed_ledger();
    let z5 = [Event::gaussian("round", 5.0, 1).unwrap()];
    ledger.set_budget(Budget::new(10.0, 1e-4).unwrap()).unwrap();
    let e = ledger.entries();
    assert_eq!(e[0].epsilon_after, 0.5);
    let (rdp, pld) = gaussian_epsilon(&z5, 1e-4 - 1e-6);
    assert!(close(e[1].epsilon_after, 0.5 + pld.min(rdp)));
    assert!(close(e[1].epsilon_after_rdp, 0.5 + rdp));
    let (rdp, pld) = gaussian_epsilon(&z5, 1e-4 - 2e-6);
    assert!(close(ledger.spent(), 1.0 + pld.min(rdp)));
    assert!(close(ledger.spend().rdp, 1.0 + rdp));
    assert_eq!((e[2].epsilon_after_basic, e[2].delta_after_basic), (1.0, 2e-6));
    assert_eq!(Ledger::from_json(&ledger.to_json()).unwrap(), ledger);

    // A δ the (ε, δ)-DP releases already use up is refused, and says so.
    let before = ledger.clone();
    let err = ledger.set_budget(Budget::new(100.0, 2e-6).unwrap()).unwrap_err();
    assert!(
        matches!(err, LedgerError::BudgetBelowSpend { basic_delta, .. } if basic_delta == 2e-6)
    );
    let msg = err.to_string();
    assert!(msg.contains("use δ = 2e-6 by basic composition, which leaves nothing"), "{msg}");
    assert!(!msg.contains("inf"), "{msg}");
    assert_eq!(ledger, before);
    // An ε below the basic part alone is refused as before.
    let err = ledger.set_budget(Budget::new(0.9, 1e-5).unwrap()).unwrap_err();
    assert!(err.to_string().contains("at δ = 1e-5"), "{err}");
    assert_eq!(ledger, before);
}
