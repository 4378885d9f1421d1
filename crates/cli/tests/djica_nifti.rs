//! `cape djica --nifti-site DIR … --mask FILE` end to end at a tiny size: two sites' subjects
//! written as NIfTI-1 images (one gzip-compressed) in a temp dir, a mask that drops voxels; the run
//! writes result.json with the sites' subjects and D, and no ground-truth outputs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use capelab_core::fmri::matrix_io::parse_csv;
use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::Value;

const GRID: [u16; 3] = [4, 4, 2];
const VOXELS: usize = 32;

fn cape(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cape")).args(args).output().expect("run cape")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cape-nifti-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A little-endian single-file NIfTI-1 image (header per nifti1.h, data at vox_offset 352).
fn nifti(dim: &[u16], datatype: i16, bitpix: i16, data: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 352];
    let mut put = |at: usize, b: &[u8]| out[at..at + b.len()].copy_from_slice(b);
    put(0, &348i32.to_le_bytes());
    put(40, &(dim.len() as i16).to_le_bytes());
    for (k, &d) in dim.iter().enumerate() {
        put(42 + 2 * k, &(d as i16).to_le_bytes());
    }
    put(70, &datatype.to_le_bytes());
    put(72, &bitpix.to_le_bytes());
    put(108, &352f32.to_le_bytes());
    put(344, b"n+1\0");
    out.extend_from_slice(data);
    out
}

/// Three sources with different waveforms through a fixed voxel mixing, `volumes` time points.
fn subject(volumes: usize, phase: f64) -> Vec<u8> {
    let mut data = vec![];
    for t in 0..volumes {
        let t = t as f64 + phase;
        let s = [(t * 0.37).sin().powi(3), ((t * 0.11).cos() * 3.0).tanh(), (t * 0.73).sin()];
        for v in 0..VOXELS {
            let x: f64 = (0..3).map(|k| s[k] * (((v * 7 + k * 3) % 11) as f64 - 5.0) / 5.0).sum();
            data.extend((x as f32).to_le_bytes());
        }
    }
    nifti(&[GRID[0], GRID[1], GRID[2], volumes as u16], 16, 32, &data)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn run_djica(site_a: &Path, site_b: &Path, mask: &Path, out: &Path) -> Output {
    cape(&[
        "djica",
        "--nifti-site",
        site_a.to_str().unwrap(),
        "--nifti-site",
        site_b.to_str().unwrap(),
        "--mask",
        mask.to_str().unwrap(),
        "--components",
        "3",
        "--privacy-unit",
        "timepoint",
        "--max-iterations",
        "20",
        "--data-scale",
        "0.2",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ])
}

#[test]
fn a_site_can_bring_nifti_images_and_a_mask() {
    let dir = scratch("run");
    let (a, b) = (dir.join("site-a"), dir.join("site-b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    std::fs::write(a.join("sub-01.nii"), subject(50, 0.0)).unwrap();
    std::fs::write(a.join("sub-02.nii.gz"), gzip(&subject(40, 9.0))).unwrap();
    std::fs::write(a.join("notes.txt"), "not an image").unwrap();
    std::fs::write(b.join("sub-03.nii"), subject(60, 17.0)).unwrap();
    // 25 of the 32 voxels inside (0, 5, …, 30 out).
    let mask: Vec<u8> = (0..VOXELS).map(|v| u8::from(v % 5 != 0)).collect();
    let mask_path = dir.join("mask.nii.gz");
    std::fs::write(&mask_path, gzip(&nifti(&GRID, 2, 8, &mask))).unwrap();
    let out = dir.join("out");
    let run = run_djica(&a, &b, &mask_path, &out);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
    assert!(v["q_ngi"].is_null(), "no ground truth, no q");
    assert_eq!(v["data"]["ground_truth"], false);
    assert!(v["data"]["note"].as_str().unwrap().contains("no ground truth"));
    assert_eq!(v["data"]["voxels"], 25);
    assert_eq!(v["data"]["subjects_per_site"], serde_json::json!([2, 1]));
    assert_eq!(v["parameters"]["subjects"], 3);
    assert!(v["data"]["source"].as_str().unwrap().contains("sub-02.nii.gz"));
    assert!(v["overall_epsilon"]["full_view"].as_f64().unwrap() > 0.0);
    let w = parse_csv(&std::fs::read_to_string(out.join("W.csv")).unwrap()).unwrap();
    assert_eq!(w.shape(), (3, 3));
    assert!(w.iter().all(|x| x.is_finite()));
    // V is D×R: one row per voxel inside the mask.
    let v_basis = parse_csv(&std::fs::read_to_string(out.join("V.csv")).unwrap()).unwrap();
    assert_eq!(v_basis.shape(), (25, 3));
    assert!(!out.join("A.csv").exists());

    // A mask on another grid is refused, naming both shapes.
    let wrong = dir.join("wrong-mask.nii");
    std::fs::write(&wrong, nifti(&[4, 4, 3], 2, 8, &[1u8; 48])).unwrap();
    let run = run_djica(&a, &b, &wrong, &out);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(err.contains("sub-01.nii") && err.contains("mask shape [4, 4, 3]"), "{err}");

    // A directory without images is refused.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let run = run_djica(&a, &empty, &mask_path, &out);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("no *.nii or *.nii.gz file"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
