//! The agents' graph as SVG: agents on a circle with their numbers and site names, links drawn
//! by what crosses them. The same drawing fills the dashboard's figure and the presenter's
//! centrepiece, at the sizes each gives it.

use std::fmt::Write;

use capelab_core::efpsn::graph::Graph;

use crate::components::charts::svg::{self, FONT, INK, MUTED, PALETTE};

/// What an agent is doing, as the graph shows it (over the runs side by side).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    Waiting,
    /// Phase 1: keys and Paillier-encrypted noise go to the neighbours.
    Encrypting,
    /// Phase 2: an iterate goes to every neighbour each iteration.
    Iterating,
    Done,
    /// Its runs stopped because another agent left or declined, or the teacher stopped them.
    Halted,
    /// This agent left the room, or declined the study: its links are cut.
    Gone,
}

/// What a link shows: its two ends decide what crosses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    Idle,
    Ciphertexts,
    Iterates,
    /// An end left or declined: nothing will cross it again.
    Cut,
}

impl Link {
    pub fn between(a: Activity, b: Activity) -> Link {
        use Activity::*;
        match (a, b) {
            (Gone, _) | (_, Gone) => Link::Cut,
            (Encrypting, Encrypting | Iterating) | (Iterating, Encrypting) => Link::Ciphertexts,
            (Iterating, Iterating) => Link::Iterates,
            _ => Link::Idle,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Link::Idle => "idle",
            Link::Ciphertexts => "ciphertexts",
            Link::Iterates => "iterates",
            Link::Cut => "cut",
        }
    }
}

/// Sizes in SVG units: the presenter's are large enough to read from the back of a room.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Style {
    pub node_radius: f64,
    pub number_font: f64,
    pub name_font: f64,
}

impl Style {
    pub const PAGE: Style = Style { node_radius: 19.0, number_font: 16.0, name_font: 15.0 };
    pub const PRESENTER: Style = Style { node_radius: 25.0, number_font: 24.0, name_font: 23.0 };
}

/// A box of the drawing, in SVG units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Area {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

/// An average character's width, as a share of the font size (names are cut to fit with it).
const CHAR_WIDTH: f64 = 0.6;

/// The agents on a circle inside `area`, each name under (lower half) or over (upper half) its
/// node, cut with "…" where it would run into a neighbour's or out of the area.
fn layout(n: usize, area: Area, style: Style) -> (Vec<(f64, f64)>, usize) {
    let (cx, cy) = (area.x + area.width / 2.0, area.y + area.height / 2.0);
    let r = style.node_radius;
    let label = style.name_font * 1.5;
    // Names get at least 6 characters' room on each side of their node.
    let half_name = CHAR_WIDTH * style.name_font * 6.0;
    let radius =
        (area.width / 2.0 - half_name.max(r) - 4.0).min(area.height / 2.0 - r - label - 4.0).max(r);
    let at: Vec<(f64, f64)> = (0..n)
        .map(|i| {
            let a =
                std::f64::consts::TAU * i as f64 / n.max(1) as f64 - std::f64::consts::FRAC_PI_2;
            (cx + radius * a.cos(), cy + radius * a.sin())
        })
        .collect();
    // Room for a name: the gap to the nearest node, and twice the way to the area's edge.
    let spacing =
        if n > 1 { 2.0 * radius * (std::f64::consts::PI / n as f64).sin() - 6.0 } else { f64::MAX };
    let edge = at
        .iter()
        .map(|&(x, _)| 2.0 * (x - area.x).min(area.x + area.width - x))
        .fold(f64::MAX, f64::min);
    let chars = (spacing.min(edge) / (CHAR_WIDTH * style.name_font)).floor();
    (at, chars.clamp(3.0, 24.0) as usize)
}

/// `name` cut to `chars` characters, "…" at the end when cut.
fn fit(name: &str, chars: usize) -> String {
    if name.chars().count() <= chars {
        name.to_owned()
    } else {
        let mut cut: String = name.chars().take(chars.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

/// The graph's elements inside `area` (for a standalone SVG or a presenter's composition).
pub fn draw(
    out: &mut String,
    graph: &Graph,
    names: &[String],
    activity: &[Activity],
    area: Area,
    style: Style,
) {
    let n = graph.len();
    let (at, chars) = layout(n, area, style);
    let of = |i: usize| activity.get(i).copied().unwrap_or(Activity::Waiting);
    for (i, j) in graph.edges() {
        let link = Link::between(of(i), of(j));
        let ((x1, y1), (x2, y2)) = (at[i], at[j]);
        let (stroke, width, dash) = match link {
            Link::Idle => ("#aab2ba", 2.5, ""),
            Link::Ciphertexts => ("#b36b00", 4.0, r#" stroke-dasharray="4 6""#),
            Link::Iterates => (PALETTE[0], 4.0, r#" stroke-dasharray="9 6""#),
            Link::Cut => (PALETTE[1], 3.0, r#" stroke-dasharray="2 7""#),
        };
        let _ = write!(
            out,
            r##"<line class="edge edge-{state}" data-testid="efpsn-edge" data-ends="{i} {j}" data-state="{state}" x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{stroke}" stroke-width="{width}"{dash}/>"##,
            state = link.name(),
        );
        if link == Link::Cut {
            // A cross at the middle: a cut link reads as cut without its colour.
            let (mx, my) = ((x1 + x2) / 2.0, (y1 + y2) / 2.0);
            let k = style.node_radius * 0.45;
            let _ = write!(
                out,
                r##"<path d="M{a:.1} {b:.1}L{c:.1} {d:.1}M{a:.1} {d:.1}L{c:.1} {b:.1}" stroke="{s}" stroke-width="4" stroke-linecap="round"/>"##,
                a = mx - k,
                b = my - k,
                c = mx + k,
                d = my + k,
                s = PALETTE[1],
            );
        }
    }
    for (i, &(x, y)) in at.iter().enumerate() {
        let gone = of(i) == Activity::Gone;
        let (fill, text) = if gone { ("#ffffff", MUTED) } else { (PALETTE[0], "#ffffff") };
        let stroke = if gone { MUTED } else { PALETTE[0] };
        let name = names.get(i).map_or("", String::as_str);
        let above = y < area.y + area.height / 2.0 - 1.0;
        let label_y = if above {
            y - style.node_radius - style.name_font * 0.45
        } else {
            y + style.node_radius + style.name_font * 1.05
        };
        let _ = write!(
            out,
            r##"<g data-testid="efpsn-node" data-agent="{i}" data-activity="{a:?}"><title>{full}</title><circle cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{fill}" stroke="{stroke}" stroke-width="3"{dash}/><text x="{x:.1}" y="{ny:.1}" text-anchor="middle" font-size="{nf}" font-weight="700" fill="{text}">{i}</text><text x="{x:.1}" y="{label_y:.1}" text-anchor="middle" font-size="{lf}" fill="{INK}">{shown}</text></g>"##,
            a = of(i),
            full = svg::escape(name),
            r = style.node_radius,
            dash = if gone { r#" stroke-dasharray="5 4""# } else { "" },
            ny = y + style.number_font * 0.35,
            nf = style.number_font,
            lf = style.name_font,
            shown = svg::escape(&fit(name, chars)),
        );
    }
}

/// The graph alone, for the dashboard's figure.
pub fn graph_svg(graph: &Graph, names: &[String], activity: &[Activity]) -> String {
    let (width, height) = (560.0, 420.0);
    let links: Vec<Link> = graph
        .edges()
        .into_iter()
        .map(|(i, j)| {
            let of = |k: usize| activity.get(k).copied().unwrap_or(Activity::Waiting);
            Link::between(of(i), of(j))
        })
        .collect();
    let count = |l: Link| links.iter().filter(|&&x| x == l).count();
    let mut out = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" font-family="{FONT}" role="img" aria-label="The agents' graph: {} links, {} carrying ciphertexts, {} carrying iterates, {} cut"><rect width="{width}" height="{height}" fill="#ffffff"/>"##,
        links.len(),
        count(Link::Ciphertexts),
        count(Link::Iterates),
        count(Link::Cut),
    );
    let area = Area { x: 0.0, y: 0.0, width, height };
    draw(&mut out, graph, names, activity, area, Style::PAGE);
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use capelab_core::efpsn::graph::Topology;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("Agent {}", (b'A' + i as u8) as char)).collect()
    }

    #[test]
    fn the_graph_draws_every_edge_and_agent_with_its_name() {
        let g = Graph::build(Topology::Ring, 4, 0).unwrap();
        let svg = graph_svg(&g, &names(4), &[Activity::Waiting; 4]);
        assert_eq!(svg.matches("<line").count(), 4);
        assert_eq!(svg.matches("<circle").count(), 4);
        assert_eq!(svg.matches(r#"data-state="idle""#).count(), 4);
        for name in names(4) {
            assert!(svg.contains(&format!(">{name}</text>")), "{name}");
        }
    }

    #[test]
    fn only_the_links_of_an_agent_that_left_are_cut() {
        use Activity::*;
        let g = Graph::build(Topology::Ring, 4, 0).unwrap();
        let svg = graph_svg(&g, &names(4), &[Halted, Halted, Gone, Halted]);
        // ring 0-1-2-3-0: 1–2 and 2–3 cut (with a cross each), 0–1 and 3–0 idle
        assert_eq!(svg.matches(r#"data-state="cut""#).count(), 2);
        assert_eq!(svg.matches(r#"data-state="idle""#).count(), 2);
        assert_eq!(svg.matches("<path").count(), 2);
        assert!(svg.contains("0 carrying iterates, 2 cut"), "{svg}");
        let svg = graph_svg(&g, &names(4), &[Iterating, Iterating, Encrypting, Done]);
        assert_eq!(svg.matches(r#"data-state="iterates""#).count(), 1);
        assert_eq!(svg.matches(r#"data-state="ciphertexts""#).count(), 1);
    }

    #[test]
    fn every_node_and_name_lies_inside_the_drawing() {
        for (n, style) in
            [(4, Style::PAGE), (8, Style::PAGE), (4, Style::PRESENTER), (12, Style::PRESENTER)]
        {
            let area = Area { x: 0.0, y: 0.0, width: 460.0, height: 560.0 };
            let (at, chars) = layout(n, area, style);
            for &(x, y) in &at {
                let half = CHAR_WIDTH * style.name_font * chars as f64 / 2.0;
                assert!(
                    x - half.max(style.node_radius) >= 0.0
                        && x + half.max(style.node_radius) <= 460.0,
                    "n={n}: {x} ± {half}"
                );
                assert!(y - style.node_radius - style.name_font * 1.5 >= 0.0, "n={n}: {y}");
                assert!(y + style.node_radius + style.name_font * 1.3 <= 560.0, "n={n}: {y}");
            }
            assert!(chars >= 3);
        }
        assert_eq!(fit("Agent Cornelius the Third", 8), "Agent C…");
        assert_eq!(fit("Lab B", 8), "Lab B");
    }
}
