//! EFPSN on the presenter view, on one screen: the agents' graph with what crosses each link,
//! beside the test accuracy of x̄ for EFPSN against the noise-free run (and the baseline), with
//! each agent's ε (Theorem IV.1, with its δ) in the headline. One SVG holds the graph and the
//! chart, drawn large (no text under 22 units: at 1280×800 the drawing is shown at about 0.88
//! of its size, so 19 px or more), and scaled to fit the presenter's frame in both directions.

use std::fmt::Write;

use capelab_core::efpsn::sim::Method;
use leptos::prelude::*;

use crate::components::charts::svg::{self, FONT, GRID, INK, MUTED, PALETTE};
use crate::frame::dashboard::DashboardStudy;
use crate::numbers::show;
use crate::studies::efpsn::graph::{self, Activity, Area, Style};
use crate::studies::efpsn::run::EfpsnLive;
use crate::studies::efpsn::view::{activity, colour, method_short, notes, percent};

const WIDTH: f64 = 1000.0;
const HEIGHT: f64 = 600.0;
/// The chart's text, in SVG units.
const TEXT: f64 = 22.0;

#[component]
pub fn EfpsnCentre(study: DashboardStudy) -> impl IntoView {
    let headline = move || study.view.efpsn.with(|l| l.as_ref().map(headline));
    let note = move || {
        study.view.efpsn.with(|l| l.as_ref().and_then(|l| notes(l).into_iter().next().map(|n| n.1)))
    };
    let markup =
        move || study.view.efpsn.with(|l| l.as_ref().map(|l| svg::for_presenter(&picture(l))));
    view! {
        <div class="present-centre efpsn-centre" data-testid="present-centrepiece">
            <p class="present-headline" data-testid="present-progress">{headline}</p>
            <div class="efpsn-centre-svg" data-testid="present-efpsn" inner_html=move || markup().unwrap_or_default()></div>
            {move || note().map(|n| view! { <p class="efpsn-centre-note" data-testid="present-efpsn-note">{n}</p> })}
        </div>
    }
}

/// "EFPSN study 1: iteration 120 of 200 · each agent ε = 0.133 at δ = 10⁻⁶ (Theorem IV.1)".
pub fn headline(live: &EfpsnLive) -> String {
    let iterations = live.task.runs[0].plan.phase2.iterations;
    let efpsn = live.runs.iter().find(|r| r.method == Method::Efpsn);
    let reached = efpsn.and_then(|r| r.trace.last()).map_or(0, |p| p.iteration);
    let progress = if live.finished {
        format!(
            "finished at iteration {} of {}",
            show(f64::from(reached)),
            show(f64::from(iterations))
        )
    } else if reached == 0 && efpsn.is_some_and(|r| r.trace.is_empty()) {
        "Phase 1: Paillier keys and encrypted noise".to_owned()
    } else {
        format!("iteration {} of {}", show(f64::from(reached)), show(f64::from(iterations)))
    };
    let epsilon = efpsn.and_then(|r| r.epsilon).map_or(String::new(), |e| {
        format!(
            " · each agent: ε = {} at δ = {} (Theorem IV.1, γ = {})",
            show(e.epsilon),
            show(e.delta),
            show(live.task.runs[0].plan.setup.law.gamma)
        )
    });
    format!("EFPSN study {}: {progress}{epsilon}", live.number)
}

/// The graph and the accuracy chart in one SVG.
pub fn picture(live: &EfpsnLive) -> String {
    let n = live.agents.len();
    let names: Vec<String> = (0..n).map(|i| live.name(i)).collect();
    let now: Vec<Activity> = (0..n).map(|i| activity(live, i)).collect();
    let mut out = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" id="present-efpsn" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" font-family="{FONT}" role="img" aria-label="The agents' graph, and the test accuracy of their average model for EFPSN against the noise-free run"><rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>"##
    );
    let graph_area = Area { x: 0.0, y: 0.0, width: 430.0, height: HEIGHT };
    graph::draw(&mut out, &live.graph, &names, &now, graph_area, Style::PRESENTER);
    accuracy(&mut out, live, Area { x: 450.0, y: 0.0, width: WIDTH - 450.0, height: HEIGHT });
    out.push_str("</svg>");
    out
}

/// Accuracy of x̄ per iteration, 0–100 %, a line per run and x*'s dotted, the last values in the
/// legend (EFPSN's and noise-free's lines lie on each other: the point).
fn accuracy(out: &mut String, live: &EfpsnLive, area: Area) {
    let iterations = f64::from(live.task.runs[0].plan.phase2.iterations.max(1));
    let (left, right) = (area.x + 78.0, area.x + area.width - 16.0);
    let (top, bottom) = (area.y + 58.0, area.y + area.height - 150.0);
    let x = |t: f64| left + (right - left) * (t / iterations).clamp(0.0, 1.0);
    let y = |a: f64| bottom - (bottom - top) * a.clamp(0.0, 1.0);
    let _ = write!(
        out,
        r##"<text x="{tx:.1}" y="{ty:.1}" font-size="26" font-weight="700" fill="{INK}">Test accuracy of x̄</text>"##,
        tx = area.x + 8.0,
        ty = area.y + 32.0,
    );
    for (value, label) in [(0.0, "0%"), (0.5, "50%"), (1.0, "100%")] {
        let _ = write!(
            out,
            r##"<line x1="{left:.1}" x2="{right:.1}" y1="{py:.1}" y2="{py:.1}" stroke="{GRID}" stroke-width="1.5"/><text x="{lx:.1}" y="{ly:.1}" font-size="{TEXT}" text-anchor="end" fill="{MUTED}">{label}</text>"##,
            py = y(value),
            lx = left - 8.0,
            ly = y(value) + 8.0,
        );
    }
    let _ = write!(
        out,
        r##"<rect x="{left:.1}" y="{top:.1}" width="{w:.1}" height="{h:.1}" fill="none" stroke="{MUTED}" stroke-width="1.5"/><text x="{left:.1}" y="{ly:.1}" font-size="{TEXT}" text-anchor="middle" fill="{MUTED}">0</text><text x="{right:.1}" y="{ly:.1}" font-size="{TEXT}" text-anchor="end" fill="{MUTED}">{t}</text><text x="{cx:.1}" y="{ly:.1}" font-size="{TEXT}" text-anchor="middle" fill="{INK}">iteration</text>"##,
        w = right - left,
        h = bottom - top,
        ly = bottom + 30.0,
        t = show(iterations),
        cx = (left + right) / 2.0,
    );
    // x*: what the centralised optimum scores, dotted.
    let _ = write!(
        out,
        r##"<line x1="{left:.1}" x2="{right:.1}" y1="{py:.1}" y2="{py:.1}" stroke="{c}" stroke-width="2.5" stroke-dasharray="2 6"/>"##,
        py = y(live.x_star_score),
        c = PALETTE[6],
    );
    for run in &live.runs {
        let points: Vec<String> = run
            .trace
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(f64::from(p.iteration)), y(p.score)))
            .collect();
        if points.len() >= 2 {
            let dash =
                if run.method == Method::NoiseFree { r#" stroke-dasharray="12 9""# } else { "" };
            let _ = write!(
                out,
                r##"<polyline points="{p}" fill="none" stroke="{c}" stroke-width="{w}" stroke-linejoin="round"{dash}/>"##,
                p = points.join(" "),
                c = colour(run.method),
                w = if run.method == Method::NoiseFree { 4.0 } else { 6.0 },
            );
        }
    }
    // The legend, two columns, each entry with its last accuracy.
    let mut entries: Vec<(String, &str, bool)> = live
        .runs
        .iter()
        .map(|r| {
            let last = r.trace.last().map_or("—".to_owned(), |p| percent(p.score));
            (
                format!("{} {last}", method_short(r.method)),
                colour(r.method),
                r.method == Method::NoiseFree,
            )
        })
        .collect();
    entries.push((format!("x* {}", percent(live.x_star_score)), PALETTE[6], true));
    let column = (area.width - 16.0) / 2.0;
    for (k, (label, colour, dashed)) in entries.iter().enumerate() {
        let lx = area.x + 8.0 + (k % 2) as f64 * column;
        let ly = bottom + 74.0 + (k / 2) as f64 * 38.0;
        let dash = if *dashed { r#" stroke-dasharray="8 6""# } else { "" };
        let _ = write!(
            out,
            r##"<line x1="{lx:.1}" x2="{x2:.1}" y1="{y1:.1}" y2="{y1:.1}" stroke="{colour}" stroke-width="5"{dash}/><text x="{tx:.1}" y="{ly:.1}" font-size="{TEXT}" fill="{INK}" data-testid="present-efpsn-legend">{l}</text>"##,
            x2 = lx + 34.0,
            y1 = ly - 7.0,
            tx = lx + 42.0,
            l = svg::escape(label),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::studies::efpsn::form::{EfpsnFields, Room};
    use capelab_core::efpsn::metrics::TracePoint;
    use capelab_core::study::efpsn::{ObservedRun, RunStatus};

    fn live() -> EfpsnLive {
        let form = EfpsnFields::default().read(vec![2, 3, 4, 5], &Room::default(), 1).unwrap();
        let task = form.task(10, 64).unwrap();
        let runs = task
            .runs
            .iter()
            .map(|r| ObservedRun {
                id: r.plan.study,
                method: r.method,
                epsilon: task.epsilon_of(r).ok().filter(|_| r.method == Method::Efpsn),
                status: vec![RunStatus::Done; 4],
                reached: vec![RunStatus::Phase2 { iteration: 200 }; 4],
                iterates: Vec::new(),
                gradient_at_zero: Vec::new(),
                trace: (0..=40)
                    .map(|k| TracePoint {
                        iteration: 5 * k,
                        deviation: 1.0,
                        score: 0.9 * f64::from(k) / 40.0,
                        disagreement: 0.0,
                    })
                    .collect(),
                x_bar: Vec::new(),
            })
            .collect();
        EfpsnLive {
            number: 1,
            finished: true,
            stopped: None,
            graph: form.graph.clone(),
            agents: vec![2, 3, 4, 5],
            names: [(2, "Lab A"), (3, "Lab B"), (4, "Lab C"), (5, "Lab D")]
                .map(|(i, n)| (i, n.to_owned()))
                .into_iter()
                .collect(),
            task,
            runs,
            x_star_score: 0.96,
            residual: capelab_core::study::efpsn::Residual::Waiting,
            probe: (Vec::new(), 0),
            refusals: Vec::new(),
        }
    }

    #[test]
    fn the_presenter_shows_the_graph_the_accuracies_and_epsilon_in_large_text() {
        let l = live();
        let svg = picture(&l);
        for name in [
            "Lab A",
            "Lab B",
            "Lab C",
            "Lab D",
            "EFPSN 90.0%",
            "noise-free 90.0%",
            "baseline 90.0%",
            "x* 96.0%",
        ] {
            assert!(svg.contains(&format!(">{name}</text>")), "{name}");
        }
        // no text under 22 units
        for size in svg
            .split("font-size=\"")
            .skip(1)
            .map(|s| s[..s.find('"').unwrap()].parse::<f64>().unwrap())
        {
            assert!(size >= 22.0, "{size}");
        }
        let h = headline(&l);
        assert!(
            h.starts_with("EFPSN study 1: finished at iteration 200 of 200 · each agent: ε = 0.1"),
            "{h}"
        );
        assert!(h.ends_with("at δ = 10⁻⁶ (Theorem IV.1, γ = 1\u{202f}000)"), "{h}");
    }
}
