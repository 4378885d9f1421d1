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
    // Rows of `xt` are time points, columns voxels (see `SiteData`): a subject is a block of
    // rows, and each voxel's course within it is a contiguous run.
    let mut start = 0;
    for &len in &site.subject_lengths {
        for mut course in site.xt.column_iter_mut() {
            let mut block = course.rows_mut(start, len);
            let mean = block.iter().sum::<f64>() / len as f64;
            block.add_scalar_mut(-mean);
        }
        start += len;
    }
    site.xt *= scale;
    let clipped = clip_time_points(&mut site.xt);
    NormaliseReport { clipped, samples: site.samples() }
}

/// Scales every row (time point) of X_sᵀ with norm above 1 back to norm 1; returns how many
/// were scaled. Works down the columns, so every pass is contiguous.
pub fn clip_time_points(xt: &mut nalgebra::DMatrix<f64>) -> usize {
    let mut norm_sq = vec![0.0; xt.nrows()];
    for course in xt.column_iter() {
        for (acc, v) in norm_sq.iter_mut().zip(course.iter()) {
            *acc += v * v;
        }
    }
    // Dividing by 1 leaves a value exactly as it is.
    let norms: Vec<f64> = norm_sq.iter().map(|&s| if s > 1.0 { s.sqrt() } else { 1.0 }).collect();
    for mut course in xt.column_iter_mut() {
        for (v, &norm) in course.iter_mut().zip(&norms) {
            *v /= norm;
        }
    }
    norm_sq.iter().filter(|&&s| s > 1.0).count()
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
        assert_eq!(site.x(), expected);
        assert_eq!(report, NormaliseReport { clipped: 2, samples: 6 });
    }
}
