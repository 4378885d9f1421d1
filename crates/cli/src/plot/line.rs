//! Line charts: several series over one x axis, log or linear, with error bands and a legend.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::axis::{Axis, tick_label, transform};
use super::{PlotError, ensure_font, err, series_colour, with_suffix};

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
