//! `capelab.accountant.Ledger`: a site's privacy ledger (`capelab_core::accountant::ledger`),
//! read from and written to the browser's JSON, refusing a release over budget before it is made.

use std::time::{SystemTime, UNIX_EPOCH};

use capelab_core::accountant::ledger::{LedgerError, Preview, Spend};
use capelab_core::accountant::{ApproximateEvent, Budget, Event, Ledger, Mechanism, Release};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

use crate::accountant::{argument_of, pld_error};
use crate::common::{bad, detached, to_py};

create_exception!(
    _capelab,
    InsufficientBudget,
    PyException,
    "A release would take a ledger over its budget: nothing was recorded (the message says what \
     it would spend and what is left)."
);

fn ledger_error(e: LedgerError) -> PyErr {
    match &e {
        LedgerError::InsufficientBudget { .. } => InsufficientBudget::new_err(e.to_string()),
        LedgerError::BudgetEpsilon(_) | LedgerError::BudgetBelowSpend { .. } => bad("epsilon", &e),
        LedgerError::TimeWentBackwards { .. } => bad("time_ms", &e),
        LedgerError::EmptySite => bad("site", &e),
        LedgerError::Accountant(a) => bad(argument_of(a), &e),
        LedgerError::Pld(p) => pld_error(p.clone()),
        LedgerError::Malformed(_)
        | LedgerError::UnsupportedVersion { .. }
        | LedgerError::Inconsistent(_)
        | LedgerError::SiteMismatch { .. } => bad("json", &e),
    }
}

/// Milliseconds since the epoch: the ledger's clock when the caller gives none.
fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// A site's privacy ledger: every release, the running total (the tighter of RDP and PLD, and
/// which one it is), and the budget. The JSON is the browser's (`to_json` / `from_json`).
#[pyclass(name = "Ledger", module = "capelab.accountant")]
pub struct PyLedger {
    inner: Ledger,
}

impl PyLedger {
    /// The caller's time, or now (never before the last release, should the clock step back).
    fn time(&self, time_ms: Option<u64>) -> u64 {
        time_ms
            .unwrap_or_else(|| now_ms().max(self.inner.entries().last().map_or(0, |e| e.time_ms)))
    }
}

fn gaussian(
    label: &str,
    noise_multiplier: f64,
    count: u64,
    sampling_rate: Option<f64>,
    collusion_factor: f64,
) -> PyResult<Event> {
    let mechanism = match sampling_rate {
        None => Mechanism::Gaussian { noise_multiplier },
        Some(q) => Mechanism::PoissonSampledGaussian { noise_multiplier, sampling_rate: q },
    };
    Event::with_collusion_factor(label, mechanism, count, collusion_factor).map_err(|e| {
        bad(
            if matches!(e, capelab_core::accountant::AccountantError::ZeroCount) {
                "count"
            } else {
                argument_of(&e)
            },
            &e,
        )
    })
}

fn spend_dict<'py>(py: Python<'py>, s: &Spend) -> PyResult<Bound<'py, PyAny>> {
    to_py(py, s)
}

#[pymethods]
impl PyLedger {
    /// A new, empty ledger for `site` with a budget of `epsilon` at `delta`.
    #[new]
    fn new(site: &str, epsilon: f64, delta: f64) -> PyResult<Self> {
        let budget = Budget::new(epsilon, delta).map_err(|e| match &e {
            LedgerError::Accountant(_) => bad("delta", &e),
            _ => bad("epsilon", &e),
        })?;
        Ok(PyLedger { inner: Ledger::new(site, budget).map_err(ledger_error)? })
    }

    /// Reads a ledger from the browser's JSON, replaying and checking every release.
    #[staticmethod]
    fn from_json(py: Python<'_>, json: &str) -> PyResult<Self> {
        let inner = detached(py, || Ledger::from_json(json).map_err(ledger_error))?;
        Ok(PyLedger { inner })
    }

    /// The ledger as the browser's JSON (format version 3).
    fn to_json(&self) -> String {
        self.inner.to_json()
    }

    #[getter]
    fn site(&self) -> &str {
        self.inner.site()
    }

    /// (ε, δ) of the budget.
    #[getter]
    fn budget(&self) -> (f64, f64) {
        let b = self.inner.budget();
        (b.epsilon, b.delta)
    }

    /// ε spent so far at the budget's δ: the tighter of RDP and PLD.
    #[getter]
    fn spent(&self) -> f64 {
        self.inner.spent()
    }

    /// Budget ε minus spent ε.
    #[getter]
    fn remaining(&self) -> f64 {
        self.inner.remaining()
    }

    /// The total under both accountants and which one is charged ("rdp" or "pld").
    fn spend<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        spend_dict(py, &self.inner.spend())
    }

    /// Every recorded release with the running totals after it.
    #[getter]
    fn entries<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.entries())
    }

    fn __len__(&self) -> usize {
        self.inner.entries().len()
    }

    fn __repr__(&self) -> String {
        let b = self.inner.budget();
        let s = self.inner.spend();
        format!(
            "Ledger(site={:?}, spent ε = {:.6} by {} of budget ε = {} at δ = {:e}, {} releases)",
            self.inner.site(),
            s.epsilon,
            s.bound,
            b.epsilon,
            b.delta,
            self.inner.entries().len()
        )
    }

    /// Records `count` Gaussian releases (Poisson-subsampled at `sampling_rate` if given) if the
    /// total stays within budget; raises `InsufficientBudget` and records nothing otherwise.
    #[pyo3(signature = (study, noise_multiplier, *, count=1, sampling_rate=None, collusion_factor=1.0, label="", time_ms=None))]
    #[allow(clippy::too_many_arguments)]
    fn spend_gaussian<'py>(
        &mut self,
        py: Python<'py>,
        study: &str,
        noise_multiplier: f64,
        count: u64,
        sampling_rate: Option<f64>,
        collusion_factor: f64,
        label: &str,
        time_ms: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let event = gaussian(label, noise_multiplier, count, sampling_rate, collusion_factor)?;
        let release = Release::new(study, event, self.time(time_ms));
        let inner = &mut self.inner;
        let entry = detached(py, || inner.try_spend(release).cloned().map_err(ledger_error))?;
        to_py(py, &entry)
    }

    /// Records `count` runs of a mechanism known only to be (ε, δ)-DP (e.g. EFPSN), composed by
    /// basic composition; raises `InsufficientBudget` and records nothing if it does not fit.
    #[pyo3(signature = (study, epsilon, delta, *, count=1, label="", time_ms=None))]
    #[allow(clippy::too_many_arguments)]
    fn spend_approximate<'py>(
        &mut self,
        py: Python<'py>,
        study: &str,
        epsilon: f64,
        delta: f64,
        count: u64,
        label: &str,
        time_ms: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let event = ApproximateEvent::new(label, epsilon, delta, count).map_err(|e| {
            bad(
                match e {
                    capelab_core::accountant::AccountantError::ZeroCount => "count",
                    _ => argument_of(&e),
                },
                &e,
            )
        })?;
        let release = Release::new(study, event, self.time(time_ms));
        let inner = &mut self.inner;
        let entry = detached(py, || inner.try_spend(release).cloned().map_err(ledger_error))?;
        to_py(py, &entry)
    }

    /// What `spend_gaussian` would do, without recording anything.
    #[pyo3(signature = (study, noise_multiplier, *, count=1, sampling_rate=None, collusion_factor=1.0, label=""))]
    #[allow(clippy::too_many_arguments)]
    fn preview_gaussian<'py>(
        &self,
        py: Python<'py>,
        study: &str,
        noise_multiplier: f64,
        count: u64,
        sampling_rate: Option<f64>,
        collusion_factor: f64,
        label: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let event = gaussian(label, noise_multiplier, count, sampling_rate, collusion_factor)?;
        let release = Release::new(study, event, self.time(None));
        let inner = &self.inner;
        let preview: Preview = detached(py, || inner.preview(&release).map_err(ledger_error))?;
        to_py(py, &preview)
    }

    /// Sets a new budget; refuses one below what is already spent.
    fn set_budget(&mut self, py: Python<'_>, epsilon: f64, delta: f64) -> PyResult<()> {
        let budget = Budget::new(epsilon, delta).map_err(|e| match &e {
            LedgerError::Accountant(_) => bad("delta", &e),
            _ => bad("epsilon", &e),
        })?;
        let inner = &mut self.inner;
        detached(py, || inner.set_budget(budget).map_err(ledger_error))
    }
}
