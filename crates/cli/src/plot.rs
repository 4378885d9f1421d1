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

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
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

/// One line: points (x, y) and optionally a band [lo, hi] at each x.
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    /// (x, lo, hi), drawn as a translucent band.
    pub band: Vec<(f64, f64, f64)>,
    /// Draw dashed (e.g. a reference such as the non-private result).
    pub dashed: bool,
    /// A fixed palette index (so one mechanism keeps its colour across figures); `None` uses the
    /// series' position.
    pub colour: Option<usize>,
}

/// Where the legend goes.
#[derive(Clone, Copy, Debug, Default)]
pub enum Legend {
    #[default]
    UpperRight,
    UpperLeft,
    LowerRight,
    LowerLeft,
}

/// A chart of several series over one x axis.
#[derive(Clone, Debug, Default)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_log: bool,
    pub y_log: bool,
    pub series: Vec<Series>,
    /// Fixed y range (in data units); `None` fits the data and bands. Points and bands outside it
    /// are drawn at its edges.
    pub y_range: Option<(f64, f64)>,
    pub legend: Legend,
}

/// The pixel size of line charts.
pub const CHART_SIZE: (u32, u32) = (960, 640);

impl LineChart {
    /// Writes `<stem>.png` and `<stem>.svg`; returns both paths.
    pub fn write(&self, stem: &Path) -> Result<Vec<PathBuf>, PlotError> {
        ensure_font();
        let png = with_suffix(stem, "png");
        let svg = with_suffix(stem, "svg");
        {
            let root = BitMapBackend::new(&png, CHART_SIZE).into_drawing_area();
            self.draw(&root)?;
            root.present().map_err(err("writing the PNG"))?;
        }
        {
            let root = SVGBackend::new(&svg, CHART_SIZE).into_drawing_area();
            self.draw(&root)?;
            root.present().map_err(err("writing the SVG"))?;
        }
        Ok(vec![png, svg])
    }

    fn tx(&self, v: f64) -> Option<f64> {
        transform(v, self.x_log)
    }

    fn ty(&self, v: f64) -> Option<f64> {
        transform(v, self.y_log)
    }

    /// The data range in transformed units, with a margin.
    fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let mut xs = vec![];
        let mut ys = vec![];
        for s in &self.series {
            for &(x, y) in &s.points {
                if let (Some(x), Some(y)) = (self.tx(x), self.ty(y)) {
                    xs.push(x);
                    ys.push(y);
                }
            }
            for &(x, lo, hi) in &s.band {
                if self.tx(x).is_some() {
                    ys.extend(self.ty(lo));
                    ys.extend(self.ty(hi));
                }
            }
        }
        let span = |v: &[f64], log: bool| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if !lo.is_finite() {
                return (0.0, 1.0);
            }
            let pad = if hi > lo {
                0.05 * (hi - lo)
            } else if log {
                0.5
            } else {
                0.5 * lo.abs().max(1.0)
            };
            (lo - pad, hi + pad)
        };
        let x = span(&xs, self.x_log);
        let y = match self.y_range {
            Some((lo, hi)) => match (self.ty(lo), self.ty(hi)) {
                (Some(lo), Some(hi)) => (lo, hi),
                _ => span(&ys, self.y_log),
            },
            None => span(&ys, self.y_log),
        };
        (x, y)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(err("background"))?;
        let ((x0, x1), (y0, y1)) = self.ranges();
        let x_spec = Axis::new(x0, x1, self.x_log);
        let y_spec = Axis::new(y0, y1, self.y_log);
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 24))
            .margin(16)
            .x_label_area_size(56)
            .y_label_area_size(84)
            .build_cartesian_2d(x_spec, y_spec)
            .map_err(err("chart"))?;
        let (x_log, y_log) = (self.x_log, self.y_log);
        let fx = move |v: &f64| tick_label(*v, x_log);
        let fy = move |v: &f64| tick_label(*v, y_log);
        chart
            .configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .axis_desc_style(("sans-serif", 18))
            .label_style(("sans-serif", 15))
            .x_label_formatter(&fx)
            .y_label_formatter(&fy)
            .light_line_style(RGBColor(235, 235, 235))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(err("axes"))?;
        for (i, s) in self.series.iter().enumerate() {
            let colour = series_colour(s.colour.unwrap_or(i));
            let band: Vec<(f64, f64, f64)> = s
                .band
                .iter()
                .filter_map(|&(x, lo, hi)| {
                    Some((self.tx(x)?, self.ty(lo)?.clamp(y0, y1), self.ty(hi)?.clamp(y0, y1)))
                })
                .collect();
            if band.len() >= 2 {
                let mut outline: Vec<(f64, f64)> = band.iter().map(|b| (b.0, b.2)).collect();
                outline.extend(band.iter().rev().map(|b| (b.0, b.1)));
                chart
                    .draw_series(std::iter::once(Polygon::new(outline, colour.mix(0.15).filled())))
                    .map_err(err("band"))?;
            }
            let points: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter_map(|&(x, y)| Some((self.tx(x)?, self.ty(y)?.clamp(y0, y1))))
                .collect();
            let style = ShapeStyle::from(colour).stroke_width(if s.dashed { 2 } else { 3 });
            if s.dashed {
                chart
                    .draw_series(DashedLineSeries::new(points.clone(), 10, 6, style))
                    .map_err(err("line"))?
                    .label(&s.label)
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 24, y)], colour.stroke_width(2))
                    });
            } else {
                chart
                    .draw_series(LineSeries::new(points.clone(), style))
                    .map_err(err("line"))?
                    .label(&s.label)
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 24, y)], colour.stroke_width(3))
                    });
                chart
                    .draw_series(points.iter().map(|&p| Circle::new(p, 4, colour.filled())))
                    .map_err(err("markers"))?;
            }
        }
        let position = match self.legend {
            Legend::UpperRight => SeriesLabelPosition::UpperRight,
            Legend::UpperLeft => SeriesLabelPosition::UpperLeft,
            Legend::LowerRight => SeriesLabelPosition::LowerRight,
            Legend::LowerLeft => SeriesLabelPosition::LowerLeft,
        };
        chart
            .configure_series_labels()
            .position(position)
            .label_font(("sans-serif", 15))
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(160, 160, 160))
            .margin(10)
            .draw()
            .map_err(err("legend"))?;
        Ok(())
    }
}

/// A linear axis over (possibly log10-transformed) values with our own tick positions: bold ticks
/// from [`ticks`], light grid lines at the intermediate multiples of a log axis.
struct Axis {
    lo: f64,
    hi: f64,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl Axis {
    fn new(lo: f64, hi: f64, log: bool) -> Self {
        let bold = ticks(lo, hi, log);
        let light = if log {
            ((lo.floor() as i32)..=(hi.ceil() as i32))
                .flat_map(|d| (2..10).map(move |m| f64::from(d) + f64::from(m).log10()))
                .filter(|v| *v >= lo && *v <= hi && !bold.iter().any(|b| (b - v).abs() < 1e-9))
                .collect()
        } else {
            vec![]
        };
        Self { lo, hi, bold, light }
    }
}

impl Ranged for Axis {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let t = (value - self.lo) / (self.hi - self.lo);
        limit.0 + (t * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: plotters::coord::ranged1d::KeyPointHint>(&self, hint: H) -> Vec<f64> {
        match hint.weight() {
            plotters::coord::ranged1d::KeyPointWeight::Bold => self.bold.clone(),
            plotters::coord::ranged1d::KeyPointWeight::Any => {
                let mut all = self.bold.clone();
                all.extend(&self.light);
                all
            }
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

fn transform(v: f64, log: bool) -> Option<f64> {
    if !v.is_finite() {
        None
    } else if log {
        (v > 0.0).then(|| v.log10())
    } else {
        Some(v)
    }
}

/// Tick positions in transformed units.
fn ticks(lo: f64, hi: f64, log: bool) -> Vec<f64> {
    if log {
        let (a, b) = (lo.ceil() as i32, hi.floor() as i32);
        // At most about ten labelled decades.
        let stride = ((b - a) / 10 + 1).max(1) as usize;
        let mut t: Vec<f64> = (a..=b).step_by(stride).map(f64::from).collect();
        if hi - lo < 3.0 {
            for d in (lo.floor() as i32)..=(hi.ceil() as i32) {
                for m in [2.0f64, 5.0] {
                    let v = f64::from(d) + m.log10();
                    if v >= lo && v <= hi {
                        t.push(v);
                    }
                }
            }
        }
        t.sort_by(f64::total_cmp);
        t
    } else {
        let raw = (hi - lo) / 6.0;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 2.5, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw)
            .unwrap_or(10.0 * mag);
        let start = (lo / step).ceil() as i64;
        let end = (hi / step).floor() as i64;
        (start..=end).map(|k| k as f64 * step).collect()
    }
}

/// A tick label in data units.
fn tick_label(v: f64, log: bool) -> String {
    let x = if log { 10f64.powf(v) } else { v };
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if !(1e-4..1e5).contains(&a) {
        let e = a.log10().floor();
        let m = x / 10f64.powf(e);
        if (m.abs() - 1.0).abs() < 1e-6 {
            format!("{}1e{}", if x < 0.0 { "-" } else { "" }, e as i32)
        } else {
            format!("{m:.1}e{}", e as i32)
        }
    } else {
        let s = format!("{x:.6}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    }
}

#[allow(dead_code, reason = "shared plotting API: the heatmap grid is for the djICA spatial maps")]
/// One small image of a heatmap grid: `values` row by row, `width` × `height`.
#[derive(Clone, Debug)]
pub struct Tile {
    pub title: String,
    pub width: usize,
    pub height: usize,
    pub values: Vec<f64>,
}

#[allow(dead_code, reason = "shared plotting API: the heatmap grid is for the djICA spatial maps")]
/// How values map to colours.
#[derive(Clone, Copy, Debug, Default)]
pub enum Colours {
    /// Blue–white–red, symmetric around 0 (signed maps such as ICA components).
    #[default]
    Diverging,
    /// Dark to light (non-negative values).
    Sequential,
}

#[allow(dead_code, reason = "shared plotting API: the heatmap grid is for the djICA spatial maps")]
/// A grid of titled heatmaps (e.g. spatial maps of several components or methods).
#[derive(Clone, Debug, Default)]
pub struct HeatmapGrid {
    pub title: String,
    pub tiles: Vec<Tile>,
    pub columns: usize,
    /// Pixels per tile (the longer side).
    pub tile_px: u32,
    pub colours: Colours,
    /// Scale every tile by the grid's largest |value| instead of its own.
    pub shared_scale: bool,
}

#[allow(dead_code, reason = "shared plotting API: the heatmap grid is for the djICA spatial maps")]
impl HeatmapGrid {
    /// Writes `<stem>.png` and `<stem>.svg`; returns both paths.
    pub fn write(&self, stem: &Path) -> Result<Vec<PathBuf>, PlotError> {
        ensure_font();
        if self.tiles.is_empty() || self.columns == 0 {
            return Err(PlotError("a heatmap grid needs at least one tile and one column".into()));
        }
        for t in &self.tiles {
            if t.values.len() != t.width * t.height || t.width == 0 || t.height == 0 {
                return Err(PlotError(format!(
                    "tile '{}' has {} values for {}×{}",
                    t.title,
                    t.values.len(),
                    t.width,
                    t.height
                )));
            }
        }
        let size = self.size();
        let png = with_suffix(stem, "png");
        let svg = with_suffix(stem, "svg");
        {
            let root = BitMapBackend::new(&png, size).into_drawing_area();
            self.draw(&root)?;
            root.present().map_err(err("writing the PNG"))?;
        }
        {
            let root = SVGBackend::new(&svg, size).into_drawing_area();
            self.draw(&root)?;
            root.present().map_err(err("writing the SVG"))?;
        }
        Ok(vec![png, svg])
    }

    fn rows(&self) -> usize {
        self.tiles.len().div_ceil(self.columns)
    }

    fn size(&self) -> (u32, u32) {
        let cell = self.tile_px.max(40) + 20;
        let title = if self.title.is_empty() { 0 } else { 44 };
        let cols = self.columns.min(self.tiles.len()) as u32;
        (cols * cell + 20, self.rows() as u32 * (cell + 24) + title + 20)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(err("background"))?;
        let area = if self.title.is_empty() {
            root.clone()
        } else {
            root.titled(&self.title, ("sans-serif", 24)).map_err(err("title"))?
        };
        let area = area.margin(10, 10, 10, 10);
        let cols = self.columns.min(self.tiles.len());
        let panels = area.split_evenly((self.rows(), cols));
        let grid_max =
            self.tiles.iter().flat_map(|t| t.values.iter()).fold(0.0f64, |m, v| m.max(v.abs()));
        for (tile, panel) in self.tiles.iter().zip(panels.iter()) {
            let panel = panel.margin(4, 4, 8, 8);
            let inner = panel.titled(&tile.title, ("sans-serif", 15)).map_err(err("tile title"))?;
            let (w, h) = inner.dim_in_pixel();
            let scale = if self.shared_scale {
                grid_max
            } else {
                tile.values.iter().fold(0.0f64, |m, v| m.max(v.abs()))
            };
            let scale = if scale > 0.0 { scale } else { 1.0 };
            let px = ((w as f64 - 4.0) / tile.width as f64)
                .min((h as f64 - 4.0) / tile.height as f64)
                .max(0.1);
            let off_x = ((w as f64 - px * tile.width as f64) / 2.0).max(0.0);
            let off_y = ((h as f64 - px * tile.height as f64) / 2.0).max(0.0);
            for r in 0..tile.height {
                for c in 0..tile.width {
                    let v = tile.values[r * tile.width + c];
                    let colour = colour_of(v / scale, self.colours);
                    let x0 = (off_x + c as f64 * px).round() as i32;
                    let y0 = (off_y + r as f64 * px).round() as i32;
                    let x1 = (off_x + (c + 1) as f64 * px).round() as i32;
                    let y1 = (off_y + (r + 1) as f64 * px).round() as i32;
                    inner
                        .draw(&Rectangle::new([(x0, y0), (x1, y1)], colour.filled()))
                        .map_err(err("cell"))?;
                }
            }
            let frame = [
                (off_x.round() as i32 - 1, off_y.round() as i32 - 1),
                (
                    (off_x + px * tile.width as f64).round() as i32,
                    (off_y + px * tile.height as f64).round() as i32,
                ),
            ];
            inner.draw(&Rectangle::new(frame, RGBColor(170, 170, 170))).map_err(err("frame"))?;
        }
        Ok(())
    }
}

#[allow(dead_code, reason = "shared plotting API: the heatmap grid is for the djICA spatial maps")]
/// The colour of a value scaled to [−1, 1] (diverging) or [0, 1] (sequential).
fn colour_of(t: f64, colours: Colours) -> RGBColor {
    let lerp = |a: (f64, f64, f64), b: (f64, f64, f64), s: f64| {
        let s = s.clamp(0.0, 1.0);
        RGBColor(
            (a.0 + (b.0 - a.0) * s).round() as u8,
            (a.1 + (b.1 - a.1) * s).round() as u8,
            (a.2 + (b.2 - a.2) * s).round() as u8,
        )
    };
    if !t.is_finite() {
        return RGBColor(200, 200, 200);
    }
    match colours {
        Colours::Diverging => {
            let white = (247.0, 247.0, 247.0);
            if t >= 0.0 {
                lerp(white, (178.0, 24.0, 43.0), t)
            } else {
                lerp(white, (33.0, 102.0, 172.0), -t)
            }
        }
        Colours::Sequential => {
            let t = t.abs().clamp(0.0, 1.0);
            if t < 0.5 {
                lerp((68.0, 1.0, 84.0), (33.0, 145.0, 140.0), 2.0 * t)
            } else {
                lerp((33.0, 145.0, 140.0), (253.0, 231.0, 37.0), 2.0 * t - 1.0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_and_labels_read_well() {
        assert_eq!(ticks(-3.2, 1.1, true), vec![-3.0, -2.0, -1.0, 0.0, 1.0]);
        let short = ticks(-0.1, 1.05, true);
        assert!(short.contains(&0.0) && short.contains(&2f64.log10()) && short.contains(&1.0));
        let linear = ticks(0.0, 1.0, false);
        assert_eq!(linear.len(), 6);
        assert!(
            linear.iter().zip([0.0, 0.2, 0.4, 0.6, 0.8, 1.0]).all(|(a, b)| (a - b).abs() < 1e-12)
        );
        assert_eq!(tick_label(-3.0, true), "0.001");
        assert_eq!(tick_label(1.0, true), "10");
        assert_eq!(tick_label(-5.0, true), "1e-5");
        assert_eq!(tick_label(5e-4, false), "0.0005");
        assert_eq!(tick_label(0.25, false), "0.25");
        assert_eq!(with_suffix(Path::new("d/nn-eps0.01"), "png"), Path::new("d/nn-eps0.01.png"));
        assert_eq!(tick_label(2.5e6, false), "2.5e6");
    }

    #[test]
    fn heatmap_grid_writes_both_formats_and_refuses_bad_tiles() {
        let dir = std::env::temp_dir().join(format!("cape-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tile = |k: usize| Tile {
            title: format!("component {k}"),
            width: 12,
            height: 9,
            values: (0..108)
                .map(|i| ((i % 12) as f64 - 5.5 + k as f64).sin() * ((i / 12) as f64 - 4.0))
                .collect(),
        };
        let grid = HeatmapGrid {
            title: "Spatial maps".into(),
            tiles: (0..5).map(tile).collect(),
            columns: 3,
            tile_px: 120,
            colours: Colours::Diverging,
            shared_scale: false,
        };
        let files = grid.write(&dir.join("grid")).unwrap();
        assert_eq!(&std::fs::read(&files[0]).unwrap()[..4], b"\x89PNG");
        assert!(std::fs::read_to_string(&files[1]).unwrap().contains("component 4"));
        let mut bad = grid.clone();
        bad.tiles[0].values.pop();
        assert!(bad.write(&dir.join("bad")).unwrap_err().to_string().contains("107 values"));
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn colours_span_the_maps() {
        assert_eq!(colour_of(0.0, Colours::Diverging), RGBColor(247, 247, 247));
        assert_eq!(colour_of(1.0, Colours::Diverging), RGBColor(178, 24, 43));
        assert_eq!(colour_of(-1.0, Colours::Diverging), RGBColor(33, 102, 172));
        assert_eq!(colour_of(1.0, Colours::Sequential), RGBColor(253, 231, 37));
    }
}
