//! What the EFPSN panels show, as pure functions of the study's state: status sentences, the
//! deviation and accuracy charts of the runs side by side, the graph, the masks' cancellation.

use capelab_core::efpsn::graph::Graph;
use capelab_core::efpsn::sim::Method;
use capelab_core::study::efpsn::{ObservedRun, RunStatus};

use crate::components::charts::line::{LineChartSpec, Series};
use crate::components::charts::scale::Scale;
use crate::components::charts::svg::PALETTE;

pub fn method_label(method: Method) -> &'static str {
    match method {
        Method::Efpsn => "EFPSN (zero-sum masks)",
        Method::Baseline => "baseline (independent masks)",
        Method::NoiseFree => "noise-free",
    }
}

fn colour(method: Method) -> &'static str {
    match method {
        Method::Efpsn => PALETTE[0],
        Method::Baseline => PALETTE[1],
        Method::NoiseFree => PALETTE[2],
    }
}

/// A run's status on one agent as a sentence and a progress fraction.
pub fn status_text(status: &RunStatus, iterations: u32) -> (String, f64) {
    match status {
        RunStatus::Phase1 { keys, noise_sent, noise_received, neighbours } => {
            let steps = 3 * (*neighbours).max(1);
            let done = keys + noise_sent + noise_received;
            (
                format!(
                    "Phase 1: keys {keys}/{neighbours}, encrypted noise sent {noise_sent}/{neighbours}, \
                     received and decrypted {noise_received}/{neighbours}"
                ),
                // Phase 1 is the first tenth of the bar.
                0.1 * done as f64 / steps as f64,
            )
        }
        RunStatus::Phase2 { iteration } => (
            format!("Phase 2: iteration {iteration} of {iterations}"),
            0.1 + 0.9 * f64::from(*iteration) / f64::from(iterations.max(1)),
        ),
        RunStatus::Done => ("Done".into(), 1.0),
        RunStatus::Declined(why) => (format!("Declined: {why}"), 0.0),
        RunStatus::Failed(why) => (format!("Stopped: {why}"), 0.0),
    }
}

/// ‖x̄ − x*‖ per iteration, one line per run (log axis: the runs differ by decades).
pub fn deviation_chart(runs: &[ObservedRun], iterations: u32) -> LineChartSpec {
    let series: Vec<Series> = runs
        .iter()
        .map(|r| Series {
            name: method_label(r.method).into(),
            color: colour(r.method),
            points: r.trace.iter().map(|p| (f64::from(p.iteration), p.deviation)).collect(),
            dashed: r.method == Method::NoiseFree,
            dots: false,
        })
        .collect();
    let values = series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).filter(|v| *v > 0.0);
    let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let y = if hi > 0.0 {
        Scale::Log {
            min: 10f64.powf(lo.log10().floor()),
            max: 10f64.powf(hi.log10().ceil().max(lo.log10().floor() + 1.0)),
        }
    } else {
        Scale::Log { min: 1e-3, max: 1.0 }
    };
    LineChartSpec {
        title: "Distance of the agents' average x̄ to the centralised optimum x*".into(),
        x_label: "iteration t".into(),
        y_label: "‖x̄ − x*‖".into(),
        x: Scale::Linear { min: 0.0, max: f64::from(iterations.max(1)) },
        y,
        series,
        markers: Vec::new(),
        note: Some(
            "x* is solved centrally from the public copy of digits the dashboard holds.".into(),
        ),
    }
}

/// Test accuracy of x̄ per iteration, one line per run, with x*'s own accuracy for reference.
pub fn accuracy_chart(runs: &[ObservedRun], iterations: u32, x_star_score: f64) -> LineChartSpec {
    let mut series: Vec<Series> = runs
        .iter()
        .map(|r| Series {
            name: method_label(r.method).into(),
            color: colour(r.method),
            points: r.trace.iter().map(|p| (f64::from(p.iteration), p.score)).collect(),
            dashed: r.method == Method::NoiseFree,
            dots: false,
        })
        .collect();
    series.push(Series {
        name: "x* (centralised)".into(),
        color: PALETTE[6],
        points: vec![(0.0, x_star_score), (f64::from(iterations.max(1)), x_star_score)],
        dashed: true,
        dots: false,
    });
    LineChartSpec {
        title: "Test accuracy of x̄ (held-out digits)".into(),
        x_label: "iteration t".into(),
        y_label: "accuracy".into(),
        x: Scale::Linear { min: 0.0, max: f64::from(iterations.max(1)) },
        y: Scale::Linear { min: 0.0, max: 1.0 },
        series,
        markers: Vec::new(),
        note: None,
    }
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// Per agent ‖∇f̂_i(0) − ∇f_i(0)‖ (what its mask adds) and, for the sum over the agents, the
/// same: from the EFPSN run and the noise-free one (which holds the exact gradients).
pub struct Cancellation {
    pub per_agent: Vec<f64>,
    pub sum: f64,
    /// ‖Σ_i ∇f_i(0)‖, for scale.
    pub exact_sum: f64,
}

pub fn cancellation(efpsn: &ObservedRun, exact: &ObservedRun) -> Option<Cancellation> {
    let mut per_agent = Vec::new();
    for (p, q) in efpsn.gradient_at_zero.iter().zip(&exact.gradient_at_zero) {
        let (p, q) = (p.as_ref()?, q.as_ref()?);
        per_agent.push(norm(&p.iter().zip(q).map(|(a, b)| a - b).collect::<Vec<_>>()));
    }
    let (se, sf) = (efpsn.gradient_sum()?, exact.gradient_sum()?);
    Some(Cancellation {
        per_agent,
        sum: norm(&se.iter().zip(&sf).map(|(a, b)| a - b).collect::<Vec<_>>()),
        exact_sum: norm(&sf),
    })
}

/// What an agent is doing, as the graph shows it: the most advanced phase of its runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    Waiting,
    /// Phase 1: keys and Paillier-encrypted noise go to the neighbours.
    Encrypting,
    /// Phase 2: an iterate goes to every neighbour each iteration.
    Iterating,
    Done,
    /// A run stopped on this agent, or it declined: nothing flows to or from it any more.
    Stopped,
}

/// Agent `i`'s [`Activity`] over `runs` (the runs go side by side, so any run in Phase 2 means
/// iterates are flowing).
pub fn activity(runs: &[ObservedRun], i: usize) -> Activity {
    let statuses: Vec<&RunStatus> = runs.iter().filter_map(|r| r.status.get(i)).collect();
    if statuses.iter().any(|s| matches!(s, RunStatus::Failed(_) | RunStatus::Declined(_))) {
        Activity::Stopped
    } else if statuses.iter().any(|s| matches!(s, RunStatus::Phase2 { .. })) {
        Activity::Iterating
    } else if statuses.iter().any(|s| matches!(s, RunStatus::Phase1 { .. })) {
        Activity::Encrypting
    } else if !statuses.is_empty() && statuses.iter().all(|s| matches!(s, RunStatus::Done)) {
        Activity::Done
    } else {
        Activity::Waiting
    }
}

/// A link's state: what its two ends are doing decides what crosses it.
fn edge_state(a: Activity, b: Activity) -> &'static str {
    use Activity::*;
    match (a, b) {
        (Stopped, _) | (_, Stopped) => "cut",
        (Encrypting, Encrypting | Iterating) | (Iterating, Encrypting) => "ciphertexts",
        (Iterating, Iterating) => "iterates",
        _ => "idle",
    }
}

/// The graph as SVG: agents on a circle, links as lines. While messages cross a link its dashes
/// move (style.css: amber for Phase 1's ciphertexts, blue for Phase 2's iterates; still under
/// `prefers-reduced-motion`); a link to an agent that stopped is grey and dashed, the agent
/// hollow.
pub fn graph_svg(graph: &Graph, names: &[String], activity: &[Activity]) -> String {
    let n = graph.len();
    let (cx, cy, r) = (160.0, 130.0, 95.0);
    let at = |i: usize| {
        let a = std::f64::consts::TAU * i as f64 / n.max(1) as f64 - std::f64::consts::FRAC_PI_2;
        (cx + r * a.cos(), cy + r * a.sin())
    };
    let of = |i: usize| activity.get(i).copied().unwrap_or(Activity::Waiting);
    let edges: Vec<(usize, usize, &str)> =
        graph.edges().into_iter().map(|(i, j)| (i, j, edge_state(of(i), of(j)))).collect();
    let count = |state: &str| edges.iter().filter(|e| e.2 == state).count();
    let mut out = format!(
        r#"<svg viewBox="0 0 320 260" width="320" height="260" role="img" aria-label="The agents' graph: {} links, {} carrying ciphertexts, {} carrying iterates, {} cut" xmlns="http://www.w3.org/2000/svg">"#,
        edges.len(),
        count("ciphertexts"),
        count("iterates"),
        count("cut")
    );
    for (i, j, state) in &edges {
        let ((x1, y1), (x2, y2)) = (at(*i), at(*j));
        out.push_str(&format!(
            r##"<line class="edge edge-{state}" data-testid="efpsn-edge" data-ends="{i} {j}" data-state="{state}" x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="#888" stroke-width="2"/>"##
        ));
    }
    for i in 0..n {
        let (x, y) = at(i);
        let fill = if of(i) == Activity::Stopped { "#fff" } else { PALETTE[0] };
        let name =
            names.get(i).map_or(String::new(), |s| crate::components::charts::svg::escape(s));
        out.push_str(&format!(
            r##"<circle cx="{x:.1}" cy="{y:.1}" r="14" fill="{fill}" stroke="{}" stroke-width="2"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="12" fill="#fff">{i}</text><text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="11">{name}</text>"##,
            PALETTE[0],
            y + 4.0,
            y + 30.0
        ));
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use capelab_core::efpsn::graph::Topology;

    #[test]
    fn statuses_read_as_sentences_with_progress() {
        let (text, p) = status_text(
            &RunStatus::Phase1 { keys: 2, noise_sent: 1, noise_received: 0, neighbours: 2 },
            200,
        );
        assert!(text.contains("keys 2/2") && text.contains("sent 1/2"), "{text}");
        assert!((p - 0.05).abs() < 1e-12);
        let (text, p) = status_text(&RunStatus::Phase2 { iteration: 100 }, 200);
        assert_eq!(text, "Phase 2: iteration 100 of 200");
        assert!((p - 0.55).abs() < 1e-12);
    }

    #[test]
    fn the_graph_draws_every_edge_and_agent() {
        let g = Graph::build(Topology::Ring, 4, 0).unwrap();
        let names = ["a".into(), "b".into(), "c".into(), "d".into()];
        let svg = graph_svg(&g, &names, &[Activity::Waiting; 4]);
        assert_eq!(svg.matches("<line").count(), 4);
        assert_eq!(svg.matches("<circle").count(), 4);
        assert_eq!(svg.matches(r#"data-state="idle""#).count(), 4);
    }

    #[test]
    fn links_show_what_crosses_them_and_a_departure_cuts_its_links() {
        use Activity::*;
        let g = Graph::build(Topology::Ring, 4, 0).unwrap();
        let names = ["a".into(), "b".into(), "c".into(), "d".into()];
        let svg = graph_svg(&g, &names, &[Iterating, Iterating, Encrypting, Stopped]);
        // ring 0-1-2-3-0: 0–1 iterates, 1–2 ciphertexts, 2–3 and 3–0 cut
        assert_eq!(svg.matches(r#"data-state="iterates""#).count(), 1);
        assert_eq!(svg.matches(r#"data-state="ciphertexts""#).count(), 1);
        assert_eq!(svg.matches(r#"data-state="cut""#).count(), 2);
        assert!(svg.contains("1 carrying ciphertexts, 1 carrying iterates, 2 cut"), "{svg}");
        // four white index labels, and agent 3's hollow circle
        assert_eq!(svg.matches(r##"fill="#fff""##).count(), 4 + 1);
    }

    #[test]
    fn an_agent_is_as_far_as_its_most_advanced_run() {
        let run = |status: Vec<RunStatus>| ObservedRun {
            id: capelab_core::study::StudyId([0; 16]),
            method: Method::Efpsn,
            epsilon: None,
            status,
            iterates: Vec::new(),
            gradient_at_zero: Vec::new(),
            trace: Vec::new(),
            x_bar: Vec::new(),
        };
        let p1 = RunStatus::Phase1 { keys: 0, noise_sent: 0, noise_received: 0, neighbours: 2 };
        let p2 = RunStatus::Phase2 { iteration: 3 };
        let runs = [run(vec![p1.clone(), RunStatus::Done]), run(vec![p2, RunStatus::Done])];
        assert_eq!(activity(&runs, 0), Activity::Iterating);
        assert_eq!(activity(&runs, 1), Activity::Done);
        let stopped = [run(vec![p1, RunStatus::Failed("left".into())])];
        assert_eq!(activity(&stopped, 1), Activity::Stopped);
        assert_eq!(activity(&stopped, 0), Activity::Encrypting);
    }
}
