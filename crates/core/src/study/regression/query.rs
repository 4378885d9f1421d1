/*!
What a site of the private-regression study checks and releases: its records in FM's domain, and
its coefficient arrays scaled to unit sensitivity per block (module docs of
[`crate::study::regression`]; spec cape-fm §2.2–§2.3, §4, §7.1, §7.6).
*/

use serde::{Deserialize, Serialize};

use crate::data::Dataset;
use crate::fm::coefficients::unpack_upper;
use crate::fm::sensitivity::{gaussian_fm, joint_multiplier, noisy_blocks};
use crate::fm::{Block, Coefficients, Model};
use crate::study::mean::DataError;

/// The regression a study fits: the model, and whether Λ₀ is released (linear regression only;
/// module docs: the study releases it so that the room's loss can be estimated).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegressionQuery {
    pub model: Model,
    pub release_constant: bool,
}

/// Slack on ‖x‖ ≤ 1 for rounding in normalised data (as [`crate::fm::fit::check_domain`]).
const NORM_SLACK: f64 = 1e-9;

impl RegressionQuery {
    /// `model`, releasing Λ₀ for linear regression.
    pub fn new(model: Model) -> Self {
        Self { model, release_constant: model == Model::Linear }
    }

    /// The blocks that carry data and are released, in release order.
    pub fn blocks(&self) -> Vec<Block> {
        noisy_blocks(self.model, self.release_constant)
    }

    /// The released vector's length for D = `features`.
    pub fn vector_len(&self, features: usize) -> usize {
        self.blocks().iter().map(|b| b.len(features)).sum()
    }

    /// m: the joint L2 sensitivity of the released vector (each block scaled to sensitivity 1).
    pub fn joint_multiplier(&self) -> f64 {
        joint_multiplier(self.model, self.release_constant)
    }

    /// Δ_j(N_s) of each released block, in release order.
    pub fn block_sensitivities(&self, records: usize) -> Vec<(Block, f64)> {
        let s = gaussian_fm(self.model, records, self.release_constant);
        self.blocks().into_iter().filter_map(|b| s.of(b).map(|d| (b, d))).collect()
    }

    /// The blocks' names and m, for ledger labels and the UI: "Λ₀, Λ₁, Λ₂ jointly, m = 1.5".
    pub fn describe_release(&self) -> String {
        let names: Vec<&str> = self
            .blocks()
            .iter()
            .map(|b| match b {
                Block::Constant => "Λ₀",
                Block::Linear => "Λ₁",
                Block::Quadratic => "Λ₂",
            })
            .collect();
        format!("{} jointly, m = {}", names.join(", "), self.joint_multiplier())
    }

    /// The site's released vector: each block's packed entries divided by Δ_j(N_s).
    /// `records` must have passed [`check_records`].
    pub fn site_vector(&self, records: &[Vec<f64>], features: usize) -> Vec<f64> {
        let data = records_dataset(records, features);
        let arrays = Coefficients::of(self.model, &data);
        let mut out = Vec::with_capacity(self.vector_len(features));
        for (block, delta) in self.block_sensitivities(records.len()) {
            out.extend(arrays.block(block).into_iter().map(|v| v / delta));
        }
        out
    }

    /// The coefficient arrays a released (or aggregated) `vector` stands for, at N_s = `records`
    /// per site: every block scaled back by Δ_j(N_s). Blocks that carry no data get their fixed
    /// value (logistic Λ₀ = log 2), an unreleased linear Λ₀ is 0. `None` if the length is wrong.
    pub fn coefficients(
        &self,
        vector: &[f64],
        features: usize,
        records: usize,
    ) -> Option<Coefficients> {
        if vector.len() != self.vector_len(features) {
            return None;
        }
        let mut arrays = Coefficients {
            lambda0: match self.model {
                Model::Linear => 0.0,
                Model::Logistic => std::f64::consts::LN_2,
            },
            lambda1: nalgebra::DVector::zeros(features),
            lambda2: unpack_upper(features, &vec![0.0; features * (features + 1) / 2]),
        };
        let mut at = 0;
        for (block, delta) in self.block_sensitivities(records) {
            let len = block.len(features);
            let values: Vec<f64> = vector[at..at + len].iter().map(|v| v * delta).collect();
            arrays.set_block(block, &values);
            at += len;
        }
        Some(arrays)
    }
}

/// Checks `records` against a regression study of N_s = `values_per_site` records of D =
/// `features` features followed by the label. FM's sensitivities hold only on its domain, so a
/// record outside it is refused, never rescaled (the bounds that bring raw data there must be
/// public, [`crate::data::Normaliser`]).
pub fn check_records(
    model: Model,
    records: &[Vec<f64>],
    values_per_site: usize,
    features: usize,
) -> Result<(), DataError> {
    if records.len() != values_per_site {
        return Err(DataError::WrongRowCount { expected: values_per_site, got: records.len() });
    }
    for (row, values) in records.iter().enumerate() {
        if values.len() != features + 1 {
            return Err(DataError::WrongWidth { row, expected: features + 1, got: values.len() });
        }
        if let Some((column, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(DataError::NotFinite { row, column, value });
        }
        let norm = values[..features].iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm > 1.0 + NORM_SLACK {
            return Err(DataError::RowNorm { row, norm });
        }
        let label = values[features];
        let ok = match model {
            Model::Linear => label.abs() <= 1.0,
            Model::Logistic => label == 0.0 || label == 1.0,
        };
        if !ok {
            return Err(DataError::Label { row, value: label, model });
        }
    }
    Ok(())
}

/// The records as a [`Dataset`]: the first `features` values of each are x, the next is y.
pub fn records_dataset(records: &[Vec<f64>], features: usize) -> Dataset {
    let x = nalgebra::DMatrix::from_fn(records.len(), features, |i, j| records[i][j]);
    let y = nalgebra::DVector::from_iterator(records.len(), records.iter().map(|r| r[features]));
    Dataset { x, y }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::synthetic;

    fn records(data: &Dataset) -> Vec<Vec<f64>> {
        (0..data.len())
            .map(|i| {
                let mut r: Vec<f64> = data.x.row(i).iter().copied().collect();
                r.push(data.y[i]);
                r
            })
            .collect()
    }

    #[test]
    fn the_vector_round_trips_to_the_sites_arrays() {
        let (data, _) = synthetic::regression(40, 3, 0.1, 7);
        for q in [RegressionQuery::new(Model::Linear), RegressionQuery::new(Model::Logistic)] {
            let mut d = data.clone();
            if q.model == Model::Logistic {
                d.y = d.y.map(|y| if y > 0.0 { 1.0 } else { 0.0 });
            }
            let rows = records(&d);
            check_records(q.model, &rows, 40, 3).unwrap();
            let v = q.site_vector(&rows, 3);
            assert_eq!(v.len(), q.vector_len(3));
            let back = q.coefficients(&v, 3, 40).unwrap();
            let exact = Coefficients::of(q.model, &d);
            assert!((back.lambda0 - exact.lambda0).abs() < 1e-12);
            assert!((back.lambda1 - &exact.lambda1).norm() < 1e-12);
            assert!((back.lambda2 - &exact.lambda2).norm() < 1e-12);
            // Λ₂'s first entry (1/N)Σx₁² scaled by 1/Δ₂ = N/√2 (linear) or 8N/√2 (logistic)
            let scale = if q.model == Model::Linear { 1.0 } else { 8.0 };
            let at = if q.model == Model::Linear { 1 + 3 } else { 3 };
            let expected = exact.lambda2[(0, 0)] * 40.0 * scale / std::f64::consts::SQRT_2;
            assert!((v[at] - expected).abs() < 1e-9, "{} {expected}", v[at]);
        }
        assert_eq!(RegressionQuery::new(Model::Linear).vector_len(3), 1 + 3 + 6);
        assert_eq!(RegressionQuery::new(Model::Logistic).vector_len(3), 3 + 6);
        assert_eq!(RegressionQuery::new(Model::Linear).joint_multiplier(), 1.5);
        assert_eq!(
            RegressionQuery::new(Model::Linear).describe_release(),
            "Λ₀, Λ₁, Λ₂ jointly, m = 1.5"
        );
    }

    #[test]
    fn records_outside_fm_domain_are_named() {
        let ok = vec![vec![0.6, 0.8, -1.0], vec![0.0, 0.0, 0.5]];
        assert_eq!(check_records(Model::Linear, &ok, 2, 2), Ok(()));
        assert_eq!(
            check_records(Model::Linear, &ok, 3, 2),
            Err(DataError::WrongRowCount { expected: 3, got: 2 })
        );
        assert_eq!(
            check_records(Model::Linear, &ok, 2, 1),
            Err(DataError::WrongWidth { row: 0, expected: 2, got: 3 })
        );
        let long = vec![vec![0.8, 0.8, 0.0]];
        let e = check_records(Model::Linear, &long, 1, 2).unwrap_err();
        assert!(matches!(e, DataError::RowNorm { row: 0, norm } if (norm - 1.1314).abs() < 1e-3));
        assert!(e.to_string().contains("public bounds"), "{e}");
        assert_eq!(
            check_records(Model::Linear, &[vec![0.1, 1.5]], 1, 1),
            Err(DataError::Label { row: 0, value: 1.5, model: Model::Linear })
        );
        assert_eq!(
            check_records(Model::Logistic, &ok, 2, 2),
            Err(DataError::Label { row: 0, value: -1.0, model: Model::Logistic })
        );
    }
}
