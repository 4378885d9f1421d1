//! `cape nn`: one training run against the non-private one, printed as JSON or text.

use std::process::ExitCode;

use capelab_core::cape::privacy::Collusion;
use capelab_core::nn::{NnMechanism, epsilon_per_iteration_for_target, train};
use serde_json::{Value, json};

use super::args::{NnArgs, NnCommon, config, load_nn};
use crate::fm::CalibrationArg;
use crate::progress::Progress;

/// With `--target-epsilon`: the settings that meet it (ε per iteration, analytic calibration).
fn for_target(args: &NnArgs) -> Result<NnCommon, String> {
    let mut c = args.common.clone();
    let Some(target) = c.target_epsilon else { return Ok(c) };
    let collusion = match NnMechanism::from(args.mechanism) {
        NnMechanism::NonPrivate => {
            return Err("--target-epsilon: a non-private run has no guarantee to calibrate".into());
        }
        NnMechanism::Conventional => None,
        NnMechanism::Cape => Some(
            match c.colluders {
                Some(k) => Collusion::new(c.sites, k),
                None => Collusion::default_for(c.sites),
            }
            .map_err(|e| format!("--colluders: {e}"))?,
        ),
    };
    c.epsilon = epsilon_per_iteration_for_target(target, c.delta, c.iterations, collusion.as_ref())
        .map_err(|e| format!("--target-epsilon: {e}"))?;
    c.calibration = CalibrationArg::Analytic;
    Ok(c)
}

fn report(args: &NnArgs) -> Result<Value, String> {
    let c = &for_target(args)?;
    let data = load_nn(c, c.seed)?;
    let cfg = config(c, args.mechanism.into(), c.epsilon, c.seed);
    let progress = Progress::spinner(&format!(
        "nn: training ({}, then the non-private reference), {} iterations",
        cfg.mechanism.name(),
        c.iterations
    ));
    let r = train(&cfg, &data.train, &data.test).map_err(|e| e.to_string())?;
    let np = train(&config(c, NnMechanism::NonPrivate, c.epsilon, c.seed), &data.train, &data.test)
        .map_err(|e| e.to_string())?;
    progress.finish();
    let mut warnings = vec![];
    if let Some(w) = &data.normalisation.warning {
        warnings.push(w.clone());
    }
    Ok(json!({
        "mechanism": r.mechanism,
        "data": {
            "name": data.name,
            "features": data.train.features(),
            "train": data.train.len(),
            "test": data.test.len(),
            "records_used": r.records_used,
            "normalisation": data.normalisation,
        },
        "sites": c.sites,
        "hidden": c.hidden,
        "iterations": c.iterations,
        "clip": c.clip,
        "epsilon_per_iteration": c.epsilon,
        "target_epsilon": c.target_epsilon,
        "delta": c.delta,
        "accuracy": r.test_accuracy,
        "train_accuracy": r.train_accuracy,
        "train_loss": r.train_loss,
        "nonprivate_accuracy": np.test_accuracy,
        "epsilon_overall": r.privacy.as_ref().map(|p| p.epsilon),
        "epsilon_overall_accountant": r.privacy.as_ref().map(|_| "exact_gaussian_composition"),
        "epsilon_overall_view": r.privacy.as_ref().map(|p| p.guarantee_view.clone()),
        "privacy": r.privacy,
        "site_noise_sd": r.site_noise_sd,
        "aggregate_noise_sd": r.aggregate_noise_sd,
        "clipped_share": r.clipped_share,
        "loss_history": r.loss_history,
        "warnings": warnings,
    }))
}

fn human(v: &Value) -> String {
    let mut out = String::new();
    let mut line = |k: &str, val: String| out.push_str(&format!("{k:<24} {val}\n"));
    line("mechanism", v["mechanism"].as_str().unwrap_or("").into());
    line(
        "data",
        format!(
            "{} (D = {}, {} train, {} test)",
            v["data"]["name"].as_str().unwrap_or(""),
            v["data"]["features"],
            v["data"]["train"],
            v["data"]["test"]
        ),
    );
    let pct = |k: &str| 100.0 * v[k].as_f64().unwrap_or(f64::NAN);
    line(
        "test accuracy",
        format!(
            "{:.2}% (train {:.2}%, non-private {:.2}%)",
            pct("accuracy"),
            pct("train_accuracy"),
            pct("nonprivate_accuracy")
        ),
    );
    line("ε per iteration, δ", format!("{}, {}", v["epsilon_per_iteration"], v["delta"]));
    if let Some(p) = v["privacy"].as_object() {
        line("iterations T", p["iterations"].to_string());
        line(
            "noise multiplier z",
            format!("{:.4}", p["noise_multiplier"].as_f64().unwrap_or(f64::NAN)),
        );
        for view in p["views"].as_array().into_iter().flatten() {
            line(
                "overall ε",
                format!(
                    "{:.3} exact Gaussian composition (= PLD), {:.3} RDP (standard), {:.3} RDP \
                     (improved): {} (c_S = {:.4})",
                    view["epsilon_exact"].as_f64().unwrap_or(f64::NAN),
                    view["epsilon_rdp"].as_f64().unwrap_or(f64::NAN),
                    view["epsilon_rdp_improved"].as_f64().unwrap_or(f64::NAN),
                    view["view"].as_str().unwrap_or(""),
                    view["collusion_factor"].as_f64().unwrap_or(f64::NAN),
                ),
            );
        }
        if let Some(t) = p["per_iteration_theorem1"].as_object() {
            line(
                "per iteration (paper)",
                format!(
                    "Theorem 1 δ = {} at ε = {} (c_S = {:.4})",
                    t["delta_phi_bound"]
                        .as_f64()
                        .map_or("none (ε ≤ μ_z)".into(), |d| format!("{d:.3e}")),
                    v["epsilon_per_iteration"],
                    t["c_s"].as_f64().unwrap_or(f64::NAN)
                ),
            );
        }
    }
    for w in v["warnings"].as_array().into_iter().flatten() {
        line("warning", w.as_str().unwrap_or("").into());
    }
    out
}

pub fn run(args: NnArgs) -> ExitCode {
    match report(&args) {
        Ok(v) if args.json => match serde_json::to_string_pretty(&v) {
            Ok(s) => {
                println!("{s}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: could not encode the report as JSON: {e}");
                ExitCode::FAILURE
            }
        },
        Ok(v) => {
            print!("{}", human(&v));
            ExitCode::SUCCESS
        }
        Err(m) => crate::exit::fail(m),
    }
}
