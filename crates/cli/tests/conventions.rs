//! What every `cape` command promises a researcher (issue 31, item 4), checked on the binary:
//! progress on stderr when it is a pipe, stdout pure JSON with `--json`, `--quiet`; a new output
//! folder in the working directory unless `--out`; a missing data set named with both ways out;
//! every ε naming its accountant; `vertical-vi --target-epsilon`; no "a party" viewer in the
//! non-partitioned mode; EFPSN's noise-free rows not claiming an exact zero sum.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn cape_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cape")).args(args).current_dir(dir).output().expect("run cape")
}

fn cape(args: &[&str]) -> Output {
    cape_in(&std::env::temp_dir(), args)
}

fn ok(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An empty folder of its own, to run a command in.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cape-conv-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A quick `vertical-vi` run on the generated table, then `rest`.
fn vvi(rest: &[&str]) -> Vec<String> {
    let base = "vertical-vi --data synthetic --generated-rows 600 --components 3 --batch 30 \
                --steps 12 --seed 4";
    base.split(' ').map(str::to_owned).chain(rest.iter().map(|s| s.to_string())).collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn progress_goes_to_stderr_as_lines_and_json_keeps_stdout_pure() {
    let out = cape(&refs(&vvi(&["--mode", "mpc", "--json"])));
    ok(&out, "vertical-vi --json");
    // The whole of stdout is one JSON object: nothing else was printed there.
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is pure JSON");
    assert_eq!(v["mode"], "mpc");
    let err = stderr(&out);
    // stderr is a pipe here: plain lines, no bar redraws.
    assert!(err.contains("vertical-vi mpc: step 0/12 (0%)"), "{err}");
    assert!(err.contains("vertical-vi mpc: step 12/12 (100%), done in"), "{err}");
    assert!(!err.contains('\r') && !err.contains('\u{1b}'), "no terminal control: {err:?}");

    // --quiet: nothing on stderr, the same JSON on stdout.
    let quiet = cape(&refs(&vvi(&["--mode", "mpc", "--json", "--quiet"])));
    ok(&quiet, "--quiet");
    assert_eq!(stderr(&quiet), "");
    let q: Value = serde_json::from_slice(&quiet.stdout).unwrap();
    assert_eq!(q["test_nll"], v["test_nll"]);

    // The sweeps count their runs the same way.
    let dir = scratch("progress-sweep");
    let sweep = cape_in(
        &dir,
        &[
            "fm-sweep",
            "--values",
            "0.5,1",
            "--runs",
            "2",
            "--samples",
            "300",
            "--features",
            "3",
            "--mechanisms",
            "gaussian",
        ],
    );
    ok(&sweep, "fm-sweep");
    let err = stderr(&sweep);
    assert!(err.contains("fm-sweep: run 0/4 (0%)"), "{err}");
    assert!(err.contains("fm-sweep: run 4/4 (100%), done in"), "{err}");
    assert!(err.contains("fm-sweep: files go to cape-out/fm-sweep-001"), "{err}");
}

#[test]
fn without_out_files_go_to_a_new_folder_in_the_working_directory() {
    let dir = scratch("outdir");
    let sweep = [
        "vertical-vi-sweep",
        "--data",
        "synthetic",
        "--generated-rows",
        "600",
        "--components",
        "3",
        "--batch",
        "30",
        "--steps",
        "4",
        "--epsilons",
        "2",
        "--modes",
        "plain",
        "--seed",
        "1",
    ];
    for n in ["001", "002"] {
        let out = cape_in(&dir, &sweep);
        ok(&out, "vertical-vi-sweep");
        let folder = dir.join(format!("cape-out/vertical-vi-sweep-{n}"));
        let csv = folder.join("vertical-vi-generated-adult-like-vs-epsilon.csv");
        assert!(csv.is_file(), "{}", csv.display());
        assert!(
            stdout(&out).contains(&format!("wrote cape-out/vertical-vi-sweep-{n}/")),
            "{}",
            stdout(&out)
        );
    }
    // Nothing was written beside the new folders, and the first run's files are untouched.
    let top: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(top, ["cape-out"]);
    // With --out the files go exactly there.
    let chosen = dir.join("mine");
    let out = cape_in(&dir, &[&sweep[..], &["--out", chosen.to_str().unwrap()]].concat());
    ok(&out, "--out");
    assert!(chosen.join("vertical-vi-generated-adult-like-vs-epsilon-nll.png").is_file());
    assert_eq!(std::fs::read_dir(dir.join("cape-out")).unwrap().count(), 2);
    // A refused run leaves no empty folder behind.
    let bad = cape_in(&dir, &["djica", "--sites", "0"]);
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(std::fs::read_dir(dir.join("cape-out")).unwrap().count(), 2);
}

#[test]
fn a_missing_data_set_names_the_path_and_both_ways_out() {
    let dir = scratch("nodata");
    for (args, file) in [
        (&["vertical-vi", "--steps", "2"][..], "data/cps1988.csv"),
        (&["efpsn"][..], "data/digits.csv"),
        (&["efpsn-attack"][..], "data/digits.csv"),
        (&["fm", "--data", "diabetes"][..], "data/diabetes.csv"),
        (&["nn", "--data", "breast-cancer"][..], "data/breast_cancer.csv"),
    ] {
        let out = cape_in(&dir, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains(&format!("cannot read {file}")), "{args:?}: {err}");
        assert!(err.contains(&dir.display().to_string()), "where it looked: {err}");
        assert!(err.contains("scripts/setup.sh"), "{err}");
        assert!(err.contains("--data-file PATH"), "{err}");
    }
    // A file the user names is read from there, and a wrong one is reported as theirs.
    let out = cape_in(&dir, &["vertical-vi", "--data-file", "elsewhere.csv"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("error: --data-file elsewhere.csv: cannot read it"));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "nothing written");
}

#[test]
fn every_epsilon_says_its_accountant() {
    let v: Value = {
        let out = cape(&refs(&vvi(&["--mode", "fixed", "--sampling", "fixed", "--json"])));
        ok(&out, "vertical-vi");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    for g in v["privacy"].as_array().unwrap() {
        let by = g["epsilon_accountant"].as_str().unwrap();
        assert!(by == "pld" || by == "rdp", "{g}");
        assert_eq!(g["epsilon"], g[format!("epsilon_{by}").as_str()], "{g}");
    }
    let human = cape(&refs(&vvi(&["--mode", "fixed", "--sampling", "fixed"])));
    ok(&human, "vertical-vi");
    let text = stdout(&human);
    let eps_lines: Vec<&str> = text.lines().filter(|l| l.trim_start().starts_with("ε =")).collect();
    assert_eq!(eps_lines.len(), 4, "analyst, party ×2, replace-one with fixed batches: {text}");
    for l in &eps_lines {
        assert!(l.contains("(PLD; RDP ") || l.contains("(RDP;"), "{l}");
    }
    assert!(eps_lines[0].contains("(PLD; RDP "), "the analyst's ε is PLD's: {}", eps_lines[0]);

    // `cape --help` says what `account` does, PLD first.
    let help = stdout(&cape(&["--help"]));
    let account = help.lines().find(|l| l.trim_start().starts_with("account")).unwrap();
    assert!(account.contains("privacy loss distribution (PLD)"), "{account}");

    // fm and nn name how their ε is known.
    let fm: Value = serde_json::from_slice(
        &cape(&["fm", "--samples", "300", "--features", "3", "--json"]).stdout,
    )
    .unwrap();
    assert_eq!(fm["epsilon_accountant"], "exact_gaussian_profile");
    let laplace =
        stdout(&cape(&["fm", "--samples", "300", "--features", "3", "--mechanism", "laplace"]));
    assert!(laplace.contains("by the mechanism (pure ε-DP)"), "{laplace}");
    let nn: Value = serde_json::from_slice(
        &cape(&["nn", "--samples", "400", "--features", "3", "--iterations", "5", "--json"]).stdout,
    )
    .unwrap();
    assert_eq!(nn["epsilon_overall_accountant"], "exact_gaussian_composition");
}

#[test]
fn target_epsilon_calibrates_sigma_by_pld() {
    let out = cape(&refs(&vvi(&["--mode", "plain", "--target-epsilon", "2", "--json"])));
    ok(&out, "--target-epsilon");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let k = &v["sigma_calibration"];
    assert_eq!(k["accountant"], "pld");
    assert_eq!(v["sigma"], k["sigma"]);
    let analyst = &v["privacy"][0];
    assert_eq!(analyst["viewer"], "outside analyst");
    let eps = analyst["epsilon_pld"].as_f64().unwrap();
    // At most the target, and close to it (σ is the smallest to a relative 1e-4).
    assert!(eps <= 2.0 && eps > 1.99, "ε = {eps}");
    assert_eq!(analyst["epsilon_accountant"], "pld");
    // RDP needs more noise for the same guarantee.
    assert!(k["sigma_rdp"].as_f64().unwrap() > k["sigma"].as_f64().unwrap(), "{k}");
    let human = stdout(&cape(&refs(&vvi(&["--mode", "plain", "--target-epsilon", "2"]))));
    assert!(human.contains("calibrated by PLD for ε ≤ 2"), "{human}");
    // A σ and a target at once is a contradiction.
    let both = cape(&refs(&vvi(&["--sigma", "1", "--target-epsilon", "2"])));
    assert_eq!(both.status.code(), Some(2));
    assert!(stderr(&both).contains("--target-epsilon"), "{}", stderr(&both));
    let bad = cape(&refs(&vvi(&["--target-epsilon", "-1"])));
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("--target-epsilon -1"), "{}", stderr(&bad));
}

#[test]
fn the_non_partitioned_baseline_has_no_party_viewer() {
    let out = cape(&refs(&vvi(&["--mode", "nonpartitioned", "--json"])));
    ok(&out, "nonpartitioned");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let viewers: Vec<&str> =
        v["privacy"].as_array().unwrap().iter().map(|g| g["viewer"].as_str().unwrap()).collect();
    assert_eq!(viewers, ["outside analyst"]);
    let text = stdout(&cape(&refs(&vvi(&["--mode", "nonpartitioned"]))));
    assert!(!text.contains("a party"), "{text}");
    // The partitioned modes keep it.
    let plain: Value =
        serde_json::from_slice(&cape(&refs(&vvi(&["--mode", "plain", "--json"]))).stdout).unwrap();
    assert!(plain["privacy"].as_array().unwrap().iter().any(|g| g["viewer"] == "a party"));
}

#[test]
fn efpsn_sweep_claims_an_exact_zero_sum_only_for_efpsn() {
    let dir = scratch("efpsn");
    let out = cape_in(
        &dir,
        &[
            "efpsn-sweep",
            "--model",
            "least-squares",
            "--key-bits",
            "1024",
            "--iterations",
            "20",
            "--gammas",
            "1,100",
            "--out",
            "figs",
        ],
    );
    ok(&out, "efpsn-sweep");
    // The one CSV written (its stem names the model and the graph).
    let csv_path = std::fs::read_dir(dir.join("figs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "csv"))
        .unwrap();
    let csv = std::fs::read_to_string(csv_path).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert!(header.contains(&"epsilon_theorem_iv1"), "{header:?}");
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2 * 2 + 2 * 2 * 2, "noise-free ×2 optimisers ×2 γ, then 2 methods");
    for r in &rows {
        let exact = r[col("zero_sum_exact")];
        match r[col("method")] {
            "efpsn" => assert_eq!(exact, "true", "{r:?}"),
            // No zero-sum mask exists to be exact: the baseline's noise is independent, the
            // noise-free run has none.
            "baseline" | "noise-free" => assert_eq!(exact, "", "{r:?}"),
            other => panic!("unexpected method {other}"),
        }
    }
}
