//! The figures of `cape fm-sweep`: the test metric per mechanism, and the guaranteed ε against
//! the requested one.

use capelab_core::fm::{Mechanism, Model};

use super::sweep::{Point, ZERO_PREDICTOR};
use crate::plot::{Legend, LineChart, Series};

/// Mean ± one standard error per mechanism; on a log axis a band that would cross 0 is cut at the
/// smallest run instead. The y range is fitted to the FM mechanisms; the non-private fit (MSE ≈ 0
/// on noiseless synthetic data) and output perturbation (orders of magnitude worse, as the papers
/// note) are drawn at the edges when they fall outside, and their legend entries say so.
pub(super) fn metric_chart(
    model: Model,
    axis: &str,
    title: &str,
    mechanisms: &[Mechanism],
    points: &[Point],
) -> LineChart {
    let log_y = model == Model::Linear;
    let outliers = [Mechanism::NonPrivate, Mechanism::OutputPerturbation];
    let core: Vec<f64> = points
        .iter()
        .filter(|p| !outliers.iter().any(|m| m.name() == p.mechanism))
        .flat_map(|p| [p.mean - p.se, p.mean + p.se, p.min])
        .map(|v| plot_value(model, v))
        .filter(|v| v.is_finite() && (!log_y || *v > 0.0))
        .collect();
    let y_range = (log_y && !core.is_empty()).then(|| {
        let lo = core.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = core.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo / 2.0, hi * 2.0)
    });
    let series = mechanisms
        .iter()
        .map(|m| {
            let mine: Vec<&Point> = points.iter().filter(|p| p.mechanism == m.name()).collect();
            let mut label = m.paper_label().to_string();
            if let Some((lo, hi)) = y_range {
                let means: Vec<f64> = mine.iter().map(|p| plot_value(model, p.mean)).collect();
                if means.iter().any(|v| *v < lo) {
                    label.push_str(" (below the axis: at its floor)");
                } else if means.iter().any(|v| *v > hi) {
                    label.push_str(" (above the axis: at its top)");
                }
            }
            Series {
                label,
                points: mine.iter().map(|p| (p.x, plot_value(model, p.mean))).collect(),
                band: mine
                    .iter()
                    .map(|p| {
                        let lo = p.mean - p.se;
                        let lo = if log_y && lo <= 0.0 { p.min } else { lo };
                        (p.x, plot_value(model, lo), plot_value(model, p.mean + p.se))
                    })
                    .collect(),
                dashed: *m == Mechanism::NonPrivate,
                colour: Some(mechanism_colour(*m)),
            }
        })
        .collect::<Vec<_>>();
    let mut series = series;
    let zero: Vec<&Point> = points.iter().filter(|p| p.mechanism == ZERO_PREDICTOR).collect();
    if !zero.is_empty() {
        series.push(Series {
            label: "predict 0 (ŵ = 0)".into(),
            points: zero.iter().map(|p| (p.x, p.mean)).collect(),
            band: vec![],
            dashed: true,
            colour: Some(8),
        });
    }
    let (x_label, x_log) = match axis {
        "epsilon" => {
            ("requested ε, the calibration target (per site for cape / conv / local)", true)
        }
        "samples" => ("training records N", true),
        _ => ("δ", true),
    };
    LineChart {
        title: title.into(),
        x_label: x_label.into(),
        y_label: match model {
            Model::Linear => "test MSE (mean ± 1 s.e.)".into(),
            Model::Logistic => "test accuracy, % (mean ± 1 s.e.)".into(),
        },
        x_log,
        y_log: log_y,
        series,
        y_range,
        legend: if model == Model::Linear { Legend::LowerLeft } else { Legend::LowerRight },
    }
}

fn plot_value(model: Model, v: f64) -> f64 {
    match model {
        Model::Linear => v,
        Model::Logistic => 100.0 * v,
    }
}

/// A fixed palette index per mechanism, so that every figure uses the same colours.
fn mechanism_colour(m: Mechanism) -> usize {
    // Indices into plot's Okabe–Ito palette; the pale yellow (7) goes to output perturbation,
    // which is usually off the chart.
    match m {
        Mechanism::NonPrivate => 0,
        Mechanism::Gaussian => 1,
        Mechanism::Cape => 2,
        Mechanism::Conventional => 3,
        Mechanism::Local => 4,
        Mechanism::Relaxed => 5,
        Mechanism::Laplace => 6,
        Mechanism::OutputPerturbation => 7,
    }
}

/// The ε each mechanism actually guarantees at the target δ, against the requested ε. Mechanisms
/// with the same curve share one line; capeFM adds Theorem 1's view next to its guarantee (the
/// full adversary view).
pub(super) fn guarantee_chart(
    title: &str,
    mechanisms: &[Mechanism],
    points: &[Point],
) -> LineChart {
    let mut series: Vec<Series> = Vec::new();
    for m in mechanisms.iter().filter(|m| **m != Mechanism::NonPrivate) {
        let mine: Vec<&Point> = points.iter().filter(|p| p.mechanism == m.name()).collect();
        let curve: Vec<(f64, f64)> = mine.iter().map(|p| (p.x, p.epsilon_guaranteed)).collect();
        let label = match m {
            Mechanism::Cape => "cape-fm (full adversary view)".to_string(),
            _ => m.paper_label().to_string(),
        };
        let same = |a: &[(f64, f64)], b: &[(f64, f64)]| {
            a.len() == b.len()
                && a.iter().zip(b).all(|(u, v)| (u.1 - v.1).abs() <= 1e-9 * u.1.abs().max(1e-300))
        };
        match series.iter_mut().find(|c| same(&c.points, &curve)) {
            Some(c) => c.label = format!("{} = {label}", c.label),
            None => series.push(Series {
                label,
                points: curve,
                colour: Some(mechanism_colour(*m)),
                ..Default::default()
            }),
        }
        if *m == Mechanism::Cape {
            let t1: Vec<(f64, f64)> =
                mine.iter().filter_map(|p| Some((p.x, p.epsilon_theorem1?))).collect();
            match series.iter_mut().find(|c| same(&c.points, &t1)) {
                // S_C = 0 (e.g. S = 3): the two views coincide.
                Some(c) => c.label = format!("{} = cape-fm (Theorem 1 view)", c.label),
                None => series.push(Series {
                    label: "cape-fm (Theorem 1 view)".into(),
                    points: t1,
                    colour: Some(9),
                    ..Default::default()
                }),
            }
        }
    }
    let mut xs: Vec<f64> = points.iter().map(|p| p.x).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    series.push(Series {
        label: "requested ε".into(),
        points: xs.iter().map(|&x| (x, x)).collect(),
        band: vec![],
        dashed: true,
        colour: Some(8),
    });
    LineChart {
        title: format!("Guaranteed ε: {title}"),
        x_label: "requested ε".into(),
        y_label: "ε guaranteed at the target δ (exact Gaussian profile; Laplace: pure ε)".into(),
        x_log: true,
        y_log: true,
        series,
        y_range: None,
        legend: Legend::UpperLeft,
    }
}
