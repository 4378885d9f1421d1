//! The data a run works on: the synthetic generator's sites and true maps, or real per-site
//! matrices from files (normalised and clipped, no ground truth).

use std::path::PathBuf;

use capelab_core::fmri::matrix_io::{parse_csv_bytes, parse_npy};
use capelab_core::fmri::normalise::normalise_site;
use capelab_core::fmri::{SiteData, SyntheticConfig, generate};
use nalgebra::DMatrix;

use super::args::{DjicaCommon, PresetArg};

fn synthetic(c: &DjicaCommon, subjects: usize) -> SyntheticConfig {
    let base = match c.preset {
        PresetArg::Default => SyntheticConfig::well_conditioned(subjects, c.sites),
        PresetArg::Paper => SyntheticConfig::paper_like(subjects, c.sites),
    };
    SyntheticConfig { grid: c.grid, components: c.components, timepoints: c.timepoints, ..base }
}

/// What a run works on: the sites' normalised data and, for synthetic data, the true maps.
pub(super) struct Study {
    pub(super) sites: Vec<SiteData>,
    /// A (D×R), when known.
    pub(super) truth: Option<DMatrix<f64>>,
    pub(super) clipped_fraction: f64,
    /// "synthetic (default preset)" or the files.
    pub(super) source: String,
}

pub(super) fn synthetic_study(
    c: &DjicaCommon,
    subjects: usize,
    seed: u64,
) -> Result<Study, String> {
    let study = generate(&synthetic(c, subjects), seed).map_err(|e| e.to_string())?;
    Ok(Study {
        sites: study.sites,
        truth: Some(study.mixing),
        clipped_fraction: study.clipped_fraction,
        source: format!("synthetic ({} preset)", format!("{:?}", c.preset).to_lowercase()),
    })
}

/// One site per file: a D×N_s matrix (voxels × time points) as CSV or `.npy`, subjects of
/// `timepoints` columns each, demeaned per subject, scaled by the public `scale` and clipped to
/// ‖x‖ ≤ 1 (spec §6). No ground truth, so no q_NGI.
pub(super) fn load_study(
    files: &[PathBuf],
    timepoints: usize,
    scale: f64,
) -> Result<Study, String> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(format!("--data-scale {scale} must be positive and finite"));
    }
    let mut sites = vec![];
    let (mut clipped, mut samples) = (0usize, 0usize);
    for (s, path) in files.iter().enumerate() {
        let bytes = std::fs::read(path).map_err(|e| format!("--data {}: {e}", path.display()))?;
        let x = if path.extension().is_some_and(|e| e == "npy") {
            parse_npy(&bytes)
        } else {
            parse_csv_bytes(&bytes)
        }
        .map_err(|e| format!("--data {}: {e}", path.display()))?;
        if timepoints == 0 || x.ncols() == 0 || !x.ncols().is_multiple_of(timepoints) {
            return Err(format!(
                "--data {}: {} time points (columns) are not a whole number of subjects of \
                 --timepoints {timepoints}",
                path.display(),
                x.ncols()
            ));
        }
        if let Some(first) = sites.first().map(|f: &SiteData| f.voxels())
            && first != x.nrows()
        {
            return Err(format!(
                "--data {}: {} voxels (rows), but site 1 has {first}",
                path.display(),
                x.nrows()
            ));
        }
        let lengths = vec![timepoints; x.ncols() / timepoints];
        let mut site = SiteData::new(x, lengths).map_err(|e| format!("site {}: {e}", s + 1))?;
        let report = normalise_site(&mut site, scale);
        clipped += report.clipped;
        samples += report.samples;
        sites.push(site);
    }
    Ok(Study {
        sites,
        truth: None,
        clipped_fraction: clipped as f64 / samples.max(1) as f64,
        source: files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", "),
    })
}
