//! `cape djica` and `cape djica-sweep` end to end at a tiny size: the files and JSON fields, q_NGI
//! recomputed from the written W, V and A, and clear errors for bad flags.

use std::path::PathBuf;
use std::process::{Command, Output};

use capelab_core::fmri::matrix_io::{parse_csv, to_csv, to_npy};
use capelab_core::ica_quality::q_ngi;
use nalgebra::DMatrix;
use serde_json::Value;

fn cape(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cape")).args(args).output().expect("run cape")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cape-djica-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const TINY: [&str; 12] = [
    "--subjects",
    "16",
    "--grid",
    "8",
    "--components",
    "4",
    "--timepoints",
    "100",
    "--max-iterations",
    "60",
    "--quiet",
    "--seed",
];

#[test]
fn djica_writes_the_result_matrices_and_maps() {
    let dir = scratch("run");
    let out = dir.to_str().unwrap();
    let args = [&TINY[..], &["3", "--privacy-unit", "timepoint", "--out", out]].concat();
    let run = cape(&[&["djica"], &args[..]].concat());
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
    let q = v["q_ngi"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&q), "{q}");
    assert_eq!(v["method"], "cape");
    assert_eq!(v["iterations"], 60);
    assert_eq!(v["parameters"]["privacy_unit"], "timepoint");
    assert_eq!(v["parameters"]["eps_iter"], 0.5);
    let e = &v["overall_epsilon"];
    let (agg, full) = (e["aggregator_view"].as_f64().unwrap(), e["full_view"].as_f64().unwrap());
    assert!(agg > 0.0 && full > agg, "the full view is the weaker guarantee: {e}");
    assert!(e["full_view_at_max"].as_f64().unwrap() >= full);
    assert_eq!(v["pca"]["principal_cosines"].as_array().unwrap().len(), 4);
    assert_eq!(v["history"].as_array().unwrap().len(), 60);
    // The ledger records Ĝ and ĥ of all J* iterations (non-private PCA records nothing).
    let ledger = v["ledger_releases"].as_array().unwrap();
    assert_eq!(ledger.len(), 2, "{ledger:?}");
    assert_eq!(ledger[0]["event"]["count"], 60);
    // q_NGI from the written files: the sources are W·V_Rᵀ·x, so P = W·V_Rᵀ·A.
    let read = |f: &str| parse_csv(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap();
    let (w, vr, a) = (read("W.csv"), read("V.csv"), read("A.csv"));
    assert_eq!((w.shape(), vr.shape(), a.shape()), ((4, 4), (64, 4), (64, 4)));
    let recomputed = q_ngi(&(&w * vr.transpose() * &a));
    assert!((recomputed - q).abs() < 1e-9, "{recomputed} vs {q}");
    let png = std::fs::read(dir.join("maps.png")).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");
}

#[test]
fn nonprivate_has_no_epsilon_and_cape_pca_is_accounted() {
    let dir = scratch("np");
    let out = dir.to_str().unwrap();
    let args = [&TINY[..], &["1", "--method", "nonprivate", "--out", out]].concat();
    assert!(cape(&[&["djica"], &args[..]].concat()).status.success());
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
    assert!(v["overall_epsilon"]["full_view"].is_null());
    let args = [&TINY[..], &["1", "--method", "local", "--pca", "cape", "--out", out]].concat();
    let run = cape(&[&["djica"], &args[..]].concat());
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(v["method"], "local");
    assert!(v["overall_epsilon"]["pca"]["aggregator"].as_f64().unwrap() > 0.0);
    assert_eq!(v["overall_epsilon"]["guarantee_view"], "aggregator");
}

/// `--target-epsilon`: the run's own account (full view, J_max) lands on the target from below,
/// and PLD needed less noise than RDP would have.
#[test]
fn a_whole_study_target_is_met_by_pld_calibration() {
    let dir = scratch("target");
    let out = dir.to_str().unwrap();
    let args = [&TINY[..], &["2", "--target-epsilon", "6", "--out", out]].concat();
    let run = cape(&[&["djica"], &args[..]].concat());
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert!(String::from_utf8_lossy(&run.stdout).contains("calibrated (PLD)"));
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
    let full = v["overall_epsilon"]["full_view_at_max"].as_f64().unwrap();
    assert!(full <= 6.0 && full > 5.99, "{full}");
    let t = &v["target"];
    assert_eq!(v["parameters"]["eps_iter"], t["eps_iter"]);
    let (z, z_rdp) =
        (t["noise_multiplier"].as_f64().unwrap(), t["noise_multiplier_rdp"].as_f64().unwrap());
    assert!(z < z_rdp, "{z} vs {z_rdp}");
    for (flags, expected) in [
        (vec!["--target-epsilon", "0"], "--target-epsilon: a target ε must be positive"),
        (vec!["--target-epsilon", "2", "--method", "nonprivate"], "needs a private method"),
    ] {
        let args = [&TINY[..], &["2", "--out", out], &flags[..]].concat();
        let run = cape(&[&["djica"], &args[..]].concat());
        assert_eq!(run.status.code(), Some(2), "{flags:?}");
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(err.contains(expected), "{flags:?}: {err}");
    }
}

#[test]
fn bad_flags_are_clear_errors() {
    let dir = scratch("bad");
    let out = dir.to_str().unwrap();
    for (flags, expected) in [
        (vec!["--eps-iter", "0"], "--eps-iter 0 must be positive"),
        (vec!["--eps-iter", "-1"], "--eps-iter -1 must be positive"),
        (vec!["--delta-iter", "1.5"], "--delta-iter 1.5 must lie strictly between 0 and 1"),
        (vec!["--sites", "20"], "--sites 20 is more than --subjects 16"),
        (vec!["--sites", "1"], "CAPE needs at least 2 sites"),
        (vec!["--components", "1000"], "--components 1000 must be between 2 and D = grid² = 900"),
        (vec!["--pca", "cape", "--eps-pca", "0"], "--eps-pca 0 must be positive"),
    ] {
        // Validation comes before any data is generated, so the default sizes cost nothing.
        let args = [&["--subjects", "16", "--quiet", "--out", out], &flags[..]].concat();
        let run = cape(&[&["djica"], &args[..]].concat());
        assert_eq!(run.status.code(), Some(2), "{flags:?}");
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(err.contains(expected), "{flags:?}: {err}");
    }
    let run = cape(&["djica", "--method", "bogus"]);
    assert!(!run.status.success());
}

#[test]
fn sweep_writes_csv_figures_and_thresholds() {
    let dir = scratch("sweep");
    let out = dir.to_str().unwrap();
    let run = cape(&[
        "djica-sweep",
        "--subjects",
        "16",
        "--grid",
        "8",
        "--components",
        "4",
        "--timepoints",
        "100",
        "--max-iterations",
        "40",
        "--privacy-unit",
        "timepoint",
        "--values",
        "0.5,50",
        "--runs",
        "2",
        "--out",
        out,
        "--name",
        "t",
    ]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let csv = std::fs::read_to_string(dir.join("t.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 * 4, "{csv}");
    for f in ["t.png", "t.svg", "t-overall-epsilon.png", "t.json"] {
        assert!(dir.join(f).exists(), "{f}");
    }
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("t.json")).unwrap()).unwrap();
    for m in ["cape", "conventional", "local"] {
        assert!(v["thresholds"][m].is_object(), "{m}: {}", v["thresholds"]);
    }
    for row in v["rows"].as_array().unwrap() {
        let q = row["q_mean"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&q));
        assert_eq!(row["runs"], 2);
    }
}

#[test]
fn a_site_can_bring_its_own_matrices() {
    let dir = scratch("data");
    // Two sites, D = 16 voxels, two subjects of 50 time points each: three sources with
    // different waveforms through a fixed mixing (no ground truth is given to the command).
    let site = |phase: f64| {
        DMatrix::from_fn(16, 100, |v, t| {
            let t = t as f64 + phase;
            let s = [(t * 0.37).sin().powi(3), ((t * 0.11).cos() * 3.0).tanh(), (t * 0.73).sin()];
            (0..3).map(|k| s[k] * (((v * 7 + k * 3) % 11) as f64 - 5.0) / 5.0).sum::<f64>()
        })
    };
    std::fs::write(dir.join("a.csv"), to_csv(&site(0.0))).unwrap();
    std::fs::write(dir.join("b.npy"), to_npy(&site(17.0))).unwrap();
    let files = format!("{},{}", dir.join("a.csv").display(), dir.join("b.npy").display());
    let out = dir.join("out");
    let run = cape(&[
        "djica",
        "--data",
        &files,
        "--timepoints",
        "50",
        "--components",
        "3",
        "--privacy-unit",
        "timepoint",
        "--max-iterations",
        "20",
        "--data-scale",
        "0.2",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
    assert!(v["q_ngi"].is_null(), "no ground truth, no q");
    assert_eq!(v["parameters"]["subjects"], 4);
    assert_eq!(v["data"]["subjects_per_site"], serde_json::json!([2, 2]));
    assert!(v["overall_epsilon"]["full_view"].as_f64().unwrap() > 0.0);
    let w = parse_csv(&std::fs::read_to_string(out.join("W.csv")).unwrap()).unwrap();
    assert_eq!(w.shape(), (3, 3));
    assert!(!out.join("A.csv").exists());
    // A ragged file is refused with the numbers.
    std::fs::write(dir.join("c.csv"), to_csv(&DMatrix::<f64>::zeros(16, 75))).unwrap();
    let files = format!("{},{}", dir.join("a.csv").display(), dir.join("c.csv").display());
    let run =
        cape(&["djica", "--data", &files, "--timepoints", "50", "--out", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("75 time points (columns) are not a whole number of subjects"), "{err}");
}
