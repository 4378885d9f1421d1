//! The metrics of a run, from the agents' recorded iterates: ‖x̄ − x*‖, the test score and the
//! agents' disagreement at every iteration all of them recorded (spec efpsn-vertical-dpvi §A4).
//! The in-process simulation and the dashboard's observer both measure with this.

use serde::{Deserialize, Serialize};

use super::problem::Problem;

/// The metrics at one recorded iteration, of x̄ = (1/n) Σ_i x_i.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TracePoint {
    pub iteration: u32,
    /// ‖x̄ − x*‖.
    pub deviation: f64,
    /// Test accuracy (softmax) or RMSE (least squares) of x̄.
    pub score: f64,
    /// max_i ‖x_i − x̄‖.
    pub disagreement: f64,
}

/// The metrics at every row from `from_row` on that all `traces` (one per agent: (iteration,
/// x_i) in order) share, and x̄ at the last of them (empty when there is none).
pub fn trace_metrics(
    problem: &Problem,
    traces: &[&[(u32, Vec<f64>)]],
    from_row: usize,
) -> (Vec<TracePoint>, Vec<f64>) {
    let Some(first) = traces.first() else { return (Vec::new(), Vec::new()) };
    let d = problem.dim();
    let n = traces.len() as f64;
    let mut trace = Vec::new();
    let mut x_bar = Vec::new();
    for (row, (iteration, _)) in first.iter().enumerate().skip(from_row) {
        if traces.iter().any(|t| t.get(row).map(|(it, _)| it) != Some(iteration)) {
            break;
        }
        x_bar = vec![0.0; d];
        for t in traces {
            x_bar.iter_mut().zip(&t[row].1).for_each(|(m, v)| *m += v / n);
        }
        let disagreement = traces
            .iter()
            .map(|t| t[row].1.iter().zip(&x_bar).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt())
            .fold(0.0, f64::max);
        trace.push(TracePoint {
            iteration: *iteration,
            deviation: problem.deviation(&x_bar),
            score: problem.score(&x_bar),
            disagreement,
        });
    }
    (trace, x_bar)
}
