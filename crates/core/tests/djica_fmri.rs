//! The synthetic fMRI generator (spec §6, §9.7) and loading a site's own matrix.

use capelab_core::fmri::maps::condition_number;
use capelab_core::fmri::matrix_io::{parse_csv, parse_npy, to_csv, to_npy};
use capelab_core::fmri::normalise::normalise_site;
use capelab_core::fmri::synthetic::even_split;
use capelab_core::fmri::{FmriError, Innovations, SiteData, SyntheticConfig, generate};
use nalgebra::DMatrix;

fn small(cfg: SyntheticConfig) -> SyntheticConfig {
    SyntheticConfig { grid: 12, components: 6, timepoints: 120, ..cfg }
}

#[test]
fn sites_hold_normalised_subjects_of_the_shared_model() {
    let cfg = small(SyntheticConfig::well_conditioned(10, 3));
    let study = generate(&cfg, 7).unwrap();
    assert_eq!(study.sites.len(), 3);
    assert_eq!(study.sites.iter().map(|s| s.subjects()).collect::<Vec<_>>(), even_split(10, 3));
    assert_eq!(study.mixing.shape(), (144, 6));
    for site in &study.sites {
        assert_eq!(site.voxels(), 144);
        assert_eq!(site.samples(), site.subjects() * 120);
        assert_eq!(site.max_subject_len(), 120);
        // Every time point has norm ≤ 1 (the clip that bounds the sensitivities).
        assert!(site.x().column_iter().all(|c| c.norm() <= 1.0 + 1e-12));
        // Without noise every time point lies in span(A).
        let a = &study.mixing;
        let proj = a * (a.clone().pseudo_inverse(1e-12).unwrap() * site.x());
        assert!((&proj - site.x()).amax() < 1e-10);
        // Each subject is demeaned (exactly when nothing was clipped).
        if study.clipped_fraction == 0.0 {
            for m in 0..site.subjects() {
                assert!(site.x().columns(m * 120, 120).column_mean().amax() < 1e-12);
            }
        }
    }
    for column in study.mixing.column_iter() {
        assert!((column.norm() - 1.0).abs() < 1e-12);
    }
    assert!(study.clipped_fraction < 0.05, "clipped {}", study.clipped_fraction);
}

#[test]
fn same_seed_same_data_and_subjects_do_not_depend_on_the_split() {
    let cfg = small(SyntheticConfig::well_conditioned(6, 2));
    let a = generate(&cfg, 11).unwrap();
    let b = generate(&cfg, 11).unwrap();
    assert_eq!(a.mixing, b.mixing);
    assert_eq!(a.sites, b.sites);
    assert_ne!(generate(&cfg, 12).unwrap().mixing, a.mixing);
    // The same 6 subjects split 3+3 or 1+5: subject 0 is the same either way.
    let mut uneven = cfg.clone();
    uneven.subjects_per_site = vec![1, 5];
    let c = generate(&uneven, 11).unwrap();
    assert_eq!(c.sites[0].x(), a.sites[0].x().columns(0, 120));
    assert_eq!(c.sites[1].x().columns(2 * 120, 120), a.sites[1].x().columns(0, 120));
}

#[test]
fn the_well_conditioned_preset_is_well_conditioned() {
    // Spec §9.7: overlapping random blobs give cond(A) of tens; the jittered lattice ≈ 2.
    let mut well = Vec::new();
    let mut paper = Vec::new();
    for seed in 1..=5 {
        let w = SyntheticConfig { timepoints: 2, ..SyntheticConfig::well_conditioned(1, 1) };
        let p = SyntheticConfig { timepoints: 2, ..SyntheticConfig::paper_like(1, 1) };
        well.push(condition_number(&generate(&w, seed).unwrap().mixing));
        paper.push(condition_number(&generate(&p, seed).unwrap().mixing));
    }
    assert!(well.iter().all(|&c| c < 3.0), "well-conditioned: {well:?}");
    assert!(paper.iter().all(|&c| c > 5.0), "paper-like: {paper:?}");
}

#[test]
fn bad_settings_are_reported_with_their_value() {
    let mut cfg = small(SyntheticConfig::paper_like(4, 2));
    cfg.innovations = Innovations::StudentT { dof: 2.0 };
    let err = generate(&cfg, 1).unwrap_err();
    assert!(err.to_string().contains("freedom 2"), "{err}");
    let mut cfg = small(SyntheticConfig::paper_like(4, 2));
    cfg.components = 200;
    assert!(matches!(generate(&cfg, 1), Err(FmriError::Config(_))));
    let mut cfg = small(SyntheticConfig::paper_like(4, 2));
    cfg.subjects_per_site = vec![2, 0];
    assert!(generate(&cfg, 1).unwrap_err().to_string().contains("[2, 0]"));
    assert!(SiteData::new(DMatrix::zeros(3, 10), vec![4, 5]).is_err());
}

#[test]
fn a_site_can_bring_its_own_matrix_as_csv_or_npy() {
    let cfg = small(SyntheticConfig::paper_like(2, 1));
    let study = generate(&cfg, 5).unwrap();
    let x = &study.sites[0].x().into_owned();
    let from_csv = parse_csv(&to_csv(x)).unwrap();
    let from_npy = parse_npy(&to_npy(x)).unwrap();
    assert_eq!(&from_csv, x);
    assert_eq!(&from_npy, x);
    // Loaded raw data go through the same normalisation as the generator's.
    let raw = DMatrix::from_fn(4, 6, |i, j| (i + 1) as f64 * (j as f64 - 1.0));
    let mut site = SiteData::new(raw, vec![3, 3]).unwrap();
    let report = normalise_site(&mut site, 0.1);
    assert_eq!(report.samples, 6);
    assert!(site.x().column_iter().all(|c| c.norm() <= 1.0 + 1e-12));
}
