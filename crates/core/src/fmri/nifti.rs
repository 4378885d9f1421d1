/*!
A site's own fMRI data from NIfTI-1 images: one 4-D image (x, y, z, t) per subject and a 3-D brain
mask on the same grid give a D×N_m matrix, D = the voxels inside the mask (mask > 0), one column
per volume (spec §6: a site's data are voxels × time points, subjects concatenated in time).

The input is the file's BYTES (`.nii`, or `.nii.gz`, recognised by the gzip magic, not by a name):
the core has no filesystem, and the browser site tab calls the same functions on a dropped file.

Parsing uses the maintained `nifti` crate (nifti-rs) without its `ndarray` feature: its header
parser (both byte orders) and its typed volume reader. It builds for `wasm32-unknown-unknown`;
its file helpers are never called here. Gzip goes through `flate2` with its default pure-Rust
backend (miniz_oxide). Three checks the crate leaves to its caller are done here, before any
volume is allocated: `sizeof_hdr` must be 348 (NIfTI-2's 540 is named as such), the image must not
hold more than [`MAX_IMAGE_VALUES`] values (a header can claim 2¹¹² of them, and a gzip stream can
expand 1000-fold), and the data type must be one a real-valued matrix can hold.

Intensity scaling follows the NIfTI-1 standard (nifti1.h, `scl_slope`/`scl_inter`): when
`scl_slope` is non-zero every stored value x means `scl_slope·x + scl_inter`; a zero slope means
no scaling. A NaN or infinite slope is treated as "no scaling", as nibabel does, rather than
turning a whole image into NaN.
*/

use std::io::{self, Read};

use flate2::read::GzDecoder;
use nalgebra::DMatrix;
use nifti::{InMemNiftiVolume, NiftiHeader, NiftiType};
use thiserror::Error;

use super::SiteData;

/// The most values (voxels × volumes) one image may hold: 2²⁸ ≈ 268 million, e.g. a 2 mm MNI grid
/// (91×109×91) over 290 volumes, 1 GiB of float32. Larger headers are refused before allocating;
/// a wasm32 page cannot address much more, and capePCA needs D×D second moments anyway.
pub const MAX_IMAGE_VALUES: u64 = 1 << 28;

/// The NIfTI-1 header size, `sizeof_hdr`.
const NIFTI1_HEADER_BYTES: usize = 348;
/// NIfTI-2's `sizeof_hdr`, recognised only to name it in the error.
const NIFTI2_HEADER_BYTES: i32 = 540;

/// Why NIfTI bytes could not become a data matrix.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum NiftiError {
    /// The gzip stream is corrupt.
    #[error("gzip stream is corrupt ({0}): re-compress the file or give the plain .nii")]
    Gzip(String),
    /// Fewer bytes than the header or the volume needs.
    #[error(
        "file ends early: the {part} needs {needed} bytes, got {got}: the file is truncated or not NIfTI"
    )]
    Truncated {
        /// "header" or "volume".
        part: &'static str,
        /// Bytes required.
        needed: u64,
        /// Bytes present.
        got: u64,
    },
    /// `sizeof_hdr` is not 348 in either byte order.
    #[error(
        "not a NIfTI-1 file: sizeof_hdr is {sizeof_hdr}, a NIfTI-1 header has 348 (give a .nii or .nii.gz image)"
    )]
    NotNifti {
        /// The first four bytes, little-endian.
        sizeof_hdr: i32,
    },
    /// A NIfTI-2 header.
    #[error(
        "a NIfTI-2 file (sizeof_hdr 540): only NIfTI-1 is read; convert it (e.g. nibabel's Nifti1Image)"
    )]
    Nifti2,
    /// The magic string is not `n+1` (single file) or is `ni1` (a separate `.img` holds the data).
    #[error(
        "bad NIfTI-1 magic {magic:?}: need \"n+1\" (one .nii file); a .hdr/.img pair (\"ni1\") must be converted to .nii"
    )]
    BadMagic {
        /// The four magic bytes, lossily as text.
        magic: String,
    },
    /// The header's `dim` is malformed.
    #[error("invalid header dimensions {dim:?}: {reason}")]
    BadDimensions {
        /// `dim[0..8]` as read.
        dim: [u16; 8],
        /// What is wrong.
        reason: String,
    },
    /// The image is not a 4-D time series (or the mask not a 3-D volume).
    #[error("the {role} must be {expected}, got shape {shape:?}")]
    WrongRank {
        /// "image" or "mask".
        role: &'static str,
        /// "4-D (x, y, z, time)" or "3-D (x, y, z)".
        expected: &'static str,
        /// The shape found (`dim[1..=dim[0]]`).
        shape: Vec<u16>,
    },
    /// A data type a real-valued matrix cannot hold, or an unknown code.
    #[error(
        "unsupported NIfTI datatype code {code}: use uint8, int8, uint16, int16, uint32, int32, int64, uint64, float32 or float64"
    )]
    UnsupportedDatatype {
        /// The header's `datatype`.
        code: i16,
    },
    /// More values than [`MAX_IMAGE_VALUES`].
    #[error(
        "image of shape {shape:?} holds {values} values, more than the limit {limit}: crop or downsample it first"
    )]
    TooLarge {
        /// `dim[1..=dim[0]]`.
        shape: Vec<u16>,
        /// Their product.
        values: u64,
        /// [`MAX_IMAGE_VALUES`].
        limit: u64,
    },
    /// The mask's grid differs from the image's.
    #[error(
        "mask shape {mask:?} differs from the image's spatial shape {image:?}: resample the mask to the image grid"
    )]
    MaskShape {
        /// (x, y, z) of the image.
        image: [u16; 3],
        /// (x, y, z) of the mask.
        mask: [u16; 3],
    },
    /// No voxel has mask > 0.
    #[error("the mask has no voxel > 0 among its {voxels}: D would be 0")]
    EmptyMask {
        /// Voxels in the mask grid.
        voxels: usize,
    },
    /// A NaN or infinite value inside the mask.
    #[error(
        "non-finite value {value} at voxel ({x}, {y}, {z}) in volume {volume} (0-based): fix the image or exclude the voxel from the mask"
    )]
    NonFinite {
        /// Voxel coordinates.
        x: usize,
        /// Voxel coordinates.
        y: usize,
        /// Voxel coordinates.
        z: usize,
        /// Time index, from 0.
        volume: usize,
        /// The value after scaling.
        value: f64,
    },
    /// No subject files were given for a site.
    #[error("no subject images: a site needs at least one 4-D image")]
    NoSubjects,
    /// An error in one subject's image (0-based index among the site's images).
    #[error("subject {subject}: {error}")]
    Subject {
        /// Index of the image.
        subject: usize,
        /// What went wrong.
        error: Box<NiftiError>,
    },
    /// Anything else the `nifti` crate reports.
    #[error("NIfTI: {0}")]
    Parse(String),
}

/// The stored values of an image, in the header's data type (x fastest, then y, z, t).
#[derive(Clone, Debug, PartialEq)]
enum Stored {
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Stored {
    /// The raw value at linear index `i`, as f64 (exact for every type but 64-bit integers
    /// beyond 2⁵³).
    fn raw(&self, i: usize) -> f64 {
        match self {
            Stored::U8(v) => f64::from(v[i]),
            Stored::I8(v) => f64::from(v[i]),
            Stored::U16(v) => f64::from(v[i]),
            Stored::I16(v) => f64::from(v[i]),
            Stored::U32(v) => f64::from(v[i]),
            Stored::I32(v) => f64::from(v[i]),
            Stored::U64(v) => v[i] as f64,
            Stored::I64(v) => v[i] as f64,
            Stored::F32(v) => f64::from(v[i]),
            Stored::F64(v) => v[i],
        }
    }
}

/// A parsed NIfTI-1 image: its shape padded to 4-D and its values with the header's scaling.
#[derive(Clone, Debug, PartialEq)]
pub struct NiftiImage {
    /// (x, y, z, t); missing trailing dimensions are 1.
    pub shape: [u16; 4],
    /// `dim[0]`, the number of dimensions the header declares.
    pub rank: u16,
    stored: Stored,
    /// (slope, intercept) when the header asks for scaling.
    scaling: Option<(f64, f64)>,
}

impl NiftiImage {
    /// x·y·z, the voxels of one volume.
    pub fn voxels_per_volume(&self) -> usize {
        self.shape[..3].iter().map(|&d| usize::from(d)).product()
    }

    /// The scaled value at (linear voxel index, volume).
    pub fn value(&self, voxel: usize, volume: usize) -> f64 {
        let raw = self.stored.raw(volume * self.voxels_per_volume() + voxel);
        match self.scaling {
            Some((slope, inter)) => slope * raw + inter,
            None => raw,
        }
    }

    fn spatial(&self) -> [u16; 3] {
        [self.shape[0], self.shape[1], self.shape[2]]
    }
}

/// Reads a NIfTI-1 image (`.nii` bytes, or gzip-compressed `.nii.gz` bytes) of any rank ≤ 4 (or
/// higher with trailing dimensions of 1).
pub fn read_nifti(bytes: &[u8]) -> Result<NiftiImage, NiftiError> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut stream = GzDecoder::new(bytes);
        let image = read_stream(&mut stream).map_err(|e| match e {
            NiftiError::Parse(m) => NiftiError::Gzip(m),
            other => other,
        })?;
        // The CRC is checked only at the end of the stream: read to the end, or a corrupt tail
        // after the volume's bytes would pass unnoticed.
        io::copy(&mut stream, &mut io::sink()).map_err(|e| NiftiError::Gzip(e.to_string()))?;
        Ok(image)
    } else {
        read_stream(bytes)
    }
}

/// Reads exactly `buf.len()` bytes or reports how many there were.
fn fill(r: &mut impl Read, buf: &mut [u8], part: &'static str) -> Result<(), NiftiError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => {
                return Err(NiftiError::Truncated {
                    part,
                    needed: buf.len() as u64,
                    got: got as u64,
                });
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(NiftiError::Parse(e.to_string())),
        }
    }
    Ok(())
}

fn read_stream(mut r: impl Read) -> Result<NiftiImage, NiftiError> {
    let mut head = [0u8; NIFTI1_HEADER_BYTES];
    fill(&mut r, &mut head, "header")?;
    let first = [head[0], head[1], head[2], head[3]];
    let (le, be) = (i32::from_le_bytes(first), i32::from_be_bytes(first));
    if le != NIFTI1_HEADER_BYTES as i32 && be != NIFTI1_HEADER_BYTES as i32 {
        return Err(if le == NIFTI2_HEADER_BYTES || be == NIFTI2_HEADER_BYTES {
            NiftiError::Nifti2
        } else {
            NiftiError::NotNifti { sizeof_hdr: le }
        });
    }
    let magic = &head[344..348];
    if magic != b"n+1\0" {
        return Err(NiftiError::BadMagic { magic: String::from_utf8_lossy(magic).into_owned() });
    }
    let header =
        NiftiHeader::from_reader(&head[..]).map_err(|e| NiftiError::Parse(e.to_string()))?;
    let shape = checked_shape(&header)?;
    let code = header.datatype;
    let datatype = header.data_type().map_err(|_| NiftiError::UnsupportedDatatype { code })?;
    let bytes_per_value = match datatype {
        NiftiType::Uint8 | NiftiType::Int8 => 1,
        NiftiType::Uint16 | NiftiType::Int16 => 2,
        NiftiType::Uint32 | NiftiType::Int32 | NiftiType::Float32 => 4,
        NiftiType::Uint64 | NiftiType::Int64 | NiftiType::Float64 => 8,
        _ => return Err(NiftiError::UnsupportedDatatype { code }),
    };
    // Extensions sit between the header and vox_offset; the volume starts at vox_offset.
    let offset = f64::from(header.vox_offset);
    let skip = if offset.is_finite() && offset > NIFTI1_HEADER_BYTES as f64 {
        offset as u64 - NIFTI1_HEADER_BYTES as u64
    } else {
        0
    };
    let skipped = io::copy(&mut (&mut r).take(skip), &mut io::sink())
        .map_err(|e| NiftiError::Parse(e.to_string()))?;
    if skipped < skip {
        return Err(NiftiError::Truncated {
            part: "extensions before vox_offset",
            needed: skip,
            got: skipped,
        });
    }
    let values: u64 = shape.iter().map(|&d| u64::from(d)).product();
    let needed = values * bytes_per_value;
    let volume = InMemNiftiVolume::from_reader(&mut r, &header).map_err(|e| match e {
        nifti::NiftiError::IncompatibleLength(got, _) => {
            NiftiError::Truncated { part: "volume", needed, got: got as u64 }
        }
        other => NiftiError::Parse(other.to_string()),
    })?;
    let stored = typed(volume, datatype)?;
    let slope = f64::from(header.scl_slope);
    let scaling = (slope != 0.0 && slope.is_finite())
        .then(|| (slope, f64::from(header.scl_inter)))
        .filter(|&(s, i)| s != 1.0 || i != 0.0);
    Ok(NiftiImage {
        shape: [shape[0], shape[1], shape[2], shape[3]],
        rank: header.dim[0],
        stored,
        scaling,
    })
}

/// `dim[1..=4]`, checked: 1 ≤ dim[0] ≤ 7, every used dimension ≥ 1, dimensions past the fourth
/// equal to 1, and at most [`MAX_IMAGE_VALUES`] values.
fn checked_shape(header: &NiftiHeader) -> Result<[u16; 4], NiftiError> {
    let dim = header.dim;
    let rank = usize::from(dim[0]);
    let bad = |reason: &str| NiftiError::BadDimensions { dim, reason: reason.into() };
    if !(1..=7).contains(&rank) {
        return Err(bad("dim[0] must be between 1 and 7"));
    }
    let used = &dim[1..=rank];
    if used.contains(&0) {
        return Err(bad("every dimension up to dim[0] must be at least 1"));
    }
    if used.iter().skip(4).any(|&d| d != 1) {
        return Err(NiftiError::WrongRank {
            role: "image",
            expected: "at most 4-D (x, y, z, time)",
            shape: used.to_vec(),
        });
    }
    let values: u64 = used.iter().map(|&d| u64::from(d)).product();
    if values > MAX_IMAGE_VALUES {
        return Err(NiftiError::TooLarge { shape: used.to_vec(), values, limit: MAX_IMAGE_VALUES });
    }
    let mut shape = [1u16; 4];
    for (s, &d) in shape.iter_mut().zip(used) {
        *s = d;
    }
    Ok(shape)
}

fn typed(volume: InMemNiftiVolume, datatype: NiftiType) -> Result<Stored, NiftiError> {
    let err = |e: nifti::NiftiError| NiftiError::Parse(e.to_string());
    Ok(match datatype {
        NiftiType::Uint8 => Stored::U8(volume.into_nifti_typed_data().map_err(err)?),
        NiftiType::Int8 => Stored::I8(volume.into_nifti_typed_data().map_err(err)?),
        NiftiType::Uint16 => Stored::U16(volume.into_nifti_typed_data().map_err(err)?),
        NiftiType::Int16 => Stored::I16(volume.into_nifti_typed_data().map_err(err)?),
        NiftiType::Uint32 => Stored::U32(volume.into_nifti_typed_data().map_err(err)?),
        NiftiType::Int32 => Stored::I32(volume.into_nifti_typed_data().map_err(err)?),
        NiftiType::Uint64 => Stored::U64(volume.into_nifti_typed_data().map_err(err)?),
        NiftiType::Int64 => Stored::I64(volume.into_nifti_typed_data().map_err(err)?),
        NiftiType::Float32 => Stored::F32(volume.into_nifti_typed_data().map_err(err)?),
        NiftiType::Float64 => Stored::F64(volume.into_nifti_typed_data().map_err(err)?),
        _ => return Err(NiftiError::UnsupportedDatatype { code: datatype as i16 }),
    })
}

/// The voxels of a grid that enter the analysis: those with mask value > 0 (after scaling),
/// in NIfTI order (x fastest, then y, then z). Row d of every data matrix is voxel `inside[d]`.
#[derive(Clone, Debug, PartialEq)]
pub struct BrainMask {
    /// (x, y, z).
    pub shape: [u16; 3],
    /// Linear indices x + X·(y + Y·z) of the voxels inside, increasing.
    pub inside: Vec<usize>,
}

impl BrainMask {
    /// Builds the mask from a 3-D NIfTI-1 image (a 4-D one with a single volume is accepted).
    pub fn from_nifti(bytes: &[u8]) -> Result<Self, NiftiError> {
        let image = read_nifti(bytes)?;
        if image.shape[3] != 1 {
            return Err(NiftiError::WrongRank {
                role: "mask",
                expected: "3-D (x, y, z)",
                shape: image.shape[..usize::from(image.rank).min(4)].to_vec(),
            });
        }
        let voxels = image.voxels_per_volume();
        let inside: Vec<usize> = (0..voxels).filter(|&v| image.value(v, 0) > 0.0).collect();
        if inside.is_empty() {
            return Err(NiftiError::EmptyMask { voxels });
        }
        Ok(BrainMask { shape: image.spatial(), inside })
    }

    /// D, the voxels inside.
    pub fn voxels(&self) -> usize {
        self.inside.len()
    }

    /// (x, y, z) of a linear voxel index on this grid.
    pub fn coordinates(&self, linear: usize) -> (usize, usize, usize) {
        let (nx, ny) = (usize::from(self.shape[0]), usize::from(self.shape[1]));
        (linear % nx, (linear / nx) % ny, linear / (nx * ny))
    }
}

/// One subject's D×N_m matrix: the masked voxels (rows, in [`BrainMask::inside`] order) of each
/// volume (columns, in time order), scaled. Refuses a 3-D image, a grid unlike the mask's, and a
/// non-finite value inside the mask.
pub fn subject_matrix(image: &NiftiImage, mask: &BrainMask) -> Result<DMatrix<f64>, NiftiError> {
    if image.rank < 4 || image.shape[3] < 2 {
        return Err(NiftiError::WrongRank {
            role: "image",
            expected: "4-D (x, y, z, time) with at least 2 volumes",
            shape: image.shape[..usize::from(image.rank).min(4)].to_vec(),
        });
    }
    if image.spatial() != mask.shape {
        return Err(NiftiError::MaskShape { image: image.spatial(), mask: mask.shape });
    }
    let volumes = usize::from(image.shape[3]);
    let mut x = DMatrix::zeros(mask.voxels(), volumes);
    for t in 0..volumes {
        for (d, &voxel) in mask.inside.iter().enumerate() {
            let value = image.value(voxel, t);
            if !value.is_finite() {
                let (x, y, z) = mask.coordinates(voxel);
                return Err(NiftiError::NonFinite { x, y, z, volume: t, value });
            }
            x[(d, t)] = value;
        }
    }
    Ok(x)
}

/// One site's data from its subjects' 4-D images (bytes of `.nii` or `.nii.gz`) under one mask:
/// the subjects' matrices side by side, `subject_lengths` = their volume counts. Not yet
/// normalised: apply [`super::normalise::normalise_site`] with the public scale (spec §6).
pub fn site_from_nifti(subjects: &[&[u8]], mask: &BrainMask) -> Result<SiteData, NiftiError> {
    if subjects.is_empty() {
        return Err(NiftiError::NoSubjects);
    }
    let in_subject =
        |subject: usize| move |e: NiftiError| NiftiError::Subject { subject, error: Box::new(e) };
    let mut matrices = Vec::with_capacity(subjects.len());
    for (m, bytes) in subjects.iter().enumerate() {
        let image = read_nifti(bytes).map_err(in_subject(m))?;
        matrices.push(subject_matrix(&image, mask).map_err(in_subject(m))?);
    }
    let lengths: Vec<usize> = matrices.iter().map(DMatrix::ncols).collect();
    let total = lengths.iter().sum();
    let mut xt = DMatrix::zeros(total, mask.voxels());
    let mut start = 0;
    for m in &matrices {
        xt.rows_mut(start, m.ncols()).tr_copy_from(m);
        start += m.ncols();
    }
    SiteData::from_transposed(xt, lengths).map_err(|e| NiftiError::Parse(e.to_string()))
}
