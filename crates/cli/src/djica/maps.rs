//! `maps.png`/`.svg` of `cape djica`: the true spatial maps above the matched recovered ones.

use std::path::{Path, PathBuf};

use capelab_core::ica_quality::{align_maps, estimated_maps, match_components};
use nalgebra::DMatrix;

use super::args::{DjicaCommon, method_name};
use super::pipeline::Run;
use crate::plot::{Colours, HeatmapGrid, Tile};

/// The true maps and the matched recovered ones as a heatmap grid: rows of true maps, each
/// followed by a row of the recovered maps matched to them (permutation and sign).
pub(super) fn maps_figure(
    run: &Run,
    truth: &DMatrix<f64>,
    c: &DjicaCommon,
    path: &Path,
) -> Result<Vec<PathBuf>, String> {
    let r = c.components;
    let g = c.grid;
    let p = &run.unmixing * truth;
    let matching = match_components(&p);
    let Some(est) = estimated_maps(&run.unmixing) else {
        return Err("the recovered unmixing is not finite; no maps to draw".into());
    };
    let aligned = align_maps(&est, &matching);
    // Which estimated component went to true j, for its match strength.
    let mut strength = vec![0.0; r];
    for (i, &j) in matching.true_index.iter().enumerate() {
        strength[j] = matching.strength[i];
    }
    let columns = r.min(10);
    let mut tiles = vec![];
    for block in (0..r).step_by(columns) {
        let range = block..(block + columns).min(r);
        for j in range.clone() {
            let col = truth.column(j);
            tiles.push(tile(format!("true {}", j + 1), g, col.iter().copied()));
        }
        for j in range.clone() {
            tiles.push(tile(
                format!("est. ({:.2})", strength[j]),
                g,
                aligned.column(j).iter().copied(),
            ));
        }
    }
    let grid = HeatmapGrid {
        title: format!(
            "{}: true / recovered, q = {:.3}",
            method_name(run.method),
            run.djica.q.unwrap_or(f64::NAN)
        ),
        tiles,
        columns,
        tile_px: 90,
        colours: Colours::Diverging,
        shared_scale: false,
    };
    grid.write(path).map_err(|e| e.to_string())
}

/// A G×G tile from a column-major D vector (voxel v = row·G + col, as the generator lays out).
fn tile(title: String, g: usize, values: impl Iterator<Item = f64>) -> Tile {
    Tile { title, width: g, height: g, values: values.collect() }
}
