//! The vertical study's presenter figure as one SVG: the test NLL over the steps (with a CLI
//! run's curve when one is loaded) above one small multiple per column, real against the
//! synthetic twin, each with its total-variation distance. Drawn for a projector: the figure is
//! [`WIDTH`] × [`HEIGHT`] units, no larger than the presenter's frame at 1280×800 (measured: the
//! figure's box there is about 877 × 558 px, so 560 units drew 18-unit text at 17.9 px), so every
//! text of [`TEXT`] units or more is at least that many pixels there. Pure,
//! tested natively.

use std::fmt::Write;

use crate::components::charts::scale::Scale;
use crate::components::charts::svg::{FONT, GRID, INK, MUTED, PALETTE, escape};
use crate::numbers::show;
use crate::studies::vertical_vi::view::Marginal;

pub const WIDTH: f64 = 820.0;
pub const HEIGHT: f64 = 530.0;
/// The smallest text on the figure, in units (= CSS pixels or more at 1280×800).
pub const TEXT: f64 = 18.0;
/// Titles: below 20, so the presenter frame's enlargement of titles (+4 from 20) leaves the
/// layout as drawn.
const TITLE: f64 = 19.0;
/// About how wide a character of [`TEXT`] is.
const CHAR: f64 = 10.0;

pub const REAL: &str = PALETTE[0];
pub const SYNTHETIC: &str = PALETTE[1];
const RUN: &str = PALETTE[2];
const CLI: &str = PALETTE[6];

/// What the figure shows.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure<'a> {
    /// (step, test NLL) of this run; empty on the parties' own columns.
    pub nll: &'a [(u32, f64)],
    /// (step, test NLL) of a CLI run, when loaded, and its legend name.
    pub cli: Option<(&'a [(f64, f64)], &'a str)>,
    pub steps: u32,
    /// Every column, in schema order.
    pub marginals: &'a [Marginal],
    /// What the synthetic bars are: "synthetic twin, step 12 of 20" or "released twin".
    pub synthetic_label: &'a str,
    /// Why the panel has no test NLL, when it has none (the parties' own columns).
    pub no_nll: &'a str,
}

/// The figure as an `<svg id="{id}">`.
pub fn render(f: &Figure, id: &str) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" id="{id}" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" font-family="{FONT}" role="img" aria-label="{label}"><rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>"##,
        id = escape(id),
        label = escape(
            "Test NLL over the steps, and each column's shares, real against the synthetic twin"
        ),
    );
    nll_panel(&mut out, f, id);
    marginal_grid(&mut out, f);
    out.push_str("</svg>");
    out
}

/// A text's size, anchor, colour and weight.
#[derive(Clone, Copy)]
struct Style(f64, &'static str, &'static str, bool);

fn text(out: &mut String, x: f64, y: f64, Style(size, anchor, fill, bold): Style, s: &str) {
    let weight = if bold { r#" font-weight="700""# } else { "" };
    let _ = write!(
        out,
        r##"<text x="{x:.1}" y="{y:.1}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"{weight}>{s}</text>"##,
        s = escape(s),
    );
}

/// The test NLL: title and line legend on top, then the plot with three y ticks and the steps.
fn nll_panel(out: &mut String, f: &Figure, id: &str) {
    let (left, right, top, bottom) = (78.0, WIDTH - 14.0, 36.0, 192.0);
    text(out, 8.0, 22.0, Style(TITLE, "start", INK, true), "Test NLL per record (nats)");
    let mut lx = 300.0;
    let mut swatch = |out: &mut String, color: &str, dashed: bool, name: &str| {
        let dash = if dashed { r#" stroke-dasharray="8 6""# } else { "" };
        let _ = write!(
            out,
            r##"<line x1="{lx:.1}" x2="{x2:.1}" y1="16" y2="16" stroke="{color}" stroke-width="4"{dash}/>"##,
            x2 = lx + 30.0
        );
        text(out, lx + 36.0, 22.0, Style(TEXT, "start", INK, false), name);
        lx += 36.0 + CHAR * name.chars().count() as f64 + 24.0;
    };
    if !f.nll.is_empty() {
        swatch(out, RUN, false, "this run");
    }
    if let Some((_, name)) = f.cli {
        swatch(out, CLI, true, name);
    }
    let run: Vec<(f64, f64)> = f.nll.iter().map(|&(s, v)| (f64::from(s), v)).collect();
    let cli: &[(f64, f64)] = f.cli.map_or(&[], |c| c.0);
    let values = run.iter().chain(cli).map(|p| p.1).filter(|v| v.is_finite());
    if run.len() + cli.len() < 2 {
        let lines = wrap(f.no_nll, ((right - left) / CHAR) as usize);
        for (i, line) in lines.iter().enumerate() {
            text(out, 8.0, 70.0 + 26.0 * i as f64, Style(TEXT, "start", MUTED, false), line);
        }
        return;
    }
    let x_max = cli.iter().map(|p| p.0).fold(f64::from(f.steps.max(1)), f64::max);
    let x = Scale::Linear { min: 0.0, max: x_max };
    let y = Scale::linear_fit(values, &[]);
    let px = |v: f64| x.fraction(v).map(|t| left + t * (right - left));
    let py = |v: f64| y.fraction(v).map(|t| bottom - t * (bottom - top));
    // three y ticks (bottom, middle, top), the steps at 0, T/2, T
    let (y0, y1) = match y {
        Scale::Linear { min, max } | Scale::Log { min, max } => (min, max),
    };
    for v in [y0, 0.5 * (y0 + y1), y1] {
        if let Some(yy) = py(v) {
            let _ = write!(
                out,
                r##"<line x1="{left}" x2="{right}" y1="{yy:.1}" y2="{yy:.1}" stroke="{GRID}"/>"##
            );
            text(out, left - 8.0, yy + 6.0, Style(TEXT, "end", MUTED, false), &show(v));
        }
    }
    for v in [0.0, 0.5 * x_max, x_max] {
        if let Some(xx) = px(v) {
            let anchor = if v == 0.0 {
                "start"
            } else if v == x_max {
                "end"
            } else {
                "middle"
            };
            text(out, xx, bottom + 24.0, Style(TEXT, anchor, MUTED, false), &show(v.round()));
        }
    }
    let quarter = left + 0.25 * (right - left);
    text(out, quarter, bottom + 24.0, Style(TEXT, "middle", INK, false), "step");
    let _ = write!(
        out,
        r##"<defs><clipPath id="{c}"><rect x="{left}" y="{top}" width="{w:.1}" height="{h:.1}"/></clipPath></defs><g clip-path="url(#{c})">"##,
        c = escape(&format!("{id}-clip")),
        w = right - left,
        h = bottom - top,
    );
    for (points, color, dashed) in [(run.as_slice(), RUN, false), (cli, CLI, true)] {
        let d: Vec<String> = points
            .iter()
            .filter_map(|&(a, b)| Some(format!("{:.1},{:.1}", px(a)?, py(b)?)))
            .collect();
        if d.len() >= 2 {
            let dash = if dashed { r#" stroke-dasharray="8 6""# } else { "" };
            let _ = write!(
                out,
                r##"<path d="M{}" fill="none" stroke="{color}" stroke-width="4" stroke-linejoin="round"{dash}/>"##,
                d.join(" L")
            );
        }
    }
    out.push_str("</g>");
    let _ = write!(
        out,
        r##"<rect x="{left}" y="{top}" width="{w:.1}" height="{h:.1}" fill="none" stroke="{MUTED}"/>"##,
        w = right - left,
        h = bottom - top,
    );
    // The latest value, where the eye ends.
    if let Some(&(s, v)) = run.last()
        && let (Some(xx), Some(yy)) = (px(s), py(v))
    {
        let _ = write!(out, r##"<circle cx="{xx:.1}" cy="{yy:.1}" r="6" fill="{RUN}"/>"##);
        let anchor = if xx > 0.5 * (left + right) { "end" } else { "start" };
        let dx = if anchor == "end" { -10.0 } else { 10.0 };
        let ty = if yy < top + 24.0 { yy + 26.0 } else { yy - 12.0 };
        text(out, xx + dx, ty, Style(TEXT, anchor, INK, true), &show(v));
    }
}

/// One small multiple per column, two rows, under a legend line.
fn marginal_grid(out: &mut String, f: &Figure) {
    let top = 252.0;
    let has_real = f.marginals.iter().any(|m| !m.real.is_empty());
    let has_synthetic = f.marginals.iter().any(|m| !m.synthetic.is_empty());
    let mut lx = 8.0;
    text(out, lx, top, Style(TITLE, "start", INK, true), "Columns");
    lx += 100.0;
    let mut key = |out: &mut String, color: &str, name: &str| {
        let _ = write!(
            out,
            r##"<rect x="{lx:.1}" y="{y:.1}" width="18" height="18" fill="{color}"/>"##,
            y = top - 15.0
        );
        text(out, lx + 26.0, top, Style(TEXT, "start", INK, false), name);
        lx += 26.0 + CHAR * name.chars().count() as f64 + 24.0;
    };
    if has_real {
        key(out, REAL, "real (public table)");
    }
    key(out, SYNTHETIC, f.synthetic_label);
    if !has_real {
        text(
            out,
            lx,
            top,
            Style(TEXT, "start", MUTED, false),
            "· real columns stay on the party tabs",
        );
    }
    let n = f.marginals.len().max(1);
    let rows = if n <= 3 { 1 } else { 2 };
    let cols = n.div_ceil(rows);
    let (w, h) = (WIDTH / cols as f64, (HEIGHT - top - 10.0) / rows as f64);
    for (i, m) in f.marginals.iter().enumerate() {
        let (x0, y0) = ((i % cols) as f64 * w, top + 10.0 + (i / cols) as f64 * h);
        small_multiple(out, m, x0, y0, w, h, has_synthetic);
    }
}

fn small_multiple(out: &mut String, m: &Marginal, x0: f64, y0: f64, w: f64, h: f64, synth: bool) {
    let (left, right) = (x0 + 10.0, x0 + w - 10.0);
    let (bars_top, bars_bottom) = (y0 + 32.0, y0 + h - 36.0);
    text(out, left, y0 + 22.0, Style(TITLE, "start", INK, true), &m.column);
    if let Some(tv) = m.tv() {
        let _ = write!(
            out,
            r##"<text x="{right:.1}" y="{y:.1}" font-size="{TEXT}" text-anchor="end" fill="{MUTED}"><title>total-variation distance between the real and the synthetic shares (0: the same)</title>TV {tv}</text>"##,
            y = y0 + 22.0,
            tv = escape(&show(round2(tv))),
        );
    }
    let max = m.real.iter().chain(&m.synthetic).fold(0.0f64, |a, &b| a.max(b)).max(1e-9);
    let slot = (right - left) / m.labels.len().max(1) as f64;
    let series: Vec<(&[f64], &str, &str)> =
        [(m.real.as_slice(), REAL, "real"), (m.synthetic.as_slice(), SYNTHETIC, "synthetic")]
            .into_iter()
            .filter(|(v, ..)| !v.is_empty())
            .collect();
    let bar = 0.84 * slot / series.len().max(1) as f64;
    for (c, label) in m.labels.iter().enumerate() {
        for (s, (values, color, name)) in series.iter().enumerate() {
            let v = values.get(c).copied().unwrap_or(0.0);
            let height = (bars_bottom - bars_top) * v / max;
            let _ = write!(
                out,
                r##"<rect x="{x:.1}" y="{y:.1}" width="{bw:.1}" height="{height:.1}" fill="{color}"><title>{t}</title></rect>"##,
                x = left + c as f64 * slot + 0.08 * slot + s as f64 * bar,
                y = bars_bottom - height,
                bw = bar.max(0.6),
                t = escape(&format!("{}: {label}, {name} {} %", m.column, show(round1(100.0 * v)))),
            );
        }
    }
    let _ = write!(
        out,
        r##"<line x1="{left:.1}" x2="{right:.1}" y1="{bars_bottom:.1}" y2="{bars_bottom:.1}" stroke="{MUTED}"/>"##
    );
    if !synth && m.real.is_empty() {
        text(
            out,
            left,
            0.5 * (bars_top + bars_bottom),
            Style(TEXT, "start", MUTED, false),
            "from step 1",
        );
    }
    // The axis's ends: a range's edges, or the first and last label.
    let (first, last) = ends(&m.labels);
    let y = bars_bottom + 24.0;
    text(out, left, y, Style(TEXT, "start", MUTED, false), &first);
    if m.labels.len() > 1
        && CHAR * (first.chars().count() + last.chars().count()) as f64 + 20.0 < right - left
    {
        text(out, right, y, Style(TEXT, "end", MUTED, false), &last);
    }
}

/// The axis's ends: "17" and "90" for bins "17–21" … "86–90", "−5" and "64" for "−5 to −1" …
/// "60 to 64", else the first and last labels.
fn ends(labels: &[String]) -> (String, String) {
    let (Some(first), Some(last)) = (labels.first(), labels.last()) else {
        return (String::new(), String::new());
    };
    for sep in ["–", " to "] {
        if let (Some((a, _)), Some((_, b))) = (first.split_once(sep), last.split_once(sep)) {
            return (a.to_owned(), b.to_owned());
        }
    }
    (first.clone(), last.clone())
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// A TV distance to two decimals: it means something to about 0.01 (a few rows of a hundred).
fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// `text` in lines of at most `width` characters.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marginal(column: &str, labels: &[&str], real: &[f64], synthetic: &[f64]) -> Marginal {
        Marginal {
            column: column.into(),
            labels: labels.iter().map(|l| l.to_string()).collect(),
            real: real.to_vec(),
            synthetic: synthetic.to_vec(),
        }
    }

    fn sizes(svg: &str) -> Vec<f64> {
        svg.match_indices("font-size=\"")
            .map(|(i, m)| {
                let rest = &svg[i + m.len()..];
                rest[..rest.find('"').unwrap()].parse().unwrap()
            })
            .collect()
    }

    #[test]
    fn every_text_is_legible_and_every_column_has_its_multiple() {
        let columns: Vec<Marginal> = (0..7)
            .map(|i| {
                marginal(
                    &format!("c{i}"),
                    &["−5 to −1", "a", "60 to 64"],
                    &[0.2, 0.5, 0.3],
                    &[0.3, 0.4, 0.3],
                )
            })
            .collect();
        let cli = [(0.0, 4.0), (10.0, 3.0), (20.0, 2.5)];
        let f = Figure {
            nll: &[(0, 4.1), (1, 3.9), (2, 3.5)],
            cli: Some((&cli, "CLI baseline")),
            steps: 20,
            marginals: &columns,
            synthetic_label: "synthetic twin, step 2 of 20",
            no_nll: "",
        };
        let svg = render(&f, "p");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(sizes(&svg).iter().all(|&s| s >= TEXT), "{:?}", sizes(&svg));
        assert!(sizes(&svg).iter().all(|&s| s < 20.0), "no title the presenter would enlarge");
        for i in 0..7 {
            assert!(svg.contains(&format!(">c{i}</text>")), "column c{i}");
        }
        assert_eq!(svg.matches("TV 0.1<").count(), 7, "TV per column, to 2 decimals");
        assert_eq!(svg.matches(r#"stroke-dasharray"#).count(), 2, "the CLI's swatch and line");
        assert!(svg.contains(">3.5</text>"), "the latest NLL, rounded to what it means");
        assert!(svg.contains(">−5</text>") && svg.contains(">64</text>"), "the axis's ends");
        // no number with more digits than it means
        assert!(!svg.contains("3.5000") && !svg.contains("0.30000"));
    }

    #[test]
    fn own_columns_say_why_there_is_neither_nll_nor_real_bars() {
        let columns = vec![marginal("wage", &["50–67", "67–90"], &[], &[0.4, 0.6])];
        let f = Figure {
            nll: &[],
            cli: None,
            steps: 20,
            marginals: &columns,
            synthetic_label: "released twin",
            no_nll: "No test NLL: no tab holds a whole row of the parties' own columns.",
        };
        let svg = render(&f, "p");
        assert!(svg.contains("No test NLL: no tab holds a whole row"), "{svg}");
        assert!(svg.contains("real columns stay on the party tabs"));
        assert!(!svg.contains("real (public table)") && !svg.contains("TV "));
        assert!(svg.contains(">50</text>") && svg.contains(">90</text>"));
    }
}
