/*!
What the study's sites compute and release: the seam that lets the private-mean roles run
capeFM too. Everything else (SecureAgg, CAPE, dropouts and re-runs, the ledger gate, the
conventional baseline, the outcome) is the same for every query.

| [`Query`] | a row | f(x_s), the released vector | sensitivity Δ it is calibrated to |
|---|---|---|---|
| `Mean` | d values in [0, 1] | the row mean, d values | √d/N_s |
| `Regression` | D features with ‖x‖ ≤ 1, then the label | the FM arrays scaled to unit sensitivity per block ([`crate::study::regression`]) | m, the blocks' joint multiplier (spec cape-fm §7.1) |

In both cases the ledger accounts one Gaussian release of noise multiplier z = τ/Δ per attempt.
*/

use serde::{Deserialize, Serialize};

use crate::study::StudyId;
use crate::study::regression::{RegressionQuery, check_records};

use super::data::{DataError, check_rows, row_mean};

/// What a study computes. `dimension` in [`super::StudyParams`] is d for a mean and D (the number
/// of features) for a regression.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Query {
    /// The mean of the sites' rows (spec cape-secagg-pca-djica §2).
    #[default]
    Mean,
    /// capeFM (spec cape-fm §4): the functional mechanism's coefficient arrays.
    Regression(RegressionQuery),
}

impl Query {
    /// The values per row: d, or D features and the label.
    pub fn row_width(&self, dimension: usize) -> usize {
        match self {
            Query::Mean => dimension,
            Query::Regression(_) => dimension + 1,
        }
    }

    /// The released vector's length.
    pub fn vector_len(&self, dimension: usize) -> usize {
        match self {
            Query::Mean => dimension,
            Query::Regression(q) => q.vector_len(dimension),
        }
    }

    /// Δ, the L2 sensitivity of the released vector under replace-one neighbours.
    pub fn sensitivity(&self, dimension: usize, values_per_site: usize) -> f64 {
        match self {
            Query::Mean => (dimension as f64).sqrt() / values_per_site as f64,
            Query::Regression(q) => q.joint_multiplier(),
        }
    }

    /// Checks a site's rows; the first problem found is reported.
    pub fn check_rows(
        &self,
        rows: &[Vec<f64>],
        values_per_site: usize,
        dimension: usize,
    ) -> Result<(), DataError> {
        match self {
            Query::Mean => check_rows(rows, values_per_site, dimension),
            Query::Regression(q) => check_records(q.model, rows, values_per_site, dimension),
        }
    }

    /// f(x_s) for rows that passed [`Self::check_rows`].
    pub fn value(&self, rows: &[Vec<f64>], dimension: usize) -> Vec<f64> {
        match self {
            Query::Mean => row_mean(rows, dimension),
            Query::Regression(q) => q.site_vector(rows, dimension),
        }
    }

    /// A short name: "mean", or "capeFM linear" / "capeFM logistic".
    pub fn name(&self) -> String {
        match self {
            Query::Mean => "mean".into(),
            Query::Regression(q) => format!("capeFM {}", q.model.name()),
        }
    }

    /// The study name under which a site's ledger records this study's releases.
    pub fn ledger_study_name(&self, study: StudyId) -> String {
        match self {
            Query::Mean => format!("mean {}", study.to_hex()),
            Query::Regression(_) => format!("capefm {}", study.to_hex()),
        }
    }

    /// The ledger label of the CAPE release of `attempt`.
    pub fn cape_label(&self, attempt: u32) -> String {
        match self {
            Query::Mean => format!("mean/cape attempt {attempt}"),
            Query::Regression(q) => {
                format!("capefm/cape attempt {attempt} ({})", q.describe_release())
            }
        }
    }

    /// The ledger label of the conventional release.
    pub fn conventional_label(&self) -> String {
        match self {
            Query::Mean => "mean/conventional".into(),
            Query::Regression(q) => format!("capefm/conventional ({})", q.describe_release()),
        }
    }
}
