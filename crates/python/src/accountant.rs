//! `capelab.accountant`: ε and δ of Gaussian and Poisson-subsampled Gaussian releases under RDP
//! and PLD, calibration to a target, and `cape account`'s whole comparison
//! (`capelab_core::accountant`).

use capelab_core::accountant::pld::{calibrate_noise_multiplier, calibrate_noise_multiplier_rdp};
use capelab_core::accountant::{
    AccountantError, ComparisonRequest, Conversion, Event, Mechanism, PldAccountant, PldError,
    PrivacyAccountant, RdpAccountant,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::Serialize;

use crate::common::{bad, detached, to_py};

/// The Python argument a core accounting error is about.
pub fn argument_of(e: &AccountantError) -> &'static str {
    match e {
        AccountantError::NoiseMultiplier(_) | AccountantError::LaplaceScale(_) => {
            "noise_multiplier"
        }
        AccountantError::SamplingRate(_) => "sampling_rate",
        AccountantError::CollusionFactor(_) => "collusion_factor",
        AccountantError::ZeroCount => "compositions",
        AccountantError::Delta(_) | AccountantError::ApproximateDelta(_) => "delta",
        AccountantError::Epsilon(_) | AccountantError::ApproximateEpsilon(_) => "epsilon",
        AccountantError::TargetEpsilon(_) => "target_epsilon",
        AccountantError::Order(_)
        | AccountantError::NoOrders
        | AccountantError::CurveLength { .. } => "orders",
    }
}

pub fn pld_error(e: PldError) -> PyErr {
    match &e {
        PldError::Accountant(a) => bad(argument_of(a), &e),
        PldError::Interval(_) | PldError::GridTooLarge { .. } => bad("pld_interval", &e),
    }
}

fn event(
    noise_multiplier: f64,
    compositions: u64,
    sampling_rate: Option<f64>,
    collusion_factor: Option<f64>,
) -> PyResult<Event> {
    let mechanism = match sampling_rate {
        None => Mechanism::Gaussian { noise_multiplier },
        Some(q) => Mechanism::PoissonSampledGaussian { noise_multiplier, sampling_rate: q },
    };
    Event::with_collusion_factor("run", mechanism, compositions, collusion_factor.unwrap_or(1.0))
        .map_err(|e| bad(argument_of(&e), &e))
}

/// One accountant's answer, with the name of the accountant that made it.
#[derive(Serialize)]
struct Answer {
    accountant: &'static str,
    epsilon: Option<f64>,
    delta: Option<f64>,
    /// RDP: the optimal order α; PLD: `None`.
    order: Option<f64>,
    /// RDP: whether α was optimised over all real orders; PLD: whether the composition was exact.
    exact: bool,
    /// PLD: the grid step (`None` when exact).
    interval: Option<f64>,
}

/// ε at `delta` (or δ at `epsilon`) of `compositions` releases under one accountant.
#[pyfunction]
#[pyo3(signature = (noise_multiplier, compositions, sampling_rate, collusion_factor, accountant, pld_interval, delta=None, epsilon=None))]
#[allow(clippy::too_many_arguments)]
pub fn account_one<'py>(
    py: Python<'py>,
    noise_multiplier: f64,
    compositions: u64,
    sampling_rate: Option<f64>,
    collusion_factor: Option<f64>,
    accountant: &str,
    pld_interval: f64,
    delta: Option<f64>,
    epsilon: Option<f64>,
) -> PyResult<Bound<'py, PyAny>> {
    let event = event(noise_multiplier, compositions, sampling_rate, collusion_factor)?;
    let answer = detached(py, || match accountant {
        "pld" => {
            let mut pld = PldAccountant::with_interval(pld_interval).map_err(pld_error)?;
            pld.compose(&event);
            Ok(match (delta, epsilon) {
                (Some(delta), _) => {
                    let e = pld.epsilon(delta).map_err(pld_error)?;
                    Answer {
                        accountant: "PLD",
                        epsilon: Some(e.epsilon),
                        delta: Some(delta),
                        order: None,
                        exact: e.interval.is_none(),
                        interval: e.interval,
                    }
                }
                (None, Some(eps)) => {
                    let d = pld.delta(eps).map_err(pld_error)?;
                    let exact = sampling_rate.is_none();
                    Answer {
                        accountant: "PLD",
                        epsilon: Some(eps),
                        delta: Some(d),
                        order: None,
                        exact,
                        interval: (!exact).then_some(pld_interval),
                    }
                }
                (None, None) => return Err(bad("delta", "give delta (for ε) or epsilon (for δ)")),
            })
        }
        "rdp" => {
            let mut rdp = RdpAccountant::new(Conversion::Improved);
            rdp.compose(&event);
            Ok(match (delta, epsilon) {
                (Some(delta), _) => {
                    let e = rdp.epsilon(delta).map_err(|e| bad(argument_of(&e), &e))?;
                    Answer {
                        accountant: "RDP",
                        epsilon: Some(e.epsilon),
                        delta: Some(delta),
                        order: Some(e.order),
                        exact: e.exact,
                        interval: None,
                    }
                }
                (None, Some(eps)) => {
                    let d = rdp.delta(eps).map_err(|e| bad(argument_of(&e), &e))?;
                    Answer {
                        accountant: "RDP",
                        epsilon: Some(eps),
                        delta: Some(d),
                        order: None,
                        exact: false,
                        interval: None,
                    }
                }
                (None, None) => return Err(bad("delta", "give delta (for ε) or epsilon (for δ)")),
            })
        }
        other => Err(bad("accountant", format!("'{other}' is not one of 'pld', 'rdp'"))),
    })?;
    to_py(py, &answer)
}

/// The smallest noise multiplier meeting `target_epsilon` at `delta` under one accountant.
#[pyfunction]
pub fn calibrate<'py>(
    py: Python<'py>,
    target_epsilon: f64,
    delta: f64,
    compositions: u64,
    sampling_rate: Option<f64>,
    accountant: &str,
    pld_interval: f64,
) -> PyResult<Bound<'py, PyAny>> {
    let q = sampling_rate.unwrap_or(1.0);
    let (name, calibration) = detached(py, || match accountant {
        "pld" => Ok((
            "PLD",
            calibrate_noise_multiplier(target_epsilon, delta, compositions, q, pld_interval)
                .map_err(pld_error)?,
        )),
        "rdp" => Ok((
            "RDP",
            calibrate_noise_multiplier_rdp(target_epsilon, delta, compositions, q)
                .map_err(pld_error)?,
        )),
        other => Err(bad("accountant", format!("'{other}' is not one of 'pld', 'rdp'"))),
    })?;
    let out = to_py(py, &calibration)?;
    out.cast::<PyDict>()?.set_item("accountant", name)?;
    Ok(out)
}

/// `cape account --json`: every RDP-family number and the PLD's, for both views, and an optional
/// calibration. `accountant` is "rdp", "pld" or "all".
#[pyfunction]
#[pyo3(signature = (noise_multiplier, compositions, delta, sampling_rate, collusion_factor, orders, curve, accountant, target_epsilon, pld_interval))]
#[allow(clippy::too_many_arguments)]
pub fn compare<'py>(
    py: Python<'py>,
    noise_multiplier: f64,
    compositions: u64,
    delta: f64,
    sampling_rate: Option<f64>,
    collusion_factor: Option<f64>,
    orders: Option<Vec<f64>>,
    curve: bool,
    accountant: &str,
    target_epsilon: Option<f64>,
    pld_interval: f64,
) -> PyResult<Bound<'py, PyAny>> {
    let (rdp_on, pld_on) = match accountant {
        "rdp" => (true, false),
        "pld" => (false, true),
        "all" => (true, true),
        other => {
            return Err(bad("accountant", format!("'{other}' is not one of 'rdp', 'pld', 'all'")));
        }
    };
    let request = ComparisonRequest {
        noise_multiplier,
        compositions,
        delta,
        sampling_rate,
        collusion_factor,
        orders,
        include_curve: curve,
    };
    let out = detached(py, || {
        let rdp =
            rdp_on.then(|| request.run()).transpose().map_err(|e| bad(argument_of(&e), &e))?;
        let pld = pld_on.then(|| request.pld(pld_interval)).transpose().map_err(pld_error)?;
        let q = sampling_rate.unwrap_or(1.0);
        let calibration = match target_epsilon {
            None => None,
            Some(target) => {
                let pld = pld_on
                    .then(|| {
                        calibrate_noise_multiplier(target, delta, compositions, q, pld_interval)
                    })
                    .transpose()
                    .map_err(pld_error)?;
                let rdp = rdp_on
                    .then(|| calibrate_noise_multiplier_rdp(target, delta, compositions, q))
                    .transpose()
                    .map_err(pld_error)?;
                let noise_saved = match (&pld, &rdp) {
                    (Some(p), Some(r)) => Some(1.0 - p.noise_multiplier / r.noise_multiplier),
                    _ => None,
                };
                Some(serde_json::json!({
                    "target_epsilon": target, "pld": pld, "rdp": rdp, "noise_saved": noise_saved,
                }))
            }
        };
        // `cape account --json`'s shape: the RDP report's keys at the top level, then `pld`.
        let mut out = match serde_json::to_value(&rdp) {
            Ok(serde_json::Value::Object(map)) => map,
            _ => serde_json::Map::new(),
        };
        out.insert("pld".into(), serde_json::to_value(&pld).unwrap_or_default());
        out.insert("calibration".into(), calibration.unwrap_or(serde_json::Value::Null));
        Ok(serde_json::Value::Object(out))
    })?;
    to_py(py, &out)
}
