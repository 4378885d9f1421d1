//! Heatmap grids: titled small images (e.g. spatial maps), diverging or sequential colours.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{PlotError, ensure_font, err, with_suffix};

/// One small image of a heatmap grid: `values` row by row, `width` × `height`.
#[derive(Clone, Debug)]
pub struct Tile {
    pub title: String,
    pub width: usize,
    pub height: usize,
    pub values: Vec<f64>,
}

/// How values map to colours.
#[derive(Clone, Copy, Debug, Default)]
pub enum Colours {
    /// Blue–white–red, symmetric around 0 (signed maps such as ICA components).
    #[default]
    Diverging,
    /// Dark to light (non-negative values).
    Sequential,
}

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
