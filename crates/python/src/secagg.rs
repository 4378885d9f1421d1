//! `capelab.secagg`: one SecureAgg instance (Bonawitz et al.; SecAgg+ on a Harary graph) among
//! in-process sites with scripted dropouts, on the core's deterministic simulator
//! (`secagg::sim`): the same roles and messages as the browser and the CLI, virtual time, and what
//! every participant sent. Sites are numbered 0..S in Python.

use capelab_core::fixed::FixedPoint;
use capelab_core::secagg::sim::{DropMode, DropPoint, ScriptedDropout, Sim, SimConfig};
use capelab_core::secagg::{ConfigError, Encoding, Graph, SiteInput, choose_harary};
use numpy::PyReadonlyArray2;
use pyo3::prelude::*;
use serde_json::json;

use crate::common::{bad, detached, rows, to_py};

fn config_error(e: ConfigError) -> PyErr {
    let argument = match &e {
        ConfigError::TooFewSites { .. } => "inputs",
        ConfigError::ThresholdAboveSites { .. }
        | ConfigError::ThresholdAtMostHalf { .. }
        | ConfigError::ThresholdAboveNeighbourhood { .. }
        | ConfigError::ThresholdAtMostHalfNeighbourhood { .. } => "threshold",
        ConfigError::HararyDegreeOutOfRange { .. } | ConfigError::HararyDegreeOdd { .. } => {
            "harary_k"
        }
        ConfigError::GraphParameter { .. } | ConfigError::NoSparseGraph { .. } => "sites",
        ConfigError::FixedPoint(_) => "bound",
        _ => "inputs",
    };
    bad(argument, &e)
}

fn drop_point(name: &str) -> PyResult<DropPoint> {
    Ok(match name {
        "before_advertise" => DropPoint::BeforeAdvertise,
        "after_advertise" => DropPoint::AfterAdvertise,
        "after_share_keys" => DropPoint::AfterShareKeys,
        "after_masked_input" => DropPoint::AfterMaskedInput,
        "during_unmask" => DropPoint::DuringUnmask,
        "after_unmask" => DropPoint::AfterUnmask,
        other => {
            return Err(bad(
                "dropouts",
                format!(
                    "'{other}' is not a drop point: before_advertise, after_advertise, \
                     after_share_keys, after_masked_input, during_unmask, after_unmask"
                ),
            ));
        }
    })
}

fn drop_mode(name: &str) -> PyResult<DropMode> {
    match name {
        "disconnect" => Ok(DropMode::Disconnect),
        "silent" => Ok(DropMode::Silent),
        other => Err(bad("dropouts", format!("'{other}' is not 'disconnect' or 'silent'"))),
    }
}

/// Runs one instance summing the rows of `inputs` (site s holds row s), encoded in fixed point
/// with `frac_bits` fractional bits under the public bound |x| ≤ `bound`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn secagg_simulate<'py>(
    py: Python<'py>,
    inputs: PyReadonlyArray2<'py, f64>,
    bound: f64,
    frac_bits: u32,
    seed: u64,
    threshold: Option<usize>,
    harary_k: Option<usize>,
    graph_seed: u64,
    dropouts: Vec<(usize, String, String)>,
    round_timeout_ms: u64,
) -> PyResult<Bound<'py, PyAny>> {
    let inputs = rows("inputs", &inputs)?;
    let sites = inputs.len();
    let format = FixedPoint::new(frac_bits, bound).map_err(|e| match e {
        capelab_core::fixed::FixedPointError::FracBits { .. } => bad("frac_bits", e),
        _ => bad("bound", e),
    })?;
    format.check_capacity(sites).map_err(|e| bad("bound", e))?;
    for (s, row) in inputs.iter().enumerate() {
        if let Some((j, v)) = row.iter().enumerate().find(|(_, v)| v.abs() > bound) {
            return Err(bad("inputs", format!("site {s}, value {j} is {v}, beyond bound {bound}")));
        }
    }
    let mut config = SimConfig::new(seed, Encoding::Fixed(format));
    config.threshold = threshold;
    config.round_timeout_ms = round_timeout_ms;
    if let Some(k) = harary_k {
        config.graph = Graph::Harary { k, seed: graph_seed };
    }
    for (site, point, mode) in &dropouts {
        if *site >= sites {
            return Err(bad(
                "dropouts",
                format!("site {site} does not exist (sites are 0..{sites})"),
            ));
        }
        if config.dropouts.iter().any(|d| d.site == *site) {
            return Err(bad("dropouts", format!("site {site} is scripted to drop twice")));
        }
        config.dropouts.push(ScriptedDropout {
            site: *site,
            at: drop_point(point)?,
            mode: drop_mode(mode)?,
        });
    }
    let site_inputs: Vec<SiteInput> =
        inputs.into_iter().map(|values| SiteInput::Real { values, format }).collect();
    let out = detached(py, move || {
        let mut sim = Sim::new(config, site_inputs).map_err(config_error)?;
        let report = sim.run();
        let ids: Vec<u32> = (0..sim.sites()).map(|i| sim.site_id(i)).collect();
        let index = |id: &u32| ids.iter().position(|x| x == id);
        let (sum, error, survivors, dropped) = match &report.outcome {
            Some(Ok(agg)) => (
                agg.decoded.clone(),
                None,
                agg.survivors.iter().filter_map(index).collect::<Vec<_>>(),
                agg.dropouts
                    .iter()
                    .map(
                        |d| json!({ "site": index(&d.site), "phase": d.phase, "reason": d.reason }),
                    )
                    .collect::<Vec<_>>(),
            ),
            Some(Err(e)) => (None, Some(e.to_string()), vec![], vec![]),
            None => {
                (None, Some("the round stalled (a bug in the simulator)".into()), vec![], vec![])
            }
        };
        let site_reports: Vec<_> = report
            .sites
            .iter()
            .enumerate()
            .map(|(i, s)| {
                json!({
                    "site": i,
                    "phase": format!("{:?}", s.phase),
                    "vanished": s.vanished.map(|p| format!("{p:?}")),
                    "included": survivors.contains(&i),
                    "messages_sent": s.messages_sent,
                    "bytes_sent": s.bytes_sent,
                    "refusals": s.refusals,
                    "quantised_input": sim.site(i).quantised_input(),
                })
            })
            .collect();
        let site_bytes: usize = report.sites.iter().map(|s| s.bytes_sent).sum();
        let site_messages: usize = report.sites.iter().map(|s| s.messages_sent).sum();
        Ok(json!({
            "sum": sum,
            "error": error,
            "survivors": survivors,
            "dropouts": dropped,
            "sites": site_reports,
            "threshold": sim.aggregator().params().threshold,
            "messages": report.messages,
            "bytes": report.bytes,
            "aggregator_messages_sent": report.messages - site_messages,
            "aggregator_bytes_sent": report.bytes - site_bytes,
            "finished_at_ms": report.finished_at_ms,
        }))
    })?;
    to_py(py, &out)
}

/// SecAgg+'s (k, t) for `sites` sites tolerating a `dropout` and a `corruption` fraction with
/// failure probability at most 2^−`sigma` (`secagg::choose_harary`).
#[pyfunction]
pub fn secagg_choose_harary<'py>(
    py: Python<'py>,
    sites: usize,
    dropout: f64,
    corruption: f64,
    sigma: f64,
) -> PyResult<Bound<'py, PyAny>> {
    let choice = choose_harary(sites, dropout, corruption, sigma).map_err(|e| match &e {
        ConfigError::GraphParameter { what, .. }
            if what.contains("dropout") || what.contains("δ + γ") =>
        {
            bad("dropout_fraction", &e)
        }
        ConfigError::GraphParameter { what, .. } if what.contains("corrupt") => {
            bad("corruption_fraction", &e)
        }
        ConfigError::GraphParameter { what, .. } if what.contains("σ") => bad("sigma", &e),
        _ => config_error(e),
    })?;
    to_py(py, &choice)
}
