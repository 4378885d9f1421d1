/*!
Figures for the CLI's sweeps, shared by every experiment: multi-series line charts (log or linear
axes, a legend, error bands) and grids of small heatmaps with titles, each written as PNG and SVG.

Text is rendered with the bundled DejaVu Sans (`assets/`, Bitstream Vera licence) through
plotters' `ab_glyph` feature, so no system font library is needed. [`ensure_font`] registers it;
every writer calls it.

Log axes are drawn on log10-transformed values with ticks at whole decades (and 2·, 5· between
them when the range spans fewer than three decades), so tick labels read 0.001, 0.01, … and not
10^-2.5. Points that a log axis cannot show (≤ 0, non-finite) are left out.
*/

mod axis;
mod heatmap;
mod line;

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

pub use heatmap::{Colours, HeatmapGrid, Tile};
pub use line::{Legend, LineChart, Series};

static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

/// Registers the bundled font as "sans-serif" (idempotent).
pub fn ensure_font() {
    REGISTER.call_once(|| {
        if register_font("sans-serif", FontStyle::Normal, FONT).is_err() {
            eprintln!("warning: the bundled font could not be loaded; figures will lack text");
        }
    });
}

/// Why a figure could not be written.
#[derive(Debug)]
pub struct PlotError(pub String);

impl std::fmt::Display for PlotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PlotError {}

fn err<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> PlotError + '_ {
    move |e| PlotError(format!("{what}: {e}"))
}

/// `stem` + "." + `ext`, keeping any dots already in the stem (e.g. "eps0.01").
fn with_suffix(stem: &Path, ext: &str) -> PathBuf {
    let mut name = stem.as_os_str().to_owned();
    name.push(".");
    name.push(ext);
    PathBuf::from(name)
}

/// Okabe–Ito colours (distinguishable with colour-vision deficiencies), then a few more.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(240, 228, 66),
    RGBColor(128, 128, 128),
    RGBColor(148, 103, 189),
];

/// The colour of series `i`.
pub fn series_colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}
