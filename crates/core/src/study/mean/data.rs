/*!
A site's private rows: N_s rows of d values, each in [0, 1] (the domain the sensitivity
Δ = √d/N_s assumes), and their mean f(x_s).

A value outside [0, 1] would break the privacy guarantee silently (the noise is calibrated to the
range), so it is refused, never clipped: the site declines and the dashboard shows the error,
which names the row, the column and the value.
*/

use serde::{Deserialize, Serialize};

use crate::fm::Model;

/// Why a site's rows do not fit the study. Rows and columns count from 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, thiserror::Error)]
pub enum DataError {
    #[error("the site holds {got} rows, the study asks for N_s = {expected} per site")]
    WrongRowCount { expected: usize, got: usize },
    #[error("row {row} has {got} values, the study's dimension is d = {expected}")]
    WrongWidth { row: usize, expected: usize, got: usize },
    #[error("row {row}, column {column} is {value}, not a number")]
    NotFinite { row: usize, column: usize, value: f64 },
    #[error(
        "row {row}, column {column} is {value}, outside [0, 1]: the noise is calibrated to that \
         range, so rescale the data into it (values are never clipped silently)"
    )]
    OutOfRange { row: usize, column: usize, value: f64 },
    #[error(
        "row {row}: its features have norm ‖x‖₂ = {norm}, more than 1: FM's sensitivities hold \
         only for ‖x‖₂ ≤ 1, so bring the data there with public bounds (never clipped silently)"
    )]
    RowNorm { row: usize, norm: f64 },
    #[error(
        "row {row}: label {value} is outside {} (the last column is the label)",
        match model { Model::Linear => "[−1, 1]", Model::Logistic => "{0, 1}" }
    )]
    Label { row: usize, value: f64, model: Model },
}

/// Checks `rows` against a study of N_s = `values_per_site` rows of `dimension` values in [0, 1].
/// The first problem found is reported.
pub fn check_rows(
    rows: &[Vec<f64>],
    values_per_site: usize,
    dimension: usize,
) -> Result<(), DataError> {
    if rows.len() != values_per_site {
        return Err(DataError::WrongRowCount { expected: values_per_site, got: rows.len() });
    }
    for (row, values) in rows.iter().enumerate() {
        if values.len() != dimension {
            return Err(DataError::WrongWidth { row, expected: dimension, got: values.len() });
        }
        for (column, &value) in values.iter().enumerate() {
            if !value.is_finite() {
                return Err(DataError::NotFinite { row, column, value });
            }
            if !(0.0..=1.0).contains(&value) {
                return Err(DataError::OutOfRange { row, column, value });
            }
        }
    }
    Ok(())
}

/// f(x_s): the coordinate-wise mean of the rows (which must have passed [`check_rows`]).
pub fn row_mean(rows: &[Vec<f64>], dimension: usize) -> Vec<f64> {
    let mut mean = vec![0.0; dimension];
    for row in rows {
        for (m, v) in mean.iter_mut().zip(row) {
            *m += v;
        }
    }
    let n = rows.len().max(1) as f64;
    mean.iter_mut().for_each(|m| *m /= n);
    mean
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_problem_names_its_place() {
        let ok = vec![vec![0.0, 1.0], vec![0.5, 0.25]];
        assert_eq!(check_rows(&ok, 2, 2), Ok(()));
        assert_eq!(row_mean(&ok, 2), vec![0.25, 0.625]);
        assert_eq!(check_rows(&ok, 3, 2), Err(DataError::WrongRowCount { expected: 3, got: 2 }));
        assert_eq!(
            check_rows(&[vec![0.0, 1.0], vec![0.5]], 2, 2),
            Err(DataError::WrongWidth { row: 1, expected: 2, got: 1 })
        );
        let nan = check_rows(&[vec![0.0, f64::NAN]], 1, 2).unwrap_err();
        assert!(matches!(nan, DataError::NotFinite { row: 0, column: 1, .. }));
        assert_eq!(nan.to_string(), "row 0, column 1 is NaN, not a number");
        let out = check_rows(&[vec![0.0, 0.0], vec![0.0, 1.5]], 2, 2).unwrap_err();
        assert_eq!(out, DataError::OutOfRange { row: 1, column: 1, value: 1.5 });
        assert!(out.to_string().contains("row 1, column 1 is 1.5"), "{out}");
        assert!(matches!(
            check_rows(&[vec![-0.0001]], 1, 1),
            Err(DataError::OutOfRange { row: 0, column: 0, .. })
        ));
    }
}
