//! A line chart (linear or log axes) with a legend and vertical markers, as an SVG string.

use std::fmt::Write;

use crate::components::charts::scale::{Scale, format_value};
use crate::components::charts::svg::{self, INK, MUTED, Plot, Swatch};

/// One line.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub color: &'static str,
    /// Points in x order. A point the scale cannot show (≤ 0 on a log axis, not finite) breaks
    /// the line there.
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
    /// Draw a dot at every point (for few points, e.g. one per round).
    pub dots: bool,
}

/// A vertical line at `x` with a label (e.g. "this study's z").
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    pub x: f64,
    pub label: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LineChartSpec {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x: Scale,
    pub y: Scale,
    pub series: Vec<Series>,
    pub markers: Vec<Marker>,
    pub note: Option<String>,
}

const PLOT_HEIGHT: f64 = 300.0;

/// The chart as a self-contained SVG element with id `id`; or, while no line has two points to
/// join, a sentence saying what there is (an axis with one dot says nothing).
pub fn render(spec: &LineChartSpec, id: &str) -> String {
    if !drawable(spec) {
        return too_few_points(spec, id);
    }
    let plot = Plot { left: 92.0, top: 52.0, width: svg::WIDTH - 92.0 - 28.0, height: PLOT_HEIGHT };
    let legend_top = plot.bottom() + 78.0;
    let legend_height = svg::legend_height(spec.series.iter().map(|s| s.name.as_str()));
    let note_lines = spec.note.as_ref().map_or(0.0, |n| (n.chars().count() / 95 + 1) as f64);
    let height = legend_top + legend_height + note_lines * 18.0 + 16.0;

    let mut out = String::new();
    svg::open(&mut out, id, height, &spec.title);
    svg::axes(&mut out, &plot, &spec.x, &spec.y, &spec.x_label, &spec.y_label);
    let clip = format!("{id}-clip");
    let _ = write!(
        out,
        r##"<defs><clipPath id="{c}"><rect x="{l:.1}" y="{t:.1}" width="{w:.1}" height="{h:.1}"/></clipPath></defs><g clip-path="url(#{c})">"##,
        c = svg::escape(&clip),
        l = plot.left,
        t = plot.top,
        w = plot.width,
        h = plot.height,
    );
    for marker in &spec.markers {
        if let Some(px) = plot.x(&spec.x, marker.x) {
            let _ = write!(
                out,
                r##"<line x1="{px:.1}" x2="{px:.1}" y1="{t:.1}" y2="{b:.1}" stroke="{MUTED}" stroke-width="2" stroke-dasharray="3 4"/>"##,
                t = plot.top,
                b = plot.bottom(),
            );
        }
    }
    for series in &spec.series {
        let path = path_of(&plot, spec, &series.points);
        if !path.is_empty() {
            let dash = if series.dashed { r##" stroke-dasharray="8 6""## } else { "" };
            let _ = write!(
                out,
                r##"<path d="{path}" fill="none" stroke="{c}" stroke-width="3" stroke-linejoin="round"{dash}><title>{n}</title></path>"##,
                c = series.color,
                n = svg::escape(&series.name),
            );
        }
        if series.dots {
            for &(x, y) in &series.points {
                if let (Some(px), Some(py)) = (plot.x(&spec.x, x), plot.y(&spec.y, y)) {
                    let _ = write!(
                        out,
                        r##"<circle cx="{px:.1}" cy="{py:.1}" r="5" fill="{c}" stroke="#ffffff" stroke-width="1.5"/>"##,
                        c = series.color,
                    );
                }
            }
        }
    }
    out.push_str("</g>");
    for marker in &spec.markers {
        if let Some(px) = plot.x(&spec.x, marker.x) {
            let _ = write!(
                out,
                r##"<text x="{tx:.1}" y="{ty:.1}" font-size="14" fill="{INK}" text-anchor="start">{l}</text>"##,
                tx = px + 6.0,
                ty = plot.top + 18.0,
                l = svg::escape(&marker.label),
            );
        }
    }
    let entries: Vec<(Swatch<'_>, &str)> = spec
        .series
        .iter()
        .map(|s| (Swatch::Line { color: s.color, dashed: s.dashed }, s.name.as_str()))
        .collect();
    let used = svg::legend(&mut out, legend_top, &entries);
    if let Some(note) = &spec.note {
        svg::note(&mut out, legend_top + used, note);
    }
    svg::close(&mut out);
    out
}

/// "M x y L x y …", starting a new segment after every point the scales cannot show.
fn path_of(plot: &Plot, spec: &LineChartSpec, points: &[(f64, f64)]) -> String {
    let mut path = String::new();
    let mut pen_down = false;
    for &(x, y) in points {
        match (plot.x(&spec.x, x), plot.y(&spec.y, y)) {
            (Some(px), Some(py)) => {
                let _ = write!(path, "{}{px:.1} {py:.1} ", if pen_down { "L" } else { "M" });
                pen_down = true;
            }
            _ => pen_down = false,
        }
    }
    path.trim_end().to_owned()
}

/// Whether some line has at least two points its scales can show.
fn drawable(spec: &LineChartSpec) -> bool {
    spec.series.iter().any(|s| s.points.iter().filter(|&&(x, y)| shows(spec, x, y)).count() >= 2)
}

fn shows(spec: &LineChartSpec, x: f64, y: f64) -> bool {
    let ok =
        |scale: &Scale, v: f64| v.is_finite() && (!matches!(scale, Scale::Log { .. }) || v > 0.0);
    ok(&spec.x, x) && ok(&spec.y, y)
}

/// The sentence shown instead of a chart with fewer than two points per line.
fn too_few_points(spec: &LineChartSpec, id: &str) -> String {
    let single: Vec<String> = spec
        .series
        .iter()
        .filter_map(|s| {
            let &(x, y) = s.points.iter().find(|&&(x, y)| shows(spec, x, y))?;
            Some(format!("{} {} at {} {}", s.name, format_value(y), spec.x_label, format_value(x)))
        })
        .collect();
    let what = match single.len() {
        0 => "nothing to draw yet".to_owned(),
        n if n <= 4 => format!("one point so far ({})", single.join("; ")),
        n => format!("one point per line so far ({}; and {} more)", single[..3].join("; "), n - 3),
    };
    format!(
        r#"<p class="chart-empty" id="{id}" data-empty="true"><strong>{t}</strong>: {w}. The chart appears once a line has two points.</p>"#,
        id = svg::escape(id),
        t = svg::escape(&spec.title),
        w = svg::escape(&what),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(points: Vec<(f64, f64)>) -> LineChartSpec {
        LineChartSpec {
            title: "T".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x: Scale::Linear { min: 0.0, max: 4.0 },
            y: Scale::Log { min: 1e-4, max: 1.0 },
            series: vec![Series {
                name: "δ_cape".into(),
                color: svg::PALETTE[0],
                points,
                dashed: false,
                dots: true,
            }],
            markers: vec![Marker { x: 2.0, label: "z = 2".into() }],
            note: Some("a caveat".into()),
        }
    }

    #[test]
    fn points_the_log_axis_cannot_show_break_the_line() {
        let s = spec(vec![(0.0, 1e-2), (1.0, 0.0), (2.0, 1e-3), (3.0, 1e-2)]);
        let out = render(&s, "chart");
        let path = out.split("<path d=\"").nth(1).unwrap().split('"').next().unwrap();
        assert_eq!(path.matches('M').count(), 2, "{path}");
        assert_eq!(path.matches('L').count(), 1, "{path}");
        assert_eq!(out.matches("<circle").count(), 3);
        // 1e-2 lies half way up a 1e-4..1 axis: y = top + height/2
        assert!(path.starts_with("M92.0 202.0"), "{path}");
        assert!(out.contains(">δ_cape</text>") && out.contains(">z = 2</text>"));
        assert!(out.contains(">a caveat</text>"));
        assert!(out.contains(r##"clip-path="url(#chart-clip)""##));
    }

    #[test]
    fn below_two_points_a_sentence_says_what_there_is() {
        let one = render(&spec(vec![(1.0, 1e-2)]), "chart");
        assert!(one.starts_with("<p class=\"chart-empty\""), "{one}");
        assert!(one.contains("one point so far (δ_cape 0.0100 at x 1"), "{one}");
        assert!(!one.contains("<svg"));
        let none = render(&spec(vec![(1.0, 0.0)]), "chart");
        assert!(none.contains("nothing to draw yet"), "a point the log axis cannot show: {none}");
        assert!(render(&spec(vec![(0.0, 1e-2), (1.0, 1e-3)]), "chart").starts_with("<svg"));
    }
}
