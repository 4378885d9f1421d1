/*!
A small SVG writer shared by the charts: the frame (title, axes, ticks, labels), the legend, and
text escaping. Charts are written as self-contained SVG strings (presentation attributes, no CSS
classes), so the same markup renders in the page, downloads as `.svg` and rasterises to `.png`.
*/

use std::fmt::Write;

use crate::components::charts::scale::Scale;

/// Okabe–Ito colours: distinguishable with the common colour-vision deficiencies and on a
/// projector. Yellow is left out (unreadable on white).
pub const PALETTE: [&str; 7] =
    ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"];

pub const INK: &str = "#16202a";
pub const MUTED: &str = "#5b6773";
pub const GRID: &str = "#e3e6df";
pub const FONT: &str = "system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif";

/// The chart's total width in SVG units; the page scales it to its box.
pub const WIDTH: f64 = 760.0;

/// Escapes text for SVG content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The inner plotting area, in SVG units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plot {
    pub left: f64,
    pub top: f64,
    pub width: f64,
    pub height: f64,
}

impl Plot {
    pub fn right(&self) -> f64 {
        self.left + self.width
    }
    pub fn bottom(&self) -> f64 {
        self.top + self.height
    }
    /// The x coordinate of `value` on `scale`.
    pub fn x(&self, scale: &Scale, value: f64) -> Option<f64> {
        scale.fraction(value).map(|f| self.left + f * self.width)
    }
    /// The y coordinate of `value` on `scale` (up is larger).
    pub fn y(&self, scale: &Scale, value: f64) -> Option<f64> {
        scale.fraction(value).map(|f| self.bottom() - f * self.height)
    }
}

/// Opens the `<svg>` element of a chart `height` units tall, with a white background and the
/// title.
pub fn open(out: &mut String, id: &str, height: f64, title: &str) {
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" id="{id}" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" font-family="{FONT}" role="img" aria-label="{t}"><rect width="{WIDTH}" height="{height}" fill="#ffffff"/><text x="16" y="30" font-size="20" font-weight="700" fill="{INK}">{t}</text>"##,
        id = escape(id),
        t = escape(title),
    );
}

pub fn close(out: &mut String) {
    out.push_str("</svg>");
}

/// Grid lines, tick labels and axis labels of an x/y plot.
pub fn axes(out: &mut String, plot: &Plot, x: &Scale, y: &Scale, x_label: &str, y_label: &str) {
    for (value, label) in y.ticks() {
        let Some(py) = plot.y(y, value) else { continue };
        let _ = write!(
            out,
            r##"<line x1="{l:.1}" x2="{r:.1}" y1="{py:.1}" y2="{py:.1}" stroke="{GRID}" stroke-width="1"/><text x="{tx:.1}" y="{ty:.1}" font-size="15" text-anchor="end" fill="{MUTED}">{label}</text>"##,
            l = plot.left,
            r = plot.right(),
            tx = plot.left - 8.0,
            ty = py + 5.0,
            label = escape(&label),
        );
    }
    for (value, label) in x.ticks() {
        let Some(px) = plot.x(x, value) else { continue };
        let _ = write!(
            out,
            r##"<line x1="{px:.1}" x2="{px:.1}" y1="{t:.1}" y2="{b:.1}" stroke="{GRID}" stroke-width="1"/><text x="{px:.1}" y="{ty:.1}" font-size="15" text-anchor="middle" fill="{MUTED}">{label}</text>"##,
            t = plot.top,
            b = plot.bottom(),
            ty = plot.bottom() + 22.0,
            label = escape(&label),
        );
    }
    let _ = write!(
        out,
        r##"<rect x="{l:.1}" y="{t:.1}" width="{w:.1}" height="{h:.1}" fill="none" stroke="{MUTED}" stroke-width="1.2"/>"##,
        l = plot.left,
        t = plot.top,
        w = plot.width,
        h = plot.height,
    );
    let _ = write!(
        out,
        r##"<text x="{cx:.1}" y="{by:.1}" font-size="16" text-anchor="middle" fill="{INK}">{xl}</text><text transform="translate(18 {cy:.1}) rotate(-90)" font-size="16" text-anchor="middle" fill="{INK}">{yl}</text>"##,
        cx = plot.left + plot.width / 2.0,
        by = plot.bottom() + 48.0,
        cy = plot.top + plot.height / 2.0,
        xl = escape(x_label),
        yl = escape(y_label),
    );
}

/// One legend entry's swatch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Swatch<'a> {
    Line { color: &'a str, dashed: bool },
    Dot { color: &'a str },
}

/// The legend under the plot, three entries per row, starting at `top`. Returns its height.
pub fn legend(out: &mut String, top: f64, entries: &[(Swatch<'_>, &str)]) -> f64 {
    let per_row = legend_columns(entries.iter().map(|(_, name)| *name));
    let column = (WIDTH - 32.0) / per_row as f64;
    for (i, (swatch, name)) in entries.iter().enumerate() {
        let x = 16.0 + (i % per_row) as f64 * column;
        let y = top + (i / per_row) as f64 * LEGEND_ROW;
        match swatch {
            Swatch::Line { color, dashed } => {
                let dash = if *dashed { r##" stroke-dasharray="7 5""## } else { "" };
                let _ = write!(
                    out,
                    r##"<line x1="{x:.1}" x2="{x2:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{color}" stroke-width="3.5"{dash}/>"##,
                    x2 = x + 30.0,
                );
            }
            Swatch::Dot { color } => {
                let _ = write!(
                    out,
                    r##"<circle cx="{cx:.1}" cy="{y:.1}" r="6" fill="{color}"/>"##,
                    cx = x + 15.0
                );
            }
        }
        let _ = write!(
            out,
            r##"<text x="{tx:.1}" y="{ty:.1}" font-size="15" fill="{INK}">{name}</text>"##,
            tx = x + 38.0,
            ty = y + 5.0,
            name = escape(name),
        );
    }
    entries.len().div_ceil(per_row) as f64 * LEGEND_ROW
}

/// The height of one legend row.
pub const LEGEND_ROW: f64 = 26.0;

/// How many legend entries fit side by side (at most 3) so that the longest name does not run into
/// its neighbour: a 15 px label takes about 8 px a character, after a 38 px swatch.
pub fn legend_columns<'a>(names: impl Iterator<Item = &'a str>) -> usize {
    let longest = names.map(|n| n.chars().count()).max().unwrap_or(0) as f64;
    let fits = ((WIDTH - 32.0) / (38.0 + 8.0 * longest + 12.0)).floor() as usize;
    fits.clamp(1, 3)
}

/// The height the legend of `names` takes.
pub fn legend_height<'a>(names: impl Iterator<Item = &'a str> + Clone) -> f64 {
    let count = names.clone().count();
    count.div_ceil(legend_columns(names)) as f64 * LEGEND_ROW
}

/// A short note under everything (e.g. a caveat), wrapped at about 100 characters a line.
/// Returns its height.
pub fn note(out: &mut String, top: f64, text: &str) -> f64 {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + word.chars().count() < 100 => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    for (i, line) in lines.iter().enumerate() {
        let _ = write!(
            out,
            r##"<text x="16" y="{y:.1}" font-size="13" fill="{MUTED}">{line}</text>"##,
            y = top + 14.0 + i as f64 * 18.0,
            line = escape(line),
        );
    }
    lines.len() as f64 * 18.0
}

/// The smallest text a presenter chart carries, in SVG units: the presenter's frame shows a
/// chart at least about 1.1 times its [`WIDTH`] at 1280×800, so this is 20 px or more there,
/// legible from the back of a room.
pub const PRESENTER_MIN_TEXT: f64 = 18.0;

/// The same chart for the presenter view: every text at least [`PRESENTER_MIN_TEXT`] units
/// (titles stay the largest). The layout is the chart's own, so long labels are the chart's to
/// keep short.
pub fn for_presenter(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len() + 64);
    let mut rest = svg;
    while let Some(at) = rest.find("font-size=\"") {
        let (head, tail) = rest.split_at(at + "font-size=\"".len());
        out.push_str(head);
        let end = tail.find('"').unwrap_or(0);
        let size = tail[..end].parse::<f64>().map_or_else(
            |_| tail[..end].to_owned(),
            |v| {
                let v = if v >= 20.0 { v + 4.0 } else { v.max(PRESENTER_MIN_TEXT) };
                format!("{v}")
            },
        );
        out.push_str(&size);
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_legend_names_get_fewer_columns_and_more_rows() {
        let short = ["basic", "strong", "RDP", "moments"];
        assert_eq!(legend_columns(short.iter().copied()), 3);
        assert_eq!(legend_height(short.iter().copied()), 2.0 * LEGEND_ROW);
        let long = ["δ_cape, adversary's full view (the guarantee)", "δ_conv", "δ_pool"];
        let columns = legend_columns(long.iter().copied());
        assert!(columns < 3);
        // the widest label, at 8 px a character after its swatch, ends inside its column
        let column = (WIDTH - 32.0) / columns as f64;
        assert!(38.0 + 8.0 * long[0].chars().count() as f64 <= column);
        assert_eq!(
            legend_height(long.iter().copied()),
            3usize.div_ceil(columns) as f64 * LEGEND_ROW
        );
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape(r##"a<b & "c"'"##), "a&lt;b &amp; &quot;c&quot;&#39;");
    }

    #[test]
    fn the_frame_carries_the_labels_and_ticks() {
        let mut out = String::new();
        open(&mut out, "c1", 400.0, "δ over z");
        let plot = Plot { left: 80.0, top: 50.0, width: 600.0, height: 280.0 };
        axes(
            &mut out,
            &plot,
            &Scale::Linear { min: 0.0, max: 1.0 },
            &Scale::Log { min: 1e-3, max: 1.0 },
            "noise multiplier z",
            "δ",
        );
        let h =
            legend(&mut out, 380.0, &[(Swatch::Line { color: PALETTE[0], dashed: true }, "a<b")]);
        close(&mut out);
        assert_eq!(h, 26.0);
        assert!(out.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"c1\""));
        assert!(out.contains(">noise multiplier z</text>"));
        assert!(out.contains(">10⁻³</text>") && out.contains(">a&lt;b</text>"));
        assert!(out.contains("stroke-dasharray"));
        assert!(out.ends_with("</svg>"));
    }

    #[test]
    fn presenter_charts_have_no_small_text() {
        let svg = r#"<svg><text font-size="13">a</text><text font-size="20">T</text><text font-size="15.5">b</text></svg>"#;
        let big = for_presenter(svg);
        assert_eq!(
            big,
            r#"<svg><text font-size="18">a</text><text font-size="24">T</text><text font-size="18">b</text></svg>"#
        );
    }

    #[test]
    fn notes_wrap() {
        let mut out = String::new();
        let h = note(&mut out, 0.0, &"word ".repeat(60));
        assert_eq!(h, 3.0 * 18.0);
    }
}
