//! `cape fm`, `cape fm-sweep`, `cape nn` end to end: JSON keys and values, files written, errors.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn cape(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cape")).args(args).output().expect("run cape")
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

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cape-fm-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn linear_gaussian_reports_mse_guarantee_and_minimiser() {
    let base = ["fm", "--model", "linear", "--samples", "2000", "--features", "5", "--seed", "3"];
    let v = json(&[&base[..], &["--mechanism", "gaussian", "--epsilon", "0.5"]].concat());
    assert!(num(&v, "mse") >= 0.0 && num(&v, "mse") < num(&v, "zero_predictor_mse"), "{v}");
    assert!(num(&v, "nonprivate_mse") < 1e-20);
    assert_eq!(v["guarantee"]["joint_multiplier"], 1.5);
    assert!(num(&v, "epsilon_guaranteed") > 0.5, "paper-faithful: above target");
    assert!(v["minimiser"]["method"].as_str().unwrap().contains("spectral trimming"));
    assert!(v["minimiser"]["trimmed_eigenvalues"].is_array());
    assert_eq!(v["noise"].as_array().unwrap().len(), 3);
    assert_eq!(v["data"]["train"], 2000);
    let strict =
        json(&[&base[..], &["--mechanism", "gaussian", "--epsilon", "0.5", "--strict"]].concat());
    assert!(num(&strict, "epsilon_guaranteed") <= 0.5);
    let noise = |v: &Value| v["noise"][1]["aggregate_sd"].as_f64().unwrap();
    assert!((noise(&strict) / noise(&v) - 1.5).abs() < 1e-12);
    // ε ≥ 1 with the papers' extrapolation is labelled as such.
    let paper =
        json(&[&base[..], &["--epsilon", "10", "--calibration", "classical-paper"]].concat());
    assert_eq!(paper["guarantee"]["calibration"]["formula"], "paper_extrapolation");
    assert!(num(&paper, "epsilon_guaranteed") > 10.0);
}

#[test]
fn logistic_cape_reports_accuracy_and_the_three_views() {
    let v = json(&[
        "fm",
        "--model",
        "logistic",
        "--mechanism",
        "cape",
        "--samples",
        "3000",
        "--features",
        "10",
        "--sites",
        "4",
        "--epsilon",
        "0.5",
    ]);
    let acc = num(&v, "accuracy");
    assert!(acc > 0.5 && acc <= 1.0, "{v}");
    assert!(num(&v, "nonprivate_accuracy") >= acc - 0.1);
    let views = &v["guarantee"]["cape"];
    assert_eq!(views["sites"], 4);
    assert_eq!(views["colluders"], 1);
    for view in ["aggregator_only", "theorem1", "full_view"] {
        assert!(views[view]["c_s"].as_f64().unwrap() >= 1.0, "{view}");
    }
    assert_eq!(
        num(&v, "epsilon_guaranteed"),
        views["full_view"]["epsilon_exact"].as_f64().unwrap()
    );
    assert_eq!(v["data"]["records_used"], 3000);
}

#[test]
fn human_output_states_what_happened() {
    let out = cape(&["fm", "--samples", "1000", "--features", "4", "--mechanism", "laplace"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for key in ["test MSE", "guaranteed (ε, δ)", "Laplace FM", "minimiser"] {
        assert!(text.contains(key), "{key} missing in\n{text}");
    }
}

#[test]
fn csv_data_need_a_normalisation_and_honour_public_bounds() {
    let dir = scratch("csv");
    let csv = dir.join("toy.csv");
    let mut text = String::from("# toy\na,b,target\n");
    for i in 0..200 {
        let (a, b) = ((i % 17) as f64, (i % 5) as f64 - 2.0);
        text.push_str(&format!("{a},{b},{}\n", 3.0 * a - 2.0 * b));
    }
    std::fs::write(&csv, text).unwrap();
    let path = csv.to_str().unwrap();
    let out = cape(&["fm", "--data", path]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--bounds") && err.contains("--data-dependent-scaling"), "{err}");

    let bounds = dir.join("bounds.json");
    std::fs::write(&bounds, r#"{"features": {"a": [0, 20], "b": [-3, 3]}, "target": [-10, 70]}"#)
        .unwrap();
    let v = json(&["fm", "--data", path, "--bounds", bounds.to_str().unwrap()]);
    assert_eq!(v["data"]["normalisation"]["private"], true);
    assert_eq!(v["data"]["features"], 2);
    assert!(v["warnings"].as_array().unwrap().iter().all(|w| !w.as_str().unwrap().contains("NOT")));

    let v = json(&["fm", "--data", path, "--data-dependent-scaling"]);
    assert_eq!(v["data"]["normalisation"]["private"], false);
    assert!(v["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("NOT")));

    let out = cape(&["fm", "--data", dir.join("missing.csv").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn sweep_writes_csv_png_and_svg() {
    let dir = scratch("sweep");
    let out = cape(&[
        "fm-sweep",
        "--model",
        "linear",
        "--samples",
        "1000",
        "--features",
        "4",
        "--runs",
        "2",
        "--values",
        "0.1,1",
        "--mechanisms",
        "nonprivate,gaussian,cape,laplace",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stem = "fm-linear-synthetic-d4-vs-epsilon";
    let csv = std::fs::read_to_string(dir.join(format!("{stem}.csv"))).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("epsilon,mechanism,runs,mean"));
    // Four mechanisms and the predict-0 reference at each of the two ε.
    assert_eq!(lines.len(), 1 + 2 * 5, "{csv}");
    assert!(lines.iter().any(|l| l.starts_with("0.1,cape,2,")));
    assert!(lines.iter().any(|l| l.starts_with("1,zero_predictor,2,")));
    let nonprivate = lines.iter().find(|l| l.starts_with("1,nonprivate,")).unwrap();
    assert!(nonprivate.split(',').nth(3).unwrap().contains("e-"), "tiny MSE in exponent form");
    for ext in ["png", "svg"] {
        for name in [stem.to_string(), format!("{stem}-guarantee")] {
            let bytes = std::fs::read(dir.join(format!("{name}.{ext}"))).unwrap();
            match ext {
                "png" => assert_eq!(&bytes[..4], b"\x89PNG"),
                _ => assert!(String::from_utf8_lossy(&bytes).contains("<svg")),
            }
        }
    }
    let bad = cape(&["fm-sweep", "--mechanisms", "gaussian,magic", "--out", dir.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown 'magic'"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn network_reports_accuracy_and_overall_epsilon() {
    let v = json(&[
        "nn",
        "--mechanism",
        "cape",
        "--samples",
        "1500",
        "--features",
        "8",
        "--iterations",
        "40",
        "--epsilon",
        "0.5",
    ]);
    assert!(num(&v, "accuracy") > 0.6, "{v}");
    let overall = num(&v, "epsilon_overall");
    assert!(overall > 0.5, "40 iterations cost more than one: {overall}");
    assert!(v["epsilon_overall_view"].as_str().unwrap().starts_with("full adversary view"));
    assert_eq!(v["privacy"]["views"].as_array().unwrap().len(), 3);
    let conv = json(&[
        "nn",
        "--mechanism",
        "conventional",
        "--samples",
        "1500",
        "--features",
        "8",
        "--iterations",
        "40",
        "--epsilon",
        "0.5",
    ]);
    let ratio = num(&conv, "aggregate_noise_sd") / num(&v, "aggregate_noise_sd");
    assert!((ratio - 2.0).abs() < 1e-12, "√S at S = 4: {ratio}");
}
