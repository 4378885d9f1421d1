//! `cape account` end to end: the binary's JSON against the spec vectors, its table, its errors.

use std::process::{Command, Output};

use serde_json::Value;

fn cape(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cape")).arg("account").args(args).output().expect("run cape")
}

fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = cape(&all);
    assert!(out.status.success(), "cape {all:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("missing number {key} in {v}"))
}

#[test]
fn djica_table_cell_and_its_companions() {
    // Spec §5: z = 6.215, 100 iterations × 2 releases, δ = 1e-5 → 13.508.
    let v = json(&["--noise-multiplier", "6.215", "--compositions", "200", "--delta", "1e-5"]);
    assert!((num(&v, "epsilon_rdp") - 13.508).abs() < 1e-3, "{v}");
    assert!((num(&v, "epsilon_closed_form") - num(&v, "epsilon_rdp")).abs() < 1e-9);
    assert!(num(&v, "alpha_rdp") > 1.0);
    assert!(num(&v, "epsilon_rdp_improved") < num(&v, "epsilon_rdp"));
    assert!(num(&v, "epsilon_exact") < num(&v, "epsilon_rdp_improved"));
    assert!((num(&v, "epsilon_moments") - num(&v, "epsilon_rdp")).abs() < 1e-9);
    for key in ["epsilon_basic", "epsilon_strong", "epsilon_rdp_grid", "epsilon_rdp_improved_grid"]
    {
        assert!(num(&v, key) >= num(&v, "epsilon_exact"), "{key}");
    }
    assert!(v["collusion_aware"].is_null());
}

#[test]
fn moments_erratum_through_the_cli() {
    let v = json(&["--noise-multiplier", "10", "--compositions", "1000", "--delta", "1e-5"]);
    assert!((num(&v, "epsilon_moments") - 20.17).abs() < 5e-3, "{v}");
    assert!((num(&v, "epsilon_moments_as_printed") - 27.47).abs() < 5e-3, "{v}");
}

#[test]
fn subsampled_vector_on_integer_orders() {
    let q = format!("{}", 100.0 / 30162.0);
    let v = json(&[
        "--noise-multiplier",
        "2.042",
        "--compositions",
        "20000",
        "--delta",
        "1e-5",
        "--sampling-rate",
        &q,
        "--orders",
        "2..256",
    ]);
    assert!((num(&v, "epsilon_rdp_improved") - 0.9948).abs() < 1e-4, "{v}");
    assert!((num(&v, "epsilon_rdp") - 1.2125).abs() < 1e-4, "{v}");
    assert_eq!(num(&v, "grid_orders"), 255.0);
    assert!(v["epsilon_exact"].is_null() && v["epsilon_closed_form"].is_null());
}

#[test]
fn collusion_aware_view_is_reported_next_to_the_aggregators() {
    let v = json(&[
        "--noise-multiplier",
        "6.215",
        "--compositions",
        "200",
        "--delta",
        "1e-5",
        "--collusion-factor",
        "1.295238",
        "--curve",
    ]);
    let c = &v["collusion_aware"];
    assert_eq!(num(c, "collusion_factor"), 1.295238);
    let slope = 200.0 / (2.0 * 6.215 * 6.215);
    assert!((num(&v, "rdp_slope") - slope).abs() < 1e-12);
    assert!((num(c, "rdp_slope") - 1.295238 * slope).abs() < 1e-12);
    assert!(num(c, "epsilon_rdp") > num(&v, "epsilon_rdp"));
    // The curve is (α, ρ(α)) pairs with ρ = C·α.
    let curve = v["rdp_curve"].as_array().unwrap();
    assert_eq!(curve.len(), 156);
    let (a, r) = (curve[10][0].as_f64().unwrap(), curve[10][1].as_f64().unwrap());
    assert!((r - slope * a).abs() < 1e-12 * r);
}

#[test]
fn human_readable_table() {
    let out = cape(&["--noise-multiplier", "6.215", "--compositions", "200", "--delta", "1e-5"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in ["RDP, standard conversion", "Balle et al. 2020", "moments accountant", "13.5078"]
    {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}

#[test]
fn bad_flags_fail_with_a_message_naming_the_flag() {
    let cases: [(&[&str], &str); 7] = [
        (
            &["--noise-multiplier", "-1", "--compositions", "3", "--delta", "1e-5"],
            "--noise-multiplier",
        ),
        (&["--noise-multiplier", "1", "--compositions", "0", "--delta", "1e-5"], "--compositions"),
        (&["--noise-multiplier", "1", "--compositions", "3", "--delta", "1.5"], "--delta"),
        (
            &[
                "--noise-multiplier",
                "1",
                "--compositions",
                "3",
                "--delta",
                "1e-5",
                "--sampling-rate",
                "2",
            ],
            "--sampling-rate",
        ),
        (
            &[
                "--noise-multiplier",
                "1",
                "--compositions",
                "3",
                "--delta",
                "1e-5",
                "--collusion-factor",
                "0.7",
            ],
            "--collusion-factor",
        ),
        (
            &[
                "--noise-multiplier",
                "1",
                "--compositions",
                "3",
                "--delta",
                "1e-5",
                "--orders",
                "9..2",
            ],
            "--orders",
        ),
        (
            &["--noise-multiplier", "abc", "--compositions", "3", "--delta", "1e-5"],
            "--noise-multiplier",
        ),
    ];
    for (args, flag) in cases {
        let out = cape(args);
        assert!(!out.status.success(), "{args:?} should fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
    }
    let missing = cape(&["--compositions", "3"]);
    assert!(!missing.status.success());
}
