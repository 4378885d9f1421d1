//! Grouped bars (a few series side by side per category), as an SVG string: a column's marginal
//! distribution, real beside synthetic, where a line between categories would suggest an order
//! that labels do not have.

use std::fmt::Write;

use crate::components::charts::scale::Scale;
use crate::components::charts::svg::{self, INK, MUTED, Plot, Swatch};

/// One series: a value per category (in the spec's category order).
#[derive(Clone, Debug, PartialEq)]
pub struct BarSeries {
    pub name: String,
    pub color: &'static str,
    pub values: Vec<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BarChartSpec {
    pub title: String,
    pub y_label: String,
    pub categories: Vec<String>,
    pub series: Vec<BarSeries>,
}

const PLOT_HEIGHT: f64 = 220.0;

/// The chart as a self-contained SVG element with id `id`. Category labels are turned when there
/// are many (a party's 19 years of education).
pub fn render(spec: &BarChartSpec, id: &str) -> String {
    let n = spec.categories.len().max(1);
    let turned = n > 8;
    let label_room = if turned { 92.0 } else { 40.0 };
    let plot = Plot { left: 82.0, top: 52.0, width: svg::WIDTH - 82.0 - 28.0, height: PLOT_HEIGHT };
    let legend_top = plot.bottom() + label_room + 20.0;
    let legend_height = svg::legend_height(spec.series.iter().map(|s| s.name.as_str()));
    let height = legend_top + legend_height + 8.0;
    let y = Scale::linear_fit(spec.series.iter().flat_map(|s| s.values.iter().copied()), &[0.0]);
    let mut out = String::new();
    svg::open(&mut out, id, height, &spec.title);
    for (value, label) in y.ticks() {
        let Some(py) = plot.y(&y, value) else { continue };
        let _ = write!(
            out,
            r##"<line x1="{l:.1}" x2="{r:.1}" y1="{py:.1}" y2="{py:.1}" stroke="{g}" stroke-width="1"/><text x="{tx:.1}" y="{ty:.1}" font-size="14" text-anchor="end" fill="{MUTED}">{label}</text>"##,
            l = plot.left,
            r = plot.right(),
            g = svg::GRID,
            tx = plot.left - 8.0,
            ty = py + 5.0,
            label = svg::escape(&label),
        );
    }
    let slot = plot.width / n as f64;
    let bars = spec.series.len().max(1) as f64;
    let bar = 0.8 * slot / bars;
    let zero = plot.y(&y, 0.0).unwrap_or(plot.bottom());
    for (c, category) in spec.categories.iter().enumerate() {
        let x0 = plot.left + c as f64 * slot + 0.1 * slot;
        for (s, series) in spec.series.iter().enumerate() {
            let v = series.values.get(c).copied().unwrap_or(0.0);
            let Some(top) = plot.y(&y, v) else { continue };
            let _ = write!(
                out,
                r##"<rect x="{x:.1}" y="{t:.1}" width="{w:.1}" height="{h:.1}" fill="{col}"><title>{name}: {v:.3}</title></rect>"##,
                x = x0 + s as f64 * bar,
                t = top.min(zero),
                w = bar.max(0.5),
                h = (zero - top).abs(),
                col = series.color,
                name = svg::escape(&format!("{category}, {}", series.name)),
            );
        }
        let cx = plot.left + (c as f64 + 0.5) * slot;
        let ty = plot.bottom() + 18.0;
        let label = svg::escape(category);
        if turned {
            let _ = write!(
                out,
                r##"<text transform="translate({cx:.1} {ty:.1}) rotate(-50)" font-size="12" text-anchor="end" fill="{MUTED}">{label}</text>"##
            );
        } else {
            let _ = write!(
                out,
                r##"<text x="{cx:.1}" y="{ty:.1}" font-size="13" text-anchor="middle" fill="{MUTED}">{label}</text>"##
            );
        }
    }
    let _ = write!(
        out,
        r##"<line x1="{l:.1}" x2="{r:.1}" y1="{zero:.1}" y2="{zero:.1}" stroke="{MUTED}" stroke-width="1.2"/><text transform="translate(18 {cy:.1}) rotate(-90)" font-size="15" text-anchor="middle" fill="{INK}">{yl}</text>"##,
        l = plot.left,
        r = plot.right(),
        cy = plot.top + plot.height / 2.0,
        yl = svg::escape(&spec.y_label),
    );
    let entries: Vec<(Swatch<'_>, &str)> =
        spec.series.iter().map(|s| (Swatch::Dot { color: s.color }, s.name.as_str())).collect();
    svg::legend(&mut out, legend_top, &entries);
    svg::close(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bar_per_category_and_series_and_every_label() {
        let spec = BarChartSpec {
            title: "sex".into(),
            y_label: "share".into(),
            categories: vec!["Female".into(), "Male".into()],
            series: vec![
                BarSeries { name: "real".into(), color: svg::PALETTE[0], values: vec![0.4, 0.6] },
                BarSeries {
                    name: "synthetic".into(),
                    color: svg::PALETTE[1],
                    values: vec![0.5, 0.5],
                },
            ],
        };
        let svg = render(&spec, "m");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("<rect x=").count(), 4);
        assert!(svg.contains(">Female<") && svg.contains(">synthetic<"));
    }
}
