//! `capelab.vertical_vi`: DP variational inference over vertically partitioned data with MPC
//! (seed 004; `capelab_vertical_vi`), the privacy of every player, and the synthetic twin.
//!
//! Each party's columns arrive as CSV text (the Python layer writes it from a DataFrame or numpy
//! columns, numbers round-trip exact) and are read by the crate's own reader against the public
//! schema (`table::read_parties`): one reader, its clamps and its errors, for the CLI's files,
//! the browser's uploads and Python alike. The run is `cape vertical-vi`'s
//! (crates/cli/src/vertical_vi/), so the same seed gives the same numbers.

use capelab_core::rng::Seed;
use capelab_vertical_vi::cps1988;
use capelab_vertical_vi::model::Posterior;
use capelab_vertical_vi::model::Sampling;
use capelab_vertical_vi::model::twin::{decode, join};
use capelab_vertical_vi::modes::{Mode, ModeError, Progress as RunProgress, RunConfig, run};
use capelab_vertical_vi::privacy::replace_one_fixed_batches;
use capelab_vertical_vi::schema::{FeatureKind, PartyBlock, Schema};
use capelab_vertical_vi::table::{self, select_rows, train_test_split};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::json;

use crate::common::{Progress, bad, detached, seed_of, to_py};

fn schema(text: &str) -> PyResult<Schema> {
    let schema: Schema = serde_json::from_str(text).map_err(|e| bad("parties", e))?;
    if schema.parties.is_empty() {
        return Err(bad("parties", "no party"));
    }
    for p in &schema.parties {
        if p.features.is_empty() {
            return Err(bad("parties", format!("party '{}' has no columns", p.name)));
        }
        for f in &p.features {
            if let FeatureKind::Categorical { labels } = &f.kind
                && labels.len() < 2
            {
                return Err(bad(
                    "parties",
                    format!("column '{}': a categorical column needs at least 2 labels", f.name),
                ));
            }
        }
    }
    Ok(schema)
}

fn blocks(argument: &str, schema: &Schema, csvs: &[String]) -> PyResult<Vec<PartyBlock>> {
    let refs: Vec<&str> = csvs.iter().map(String::as_str).collect();
    let tables = table::read_parties(schema, &refs).map_err(|e| bad(argument, e))?;
    Ok(tables.into_iter().map(|t| t.block).collect())
}

/// The public schema of CPS1988's default two-party split, as JSON.
#[pyfunction]
pub fn vvi_cps1988_schema() -> String {
    serde_json::to_string(&cps1988::schema()).expect("the schema serialises")
}

/// CPS1988's joined CSV cut into the two parties' CSV texts, education and experience turned into
/// their public labels (`cps1988::split_joined`), and the fixed split's train/test row indices.
#[pyfunction]
pub fn vvi_cps1988_split(csv: &str) -> PyResult<(Vec<String>, Vec<usize>, Vec<usize>)> {
    let (texts, report) = cps1988::split_joined(csv).map_err(|e| bad("path", e))?;
    let split = cps1988::split(report.rows);
    Ok((texts.to_vec(), split.train, split.test))
}

/// The settings of one run, as `cape vertical-vi`'s flags.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct FitSettings {
    mode: String,
    sigma: f64,
    components: usize,
    clip: f64,
    batch: usize,
    sampling: String,
    steps: usize,
    learning_rate: f64,
    eval_every: usize,
    delta: f64,
    seed: Option<u64>,
    split_seed: u64,
    test_fraction: f64,
}

fn mode_error(e: ModeError) -> PyErr {
    let argument = match &e {
        ModeError::Components(_) => "components",
        ModeError::Sigma(_) => "sigma",
        ModeError::Clip(_) => "clip",
        ModeError::Steps => "steps",
        ModeError::LearningRate(_) => "learning_rate",
        ModeError::Batch { .. } | ModeError::Rate(_) => "batch",
        ModeError::Delta(_) => "delta",
        ModeError::MpcParties(_) => "mode",
        ModeError::PartyCount { .. }
        | ModeError::RowCounts { .. }
        | ModeError::Columns { .. }
        | ModeError::NoRows { .. } => "data",
        ModeError::Mpc { .. } | ModeError::Privacy(_) => "data",
    };
    bad(argument, e)
}

/// A twin as text: the header, the rows of fields, and which columns are numbers.
type TwinRows = (Vec<String>, Vec<Vec<String>>, Vec<bool>);

/// The released posterior: draws synthetic twins of the joint table.
#[pyclass(name = "Posterior", module = "capelab.vertical_vi", frozen)]
pub struct PyPosterior {
    posterior: Posterior,
    seed: Seed,
}

#[pymethods]
impl PyPosterior {
    /// `rows` synthetic records: (header, rows of strings, which columns are numeric). With no
    /// seed the run's own stream "vvi/twin" is used (the CLI's `--synthetic-out`).
    #[pyo3(signature = (rows, seed=None))]
    fn sample(&self, py: Python<'_>, rows: usize, seed: Option<u64>) -> PyResult<TwinRows> {
        if rows == 0 {
            return Err(bad("rows", "the twin needs at least one row"));
        }
        let seed = seed.map_or(self.seed, Seed::Fixed);
        let posterior = &self.posterior;
        detached(py, || {
            let blocks = posterior.sample_twin(rows, &mut seed.rng("vvi/twin"));
            let schema = &posterior.model.schema;
            let table = join(&decode(schema, &blocks));
            let numeric = schema
                .parties
                .iter()
                .flat_map(|p| &p.features)
                .map(|f| matches!(f.kind, FeatureKind::Beta { .. }))
                .collect();
            Ok((table.header, table.rows, numeric))
        })
    }

    /// The posterior's mean and log standard deviation of every variational parameter.
    fn parameters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.posterior.q)
    }
}

/// Fits the mixture model on the parties' columns (`train`, one CSV text per party in schema
/// order) and reports the test NLL on `test` (or on the split of `train` by `split_seed` and
/// `test_fraction` when `test` is None), ε per player, the cost per step and the posterior.
#[pyfunction]
#[pyo3(signature = (schema_json, train, test, settings, progress=None))]
pub fn vvi_fit<'py>(
    py: Python<'py>,
    schema_json: &str,
    train: Vec<String>,
    test: Option<Vec<String>>,
    settings: FitSettings,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let s = &settings;
    let schema = schema(schema_json)?;
    let mode = match s.mode.as_str() {
        "mpc" => Mode::Mpc,
        "fixed" => Mode::Fixed,
        "plain" => Mode::Plain,
        "nonpartitioned" => Mode::NonPartitioned,
        other => {
            return Err(bad(
                "mode",
                format!("'{other}' is not mpc, fixed, plain or nonpartitioned"),
            ));
        }
    };
    let (train, test) = match test {
        Some(test) => (blocks("data", &schema, &train)?, blocks("test", &schema, &test)?),
        None => {
            let all = blocks("data", &schema, &train)?;
            let rows = all[0].rows;
            if rows < 2 {
                return Err(bad(
                    "data",
                    format!("{rows} rows cannot be split into train and test"),
                ));
            }
            let split = train_test_split(s.split_seed, rows, s.test_fraction);
            if split.train.is_empty() || split.test.is_empty() {
                return Err(bad(
                    "test_fraction",
                    format!("{} leaves an empty train or test set of {rows} rows", s.test_fraction),
                ));
            }
            (
                all.iter().map(|b| select_rows(b, &split.train)).collect(),
                all.iter().map(|b| select_rows(b, &split.test)).collect(),
            )
        }
    };
    let records = train[0].rows;
    if s.batch == 0 || s.batch > records {
        return Err(bad(
            "batch",
            format!("need 1 ≤ B ≤ N = {records} training rows, got {}", s.batch),
        ));
    }
    let sampling = match s.sampling.as_str() {
        "poisson" => Sampling::Poisson { rate: s.batch as f64 / records as f64 },
        "fixed" => Sampling::Fixed { size: s.batch },
        other => return Err(bad("sampling", format!("'{other}' is not 'poisson' or 'fixed'"))),
    };
    let seed = seed_of(s.seed);
    let config = RunConfig {
        components: s.components,
        sigma: s.sigma,
        clip: s.clip,
        sampling,
        learning_rate: s.learning_rate,
        eval_every: s.eval_every,
        delta: s.delta,
        ..RunConfig::paper(mode, records, s.steps, seed)
    };
    let mut progress = Progress::new(progress);
    let (result, progress) = detached(py, move || {
        let mut on = |p: &RunProgress| progress.report(p.step as u64, p.steps as u64);
        let result = run(&schema, &train, &test, &config, &mut on).map_err(mode_error)?;
        Ok(((result, schema, config), progress))
    })?;
    progress.finish()?;
    let (result, schema, config) = result;
    let replace_one = match (&result.privacy_run, s.sampling.as_str()) {
        (Some(r), "fixed") => {
            Some(replace_one_fixed_batches(r, config.delta).map_err(|e| bad("sampling", e))?)
        }
        _ => None,
    };
    let privacy: Vec<_> = result
        .privacy
        .iter()
        .flatten()
        .map(|g| {
            let pld_best = g.epsilon.pld <= g.epsilon.rdp.epsilon;
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
                "accountant": if pld_best { "PLD" } else { "RDP" },
                "epsilon_rdp": g.epsilon.rdp.epsilon,
                "epsilon_pld": g.epsilon.pld,
            })
        })
        .collect();
    let summary = json!({
        "mode": config.mode.name(),
        "parties": schema.parties.iter().map(|p| json!({
            "name": p.name,
            "columns": p.features.iter().map(|f| f.name.clone()).collect::<Vec<_>>(),
            "parameters_per_component": p.parameters(),
        })).collect::<Vec<_>>(),
        "components": config.components,
        "gradient_dimension": schema.zeta_gradient_len(config.components),
        "sigma": config.sigma,
        "clip": config.clip,
        "sampling": config.sampling,
        "batch": s.batch,
        "steps": config.steps,
        "learning_rate": config.learning_rate,
        "seed": s.seed,
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
        },
        "privacy": privacy,
        "privacy_replace_one_fixed_batches": replace_one,
    });
    let out = to_py(py, &summary)?;
    let posterior = PyPosterior { posterior: result.posterior, seed };
    out.cast::<PyDict>()?.set_item("posterior", Py::new(py, posterior)?)?;
    Ok(out)
}
