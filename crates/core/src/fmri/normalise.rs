/*!
The normalisation every site applies before capePCA (spec §6: "clip every column to ‖x‖ ≤ 1 and
demean each subject"; spec §1: samples are mean-centred).

Order matters: each subject is demeaned first (per voxel, over its own time points), then every
time point is scaled by a public constant and clipped to norm 1. Clipping last is what makes
‖x_n‖₂ ≤ 1 hold exactly for the data actually used, which the sensitivities of capePCA
(Δ_C) and of capeDJICA's projected data rely on; the price is that a clipped subject is no longer
exactly zero-mean.

The scale must not be computed from the data (that would leak): the generator knows its model;
a site that brings its own data chooses the scale from public facts (units, a published range).
*/

use super::SiteData;

/// What normalisation did to a site's data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NormaliseReport {
    /// Time points whose norm exceeded 1 after scaling and were scaled back to norm 1.
    pub clipped: usize,
    /// All time points.
    pub samples: usize,
}

/// Demeans each subject of `site`, multiplies by `scale` and clips every time point to
/// ‖x_n‖₂ ≤ 1, in place.
pub fn normalise_site(site: &mut SiteData, scale: f64) -> NormaliseReport {
    let mut start = 0;
    for &len in &site.subject_lengths {
        let mut block = site.x.columns_mut(start, len);
        let mean = block.column_mean();
        for mut col in block.column_iter_mut() {
            col -= &mean;
        }
        start += len;
    }
    site.x *= scale;
    let clipped = clip_columns(&mut site.x);
    NormaliseReport { clipped, samples: site.samples() }
}

/// Scales every column with norm above 1 back to norm 1; returns how many were scaled.
pub fn clip_columns(x: &mut nalgebra::DMatrix<f64>) -> usize {
    let mut clipped = 0;
    for mut col in x.column_iter_mut() {
        let norm = col.norm();
        if norm > 1.0 {
            col /= norm;
            clipped += 1;
        }
    }
    clipped
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::DMatrix;

    #[test]
    fn demeans_per_subject_then_clips() {
        // Two subjects of 3 time points, 2 voxels.
        let x = DMatrix::from_column_slice(
            2,
            6,
            &[1.0, 0.0, 2.0, 0.0, 3.0, 0.0, 0.0, 10.0, 0.0, 20.0, 0.0, 30.0],
        );
        let mut site = SiteData::new(x, vec![3, 3]).unwrap();
        let report = normalise_site(&mut site, 0.5);
        // Subject 1 demeaned: voxel 0 = −1, 0, 1 → ×0.5 → −0.5, 0, 0.5 (no clip).
        // Subject 2 demeaned: voxel 1 = −10, 0, 10 → ×0.5 → ±5 → clipped to ±1.
        let expected = DMatrix::from_column_slice(
            2,
            6,
            &[-0.5, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 1.0],
        );
        assert_eq!(site.x, expected);
        assert_eq!(report, NormaliseReport { clipped: 2, samples: 6 });
    }
}
