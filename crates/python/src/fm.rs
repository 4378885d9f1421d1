//! `capelab.fm` (and the data helpers `capelab.nn` shares): private linear and logistic regression
//! by the functional mechanism, pooled or across sites with capeFM (`capelab_core::fm`), and the
//! normalisation into FM's domain (`capelab_core::data`).
//!
//! `data_synthetic` and `data_normalise` reproduce the data `cape fm` and `cape nn` load
//! (crates/cli/src/fm/data.rs) from the same core generators and normalisers.

use capelab_core::data::{Bounds, Dataset, Normaliser, TargetKind, synthetic};
use capelab_core::fm::{
    Calibration, Constraint, EigenFloor, FmConfig, FmError, Mechanism, MinimiserConfig, Model,
    evaluate, fit,
};
use nalgebra::DVector;
use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::common::{bad, detached, rows, to_numpy, to_py};

pub fn dataset(
    x_name: &str,
    x: &PyReadonlyArray2<'_, f64>,
    y_name: &str,
    y: &PyReadonlyArray1<'_, f64>,
) -> PyResult<Dataset> {
    let rows = rows(x_name, x)?;
    let y = y.as_array().to_vec();
    if y.iter().any(|v| !v.is_finite()) {
        return Err(bad(y_name, "contains NaN or infinite values"));
    }
    if y.len() != rows.len() {
        return Err(bad(
            y_name,
            format!("{} targets for {} rows of {x_name}", y.len(), rows.len()),
        ));
    }
    Dataset::from_rows(&rows, &y).map_err(|e| bad(x_name, e))
}

fn arrays<'py>(py: Python<'py>, d: &Dataset) -> (Bound<'py, PyAny>, Bound<'py, PyAny>) {
    (to_numpy(py, &d.x).into_any(), PyArray1::from_slice(py, d.y.as_slice()).into_any())
}

fn kind(name: &str) -> PyResult<TargetKind> {
    match name {
        "regression" => Ok(TargetKind::Regression),
        "binary" => Ok(TargetKind::Binary),
        other => Err(bad("task", format!("'{other}' is not 'regression' or 'binary'"))),
    }
}

/// `cape fm`/`cape nn --data synthetic`: `total` generated records, the first `train` of them for
/// training, normalised as the CLI does (regression: already in the domain, with its true w*;
/// binary: two Gaussian classes clipped to their public radius).
#[pyfunction]
pub fn data_synthetic<'py>(
    py: Python<'py>,
    task: &str,
    total: usize,
    train: usize,
    features: usize,
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let kind = kind(task)?;
    if features == 0 || total < 4 || train == 0 || train >= total {
        return Err(bad(
            "samples",
            format!(
                "{total} records with {train} for training and {features} features are too few"
            ),
        ));
    }
    let (train_set, test_set, w_star, description) = detached(py, || {
        let (raw, w_star, normaliser) = match kind {
            TargetKind::Regression => {
                let (data, w) = synthetic::regression(total, features, 0.0, seed);
                (data, Some(w), Normaliser::AlreadyNormalised)
            }
            TargetKind::Binary => {
                let data = synthetic::two_gaussians(total, features, 0.25, seed);
                let radius = synthetic::two_gaussians_radius(features, 0.25);
                (data, None, Normaliser::RowClip { radius, target: None })
            }
        };
        let idx: Vec<usize> = (0..total).collect();
        let (tr, te) = (raw.select(&idx[..train]), raw.select(&idx[train..]));
        let fitted = normaliser.fit(&tr, kind).map_err(|e| bad("samples", e))?;
        let tr = fitted.apply(&tr).map_err(|e| bad("samples", e))?;
        let te = fitted.apply(&te).map_err(|e| bad("samples", e))?;
        Ok((tr, te, w_star, fitted.description.clone()))
    })?;
    let out = PyDict::new(py);
    let (x, y) = arrays(py, &train_set);
    out.set_item("x_train", x)?;
    out.set_item("y_train", y)?;
    let (x, y) = arrays(py, &test_set);
    out.set_item("x_test", x)?;
    out.set_item("y_test", y)?;
    out.set_item("w_star", w_star.map(|w| PyArray1::from_slice(py, w.as_slice())))?;
    out.set_item("normalisation", to_py(py, &description)?)?;
    Ok(out)
}

/// Fits a normaliser on the training set and applies it to both sets: public bounds (private),
/// a row clip, or the papers' data-dependent scaling (not private, reported with a warning).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn data_normalise<'py>(
    py: Python<'py>,
    x_train: PyReadonlyArray2<'py, f64>,
    y_train: PyReadonlyArray1<'py, f64>,
    x_test: PyReadonlyArray2<'py, f64>,
    y_test: PyReadonlyArray1<'py, f64>,
    task: &str,
    feature_bounds: Option<Vec<(f64, f64)>>,
    target_bounds: Option<(f64, f64)>,
    data_dependent: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let kind = kind(task)?;
    let train = dataset("x_train", &x_train, "y_train", &y_train)?;
    let test = dataset("x_test", &x_test, "y_test", &y_test)?;
    if train.features() != test.features() {
        return Err(bad(
            "x_test",
            format!("{} features, x_train has {}", test.features(), train.features()),
        ));
    }
    let normaliser = match (feature_bounds, data_dependent) {
        (Some(_), true) => {
            return Err(bad("bounds", "give either bounds or data_dependent=True, not both"));
        }
        (Some(features), false) => {
            Normaliser::PublicBounds(Bounds { features, target: target_bounds })
        }
        (None, true) => Normaliser::DataDependent,
        (None, false) => {
            return Err(bad(
                "bounds",
                "FM needs public bounds per feature (and for a regression target), or \
                 data_dependent=True (the papers' recipe, not private)",
            ));
        }
    };
    let fitted = normaliser.fit(&train, kind).map_err(|e| bad("bounds", e))?;
    let train = fitted.apply(&train).map_err(|e| bad("x_train", e))?;
    let test = fitted.apply(&test).map_err(|e| bad("x_test", e))?;
    let out = PyDict::new(py);
    let (x, y) = arrays(py, &train);
    out.set_item("x_train", x)?;
    out.set_item("y_train", y)?;
    let (x, y) = arrays(py, &test);
    out.set_item("x_test", x)?;
    out.set_item("y_test", y)?;
    out.set_item("normalisation", to_py(py, &fitted.description)?)?;
    Ok(out)
}

/// The settings of one fit, as `cape fm`'s flags.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct FitSettings {
    model: String,
    mechanism: String,
    epsilon: f64,
    delta: f64,
    sites: usize,
    colluders: Option<usize>,
    calibration: String,
    strict: bool,
    release_constant: bool,
    floor: Option<f64>,
    floor_noise_multiple: f64,
    ridge: f64,
    ball: Option<f64>,
    box_half_width: Option<f64>,
    output_radius: f64,
    seed: u64,
}

fn model(name: &str) -> PyResult<Model> {
    match name {
        "linear" => Ok(Model::Linear),
        "logistic" => Ok(Model::Logistic),
        other => Err(bad("model", format!("'{other}' is not 'linear' or 'logistic'"))),
    }
}

pub fn calibration(name: &str) -> PyResult<Calibration> {
    match name {
        "classical-analytic" => Ok(Calibration::ClassicalThenAnalytic),
        "classical-paper" => Ok(Calibration::ClassicalThenPaper),
        "analytic" => Ok(Calibration::Analytic),
        other => Err(bad(
            "calibration",
            format!("'{other}' is not classical-analytic, classical-paper or analytic"),
        )),
    }
}

fn fm_error(e: FmError) -> PyErr {
    let argument = match &e {
        FmError::Epsilon(_) => "epsilon",
        FmError::Delta(_) => "delta",
        FmError::OutsideDomain { .. } => "x",
        _ => "x",
    };
    bad(argument, e)
}

/// Fits ŵ on (x, y), which must lie in FM's domain (‖x_n‖ ≤ 1; y in [−1, 1] or {0, 1}).
#[pyfunction]
pub fn fm_fit<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    settings: FitSettings,
) -> PyResult<Bound<'py, PyAny>> {
    let s = &settings;
    let data = dataset("x", &x, "y", &y)?;
    let mechanism = Mechanism::from_name(&s.mechanism).ok_or_else(|| {
        bad(
            "mechanism",
            format!(
                "'{}' is not gaussian, laplace, relaxed, output, cape, conventional, local or \
                 nonprivate",
                s.mechanism
            ),
        )
    })?;
    let config = FmConfig {
        model: model(&s.model)?,
        mechanism,
        epsilon: s.epsilon,
        delta: s.delta,
        sites: s.sites,
        colluders: s.colluders,
        calibration: calibration(&s.calibration)?,
        strict: s.strict,
        release_constant: s.release_constant,
        minimiser: MinimiserConfig {
            floor: match s.floor {
                Some(f) => EigenFloor::Absolute(f),
                None => EigenFloor::NoiseScaled(s.floor_noise_multiple),
            },
            ridge: s.ridge,
            constraint: match (s.ball, s.box_half_width) {
                (Some(radius), _) => Constraint::Ball { radius },
                (None, Some(half_width)) => Constraint::Box { half_width },
                (None, None) => Constraint::None,
            },
        },
        output_radius: s.output_radius,
        seed: s.seed,
    };
    let result = detached(py, || fit(&config, &data).map_err(fm_error))?;
    to_py(py, &result)
}

/// The metrics of ŵ: test MSE (linear) or accuracy (logistic), training loss, and ‖w* − ŵ‖/D.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn fm_evaluate<'py>(
    py: Python<'py>,
    model_name: &str,
    w: PyReadonlyArray1<'py, f64>,
    x_train: PyReadonlyArray2<'py, f64>,
    y_train: PyReadonlyArray1<'py, f64>,
    x_test: PyReadonlyArray2<'py, f64>,
    y_test: PyReadonlyArray1<'py, f64>,
    w_star: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Bound<'py, PyAny>> {
    let model = model(model_name)?;
    let w = DVector::from_vec(w.as_array().to_vec());
    let train = dataset("x_train", &x_train, "y_train", &y_train)?;
    let test = dataset("x_test", &x_test, "y_test", &y_test)?;
    for (name, d) in [("x_train", &train), ("x_test", &test)] {
        if d.features() != w.len() {
            return Err(bad(name, format!("{} features, w has {}", d.features(), w.len())));
        }
    }
    let w_star = w_star.map(|v| DVector::from_vec(v.as_array().to_vec()));
    if let Some(ws) = &w_star
        && ws.len() != w.len()
    {
        return Err(bad("w_star", format!("{} entries, w has {}", ws.len(), w.len())));
    }
    let e = evaluate(model, &w, &train, &test, w_star.as_ref());
    to_py(py, &e)
}
