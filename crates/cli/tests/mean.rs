//! `cape mean` end to end: the binary's JSON has every field, its variances match the theory
//! (chi-square tolerances at 5 standard deviations), the gain is |U|, the zero sum is exact,
//! dropouts are handled, and bad flags are refused with the flag named.

use std::process::{Command, Output};

use serde_json::Value;

fn cape(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cape")).arg("mean").args(args).output().expect("run cape")
}

fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = cape(&all);
    assert!(out.status.success(), "cape mean {all:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("missing number {key} in {v}"))
}

/// Chi-square bounds on s²/σ² for n samples (Wilson–Hilferty), at z standard deviations.
fn chi2_bounds(n: f64, z: f64) -> (f64, f64) {
    let a = 2.0 / (9.0 * n);
    ((1.0 - a - z * a.sqrt()).powi(3), (1.0 - a + z * a.sqrt()).powi(3))
}

/// The ratio of two independent variance estimates from n samples each, at z standard
/// deviations of its logarithm (Var ln s² ≈ 2/n).
fn ratio_bounds(n: f64, z: f64) -> (f64, f64) {
    let sd = (4.0 / n).sqrt();
    ((-z * sd).exp(), (z * sd).exp())
}

fn assert_within(what: &str, value: f64, (lo, hi): (f64, f64)) {
    assert!((lo..=hi).contains(&value), "{what} = {value} outside [{lo}, {hi}]");
}

#[test]
fn the_json_has_every_field_and_the_numbers_match_the_theory() {
    let (s, d, trials): (f64, f64, f64) = (4.0, 50.0, 40.0);
    let v = json(&[
        "--sites",
        "4",
        "--dropouts",
        "0",
        "--epsilon",
        "0.5",
        "--delta",
        "1e-5",
        "--trials",
        "40",
        "--seed",
        "7",
        "--dimension",
        "50",
        "--values-per-site",
        "100",
    ]);
    for key in [
        "estimate",
        "pooled",
        "var_cape",
        "var_conv",
        "var_pool_theory",
        "gain",
        "zero_sum_residual",
        "mu_z",
        "delta_cape",
        "delta_conv",
        "delta_pool",
        "messages",
        "c_s_full_view",
        "c_s_theorem1",
        "delta_cape_theorem1",
        "survivors",
        "reruns",
        "dropouts_by_phase",
        "seed",
    ] {
        assert!(!v[key].is_null(), "{key} missing");
    }
    assert_eq!(v["seed"], 7);
    assert_eq!(v["seed_source"], "fixed");

    // τ = Δ·c(δ)/ε with Δ = √d/N_s, computed here
    let c = (2.0f64 * (1.25f64 / 1e-5).ln()).sqrt();
    let tau = d.sqrt() / 100.0 * c / 0.5;
    assert!((num(&v, "local_sd") / tau - 1.0).abs() < 1e-12, "{v}");
    assert!((num(&v, "var_pool_theory") / (tau * tau / (s * s)) - 1.0).abs() < 1e-12);

    let n = trials * d;
    assert_eq!(num(&v, "samples"), n);
    assert_within(
        "var_cape / τ²/S²",
        num(&v, "var_cape") / num(&v, "var_pool_theory"),
        chi2_bounds(n, 5.0),
    );
    assert_within("var_conv / τ²/S", num(&v, "var_conv") / (tau * tau / s), chi2_bounds(n, 5.0));
    assert_within("gain / S", num(&v, "gain") / s, ratio_bounds(n, 5.0));
    assert!((num(&v, "gain") - num(&v, "var_conv") / num(&v, "var_cape")).abs() < 1e-12);
    assert_eq!(num(&v, "zero_sum_residual"), 0.0, "Σ e_s is exactly zero");

    // the first trial: four messages of d values, and the estimate is their mean
    let messages = v["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4);
    let estimate = v["estimate"].as_array().unwrap();
    let pooled = v["pooled"].as_array().unwrap();
    assert_eq!((estimate.len(), pooled.len()), (50, 50));
    let sd = num(&v, "var_pool_theory").sqrt();
    for j in 0..50 {
        let mean: f64 = messages.iter().map(|m| m["values"][j].as_f64().unwrap()).sum::<f64>() / s;
        let e = estimate[j].as_f64().unwrap();
        assert!((mean - e).abs() < 1e-12);
        let p = pooled[j].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&p) && (e - p).abs() < 8.0 * sd);
    }

    // privacy: z = c(δ)/ε; full view c_S = S(S + S_H)/((S + 1)S_H) with S_C = 1;
    // δ_pool = 1.25·exp(−(εz)²/2) = δ for the classical calibration
    let z = c / 0.5;
    let c_full = 4.0 * 7.0 / (5.0 * 3.0);
    assert!((num(&v, "c_s_full_view") - c_full).abs() < 1e-12);
    assert!((num(&v, "mu_z") - c_full / (2.0 * z * z)).abs() < 1e-12);
    assert!((num(&v, "delta_pool") / 1e-5 - 1.0).abs() < 1e-9);
    assert!((num(&v, "delta_conv") - 1.25 * (-(0.5 * z).powi(2) / 8.0).exp()).abs() < 1e-12);
    assert!(num(&v, "delta_cape") > num(&v, "delta_cape_theorem1"), "the full view is weaker");
    assert!(num(&v, "mu_z") > num(&v, "mu_z_theorem1"));
}

#[test]
fn dropouts_are_handled_and_the_gain_is_the_survivor_count() {
    // S = 7, t = 5: two sites vanish in every trial at random phases
    let v = json(&[
        "--sites",
        "7",
        "--dropouts",
        "2",
        "--epsilon",
        "0.5",
        "--delta",
        "1e-5",
        "--trials",
        "30",
        "--seed",
        "3",
        "--dimension",
        "40",
    ]);
    assert_eq!(v["survivors"].as_array().unwrap().len(), 5);
    assert_eq!(num(&v, "aborted_trials"), 0.0);
    let n = 30.0 * 40.0;
    assert_within("gain / |U|", num(&v, "gain") / 5.0, ratio_bounds(n, 5.0));
    assert_within(
        "var_cape / τ²/|U|²",
        num(&v, "var_cape") / num(&v, "var_pool_theory"),
        chi2_bounds(n, 5.0),
    );
    assert_eq!(num(&v, "zero_sum_residual"), 0.0);
    let drops: f64 =
        v["dropouts_by_phase"].as_object().unwrap().values().map(|x| x.as_f64().unwrap()).sum();
    assert!(drops >= 60.0, "at least two dropouts per trial: {v}");
    assert!(!v["first_trial_dropouts"].as_array().unwrap().is_empty());
    // the two sites that vanished released nothing; the five others spent budget
    let spent = v["site_epsilon_spent"].as_array().unwrap();
    assert_eq!(spent.iter().filter(|x| x.as_f64() == Some(0.0)).count(), 2, "{spent:?}");
}

#[test]
fn bad_flags_are_refused_with_the_flag_named() {
    let base = ["--sites", "4", "--epsilon", "0.5", "--delta", "1e-5", "--trials", "2"];
    let with = |flag: &str, value: &str| {
        let mut args: Vec<&str> = base.to_vec();
        match args.iter().position(|a| *a == flag) {
            Some(i) => args[i + 1] = value,
            None => args.extend([flag, value]),
        }
        args.into_iter().map(String::from).collect::<Vec<_>>()
    };
    for (args, says) in [
        (with("--epsilon", "0"), "--epsilon"),
        (with("--epsilon", "-1"), "--epsilon"),
        (with("--delta", "1"), "--delta"),
        (with("--dropouts", "2"), "--dropouts: K = 2"),
        (with("--threshold", "2"), "--threshold"),
        (with("--sites", "1"), "--sites"),
        (with("--trials", "0"), "--trials"),
        (with("--values-per-site", "0"), "--values-per-site"),
        (with("--dimension", "0"), "--dimension"),
    ] {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = cape(&refs);
        assert!(!out.status.success(), "{args:?} was accepted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn without_a_seed_the_os_draws_one_and_says_so() {
    let out =
        cape(&["--sites", "3", "--epsilon", "0.5", "--delta", "1e-5", "--trials", "2", "--json"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("OS entropy"), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["seed_source"], "os");
    assert!(stderr.contains(&format!("--seed {}", v["seed"])), "{stderr}");
}

#[test]
fn the_summary_is_readable() {
    let out = cape(&[
        "--sites",
        "4",
        "--epsilon",
        "2",
        "--delta",
        "1e-5",
        "--trials",
        "3",
        "--seed",
        "1",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in ["var CAPE", "gain", "full adversary view", "Theorem 1", "ε = 2 ≥ 1"] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
}
