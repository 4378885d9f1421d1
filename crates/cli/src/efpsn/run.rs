//! `cape efpsn`: one run of EFPSN (and, with `--method all`, the non-zero-sum baseline and the
//! noise-free run on the same data, graph and optimiser).

use std::process::ExitCode;
use std::time::Instant;

use capelab_core::efpsn::epsilon::theorem_epsilon;
use capelab_core::efpsn::problem::Problem;
use capelab_core::efpsn::sim::{EfpsnSim, Method, RunConfig, RunReport};
use capelab_core::rng::derive;
use capelab_paillier::Keypair;
use serde_json::{Value, json};

use super::args::{EfpsnArgs, EfpsnCommon, MethodArg};
use crate::progress::Progress;

/// Generates one key pair per agent, in parallel, with its progress (seconds each at 2048 bits).
pub(super) fn generate_keys(c: &EfpsnCommon) -> Result<(Vec<Keypair>, f64), String> {
    let size = c.key_size()?;
    let progress = Progress::new(
        &format!("efpsn: {}-bit Paillier keys", size.bits()),
        "agent",
        c.agents as u64,
    );
    let start = Instant::now();
    // One agent per task on the thread pool (`--threads`), each from its own seeded RNG.
    let keys = capelab_core::par::map_indices(c.agents, |i| {
        let k = Keypair::generate(size, &mut derive(c.seed, &format!("efpsn/key/{i}")));
        progress.inc(1);
        k
    });
    progress.finish();
    Ok((keys, start.elapsed().as_secs_f64()))
}

/// What one method's run measured.
pub(super) struct Timed {
    pub report: RunReport,
    pub phase1_seconds: f64,
    pub phase2_seconds: f64,
}

/// One method's run; `nested`: inside a sweep, whose own progress counts the runs.
pub(super) fn run_one(
    problem: &Problem,
    config: &RunConfig,
    keys: Option<Vec<Keypair>>,
    nested: bool,
) -> Result<Timed, String> {
    let mut sim = EfpsnSim::new(problem, config, keys).map_err(|e| e.to_string())?;
    let method = config.method.name();
    let start = Instant::now();
    // Only EFPSN and the baseline have a Phase 1 worth watching (the noise-free run has no mask).
    let phase1 = (!nested && config.method != Method::NoiseFree)
        .then(|| Progress::spinner(&format!("efpsn, {method}: Phase 1")));
    sim.run_phase1().map_err(|e| format!("Phase 1: {e}"))?;
    phase1.inspect(Progress::finish);
    let phase1_seconds = start.elapsed().as_secs_f64();
    let progress = (!nested).then(|| {
        Progress::new(
            &format!("efpsn, {method} ({})", config.phase2.optimizer.name()),
            "iteration",
            config.phase2.iterations as u64,
        )
    });
    let start = Instant::now();
    sim.run_phase2(|t| {
        if let Some(p) = &progress {
            p.set_position(t as u64);
        }
    })
    .map_err(|e| format!("Phase 2: {e}"))?;
    progress.inspect(Progress::finish);
    Ok(Timed {
        report: sim.report(problem),
        phase1_seconds,
        phase2_seconds: start.elapsed().as_secs_f64(),
    })
}

fn efpsn(args: &EfpsnArgs) -> Result<Value, String> {
    let c = &args.common;
    let (problem, name) = c.problem()?;
    let methods: Vec<Method> = match args.method {
        MethodArg::Efpsn => vec![Method::Efpsn],
        MethodArg::Baseline => vec![Method::Baseline],
        MethodArg::NoiseFree => vec![Method::NoiseFree],
        MethodArg::All => Method::ALL.to_vec(),
    };
    let graph = c.graph()?;
    let epsilon = theorem_epsilon(&graph, &c.theorem(args.gamma)).map_err(|e| e.to_string())?;
    let mut runs = Vec::new();
    let mut keygen_seconds = None;
    for method in methods {
        let config = c.run_config(&problem, method, c.optimizer(), args.gamma)?;
        let keys = if method == Method::Efpsn {
            let (keys, seconds) = generate_keys(c)?;
            keygen_seconds = Some(seconds);
            Some(keys)
        } else {
            None
        };
        let timed = run_one(&problem, &config, keys, false)?;
        runs.push((config, timed));
    }
    let (first, _) = &runs[0];
    let out = json!({
        "data": name,
        "parameters": problem.dim(),
        "graph": { "topology": c.topology().name(), "agents": c.agents, "edges": graph.edges() },
        "optimizer": c.optimizer().name(),
        "iterations": c.iterations,
        "step": c.step,
        "batch": c.batch,
        "gamma": args.gamma,
        "basis": first.setup.basis,
        "noise": first.setup.law,
        "perturbed_variables": first.variables,
        "key_bits": first.key_size.bits(),
        "keygen_seconds": keygen_seconds,
        "x_star_objective": problem.objective(&problem.x_star),
        "x_star_score": problem.score(&problem.x_star),
        "epsilon": {
            "accountant": "theorem IV.1",
            "theorem": "IV.1 (the paper's claim: asymptotic in P_prec and K_c; spec §D lists its open points)",
            "epsilon": epsilon.epsilon, "delta": epsilon.delta, "q": c.q, "p": c.decay,
            "sensitivity_squared": c.sensitivity, "mu2": epsilon.mu2, "mu_max": epsilon.mu_max,
        },
        "runs": runs.iter().map(|(config, t)| json!({
            "method": config.method.name(),
            "final": t.report.last(),
            "zero_sum_residual": t.report.zero_sum_residual,
            "largest_mask_coefficient": t.report.largest_mask_coefficient,
            "phase1": { "seconds": t.phase1_seconds, "messages": t.report.phase1.messages, "bytes": t.report.phase1.bytes },
            "phase2_seconds": t.phase2_seconds,
            "trace": t.report.trace,
        })).collect::<Vec<_>>(),
    });
    Ok(out)
}

fn print_human(args: &EfpsnArgs, v: &Value) {
    let c = &args.common;
    let score_name =
        if c.model == super::args::ModelArg::Logistic { "test accuracy" } else { "test RMSE" };
    println!(
        "EFPSN on {} ({} parameters): {} of {} agents, {}, {} iterations, step {}",
        v["data"].as_str().unwrap_or(""),
        v["parameters"],
        c.topology().name(),
        c.agents,
        c.optimizer().name(),
        c.iterations,
        c.step
    );
    println!(
        "  perturbation (K_deg, m, N_b) = ({}, {}, {}) on {} variables; γ = {}, p = {}, P_prec = {}",
        v["basis"]["max_degree"],
        v["basis"]["variables"],
        v["basis"]["size"],
        v["perturbed_variables"].as_array().map_or(0, |a| a.len()),
        args.gamma,
        c.decay,
        c.precision
    );
    let x_star_score = v["x_star_score"].as_f64().unwrap_or(f64::NAN);
    println!("  centralised x*: {score_name} {}", fmt_score(c, x_star_score));
    println!("  {:<11} {:>12} {:>14} {:>14}", "method", "‖x̄ − x*‖", score_name, "max ‖x_i − x̄‖");
    for run in v["runs"].as_array().into_iter().flatten() {
        let f = &run["final"];
        println!(
            "  {:<11} {:>12.4e} {:>14} {:>14.3e}",
            run["method"].as_str().unwrap_or(""),
            f["deviation"].as_f64().unwrap_or(f64::NAN),
            fmt_score(c, f["score"].as_f64().unwrap_or(f64::NAN)),
            f["disagreement"].as_f64().unwrap_or(f64::NAN)
        );
    }
    for run in v["runs"].as_array().into_iter().flatten() {
        if run["method"] == "efpsn" {
            let residual: Vec<i64> = run["zero_sum_residual"]
                .as_array()
                .map(|a| a.iter().filter_map(|x| x.as_i64()).collect())
                .unwrap_or_default();
            let all_zero = !residual.is_empty() && residual.iter().all(|&r| r == 0);
            println!(
                "  zero-sum residual Σ_i η̄_ik·10^{}: {} (largest |η̄_ik| = {:.3})",
                c.precision,
                if all_zero {
                    "0 for every k, exactly".to_string()
                } else {
                    format!("{residual:?}")
                },
                run["largest_mask_coefficient"].as_f64().unwrap_or(f64::NAN)
            );
            println!(
                "  Phase 1: {}-bit Paillier, {} messages, {} bytes, {:.2} s (key generation {:.2} s)",
                v["key_bits"],
                run["phase1"]["messages"],
                run["phase1"]["bytes"],
                run["phase1"]["seconds"].as_f64().unwrap_or(f64::NAN),
                v["keygen_seconds"].as_f64().unwrap_or(f64::NAN)
            );
        }
    }
    println!(
        "  ε = {:.4} at δ = {} by Theorem IV.1 (q = {}, p = {}, ‖Δf‖² = {}; μ₂ = {:.4}, μ_max = {:.4}): the paper's claim",
        v["epsilon"]["epsilon"].as_f64().unwrap_or(f64::NAN),
        c.delta,
        c.q,
        c.decay,
        c.sensitivity,
        v["epsilon"]["mu2"].as_f64().unwrap_or(f64::NAN),
        v["epsilon"]["mu_max"].as_f64().unwrap_or(f64::NAN)
    );
}

fn fmt_score(c: &EfpsnCommon, s: f64) -> String {
    if c.model == super::args::ModelArg::Logistic {
        format!("{:.2} %", 100.0 * s)
    } else {
        format!("{s:.4}")
    }
}

pub fn run(args: EfpsnArgs) -> ExitCode {
    match efpsn(&args) {
        Ok(v) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&v).expect("JSON"));
            } else {
                print_human(&args, &v);
            }
            ExitCode::SUCCESS
        }
        Err(m) => crate::exit::fail(m),
    }
}
