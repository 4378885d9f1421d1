/*!
The seeded synthetic fMRI study (spec §6 proposal, §9.7): the temporal joint-ICA model
X_{s,m} = A·S_{s,m} with one shared map matrix A (D×R, D = G²) and independent sources per
subject, plus optional white noise, then per-site normalisation ([`super::normalise`]).

Two presets:
- [`SyntheticConfig::paper_like`]: random overlapping blobs (2–5 px) and GARCH sources with
  Gaussian innovations, as spec §6 proposes. Nearly the hardest case (spec §9.7).
- [`SyntheticConfig::well_conditioned`] (the default): jittered lattice, 1–2 px blobs, Laplace
  innovations: cond(A) ≈ 1–2 and clearly non-Gaussian sources.

Scale: the maps have unit norm and the sources unit variance, so E‖A·s‖² = R; the mixture is
multiplied by `signal_rms/√R` so a typical time point has norm `signal_rms` before the clip at 1.
This scale comes from the model, never from the data.

Reproducibility: the maps come from the stream `fmri/maps` and subject m's sources (m counted
over the whole study) from `fmri/subject/{m}` of the data seed, so re-splitting the same
subjects over different sites does not change them.
*/

use super::garch::{GarchRanges, garch_series};
use super::maps::blob_maps;
use super::normalise::{NormaliseReport, normalise_site};
use super::{FmriError, SiteData};
use crate::rng::derive;
use nalgebra::DMatrix;
use rand::RngExt;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

pub use super::garch::Innovations;
pub use super::maps::MapLayout;

/// Everything that defines a synthetic study (except the seed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SyntheticConfig {
    /// G: the maps are G×G images, D = G² voxels (paper: 30).
    pub grid: usize,
    /// R: the number of sources and maps (paper: 20).
    pub components: usize,
    /// N_m: time points per subject (paper: 250).
    pub timepoints: usize,
    /// M_s for each site; the number of sites S is its length.
    pub subjects_per_site: Vec<usize>,
    /// How the maps are laid out.
    pub layout: MapLayout,
    /// The GARCH innovation distribution.
    pub innovations: Innovations,
    /// Ranges of the GARCH coefficients.
    pub garch: GarchRanges,
    /// Typical ‖x_n‖₂ before the clip at 1 (see the module docs).
    pub signal_rms: f64,
    /// Standard deviation of i.i.d. voxel noise added to the mixture, relative to one voxel's
    /// typical signal (0 = none, the spec's default).
    pub noise: f64,
}

impl SyntheticConfig {
    /// The demo default (spec §9.7): jittered lattice, narrow blobs, Laplace innovations;
    /// G = 30, R = 20, N_m = 250; `subjects` split as evenly as possible over `sites`.
    pub fn well_conditioned(subjects: usize, sites: usize) -> Self {
        SyntheticConfig {
            grid: 30,
            components: 20,
            timepoints: 250,
            subjects_per_site: even_split(subjects, sites),
            layout: MapLayout::well_conditioned(),
            innovations: Innovations::Laplace,
            garch: GarchRanges::default(),
            signal_rms: 0.5,
            noise: 0.0,
        }
    }

    /// The paper-like preset (spec §6 proposal): random blobs of 2–5 px, Gaussian innovations.
    pub fn paper_like(subjects: usize, sites: usize) -> Self {
        SyntheticConfig {
            layout: MapLayout::paper_like(),
            innovations: Innovations::Gaussian,
            ..Self::well_conditioned(subjects, sites)
        }
    }

    /// D = G².
    pub fn voxels(&self) -> usize {
        self.grid * self.grid
    }

    /// M = Σ M_s.
    pub fn subjects(&self) -> usize {
        self.subjects_per_site.iter().sum()
    }

    /// Checks every parameter; the message names the bad value.
    pub fn validate(&self) -> Result<(), FmriError> {
        let bad = |msg: String| Err(FmriError::Config(msg));
        if self.grid < 2 {
            return bad(format!("grid {} must be at least 2", self.grid));
        }
        if self.components < 2 || self.components > self.voxels() {
            return bad(format!(
                "components R = {} must be between 2 and D = {}",
                self.components,
                self.voxels()
            ));
        }
        if self.timepoints < 2 {
            return bad(format!("time points per subject {} must be at least 2", self.timepoints));
        }
        if self.subjects_per_site.is_empty() || self.subjects_per_site.contains(&0) {
            return bad(format!(
                "subjects per site {:?}: need at least one site and one subject per site",
                self.subjects_per_site
            ));
        }
        if let Innovations::StudentT { dof } = self.innovations
            && !(dof > 2.0 && dof.is_finite())
        {
            return bad(format!(
                "Student-t degrees of freedom {dof} must exceed 2 (finite variance)"
            ));
        }
        if !self.garch.is_valid() {
            return bad(format!(
                "GARCH ranges {:?} must satisfy 0 ≤ a, 0 ≤ b, a_max + b_max < 1",
                self.garch
            ));
        }
        if !(self.signal_rms > 0.0 && self.signal_rms.is_finite()) {
            return bad(format!("signal_rms {} must be positive", self.signal_rms));
        }
        if !(self.noise >= 0.0 && self.noise.is_finite()) {
            return bad(format!("noise {} must be non-negative", self.noise));
        }
        self.layout.validate().map_err(FmriError::Config)
    }
}

/// `subjects` over `sites` as evenly as possible, the first sites taking one more.
pub fn even_split(subjects: usize, sites: usize) -> Vec<usize> {
    let sites = sites.max(1);
    (0..sites).map(|s| subjects / sites + usize::from(s < subjects % sites)).collect()
}

/// A generated study: the sites' normalised data and the ground truth.
#[derive(Clone, Debug)]
pub struct SyntheticStudy {
    /// The configuration it was generated from.
    pub config: SyntheticConfig,
    /// The true maps A (D×R, unit-norm columns): q_NGI is computed against them.
    pub mixing: DMatrix<f64>,
    /// Each site's data after demeaning and clipping.
    pub sites: Vec<SiteData>,
    /// Fraction of all time points that the clip at ‖x‖ = 1 scaled down.
    pub clipped_fraction: f64,
}

/// Generates the study for `config` from the data seed `seed`.
pub fn generate(config: &SyntheticConfig, seed: u64) -> Result<SyntheticStudy, FmriError> {
    config.validate()?;
    let mixing = maps(config, seed);
    // Each site's subjects in parallel (`crate::par`): a subject's streams depend on its global
    // index only, so the sites are independent; the counts are added in site order.
    let firsts: Vec<(usize, usize)> = config
        .subjects_per_site
        .iter()
        .scan(0usize, |first, &m_s| {
            let this = *first;
            *first += m_s;
            Some((this, m_s))
        })
        .collect();
    let generated = crate::par::map_sites(&firsts, |_, &(first_subject, m_s)| {
        generate_subjects(config, &mixing, seed, first_subject, m_s)
    });
    let mut sites = Vec::with_capacity(config.subjects_per_site.len());
    let (mut clipped, mut samples) = (0usize, 0usize);
    for generated in generated {
        let (site, report) = generated?;
        clipped += report.clipped;
        samples += report.samples;
        sites.push(site);
    }
    Ok(SyntheticStudy {
        config: config.clone(),
        mixing,
        sites,
        clipped_fraction: clipped as f64 / samples as f64,
    })
}

/// The true maps A (D×R) of a study with data seed `seed`: the public part that every site of a
/// study shares, from the stream `fmri/maps`.
pub fn maps(config: &SyntheticConfig, seed: u64) -> DMatrix<f64> {
    blob_maps(&mut derive(seed, "fmri/maps"), config.grid, config.components, config.layout)
}

/// One site's data: `count` subjects mixed by `mixing`, subject m's sources from the stream
/// `fmri/subject/{first_subject + m}` of `sources_seed`, then demeaned and clipped.
///
/// [`generate`] calls it with the study's seed for every site. A browser site tab calls it with
/// its own private seed and the public maps, so its subjects are its own while the networks are
/// shared (`config.subjects_per_site` is not used here).
pub fn generate_subjects(
    config: &SyntheticConfig,
    mixing: &DMatrix<f64>,
    sources_seed: u64,
    first_subject: usize,
    count: usize,
) -> Result<(SiteData, NormaliseReport), FmriError> {
    config.validate()?;
    let (d, r, len) = (config.voxels(), config.components, config.timepoints);
    if mixing.shape() != (d, r) {
        return Err(FmriError::Config(format!(
            "the maps are {}×{}, the configuration needs D×R = {d}×{r}",
            mixing.nrows(),
            mixing.ncols()
        )));
    }
    if count == 0 {
        return Err(FmriError::Config("a site needs at least one subject".into()));
    }
    let scale = config.signal_rms / (r as f64).sqrt();
    // A voxel's typical signal is signal_rms/√D; `noise` is relative to it.
    let noise_sd = config.noise * config.signal_rms / (d as f64).sqrt();
    // Each subject's D×N_m block as the model writes it (the noise drawn in that order), then
    // stored transposed (`SiteData::xt`).
    let mut xt = DMatrix::zeros(count * len, d);
    let mut block = DMatrix::zeros(d, len);
    let mut sources = DMatrix::zeros(r, len);
    for m in 0..count {
        let mut rng = derive(sources_seed, &format!("fmri/subject/{}", first_subject + m));
        for k in 0..r {
            let series = garch_series(&mut rng, len, config.garch, config.innovations);
            sources.row_mut(k).copy_from_slice(&series);
        }
        block.gemm(scale, mixing, &sources, 0.0);
        if noise_sd > 0.0 {
            for v in block.iter_mut() {
                *v += noise_sd * rng.sample::<f64, _>(StandardNormal);
            }
        }
        xt.rows_mut(m * len, len).tr_copy_from(&block);
    }
    let mut site = SiteData::from_transposed(xt, vec![len; count])?;
    // The data are already at the intended scale; normalise demeans and clips.
    let report = normalise_site(&mut site, 1.0);
    Ok((site, report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_split_spreads_the_remainder() {
        assert_eq!(even_split(10, 4), vec![3, 3, 2, 2]);
        assert_eq!(even_split(256, 4), vec![64; 4]);
    }
}
