/*!
Plain matrices in and out: CSV text and NumPy `.npy` bytes, so a site can bring its own D×N data
(voxels × time points) instead of the generator's. Parsing works on bytes already in memory (the
core never touches the filesystem): the CLI reads the file, the browser hands over a `File`'s
bytes.

`.npy` support is a small parser for what numeric arrays actually use: format versions 1–3,
little-endian `<f8`/`<f4` (and `|`/`=` byte order, native being little-endian on every target we
build), C or Fortran order, 2-D shape. Anything else is rejected with a message naming it.
*/

use nalgebra::DMatrix;
use thiserror::Error;

/// Why a matrix could not be read.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum MatrixIoError {
    /// The input holds no numbers.
    #[error("the matrix is empty: expected at least one row of numbers")]
    Empty,
    /// A CSV row has a different number of columns than the first.
    #[error(
        "CSV line {line} has {got} values but the first row has {expected}: every row needs the same number of columns"
    )]
    Ragged {
        /// 1-based line number.
        line: usize,
        /// Values on that line.
        got: usize,
        /// Values on the first data line.
        expected: usize,
    },
    /// A CSV cell is not a finite number.
    #[error("CSV line {line}, column {column}: '{text}' is not a finite number")]
    BadNumber {
        /// 1-based line number.
        line: usize,
        /// 1-based column number.
        column: usize,
        /// The cell as written.
        text: String,
    },
    /// The bytes are not an `.npy` file or use a feature this reader does not support.
    #[error("not a supported .npy file: {0}")]
    Npy(String),
    /// The input is not valid UTF-8 text.
    #[error("the CSV is not UTF-8 text")]
    NotText,
}

/// Parses a CSV (or whitespace-separated) matrix: one row per line, cells separated by commas,
/// semicolons, tabs or spaces. Blank lines and lines starting with `#` are skipped.
pub fn parse_csv(text: &str) -> Result<DMatrix<f64>, MatrixIoError> {
    let mut values = Vec::new();
    let mut columns = 0usize;
    let mut rows = 0usize;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let start = values.len();
        for (column, cell) in trimmed
            .split(|c: char| c == ',' || c == ';' || c.is_whitespace())
            .filter(|c| !c.is_empty())
            .enumerate()
        {
            match cell.parse::<f64>() {
                Ok(v) if v.is_finite() => values.push(v),
                _ => {
                    return Err(MatrixIoError::BadNumber {
                        line: index + 1,
                        column: column + 1,
                        text: cell.to_string(),
                    });
                }
            }
        }
        let got = values.len() - start;
        if rows == 0 {
            columns = got;
        } else if got != columns {
            return Err(MatrixIoError::Ragged { line: index + 1, got, expected: columns });
        }
        rows += 1;
    }
    if rows == 0 || columns == 0 {
        return Err(MatrixIoError::Empty);
    }
    Ok(DMatrix::from_row_slice(rows, columns, &values))
}

/// [`parse_csv`] on raw bytes.
pub fn parse_csv_bytes(bytes: &[u8]) -> Result<DMatrix<f64>, MatrixIoError> {
    parse_csv(std::str::from_utf8(bytes).map_err(|_| MatrixIoError::NotText)?)
}

/// Writes a matrix as CSV, one row per line, with the shortest text that reads back to the same
/// f64 (Rust's `Display` for floats round-trips).
pub fn to_csv(m: &DMatrix<f64>) -> String {
    let mut out = String::with_capacity(m.nrows() * m.ncols() * 12);
    for row in m.row_iter() {
        for (j, v) in row.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            out.push_str(&v.to_string());
        }
        out.push('\n');
    }
    out
}

const NPY_MAGIC: &[u8] = b"\x93NUMPY";

/// Parses a 2-D `.npy` array of little-endian f64 or f32.
pub fn parse_npy(bytes: &[u8]) -> Result<DMatrix<f64>, MatrixIoError> {
    let err = |msg: &str| MatrixIoError::Npy(msg.to_string());
    if bytes.len() < 10 || &bytes[..6] != NPY_MAGIC {
        return Err(err("missing the \\x93NUMPY magic"));
    }
    let major = bytes[6];
    let (header_len, header_start): (usize, usize) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(err("truncated header length"));
            }
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
        }
        v => return Err(MatrixIoError::Npy(format!("format version {v} (need 1, 2 or 3)"))),
    };
    let data_start = header_start
        .checked_add(header_len)
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| err("header runs past the end of the file"))?;
    let header = std::str::from_utf8(&bytes[header_start..data_start])
        .map_err(|_| err("header is not text"))?;
    let descr = header_value(header, "descr")
        .ok_or_else(|| err("header has no 'descr'"))?
        .trim_matches(|c| c == '\'' || c == '"');
    let width = match descr {
        "<f8" | "=f8" | "|f8" => 8,
        "<f4" | "=f4" | "|f4" => 4,
        other => {
            return Err(MatrixIoError::Npy(format!(
                "dtype '{other}' (need little-endian float64 '<f8' or float32 '<f4')"
            )));
        }
    };
    let fortran = match header_value(header, "fortran_order") {
        Some("True") => true,
        Some("False") => false,
        _ => return Err(err("header has no boolean 'fortran_order'")),
    };
    let shape = parse_shape(header).ok_or_else(|| err("header has no readable 'shape'"))?;
    let (rows, cols) = match shape.as_slice() {
        [r, c] => (*r, *c),
        other => {
            return Err(MatrixIoError::Npy(format!(
                "shape {other:?} is not 2-D (need voxels × time points)"
            )));
        }
    };
    let count = rows.checked_mul(cols).ok_or_else(|| err("shape overflows"))?;
    if count == 0 {
        return Err(MatrixIoError::Empty);
    }
    let data = &bytes[data_start..];
    if data.len() != count * width {
        return Err(MatrixIoError::Npy(format!(
            "shape ({rows}, {cols}) needs {} data bytes, the file has {}",
            count * width,
            data.len()
        )));
    }
    let values: Vec<f64> = if width == 8 {
        data.chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("chunk of 8")))
            .collect()
    } else {
        data.chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("chunk of 4")) as f64)
            .collect()
    };
    if values.iter().any(|v| !v.is_finite()) {
        return Err(err("the array holds NaN or infinite values"));
    }
    Ok(if fortran {
        DMatrix::from_column_slice(rows, cols, &values)
    } else {
        DMatrix::from_row_slice(rows, cols, &values)
    })
}

/// Writes a matrix as a version-1.0 `.npy` file of little-endian f64 in Fortran order (the
/// column-major layout it already has, so the data are copied as they are).
pub fn to_npy(m: &DMatrix<f64>) -> Vec<u8> {
    let mut header = format!(
        "{{'descr': '<f8', 'fortran_order': True, 'shape': ({}, {}), }}",
        m.nrows(),
        m.ncols()
    );
    // Pad with spaces so that magic + version + length + header + '\n' is a multiple of 64.
    let unpadded = NPY_MAGIC.len() + 2 + 2 + header.len() + 1;
    header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + 8 * m.len());
    out.extend_from_slice(NPY_MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for v in m.iter() {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// The text after `'key':` up to the next top-level comma or closing brace.
fn header_value<'h>(header: &'h str, key: &str) -> Option<&'h str> {
    let pattern_single = format!("'{key}'");
    let pattern_double = format!("\"{key}\"");
    let at = header
        .find(&pattern_single)
        .map(|i| i + pattern_single.len())
        .or_else(|| header.find(&pattern_double).map(|i| i + pattern_double.len()))?;
    let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

fn parse_shape(header: &str) -> Option<Vec<usize>> {
    let at = header.find("'shape'").or_else(|| header.find("\"shape\""))?;
    let rest = &header[at..];
    let open = rest.find('(')?;
    let close = rest[open..].find(')')? + open;
    rest[open + 1..close]
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_round_trips_and_reports_errors() {
        let m = DMatrix::from_row_slice(2, 3, &[1.0, -2.5, 1e-300, 0.1, 3.0, -0.0]);
        assert_eq!(parse_csv(&to_csv(&m)).unwrap(), m);
        let spaced = "# a comment\n1 2  3\n\n4\t5 6\n";
        assert_eq!(
            parse_csv(spaced).unwrap(),
            DMatrix::from_row_slice(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        );
        assert_eq!(
            parse_csv("1,2\n3\n"),
            Err(MatrixIoError::Ragged { line: 2, got: 1, expected: 2 })
        );
        assert!(matches!(
            parse_csv("1,x\n"),
            Err(MatrixIoError::BadNumber { line: 1, column: 2, .. })
        ));
        assert_eq!(parse_csv("\n#\n"), Err(MatrixIoError::Empty));
    }

    #[test]
    fn npy_round_trips_and_reads_c_order_f32() {
        let m = DMatrix::from_row_slice(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.5]);
        let bytes = to_npy(&m);
        assert_eq!((bytes.len() - 8 * 6) % 64, 0);
        assert_eq!(parse_npy(&bytes).unwrap(), m);

        // What numpy writes for np.array([[1,2,3],[4,5,6.5]], dtype='<f4') (C order), by hand.
        let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
        let mut padded = header.to_string();
        padded.push_str(&" ".repeat((64 - (10 + header.len() + 1) % 64) % 64));
        padded.push('\n');
        let mut c_bytes = b"\x93NUMPY\x01\x00".to_vec();
        c_bytes.extend_from_slice(&(padded.len() as u16).to_le_bytes());
        c_bytes.extend_from_slice(padded.as_bytes());
        for v in [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.5] {
            c_bytes.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(parse_npy(&c_bytes).unwrap(), m);

        let truncated = &c_bytes[..c_bytes.len() - 1];
        assert!(matches!(parse_npy(truncated), Err(MatrixIoError::Npy(_))));
        let big_endian =
            c_bytes.iter().map(|&b| if b == b'<' { b'>' } else { b }).collect::<Vec<_>>();
        assert!(
            matches!(parse_npy(&big_endian), Err(MatrixIoError::Npy(msg)) if msg.contains(">f4"))
        );
    }
}
