//! Values with error bars, one row each (a "forest plot"): each site's noisy message â_s next to
//! the estimates, so the large per-message noise and the small aggregate noise sit on one axis.

use std::fmt::Write;

use crate::components::charts::scale::{Scale, format_value};
use crate::components::charts::svg::{self, GRID, INK, MUTED, Plot, Swatch};

#[derive(Clone, Debug, PartialEq)]
pub struct ForestRow {
    pub label: String,
    pub value: f64,
    /// The theoretical standard deviation: a thick bar at ±1 sd, a thin one at ±2 sd.
    pub sd: f64,
    pub color: &'static str,
    /// Bold label and a larger dot (the estimates).
    pub emphasis: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ForestSpec {
    pub title: String,
    pub x_label: String,
    pub rows: Vec<ForestRow>,
    pub note: Option<String>,
}

const ROW: f64 = 34.0;

pub fn render(spec: &ForestSpec, id: &str) -> String {
    let label_width = 230.0;
    let plot = Plot {
        left: label_width,
        top: 56.0,
        width: svg::WIDTH - label_width - 28.0,
        height: ROW * spec.rows.len().max(1) as f64,
    };
    let x = Scale::linear_fit(
        spec.rows.iter().flat_map(|r| [r.value - 2.0 * r.sd, r.value + 2.0 * r.sd]),
        &[],
    );
    let legend_top = plot.bottom() + 80.0;
    let note_lines = spec.note.as_ref().map_or(0.0, |n| (n.chars().count() / 95 + 1) as f64);
    let height = legend_top + 26.0 + note_lines * 18.0 + 16.0;

    let mut out = String::new();
    svg::open(&mut out, id, height, &spec.title);
    for (value, label) in x.ticks() {
        let Some(px) = plot.x(&x, value) else { continue };
        let _ = write!(
            out,
            r##"<line x1="{px:.1}" x2="{px:.1}" y1="{t:.1}" y2="{b:.1}" stroke="{GRID}"/><text x="{px:.1}" y="{ty:.1}" font-size="15" text-anchor="middle" fill="{MUTED}">{l}</text>"##,
            t = plot.top,
            b = plot.bottom(),
            ty = plot.bottom() + 22.0,
            l = svg::escape(&label),
        );
    }
    let _ = write!(
        out,
        r##"<line x1="{l:.1}" x2="{r:.1}" y1="{b:.1}" y2="{b:.1}" stroke="{MUTED}" stroke-width="1.2"/><text x="{cx:.1}" y="{ly:.1}" font-size="16" text-anchor="middle" fill="{INK}">{xl}</text>"##,
        l = plot.left,
        r = plot.right(),
        b = plot.bottom(),
        cx = plot.left + plot.width / 2.0,
        ly = plot.bottom() + 48.0,
        xl = svg::escape(&spec.x_label),
    );
    for (i, row) in spec.rows.iter().enumerate() {
        let cy = plot.top + (i as f64 + 0.5) * ROW;
        let weight = if row.emphasis { "700" } else { "400" };
        let _ = write!(
            out,
            r##"<text x="{lx:.1}" y="{ty:.1}" font-size="15" font-weight="{weight}" text-anchor="end" fill="{INK}">{l}</text>"##,
            lx = plot.left - 12.0,
            ty = cy + 5.0,
            l = svg::escape(&row.label),
        );
        let at = |v: f64| plot.x(&x, v).unwrap_or(plot.left);
        let _ = write!(
            out,
            r##"<line x1="{a:.1}" x2="{b:.1}" y1="{cy:.1}" y2="{cy:.1}" stroke="{c}" stroke-width="2" stroke-opacity="0.55"/><line x1="{p:.1}" x2="{q:.1}" y1="{cy:.1}" y2="{cy:.1}" stroke="{c}" stroke-width="6" stroke-linecap="round"/><circle cx="{m:.1}" cy="{cy:.1}" r="{r}" fill="{c}" stroke="#ffffff" stroke-width="2"><title>{t}</title></circle>"##,
            a = at(row.value - 2.0 * row.sd),
            b = at(row.value + 2.0 * row.sd),
            p = at(row.value - row.sd),
            q = at(row.value + row.sd),
            m = at(row.value),
            r = if row.emphasis { 8 } else { 6 },
            c = row.color,
            t = svg::escape(&format!(
                "{}: {} ± {}",
                row.label,
                format_value(row.value),
                format_value(row.sd)
            )),
        );
    }
    svg::legend(
        &mut out,
        legend_top,
        &[
            (Swatch::Dot { color: INK }, "value"),
            (Swatch::Line { color: INK, dashed: false }, "±1 sd (theory)"),
            (Swatch::Line { color: MUTED, dashed: false }, "thin: ±2 sd"),
        ],
    );
    if let Some(note) = &spec.note {
        svg::note(&mut out, legend_top + 26.0, note);
    }
    svg::close(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_carry_labels_values_and_error_bars() {
        let spec = ForestSpec {
            title: "Messages and estimates".into(),
            x_label: "value".into(),
            rows: vec![
                ForestRow {
                    label: "â #2 Clinic North".into(),
                    value: 0.4,
                    sd: 0.1,
                    color: svg::PALETTE[0],
                    emphasis: false,
                },
                ForestRow {
                    label: "CAPE estimate".into(),
                    value: 0.5,
                    sd: 0.025,
                    color: svg::PALETTE[1],
                    emphasis: true,
                },
            ],
            note: None,
        };
        let out = render(&spec, "f");
        assert!(out.contains(">â #2 Clinic North</text>") && out.contains(">CAPE estimate</text>"));
        assert_eq!(out.matches("<circle").count(), 2 + 1, "two rows and the legend dot");
        assert!(out.contains("CAPE estimate: 0.5000 ± 0.0250"));
        // the axis covers every ±2 sd bar
        assert!(out.contains(">0.2</text>") && out.contains(">0.6</text>"), "{out}");
    }
}
