//! `cape vertical-vi`: DP variational inference over vertically partitioned data (seed 004) in one
//! process, in one of four modes (real MPC, its fixed-point simulation, plain f64, or the
//! non-partitioned baseline): test NLL per epoch, ε per player, time and bytes per step, and a
//! synthetic twin and its report; `cape vertical-vi-sweep`: test NLL against ε for the modes.
//!
//! Each viewer's ε is the tighter of RDP and PLD (what a ledger charges) and says which one it is
//! (`epsilon_accountant` in the JSON, "(PLD; RDP …)" in the text). `--target-epsilon` calibrates σ
//! by PLD for the outside analyst, as the sweep does per ε; the JSON's `sigma_calibration` keeps
//! the target and the σ RDP would have needed. The JSON keeps the keys the dashboard's baseline
//! loader reads (`web/src/study_view/vvi_baseline.rs`).

mod args;
mod report;
mod sweep;

use std::process::ExitCode;

use capelab_vertical_vi::model::twin::{decode, join};
use capelab_vertical_vi::modes::{Mode, Progress as ModeProgress, RunResult, run as run_modes};
use capelab_vertical_vi::privacy::Adjacency;
use capelab_vertical_vi::report::Report;
use serde_json::{Value, json};

use crate::progress::Progress;

pub use args::{VerticalViArgs, VerticalViSweepArgs};
pub use sweep::run as run_sweep;

/// The twin as one CSV: every party's columns side by side, one row per record.
fn twin_csv(result: &RunResult, rows: usize, args: &VerticalViArgs) -> String {
    let mut rng = args.common.seed().rng("vvi/twin");
    let blocks = result.posterior.sample_twin(rows, &mut rng);
    join(&decode(&result.posterior.model.schema, &blocks)).to_csv()
}

/// Which accountant gave a guarantee's ε (the tighter of the two, as a ledger charges).
fn accountant_of(e: &capelab_vertical_vi::privacy::Epsilons) -> &'static str {
    if e.pld <= e.rdp.epsilon { "pld" } else { "rdp" }
}

/// "PLD" or "RDP", for people.
fn accountant_name(key: &str) -> &'static str {
    match key {
        "pld" => "PLD",
        "rdp" => "RDP",
        _ => "?",
    }
}

/// The run's JSON, and its synthetic-data report when asked for.
fn vertical_vi(args: &VerticalViArgs) -> Result<(Value, Option<Report>), String> {
    let c = &args.common;
    let data = c.load()?;
    let records = data.train[0].rows;
    let calibration = args
        .target_epsilon
        .map(|e| c.calibrate_sigma(e, records, "--target-epsilon"))
        .transpose()?;
    let sigma = calibration.map_or(args.sigma, |k| k.sigma);
    let config = c.run_config(args.mode.mode(), sigma, records)?;
    let wants_report = args.report || args.report_out.is_some();
    let target = data.target(c.target.as_deref());
    if wants_report {
        report::check_target(&data, target.as_ref())?;
    }
    let progress =
        Progress::new(&format!("vertical-vi {}", config.mode.name()), "step", config.steps as u64);
    let mut on = |p: &ModeProgress| {
        progress.set_position(p.step as u64);
        if let Some(e) = p.eval {
            progress.set_message(format!("test NLL {:.4}", e.test_nll));
        }
    };
    let result = run_modes(&data.schema, &data.train, &data.test, &config, &mut on)
        .map_err(|e| e.to_string())?;
    progress.finish();
    let synthetic = match &args.synthetic_out {
        Some(path) => {
            let rows = args.rows.unwrap_or(records);
            if rows == 0 {
                return Err("--rows 0: the twin needs at least one row".into());
            }
            let csv = twin_csv(&result, rows, args);
            let columns = csv.lines().next().unwrap_or("").to_string();
            std::fs::write(path, &csv)
                .map_err(|e| format!("--synthetic-out {}: {e}", path.display()))?;
            json!({ "path": path.display().to_string(), "rows": rows, "header": columns })
        }
        None => Value::Null,
    };
    let report = if wants_report {
        let r = report::synthetic_report(&data, &result.posterior, args.rows, c.seed(), target)?;
        if let Some(path) = &args.report_out {
            std::fs::write(path, r.to_csv())
                .map_err(|e| format!("--report-out {}: {e}", path.display()))?;
        }
        Some(r)
    } else {
        None
    };
    // The run's own sampling under the paper's definitions (replace-one): fixed batches only.
    let replace_one = match (&result.privacy_run, c.sampling) {
        (Some(run), args::SamplingArg::Fixed) => Some(
            capelab_vertical_vi::privacy::replace_one_fixed_batches(run, config.delta)
                .map_err(|e| e.to_string())?,
        ),
        _ => None,
    };
    let privacy: Vec<Value> = result
        .privacy
        .iter()
        .flatten()
        .map(|g| {
            json!({
                "viewer": g.viewer.name(),
                "noise": g.noise,
                "adjacency": g.adjacency,
                "noise_multiplier": g.noise_multiplier,
                "sampling_rate": g.sampling_rate,
                "compositions": g.compositions,
                "approximate": g.approximate,
                "delta": g.delta,
                "epsilon": g.epsilon.best(),
                "epsilon_accountant": accountant_of(&g.epsilon),
                "epsilon_rdp": g.epsilon.rdp.epsilon,
                "epsilon_pld": g.epsilon.pld,
            })
        })
        .collect();
    let v = json!({
        "data": data.name,
        "mode": config.mode.name(),
        "parties": data.schema.parties.iter().map(|p| json!({
            "name": p.name,
            "columns": p.features.iter().map(|f| f.name.clone()).collect::<Vec<_>>(),
            "parameters_per_component": p.parameters(),
        })).collect::<Vec<_>>(),
        "components": config.components,
        "gradient_dimension": data.schema.zeta_gradient_len(config.components),
        "sigma": config.sigma,
        "sigma_calibration": calibration,
        "clip": config.clip,
        "sampling": config.sampling,
        "batch": c.batch,
        "steps": config.steps,
        "learning_rate": config.learning_rate,
        "seed": c.seed,
        "train_records": result.train_records,
        "test_records": result.test_records,
        "steps_per_epoch": result.steps_per_epoch,
        "test_nll": result.evals,
        "final_test_nll": result.final_test_nll,
        "train_seconds": result.train_seconds,
        "per_step": {
            "mean_batch": result.cost.mean_batch,
            "mean_seconds": result.cost.mean_seconds,
            "max_seconds": result.cost.max_seconds,
            "rounds": result.cost.rounds,
            "mean_bytes_sent": result.cost.mean_bytes_sent,
            "first_step_bytes_sent": result.costs.first().map(|c| c.bytes_sent.clone()),
            "first_step_dealt_values": result.costs.first().map(|c| c.dealt_values.clone()),
        },
        "privacy": privacy,
        "privacy_replace_one_fixed_batches": replace_one,
        "synthetic": synthetic,
        "report": report,
    });
    Ok((v, report))
}

fn print_human(args: &VerticalViArgs, v: &Value) {
    let c = &args.common;
    let parties: Vec<String> = v["parties"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            format!(
                "{} ({} columns)",
                p["name"].as_str().unwrap_or(""),
                p["columns"].as_array().map_or(0, |c| c.len())
            )
        })
        .collect();
    println!(
        "DP-VI on {}, mode {}: {} train / {} test rows; parties {}",
        v["data"].as_str().unwrap_or(""),
        v["mode"].as_str().unwrap_or(""),
        v["train_records"],
        v["test_records"],
        parties.join(", ")
    );
    let calibrated = v["sigma_calibration"].as_object();
    let sigma = match (calibrated, v["sigma"].as_f64()) {
        (Some(_), Some(s)) => format!("{s:.4}"),
        _ => v["sigma"].to_string(),
    };
    if let Some(k) = calibrated {
        let sigma = k["sigma"].as_f64().unwrap_or(f64::NAN);
        let rdp = k["sigma_rdp"].as_f64().map_or(String::new(), |r| {
            format!("; RDP would need σ = {r:.4}, {:.1}% more noise", 100.0 * (r / sigma - 1.0))
        });
        println!(
            "  σ = {sigma:.4} calibrated by PLD for ε ≤ {} (outside analyst, add/remove, δ = {:e}){rdp}",
            k["target_epsilon"].as_f64().unwrap_or(f64::NAN),
            c.delta
        );
    }
    println!(
        "  K = {}, D = {}, σ = {}, C = {}, B = {} ({}), T = {}, lr = {}, {}",
        v["components"],
        v["gradient_dimension"],
        sigma,
        c.clip,
        c.batch,
        match c.sampling {
            args::SamplingArg::Poisson => "Poisson",
            args::SamplingArg::Fixed => "fixed batches",
        },
        c.steps,
        c.learning_rate,
        c.seed.map_or("seed from the OS".to_string(), |s| format!(
            "seed {s} (reproducible, not private)"
        ))
    );
    println!("  {:>8} {:>7} {:>10}", "epoch", "step", "test NLL");
    for e in v["test_nll"].as_array().into_iter().flatten() {
        println!(
            "  {:>8.2} {:>7} {:>10.4}",
            e["epoch"].as_f64().unwrap_or(f64::NAN),
            e["step"].as_u64().unwrap_or(0),
            e["test_nll"].as_f64().unwrap_or(f64::NAN)
        );
    }
    let s = &v["per_step"];
    let mut cost = format!(
        "  per step: {:.2} ms (max {:.2} ms), mean batch {:.1}",
        1e3 * s["mean_seconds"].as_f64().unwrap_or(f64::NAN),
        1e3 * s["max_seconds"].as_f64().unwrap_or(f64::NAN),
        s["mean_batch"].as_f64().unwrap_or(f64::NAN)
    );
    if args.mode.mode() == Mode::Mpc {
        let bytes: Vec<String> = s["mean_bytes_sent"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| format!("{:.2} MB", b.as_f64().unwrap_or(f64::NAN) / 1e6))
            .collect();
        cost.push_str(&format!("; {} rounds; sent per party {}", s["rounds"], bytes.join(", ")));
    }
    println!("{cost}");
    let privacy = v["privacy"].as_array().cloned().unwrap_or_default();
    if privacy.is_empty() {
        println!("  σ = 0: no noise, no privacy guarantee");
    }
    for g in privacy {
        let adj = match serde_json::from_value::<Adjacency>(g["adjacency"].clone()) {
            Ok(Adjacency::AddRemove) => "add/remove",
            _ => "replace-one",
        };
        let by = g["epsilon_accountant"].as_str().unwrap_or("");
        let other = if by == "pld" { ("RDP", "epsilon_rdp") } else { ("PLD", "epsilon_pld") };
        println!(
            "  ε = {:>10.4} ({}; {} {:.4}) at δ = {:e} for {} ({adj}; z = {:.4}, Q = {:.3e}, {} \
             compositions{})",
            g["epsilon"].as_f64().unwrap_or(f64::NAN),
            accountant_name(by),
            other.0,
            g[other.1].as_f64().unwrap_or(f64::NAN),
            g["delta"].as_f64().unwrap_or(f64::NAN),
            g["viewer"].as_str().unwrap_or(""),
            g["noise_multiplier"].as_f64().unwrap_or(f64::NAN),
            g["sampling_rate"].as_f64().unwrap_or(f64::NAN),
            g["compositions"],
            if g["approximate"] == true { ", fixed batches accounted as Poisson" } else { "" }
        );
    }
    let r = &v["privacy_replace_one_fixed_batches"];
    if let Some(eps) = r["epsilon"]["epsilon"].as_f64() {
        println!(
            "  ε = {eps:>10.4} (RDP; no PLD exists for it) at δ = {:e} for outside analyst \
             (replace-one, the paper's own adjacency, with these fixed batches drawn without \
             replacement; z = σ/2 = {:.4})",
            r["delta"].as_f64().unwrap_or(f64::NAN),
            r["noise_multiplier"].as_f64().unwrap_or(f64::NAN)
        );
    }
    if let Some(path) = v["synthetic"]["path"].as_str() {
        println!("wrote {path} ({} synthetic rows)", v["synthetic"]["rows"]);
    }
}

pub fn run(args: VerticalViArgs) -> ExitCode {
    match vertical_vi(&args) {
        Ok((v, report)) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&v).expect("JSON"));
            } else {
                print_human(&args, &v);
                if let Some(r) = report {
                    println!("{}", r.to_text());
                }
            }
            ExitCode::SUCCESS
        }
        Err(m) => crate::exit::fail(m),
    }
}
