//! 64-bit ring elements as a bit image: one row per vector, one cell per bit (most significant
//! first), dark for 1. Masked SecureAgg inputs look like static; plain fixed-point numbers show
//! long runs of equal leading bits.

use std::fmt::Write;

use crate::components::charts::svg::{self, INK, MUTED};

/// Rows of ring vectors under one heading.
#[derive(Clone, Debug, PartialEq)]
pub struct BitGroup {
    pub heading: String,
    /// (label, the vector's elements); each element is drawn as its 64 bits.
    pub rows: Vec<(String, Vec<u64>)>,
    /// A line under the rows, e.g. the uniformity statistic.
    pub caption: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BitImageSpec {
    pub title: String,
    pub groups: Vec<BitGroup>,
}

const ROW: f64 = 22.0;
const LABEL_WIDTH: f64 = 170.0;
/// At most this many elements per row are drawn (128 bits fit the width).
pub const MAX_ELEMENTS: usize = 2;

pub fn render(spec: &BitImageSpec, id: &str) -> String {
    let bits_per_row = spec
        .groups
        .iter()
        .flat_map(|g| g.rows.iter().map(|(_, v)| v.len().min(MAX_ELEMENTS) * 64))
        .max()
        .unwrap_or(64)
        .max(64);
    let cell = (svg::WIDTH - LABEL_WIDTH - 24.0) / bits_per_row as f64;
    let mut height = 48.0;
    for group in &spec.groups {
        height += 30.0 + group.rows.len() as f64 * ROW + 34.0;
    }
    let mut out = String::new();
    svg::open(&mut out, id, height + 8.0, &spec.title);
    let mut y = 48.0;
    for group in &spec.groups {
        let _ = write!(
            out,
            r##"<text x="16" y="{ty:.1}" font-size="16" font-weight="700" fill="{INK}">{h}</text>"##,
            ty = y + 20.0,
            h = svg::escape(&group.heading),
        );
        y += 30.0;
        for (label, values) in &group.rows {
            let _ = write!(
                out,
                r##"<text x="{lx:.1}" y="{ty:.1}" font-size="14" text-anchor="end" fill="{INK}">{l}</text>"##,
                lx = LABEL_WIDTH - 10.0,
                ty = y + 15.0,
                l = svg::escape(label),
            );
            // One path per row with a unit square per set bit keeps the markup small.
            let mut path = String::new();
            for (k, value) in values.iter().take(MAX_ELEMENTS).enumerate() {
                for bit in 0..64 {
                    if value >> (63 - bit) & 1 == 1 {
                        let x = LABEL_WIDTH + (k * 64 + bit) as f64 * cell;
                        let _ = write!(
                            path,
                            "M{x:.2} {y:.1}h{cell:.2}v{h:.1}h-{cell:.2}z",
                            h = ROW - 3.0
                        );
                    }
                }
            }
            let width = values.len().min(MAX_ELEMENTS) as f64 * 64.0 * cell;
            let _ = write!(
                out,
                r##"<rect x="{LABEL_WIDTH}" y="{y:.1}" width="{width:.2}" height="{h:.1}" fill="#eef0ea"/><path d="{path}" fill="{INK}"/>"##,
                h = ROW - 3.0,
            );
            y += ROW;
        }
        let _ = write!(
            out,
            r##"<text x="{LABEL_WIDTH}" y="{ty:.1}" font-size="14" fill="{MUTED}">{c}</text>"##,
            ty = y + 20.0,
            c = svg::escape(&group.caption),
        );
        y += 34.0;
    }
    svg::close(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_square_per_set_bit() {
        let spec = BitImageSpec {
            title: "bits".into(),
            groups: vec![BitGroup {
                heading: "masked".into(),
                rows: vec![("#2".into(), vec![0b1011, u64::MAX, 7])],
                caption: "ones: 50%".into(),
            }],
        };
        let out = render(&spec, "b");
        // 3 bits of the first element, 64 of the second; the third is not drawn
        assert_eq!(out.matches("h-").count(), 67);
        assert!(out.contains(">ones: 50%</text>") && out.contains(">#2</text>"));
    }
}
