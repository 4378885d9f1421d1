//! What every binding shares: errors that name the argument, the GIL released around long work
//! with a progress callback that re-acquires it, panics kept from reaching Python, seeds, and the
//! conversions between numpy arrays and nalgebra matrices.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use capelab_core::rng::Seed;
use nalgebra::DMatrix;
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray2};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use serde::Serialize;

/// `ValueError("{argument}: {message}")`: every refusal names the argument at fault.
pub fn bad(argument: &str, message: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("{argument}: {message}"))
}

/// Runs `work` without the GIL (other Python threads run meanwhile) and turns a panic into a
/// `RuntimeError` instead of PyO3's `PanicException`: arguments are checked before any work, so a
/// panic here is a bug, and it must not escape `except Exception`.
pub fn detached<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> Result<T, PyErr> + Send,
) -> PyResult<T> {
    py.detach(|| match catch_unwind(AssertUnwindSafe(work)) {
        Ok(result) => result,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(PyRuntimeError::new_err(format!(
                "capelab internal error (a bug: please report it with the call that caused it): \
                 {what}"
            )))
        }
    })
}

/// A Python callable `progress(done, total)`, called at most every [`Progress::EVERY`] and at the
/// end, from the thread doing the work with the GIL re-acquired for the call only. An exception
/// it raises stops further calls and is raised once the work has finished.
pub struct Progress {
    callback: Option<Py<PyAny>>,
    last: Option<Instant>,
    error: Option<PyErr>,
}

impl Progress {
    /// How often the callback may run: often enough for a live bar, rarely enough to cost nothing.
    pub const EVERY: Duration = Duration::from_millis(100);

    pub fn new(callback: Option<Py<PyAny>>) -> Self {
        Progress { callback, last: None, error: None }
    }

    /// Reports `done` of `total`; throttled, except that `done == total` is always reported.
    pub fn report(&mut self, done: u64, total: u64) {
        let Some(callback) = &self.callback else { return };
        let now = Instant::now();
        if done < total && self.last.is_some_and(|t| now.duration_since(t) < Self::EVERY) {
            return;
        }
        self.last = Some(now);
        let result = Python::attach(|py| callback.call1(py, (done, total)).map(drop));
        if let Err(e) = result {
            self.error = Some(e);
            self.callback = None;
        }
    }

    /// The callback's exception, if it raised one.
    pub fn finish(self) -> PyResult<()> {
        self.error.map_or(Ok(()), Err)
    }
}

/// The run's seed: `Some(s)` reproduces (and is labelled so by the caller), `None` draws every
/// random value from the operating system.
pub fn seed_of(seed: Option<u64>) -> Seed {
    seed.map_or(Seed::Os, Seed::Fixed)
}

/// A serde value as Python objects (dicts, lists, floats); the shapes are the CLI's JSON shapes.
pub fn to_py<'py>(py: Python<'py>, value: &impl Serialize) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, value)
        .map_err(|e| PyRuntimeError::new_err(format!("could not convert a result: {e}")))
}

/// A C-contiguous float64 matrix (the Python layer converts and checks first) into nalgebra.
pub fn matrix(argument: &str, array: &PyReadonlyArray2<'_, f64>) -> PyResult<DMatrix<f64>> {
    let view = array.as_array();
    let (rows, cols) = view.dim();
    if view.iter().any(|v| !v.is_finite()) {
        return Err(bad(argument, "contains NaN or infinite values"));
    }
    Ok(DMatrix::from_fn(rows, cols, |i, j| view[[i, j]]))
}

/// The rows of a float64 matrix.
pub fn rows(argument: &str, array: &PyReadonlyArray2<'_, f64>) -> PyResult<Vec<Vec<f64>>> {
    let view = array.as_array();
    if view.iter().any(|v| !v.is_finite()) {
        return Err(bad(argument, "contains NaN or infinite values"));
    }
    Ok(view.rows().into_iter().map(|r| r.to_vec()).collect())
}

/// A nalgebra matrix as a new float64 numpy array of the same shape.
pub fn to_numpy<'py>(py: Python<'py>, m: &DMatrix<f64>) -> Bound<'py, PyArray2<f64>> {
    let (rows, cols) = m.shape();
    let flat: Vec<f64> = (0..rows).flat_map(|i| (0..cols).map(move |j| m[(i, j)])).collect();
    PyArray1::from_vec(py, flat)
        .reshape([rows, cols])
        .expect("rows × cols elements reshape to (rows, cols)")
}
