//! The data a run works on: the synthetic generator's sites and true maps, or real per-site
//! matrices from files (normalised and clipped, no ground truth).

use std::path::{Path, PathBuf};

use capelab_core::fmri::matrix_io::{parse_csv_bytes, parse_npy};
use capelab_core::fmri::nifti::{BrainMask, site_from_nifti};
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
    check_scale(scale)?;
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

fn check_scale(scale: f64) -> Result<(), String> {
    if scale.is_finite() && scale > 0.0 {
        Ok(())
    } else {
        Err(format!("--data-scale {scale} must be positive and finite"))
    }
}

/// The subjects' images of each `--nifti-site` directory: its `*.nii` and `*.nii.gz` files in
/// name order (so a run is reproducible); a directory without any is an error.
pub(super) fn nifti_subject_files(dirs: &[PathBuf]) -> Result<Vec<Vec<PathBuf>>, String> {
    dirs.iter()
        .map(|dir| {
            let entries = std::fs::read_dir(dir)
                .map_err(|e| format!("--nifti-site {}: {e}", dir.display()))?;
            let mut files = vec![];
            for entry in entries {
                let path =
                    entry.map_err(|e| format!("--nifti-site {}: {e}", dir.display()))?.path();
                let name =
                    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                if path.is_file() && (name.ends_with(".nii") || name.ends_with(".nii.gz")) {
                    files.push(path);
                }
            }
            files.sort();
            if files.is_empty() {
                return Err(format!(
                    "--nifti-site {}: no *.nii or *.nii.gz file (one 4-D image per subject)",
                    dir.display()
                ));
            }
            Ok(files)
        })
        .collect()
}

fn read(path: &Path, flag: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{flag} {}: {e}", path.display()))
}

/// One site per directory of NIfTI-1 images (see [`nifti_subject_files`]) under one mask:
/// D = voxels with mask > 0, each subject its own volumes; then the same demeaning, public
/// `scale` and clip as `--data` (spec §6). No ground truth, so no q_NGI.
pub(super) fn nifti_study(
    sites: &[Vec<PathBuf>],
    mask: &Path,
    scale: f64,
) -> Result<Study, String> {
    check_scale(scale)?;
    let mask_bytes = read(mask, "--mask")?;
    let mask_grid = BrainMask::from_nifti(&mask_bytes)
        .map_err(|e| format!("--mask {}: {e}", mask.display()))?;
    let mut loaded = vec![];
    let (mut clipped, mut samples) = (0usize, 0usize);
    for files in sites {
        let bytes = files.iter().map(|f| read(f, "--nifti-site")).collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
        let mut site = site_from_nifti(&refs, &mask_grid).map_err(|e| match e {
            capelab_core::fmri::nifti::NiftiError::Subject { subject, error } => {
                format!("--nifti-site {}: {error}", files[subject].display())
            }
            other => other.to_string(),
        })?;
        let report = normalise_site(&mut site, scale);
        clipped += report.clipped;
        samples += report.samples;
        loaded.push(site);
    }
    let listing = sites
        .iter()
        .enumerate()
        .map(|(s, files)| {
            let names = files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>();
            format!("site {}: {}", s + 1, names.join(", "))
        })
        .collect::<Vec<_>>();
    Ok(Study {
        sites: loaded,
        truth: None,
        clipped_fraction: clipped as f64 / samples.max(1) as f64,
        source: format!("NIfTI ({}; mask {})", listing.join("; "), mask.display()),
    })
}
