/*!
Heatmaps as SVG: rows of square tiles, each a small image (one pixel per value, a diverging
blue–white–red scale symmetric about 0 per tile) drawn pixelated, with a label under it. Each
tile is an uncompressed BMP in a `data:` URL, so a 20×20 map is 1.3 KB of markup instead of 400
`<rect>`s, the page redraws it every iteration cheaply, and the SVG still downloads and
rasterises to PNG like the other charts.
*/

use std::fmt::Write;

use crate::components::charts::svg::{self, INK, MUTED};

/// One image: `width × height` values, row-major (row 0 on top).
#[derive(Clone, Debug, PartialEq)]
pub struct Tile {
    pub label: String,
    pub width: usize,
    pub height: usize,
    pub values: Vec<f64>,
}

impl Tile {
    /// A G×G map stored column by column of a voxel vector (voxel v = x + G·y, as the
    /// generator lays its maps out).
    pub fn square(label: String, grid: usize, voxels: &[f64]) -> Self {
        Tile { label, width: grid, height: grid, values: voxels.to_vec() }
    }

    /// A matrix stored column-major (rows × cols).
    pub fn matrix(label: String, rows: usize, cols: usize, column_major: &[f64]) -> Self {
        let values = (0..rows).flat_map(|i| (0..cols).map(move |j| column_major[i + j * rows]));
        Tile { label, width: cols, height: rows, values: values.collect() }
    }
}

/// A titled grid of tile rows, each row with a label on its left.
#[derive(Clone, Debug, PartialEq)]
pub struct HeatmapSpec {
    pub title: String,
    pub rows: Vec<(String, Vec<Tile>)>,
    /// Tile side in SVG units.
    pub tile: f64,
    pub note: Option<String>,
}

/// The grid as a self-contained SVG element with id `id`.
pub fn render(spec: &HeatmapSpec, id: &str) -> String {
    let label_width = 92.0;
    let gap = 8.0;
    let row_height = spec.tile + 22.0;
    let columns = spec.rows.iter().map(|(_, t)| t.len()).max().unwrap_or(0).max(1);
    let per_row =
        (((svg::WIDTH - label_width - 16.0 + gap) / (spec.tile + gap)).floor() as usize).max(1);
    let lines_per_row = columns.div_ceil(per_row);
    let top = 48.0;
    let note_height = spec.note.as_ref().map_or(0.0, |_| 24.0);
    let height = top + (spec.rows.len() * lines_per_row) as f64 * row_height + note_height + 8.0;
    let mut out = String::new();
    svg::open(&mut out, id, height, &spec.title);
    let mut y = top;
    for (label, tiles) in &spec.rows {
        let _ = write!(
            out,
            r#"<text x="12" y="{:.1}" font-size="13" fill="{INK}">{}</text>"#,
            y + spec.tile / 2.0 + 4.0,
            svg::escape(label)
        );
        for chunk in tiles.chunks(per_row) {
            for (k, tile) in chunk.iter().enumerate() {
                let x = label_width + k as f64 * (spec.tile + gap);
                let _ = write!(
                    out,
                    r#"<image x="{x:.1}" y="{y:.1}" width="{s:.1}" height="{s:.1}" preserveAspectRatio="none" style="image-rendering:pixelated" href="{href}"/><rect x="{x:.1}" y="{y:.1}" width="{s:.1}" height="{s:.1}" fill="none" stroke="{MUTED}" stroke-width="0.5"/><text x="{cx:.1}" y="{ty:.1}" font-size="11" text-anchor="middle" fill="{MUTED}">{t}</text>"#,
                    s = spec.tile,
                    href = bmp_data_url(tile),
                    cx = x + spec.tile / 2.0,
                    ty = y + spec.tile + 14.0,
                    t = svg::escape(&tile.label),
                );
            }
            y += row_height;
        }
    }
    if let Some(note) = &spec.note {
        let _ = write!(
            out,
            r#"<text x="12" y="{:.1}" font-size="12" fill="{MUTED}">{}</text>"#,
            y + 14.0,
            svg::escape(note)
        );
    }
    svg::close(&mut out);
    out
}

/// Blue (negative) – white (0) – red (positive), scaled to the tile's largest |value|.
pub fn colour(value: f64, largest: f64) -> [u8; 3] {
    if !(value.is_finite() && largest > 0.0) {
        return [200, 200, 200];
    }
    let t = (value / largest).clamp(-1.0, 1.0);
    let fade = |t: f64| (255.0 * (1.0 - t.abs())).round() as u8;
    if t < 0.0 { [fade(t), fade(t), 255] } else { [255, fade(t), fade(t)] }
}

/// The tile as a 24-bit BMP in a `data:` URL.
pub fn bmp_data_url(tile: &Tile) -> String {
    format!("data:image/bmp;base64,{}", base64(&bmp(tile)))
}

fn bmp(tile: &Tile) -> Vec<u8> {
    let (w, h) = (tile.width.max(1), tile.height.max(1));
    let largest = tile.values.iter().filter(|v| v.is_finite()).fold(0.0f64, |m, v| m.max(v.abs()));
    let row_bytes = (3 * w).div_ceil(4) * 4;
    let size = 54 + row_bytes * h;
    let mut out = Vec::with_capacity(size);
    let u32le = |out: &mut Vec<u8>, v: usize| out.extend_from_slice(&(v as u32).to_le_bytes());
    out.extend_from_slice(b"BM");
    u32le(&mut out, size);
    u32le(&mut out, 0);
    u32le(&mut out, 54);
    u32le(&mut out, 40);
    u32le(&mut out, w);
    u32le(&mut out, h);
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&24u16.to_le_bytes());
    for _ in 0..6 {
        u32le(&mut out, 0);
    }
    // BMP rows run bottom-up, pixels as B, G, R.
    for row in (0..h).rev() {
        let start = out.len();
        for col in 0..w {
            let v = tile.values.get(row * w + col).copied().unwrap_or(f64::NAN);
            let [r, g, b] = colour(v, largest);
            out.extend_from_slice(&[b, g, r]);
        }
        out.resize(start + row_bytes, 0);
    }
    out
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * k)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_vectors() {
        for (input, expected) in
            [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foobar", "Zm9vYmFy")]
        {
            assert_eq!(base64(input.as_bytes()), expected);
        }
    }

    #[test]
    fn bmp_rows_are_padded_bottom_up_with_the_diverging_scale() {
        // 3×2: row 0 = (−1, 0, 1), row 1 = (0.5, NaN, 0).
        let tile = Tile {
            label: "t".into(),
            width: 3,
            height: 2,
            values: vec![-1.0, 0.0, 1.0, 0.5, f64::NAN, 0.0],
        };
        let b = bmp(&tile);
        let row_bytes = 12; // 9 bytes of pixels padded to 12
        assert_eq!(b.len(), 54 + 2 * row_bytes);
        assert_eq!(&b[0..2], b"BM");
        assert_eq!(u32::from_le_bytes(b[18..22].try_into().unwrap()), 3);
        // The first stored row is the bottom one (row 1): 0.5 → light red, NaN → grey.
        assert_eq!(&b[54..57], &[128, 128, 255]);
        assert_eq!(&b[57..60], &[200, 200, 200]);
        // The top row: −1 → blue (B, G, R = 255, 0, 0), 0 → white, 1 → red.
        let top = 54 + row_bytes;
        assert_eq!(&b[top..top + 9], &[255, 0, 0, 255, 255, 255, 0, 0, 255]);
    }

    #[test]
    fn a_column_major_matrix_reads_row_by_row() {
        let t = Tile::matrix("m".into(), 2, 2, &[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(t.values, vec![1.0, 3.0, 2.0, 4.0]);
        let svg = render(
            &HeatmapSpec {
                title: "maps".into(),
                rows: vec![("true".into(), vec![t])],
                tile: 60.0,
                note: None,
            },
            "h",
        );
        assert!(svg.starts_with("<svg") && svg.contains("data:image/bmp;base64,Qk"));
    }
}
