//! `capelab.nn`: a two-layer network trained by distributed gradient descent with CAPE, the
//! conventional scheme or without privacy, every iteration accounted (`capelab_core::nn`), as
//! `cape nn` runs it (crates/cli/src/nn/run.rs: `--target-epsilon` calibrates ε per iteration
//! under the analytic Gaussian calibration).

use capelab_core::cape::privacy::Collusion;
use capelab_core::nn::{NnConfig, NnError, NnMechanism, epsilon_per_iteration_for_target, train};
use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::common::{bad, detached, to_py};
use crate::fm::{calibration, dataset};

/// The settings of one training run, as `cape nn`'s flags.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct TrainSettings {
    mechanism: String,
    epsilon: f64,
    target_epsilon: Option<f64>,
    delta: f64,
    sites: usize,
    colluders: Option<usize>,
    hidden: usize,
    iterations: usize,
    learning_rate: f64,
    clip: f64,
    calibration: String,
    seed: u64,
}

fn nn_error(e: NnError) -> PyErr {
    let argument = match &e {
        NnError::Epsilon(_) => "epsilon",
        NnError::Clip(_) => "clip",
        NnError::Zero { what } if what.contains("hidden") => "hidden",
        NnError::Zero { .. } => "iterations",
        NnError::Sites(_) => "sites",
        NnError::Label { .. } => "y_train",
        NnError::Calibration(_) => "delta",
        NnError::Privacy(_) => "colluders",
        NnError::Round { .. } | NnError::Dataset(_) => "x_train",
    };
    bad(argument, e)
}

/// Trains on (x_train, y_train) (rows with ‖x‖ ≤ 1, labels 0/1) and tests on (x_test, y_test).
#[pyfunction]
pub fn nn_train<'py>(
    py: Python<'py>,
    x_train: PyReadonlyArray2<'py, f64>,
    y_train: PyReadonlyArray1<'py, f64>,
    x_test: PyReadonlyArray2<'py, f64>,
    y_test: PyReadonlyArray1<'py, f64>,
    settings: TrainSettings,
) -> PyResult<Bound<'py, PyAny>> {
    let s = &settings;
    let train_set = dataset("x_train", &x_train, "y_train", &y_train)?;
    let test_set = dataset("x_test", &x_test, "y_test", &y_test)?;
    if train_set.features() != test_set.features() {
        return Err(bad(
            "x_test",
            format!("{} features, x_train has {}", test_set.features(), train_set.features()),
        ));
    }
    let mechanism = NnMechanism::from_name(&s.mechanism).ok_or_else(|| {
        bad("mechanism", format!("'{}' is not cape, conventional or nonprivate", s.mechanism))
    })?;
    let mut epsilon = s.epsilon;
    let mut calibration = calibration(&s.calibration)?;
    if let Some(target) = s.target_epsilon {
        let collusion = match mechanism {
            NnMechanism::NonPrivate => {
                return Err(bad(
                    "target_epsilon",
                    "a non-private run has no guarantee to calibrate",
                ));
            }
            NnMechanism::Conventional => None,
            NnMechanism::Cape => Some(
                match s.colluders {
                    Some(k) => Collusion::new(s.sites, k),
                    None => Collusion::default_for(s.sites),
                }
                .map_err(|e| bad("colluders", e))?,
            ),
        };
        epsilon =
            epsilon_per_iteration_for_target(target, s.delta, s.iterations, collusion.as_ref())
                .map_err(|e| bad("target_epsilon", e))?;
        calibration = capelab_core::fm::Calibration::Analytic;
    }
    let config = NnConfig {
        mechanism,
        epsilon_per_iteration: epsilon,
        delta: s.delta,
        sites: s.sites,
        colluders: s.colluders,
        calibration,
        hidden: s.hidden,
        iterations: s.iterations,
        learning_rate: s.learning_rate,
        clip: s.clip,
        seed: s.seed,
    };
    let report = detached(py, || train(&config, &train_set, &test_set).map_err(nn_error))?;
    let out = to_py(py, &report)?;
    let dict = out.cast::<PyDict>()?;
    dict.set_item("epsilon_per_iteration", epsilon)?;
    Ok(out)
}
