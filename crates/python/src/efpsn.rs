//! `capelab.efpsn`: EFPSN (seed 003; spec efpsn-vertical-dpvi Part A): agents on a graph mask
//! their local costs with zero-sum polynomials built by a Paillier exchange, then optimise together
//! (`capelab_core::efpsn`), with the non-zero-sum baseline and the noise-free run. The problem and
//! run are built as `cape efpsn` builds them (crates/cli/src/efpsn/args.rs), from a labelled
//! numpy table instead of a CSV.

use capelab_core::data::Dataset;
use capelab_core::efpsn::EfpsnError;
use capelab_core::efpsn::basis::BasisSpec;
use capelab_core::efpsn::epsilon::{TheoremInputs, theorem_epsilon};
use capelab_core::efpsn::graph::{Graph, Topology};
use capelab_core::efpsn::mask::NoiseLaw;
use capelab_core::efpsn::messages::Phase1Setup;
use capelab_core::efpsn::optimizer::{Optimizer, Phase2Settings};
use capelab_core::efpsn::problem::Problem;
use capelab_core::efpsn::sim::{EfpsnSim, Method, RunConfig};
use capelab_core::rng::derive;
use capelab_paillier::{KeySize, Keypair};
use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use serde_json::json;

use crate::common::{Progress, bad, detached, rows, to_py};

/// The settings of a run, as `cape efpsn`'s flags.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct EfpsnSettings {
    graph: String,
    agents: usize,
    optimizer: String,
    decay: f64,
    precision: u32,
    basis: (u32, Option<u32>, Option<u32>),
    basis_seed: u64,
    perturb: String,
    iterations: u32,
    step: f64,
    step_decay: f64,
    batch: u32,
    ridge: f64,
    key_bits: u32,
    delta: f64,
    q: f64,
    sensitivity: f64,
    feature_bound: f64,
    test_fraction: f64,
    gamma: f64,
    methods: Vec<String>,
    seed: u64,
}

fn efpsn_error(argument: &str, e: EfpsnError) -> PyErr {
    let argument = match &e {
        EfpsnError::Basis(_) => "basis",
        EfpsnError::Graph(_) => "graph",
        EfpsnError::Data(_) => "x",
        _ => argument,
    };
    bad(argument, e)
}

/// Runs EFPSN (and, as asked, the baseline and the noise-free run) on softmax regression over the
/// labelled rows (x, labels) or, without them, the generated least-squares problem.
#[pyfunction]
#[pyo3(signature = (x, labels, settings, progress=None))]
pub fn efpsn_run<'py>(
    py: Python<'py>,
    x: Option<PyReadonlyArray2<'py, f64>>,
    labels: Option<PyReadonlyArray1<'py, i64>>,
    settings: EfpsnSettings,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let s = &settings;
    let topology = match s.graph.as_str() {
        "ring" => Topology::Ring,
        "path" => Topology::Path,
        "star" => Topology::Star,
        "complete" => Topology::Complete,
        "geometric" => Topology::Geometric,
        other => {
            return Err(bad(
                "graph",
                format!("'{other}' is not ring, path, star, complete or geometric"),
            ));
        }
    };
    let optimizer = match s.optimizer.as_str() {
        "dsgd" => Optimizer::Dsgd,
        "tracking" => Optimizer::Tracking,
        other => return Err(bad("optimizer", format!("'{other}' is not 'dsgd' or 'tracking'"))),
    };
    let key_size = match s.key_bits {
        1024 => KeySize::Demo1024,
        2048 => KeySize::Standard2048,
        b => {
            return Err(bad(
                "key_bits",
                format!("{b}: Paillier keys are 2048 bits (or 1024 for demos)"),
            ));
        }
    };
    let methods = s
        .methods
        .iter()
        .map(|m| match m.as_str() {
            "efpsn" => Ok(Method::Efpsn),
            "baseline" => Ok(Method::Baseline),
            "noise-free" | "noise_free" => Ok(Method::NoiseFree),
            other => Err(bad("methods", format!("'{other}' is not efpsn, baseline or noise-free"))),
        })
        .collect::<PyResult<Vec<_>>>()?;
    if methods.is_empty() {
        return Err(bad("methods", "name at least one of efpsn, baseline, noise-free"));
    }
    let data = match (&x, &labels) {
        (Some(x), Some(labels)) => {
            let rows = rows("x", x)?;
            let labels = labels.as_array().to_vec();
            if labels.len() != rows.len() {
                return Err(bad(
                    "labels",
                    format!("{} labels for {} rows", labels.len(), rows.len()),
                ));
            }
            if let Some(l) = labels.iter().find(|&&l| !(0..10_000).contains(&l)) {
                return Err(bad("labels", format!("{l} is not a class number 0, 1, 2, …")));
            }
            let classes = labels.iter().copied().max().unwrap_or(0) as usize + 1;
            let y: Vec<f64> = labels.iter().map(|&l| l as f64).collect();
            Some((Dataset::from_rows(&rows, &y).map_err(|e| bad("x", e))?, classes))
        }
        (None, None) => None,
        _ => return Err(bad("labels", "give both x and labels, or neither (least squares)")),
    };
    let graph = Graph::build(topology, s.agents, s.seed).map_err(|e| efpsn_error("agents", e))?;
    let epsilon = theorem_epsilon(
        &graph,
        &TheoremInputs {
            gamma: s.gamma,
            p: s.decay,
            q: s.q,
            sensitivity_squared: s.sensitivity,
            delta: s.delta,
        },
    )
    .map_err(|e| efpsn_error("gamma", e))?;
    let mut progress = Progress::new(progress);
    let (out, progress) = detached(py, move || {
        let problem = match &data {
            Some((d, classes)) => Problem::classification(
                d,
                *classes,
                s.agents,
                s.feature_bound,
                s.ridge,
                s.test_fraction,
                s.seed,
            ),
            None => Problem::least_squares(s.agents, 200, 10, s.ridge, s.seed),
        }
        .map_err(|e| efpsn_error("x", e))?;
        let variables: Vec<usize> = match (s.perturb.as_str(), data.is_some()) {
            ("biases", true) => problem.model.bias_indices(problem.test.features),
            ("all", _) | (_, false) => (0..problem.dim()).collect(),
            (other, _) => {
                return Err(bad("perturb", format!("'{other}' is not 'biases' or 'all'")));
            }
        };
        let m = s.basis.1.unwrap_or(variables.len() as u32);
        if m as usize != variables.len() {
            return Err(bad(
                "basis",
                format!("m = {m} but {} variables are perturbed (perturb)", variables.len()),
            ));
        }
        let basis = BasisSpec {
            max_degree: s.basis.0,
            variables: m,
            size: s.basis.2.unwrap_or(m),
            seed: s.basis_seed,
        };
        let law = NoiseLaw { gamma: s.gamma, decay: s.decay, precision: s.precision };
        law.check().map_err(|e| efpsn_error("gamma", e))?;
        let phase2 = Phase2Settings {
            optimizer,
            iterations: s.iterations,
            step: s.step,
            decay: s.step_decay,
            batch: (s.batch > 0).then_some(s.batch),
        };
        phase2.check().map_err(|e| efpsn_error("iterations", e))?;
        let total = u64::from(s.iterations) * methods.len() as u64;
        let mut runs = vec![];
        for (done, method) in methods.iter().enumerate() {
            let config = RunConfig {
                method: *method,
                graph: graph.clone(),
                setup: Phase1Setup { basis, law },
                phase2,
                variables: variables.clone(),
                key_size,
                record_every: (s.iterations / 100).max(1),
                seed: s.seed,
            };
            let keys = (*method == Method::Efpsn).then(|| {
                capelab_core::par::map_indices(s.agents, |i| {
                    Keypair::generate(key_size, &mut derive(s.seed, &format!("efpsn/key/{i}")))
                })
            });
            let mut sim =
                EfpsnSim::new(&problem, &config, keys).map_err(|e| efpsn_error("agents", e))?;
            sim.run_phase1().map_err(|e| efpsn_error("agents", e))?;
            let base = done as u64 * u64::from(s.iterations);
            sim.run_phase2(|t| progress.report(base + u64::from(t), total))
                .map_err(|e| efpsn_error("agents", e))?;
            let report = sim.report(&problem);
            runs.push(json!({
                "method": method.name(),
                "final": report.last(),
                "zero_sum_residual": report.zero_sum_residual.as_ref().map(|r| r.iter().map(|&v| v as f64).collect::<Vec<_>>()),
                "largest_mask_coefficient": report.largest_mask_coefficient,
                "phase1": { "messages": report.phase1.messages, "bytes": report.phase1.bytes },
                "trace": report.trace,
                "x_bar": report.x_bar,
            }));
        }
        progress.report(total, total);
        Ok((
            json!({
                "parameters": problem.dim(),
                "graph": { "topology": topology.name(), "agents": s.agents, "edges": graph.edges() },
                "optimizer": optimizer.name(),
                "basis": basis,
                "noise": law,
                "perturbed_variables": variables,
                "key_bits": key_size.bits(),
                "x_star": problem.x_star,
                "x_star_objective": problem.objective(&problem.x_star),
                "x_star_score": problem.score(&problem.x_star),
                "epsilon": {
                    "accountant": "Theorem IV.1 (the paper's claim)",
                    "epsilon": epsilon.epsilon, "delta": epsilon.delta, "q": s.q, "p": s.decay,
                    "sensitivity_squared": s.sensitivity, "mu2": epsilon.mu2, "mu_max": epsilon.mu_max,
                },
                "runs": runs,
            }),
            progress,
        ))
    })?;
    progress.finish()?;
    to_py(py, &out)
}
