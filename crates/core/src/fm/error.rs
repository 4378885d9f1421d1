//! Why an FM run was refused.

use crate::cape::PrivacyError;
use crate::data::{DatasetError, NormaliseError};
use crate::gaussian::CalibrationError;

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FmError {
    #[error("ε = {0} must be positive and finite")]
    Epsilon(f64),
    #[error("δ = {0} must lie strictly between 0 and 1")]
    Delta(f64),
    #[error("{mechanism} needs at least {min} sites, got S = {sites}")]
    Sites { mechanism: &'static str, sites: usize, min: usize },
    #[error("the training set has {records} records, fewer than the {sites} sites")]
    TooFewRecords { records: usize, sites: usize },
    #[error(
        "record {row} is outside FM's domain (‖x‖ = {norm}, y = {target}); normalise first \
         (spec §2.2–§2.4)"
    )]
    OutsideDomain { row: usize, norm: f64, target: f64 },
    #[error("output perturbation radius {0} must be positive and finite")]
    Radius(f64),
    #[error("noise calibration: {0}")]
    Calibration(#[from] CalibrationError),
    #[error("CAPE privacy: {0}")]
    Privacy(#[from] PrivacyError),
    #[error("CAPE round for {block}: {message}")]
    Cape { block: &'static str, message: String },
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    #[error(transparent)]
    Normalise(#[from] NormaliseError),
}
