//! A site's own NIfTI-1 images become the same D×N matrix as the values written into them: a
//! small synthetic study is written byte by byte here (the 348-byte header per the NIfTI-1
//! standard, independent of the reader's crate), in float32, int16 with scl_slope/scl_inter, other
//! types, big-endian and gzip, under a mask that drops voxels; and every refusal is a typed error.

use std::io::Write;

use capelab_core::fmri::nifti::{
    BrainMask, MAX_IMAGE_VALUES, NiftiError, read_nifti, site_from_nifti, subject_matrix,
};
use capelab_core::fmri::normalise::normalise_site;
use flate2::Compression;
use flate2::write::GzEncoder;
use nalgebra::DMatrix;

const NX: usize = 4;
const NY: usize = 3;
const NZ: usize = 2;
const VOXELS: usize = NX * NY * NZ;

/// The NIfTI-1 header fields this test sets; the rest stay zero.
struct Header<'a> {
    dim: &'a [u16],
    datatype: i16,
    bitpix: i16,
    slope: f32,
    inter: f32,
    big_endian: bool,
}

fn put(out: &mut [u8], at: usize, bytes: &[u8]) {
    out[at..at + bytes.len()].copy_from_slice(bytes);
}

/// A single-file NIfTI-1 image: header (348 bytes), a 4-byte empty extension flag, then the data
/// (already in the header's byte order) at vox_offset 352.
fn nifti(h: &Header, data: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 352];
    let i16b = |v: i16| if h.big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
    let f32b = |v: f32| if h.big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
    let i32b = |v: i32| if h.big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
    put(&mut out, 0, &i32b(348));
    put(&mut out, 40, &i16b(h.dim.len() as i16));
    for (k, &d) in h.dim.iter().enumerate() {
        put(&mut out, 42 + 2 * k, &i16b(d as i16));
    }
    put(&mut out, 70, &i16b(h.datatype));
    put(&mut out, 72, &i16b(h.bitpix));
    for k in 0..8 {
        put(&mut out, 76 + 4 * k, &f32b(1.0));
    }
    put(&mut out, 108, &f32b(352.0));
    put(&mut out, 112, &f32b(h.slope));
    put(&mut out, 116, &f32b(h.inter));
    put(&mut out, 344, b"n+1\0");
    out.extend_from_slice(data);
    out
}

fn header(dim: &[u16], datatype: i16, bitpix: i16) -> Header<'_> {
    Header { dim, datatype, bitpix, slope: 0.0, inter: 0.0, big_endian: false }
}

fn f32_image(volumes: usize, value: impl Fn(usize, usize) -> f32, big_endian: bool) -> Vec<u8> {
    let dim = [NX as u16, NY as u16, NZ as u16, volumes as u16];
    let mut data = vec![];
    for t in 0..volumes {
        for v in 0..VOXELS {
            let x = value(v, t);
            data.extend(if big_endian { x.to_be_bytes() } else { x.to_le_bytes() });
        }
    }
    nifti(&Header { big_endian, ..header(&dim, 16, 32) }, &data)
}

/// Voxels (x, y, z) with x + y + z odd or at the corner (0, 0, 0) are outside.
fn mask_bytes() -> Vec<u8> {
    let data: Vec<u8> = (0..VOXELS)
        .map(|v| {
            let (x, y, z) = (v % NX, (v / NX) % NY, v / (NX * NY));
            u8::from(v != 0 && (x + y + z).is_multiple_of(2)) * 3
        })
        .collect();
    nifti(&header(&[NX as u16, NY as u16, NZ as u16], 2, 8), &data)
}

fn inside() -> Vec<usize> {
    (1..VOXELS).filter(|&v| (v % NX + (v / NX) % NY + v / (NX * NY)).is_multiple_of(2)).collect()
}

/// Subject m's value at voxel v, volume t: not integers, so f32 rounding shows if it happens.
fn signal(m: usize, v: usize, t: usize) -> f32 {
    ((v as f32 * 0.37 + t as f32 * 1.3 + m as f32).sin() * 100.0) + 0.125 * m as f32
}

#[test]
fn float32_subjects_give_the_masked_matrix_exactly() {
    let lengths = [5usize, 7, 5];
    let files: Vec<Vec<u8>> = lengths
        .iter()
        .enumerate()
        .map(|(m, &n)| f32_image(n, |v, t| signal(m, v, t), m == 1))
        .collect();
    let mask = BrainMask::from_nifti(&mask_bytes()).unwrap();
    assert_eq!(mask.inside, inside());
    let refs: Vec<&[u8]> = files.iter().map(Vec::as_slice).collect();
    let site = site_from_nifti(&refs, &mask).unwrap();
    assert_eq!(site.subject_lengths, lengths.to_vec());
    assert_eq!(site.voxels(), inside().len());
    let mut col = 0;
    for (m, &n) in lengths.iter().enumerate() {
        for t in 0..n {
            for (d, &v) in inside().iter().enumerate() {
                assert_eq!(site.xt[(col, d)], f64::from(signal(m, v, t)), "m {m} t {t} voxel {v}");
            }
            col += 1;
        }
    }
    // The usual normalisation runs on it: every subject demeaned, every column within norm 1.
    let mut normalised = site.clone();
    normalise_site(&mut normalised, 0.01);
    for c in 0..normalised.samples() {
        assert!(normalised.xt.row(c).norm() <= 1.0 + 1e-12);
    }
}

#[test]
fn int16_with_slope_and_intercept_is_scaled() {
    let dim = [NX as u16, NY as u16, NZ as u16, 3];
    let raw = |v: usize, t: usize| (v as i16 * 37 - 400) * (t as i16 + 1);
    let data: Vec<u8> = (0..3)
        .flat_map(|t| (0..VOXELS).map(move |v| raw(v, t)))
        .flat_map(i16::to_le_bytes)
        .collect();
    let bytes = nifti(&Header { slope: 0.5, inter: -3.0, ..header(&dim, 4, 16) }, &data);
    let mask = BrainMask::from_nifti(&mask_bytes()).unwrap();
    let x = subject_matrix(&read_nifti(&bytes).unwrap(), &mask).unwrap();
    let expected =
        DMatrix::from_fn(inside().len(), 3, |d, t| 0.5 * f64::from(raw(inside()[d], t)) - 3.0);
    assert_eq!(x, expected);
}

#[test]
fn other_datatypes_and_big_endian_read_back() {
    let dim = [NX as u16, NY as u16, NZ as u16, 2];
    let mask = BrainMask::from_nifti(&mask_bytes()).unwrap();
    let expected = |f: &dyn Fn(usize, usize) -> f64| {
        DMatrix::from_fn(inside().len(), 2, |d, t| f(inside()[d], t))
    };
    let idx = |v: usize, t: usize| v + VOXELS * t;
    // uint8
    let data: Vec<u8> = (0..2 * VOXELS).map(|i| (i * 5) as u8).collect();
    let x =
        subject_matrix(&read_nifti(&nifti(&header(&dim, 2, 8), &data)).unwrap(), &mask).unwrap();
    assert_eq!(x, expected(&|v, t| (idx(v, t) * 5 % 256) as f64));
    // int32, big-endian
    let data: Vec<u8> = (0..2 * VOXELS).flat_map(|i| (i as i32 * -70_001).to_be_bytes()).collect();
    let be = Header { big_endian: true, ..header(&dim, 8, 32) };
    let x = subject_matrix(&read_nifti(&nifti(&be, &data)).unwrap(), &mask).unwrap();
    assert_eq!(x, expected(&|v, t| idx(v, t) as f64 * -70_001.0));
    // float64
    let data: Vec<u8> = (0..2 * VOXELS).flat_map(|i| (i as f64 / 3.0).to_le_bytes()).collect();
    let x =
        subject_matrix(&read_nifti(&nifti(&header(&dim, 64, 64), &data)).unwrap(), &mask).unwrap();
    assert_eq!(x, expected(&|v, t| idx(v, t) as f64 / 3.0));
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

#[test]
fn gzip_round_trip_equals_the_plain_file() {
    let plain = f32_image(6, |v, t| signal(4, v, t), false);
    let packed = gzip(&plain);
    assert_ne!(packed, plain);
    assert_eq!(read_nifti(&packed).unwrap(), read_nifti(&plain).unwrap());
    let mask = BrainMask::from_nifti(&gzip(&mask_bytes())).unwrap();
    let a = site_from_nifti(&[&packed], &mask).unwrap();
    let b = site_from_nifti(&[&plain], &mask).unwrap();
    assert_eq!(a, b);
    // A corrupt stream is a gzip error, not a panic.
    let mut broken = packed.clone();
    let mid = broken.len() / 2;
    broken.truncate(mid);
    broken.extend_from_slice(&[0xff; 16]);
    let r = read_nifti(&broken);
    assert!(matches!(r, Err(NiftiError::Gzip(_) | NiftiError::Truncated { .. })), "{r:?}");
}

#[test]
fn malformed_files_are_typed_errors() {
    let good = f32_image(3, |v, t| signal(0, v, t), false);
    // sizeof_hdr
    let mut bad = good.clone();
    bad[0..4].copy_from_slice(&100i32.to_le_bytes());
    assert_eq!(read_nifti(&bad), Err(NiftiError::NotNifti { sizeof_hdr: 100 }));
    bad[0..4].copy_from_slice(&540i32.to_le_bytes());
    assert_eq!(read_nifti(&bad), Err(NiftiError::Nifti2));
    // magic: a .hdr/.img pair's "ni1" and garbage
    let mut bad = good.clone();
    bad[344..348].copy_from_slice(b"ni1\0");
    assert!(
        matches!(read_nifti(&bad), Err(NiftiError::BadMagic { magic }) if magic.starts_with("ni1"))
    );
    // not even a header
    assert!(matches!(
        read_nifti(b"hello"),
        Err(NiftiError::Truncated { part: "header", got: 5, .. })
    ));
    // a truncated volume names the sizes
    let cut = &good[..good.len() - 4];
    assert_eq!(
        read_nifti(cut),
        Err(NiftiError::Truncated {
            part: "volume",
            needed: (3 * VOXELS * 4) as u64,
            got: (3 * VOXELS * 4 - 4) as u64
        })
    );
    // complex64 is not a real matrix
    let c = nifti(&header(&[NX as u16, NY as u16, NZ as u16, 1], 32, 64), &[0u8; VOXELS * 8]);
    assert_eq!(read_nifti(&c), Err(NiftiError::UnsupportedDatatype { code: 32 }));
}

#[test]
fn oversized_header_is_refused_before_allocating() {
    // 32767⁴ ≈ 1.2·10¹⁸ values claimed by a 352-byte file.
    let huge = nifti(&header(&[32767, 32767, 32767, 32767], 16, 32), &[]);
    match read_nifti(&huge) {
        Err(NiftiError::TooLarge { values, limit, .. }) => {
            assert_eq!(values, 32767u64.pow(4));
            assert_eq!(limit, MAX_IMAGE_VALUES);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

#[test]
fn shape_rank_mask_and_value_errors_name_the_problem() {
    let mask = BrainMask::from_nifti(&mask_bytes()).unwrap();
    // a 3-D image is not a time series
    let three_d = read_nifti(&mask_bytes()).unwrap();
    assert!(matches!(
        subject_matrix(&three_d, &mask),
        Err(NiftiError::WrongRank { role: "image", .. })
    ));
    // a 4-D mask with several volumes is refused
    let four_d = f32_image(2, |_, _| 1.0, false);
    assert!(matches!(
        BrainMask::from_nifti(&four_d),
        Err(NiftiError::WrongRank { role: "mask", .. })
    ));
    // grids must agree
    let other_grid = nifti(&header(&[NX as u16, NY as u16, 3, 2], 2, 8), &[1u8; NX * NY * 3 * 2]);
    assert_eq!(
        subject_matrix(&read_nifti(&other_grid).unwrap(), &mask),
        Err(NiftiError::MaskShape { image: [4, 3, 3], mask: [4, 3, 2] })
    );
    // an all-zero mask
    let empty = nifti(&header(&[NX as u16, NY as u16, NZ as u16], 2, 8), &[0u8; VOXELS]);
    assert_eq!(BrainMask::from_nifti(&empty), Err(NiftiError::EmptyMask { voxels: VOXELS }));
    // NaN inside the mask is named by voxel and volume; NaN outside is ignored
    let (bad_voxel, outside_voxel) = (inside()[2], 0);
    let nan_img = f32_image(
        3,
        |v, t| if (v == bad_voxel && t == 2) || v == outside_voxel { f32::NAN } else { 1.0 },
        false,
    );
    let (x, y, z) = (bad_voxel % NX, (bad_voxel / NX) % NY, bad_voxel / (NX * NY));
    match site_from_nifti(&[&f32_image(2, |_, _| 0.0, false), &nan_img], &mask) {
        Err(NiftiError::Subject { subject: 1, error }) => match *error {
            NiftiError::NonFinite { x: ex, y: ey, z: ez, volume: 2, value } => {
                assert_eq!((ex, ey, ez), (x, y, z));
                assert!(value.is_nan());
            }
            other => panic!("expected NonFinite, got {other:?}"),
        },
        other => panic!("expected a subject error, got {other:?}"),
    }
    assert_eq!(site_from_nifti(&[], &mask), Err(NiftiError::NoSubjects));
}
