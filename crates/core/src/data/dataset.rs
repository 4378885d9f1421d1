/*!
A data set ready for FM or the network: features as an N×D matrix (one record per row), targets as
a vector, with the seeded shuffles, train/test splits and site partitions the experiments use.
*/

use nalgebra::{DMatrix, DVector};
use rand::seq::SliceRandom;

use crate::rng::derive;

/// Why a data set could not be built or split.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DatasetError {
    #[error("the data set is empty")]
    Empty,
    #[error("record {row} has {got} features, the first record has {expected}")]
    Ragged { row: usize, expected: usize, got: usize },
    #[error("{features} feature rows but {targets} targets")]
    LengthMismatch { features: usize, targets: usize },
    #[error("test fraction {0} must lie strictly between 0 and 1")]
    TestFraction(f64),
    #[error("{records} records cannot be split into {sites} sites with at least {min} each")]
    TooFewRecords { records: usize, sites: usize, min: usize },
    #[error("the number of sites must be at least 1, got {0}")]
    NoSites(usize),
    #[error(
        "{records} records leave an empty training or test set at test fraction {test_fraction}; \
         use more records"
    )]
    SplitTooSmall { records: usize, test_fraction: f64 },
}

/// Features (N×D, one record per row) and targets (N).
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    pub x: DMatrix<f64>,
    pub y: DVector<f64>,
}

impl Dataset {
    /// A data set from rows of features and their targets.
    pub fn from_rows(rows: &[Vec<f64>], targets: &[f64]) -> Result<Self, DatasetError> {
        let first = rows.first().ok_or(DatasetError::Empty)?;
        if rows.len() != targets.len() {
            return Err(DatasetError::LengthMismatch {
                features: rows.len(),
                targets: targets.len(),
            });
        }
        let d = first.len();
        if let Some((row, r)) = rows.iter().enumerate().find(|(_, r)| r.len() != d) {
            return Err(DatasetError::Ragged { row, expected: d, got: r.len() });
        }
        let x = DMatrix::from_fn(rows.len(), d, |i, j| rows[i][j]);
        Ok(Self { x, y: DVector::from_column_slice(targets) })
    }

    /// N, the number of records.
    pub fn len(&self) -> usize {
        self.x.nrows()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// D, the number of features.
    pub fn features(&self) -> usize {
        self.x.ncols()
    }

    /// The records at `rows`, in that order.
    pub fn select(&self, rows: &[usize]) -> Self {
        let x = DMatrix::from_fn(rows.len(), self.features(), |i, j| self.x[(rows[i], j)]);
        let y = DVector::from_iterator(rows.len(), rows.iter().map(|&r| self.y[r]));
        Self { x, y }
    }

    /// A seeded random permutation of the records (label `"data/shuffle"` under `seed`).
    pub fn shuffled(&self, seed: u64) -> Self {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.shuffle(&mut derive(seed, "data/shuffle"));
        self.select(&order)
    }

    /// Shuffles with `seed`, then puts the first ⌈(1 − f)·N⌉ records in the training set and the
    /// rest in the test set.
    pub fn split(&self, test_fraction: f64, seed: u64) -> Result<(Self, Self), DatasetError> {
        if !(test_fraction > 0.0 && test_fraction < 1.0) {
            return Err(DatasetError::TestFraction(test_fraction));
        }
        let n = self.len();
        let train = ((1.0 - test_fraction) * n as f64).ceil() as usize;
        if train == 0 || train >= n {
            return Err(DatasetError::SplitTooSmall { records: n, test_fraction });
        }
        let all = self.shuffled(seed);
        let idx: Vec<usize> = (0..n).collect();
        Ok((all.select(&idx[..train]), all.select(&idx[train..])))
    }

    /// The first `n` records (all of them if there are fewer).
    pub fn head(&self, n: usize) -> Self {
        let idx: Vec<usize> = (0..n.min(self.len())).collect();
        self.select(&idx)
    }

    /// Splits the records in order into `sites` parts of ⌊N/S⌋ records each (the symmetric case
    /// N_s = N/S of spec §1.1); the N mod S records left over are dropped and not used by anyone.
    pub fn partition(&self, sites: usize) -> Result<Vec<Self>, DatasetError> {
        if sites == 0 {
            return Err(DatasetError::NoSites(sites));
        }
        let per_site = self.len() / sites;
        if per_site == 0 {
            return Err(DatasetError::TooFewRecords { records: self.len(), sites, min: 1 });
        }
        Ok((0..sites)
            .map(|s| {
                let idx: Vec<usize> = (s * per_site..(s + 1) * per_site).collect();
                self.select(&idx)
            })
            .collect())
    }

    /// The records of `parts` stacked in order.
    pub fn concat(parts: &[Self]) -> Result<Self, DatasetError> {
        let first = parts.first().ok_or(DatasetError::Empty)?;
        let d = first.features();
        let n: usize = parts.iter().map(Self::len).sum();
        let mut x = DMatrix::zeros(n, d);
        let mut y = DVector::zeros(n);
        let mut at = 0;
        for p in parts {
            if p.features() != d {
                return Err(DatasetError::Ragged { row: at, expected: d, got: p.features() });
            }
            x.rows_mut(at, p.len()).copy_from(&p.x);
            y.rows_mut(at, p.len()).copy_from(&p.y);
            at += p.len();
        }
        Ok(Self { x, y })
    }

    /// The largest record norm max_n ‖x_n‖₂.
    pub fn max_row_norm(&self) -> f64 {
        self.x.row_iter().map(|r| r.norm()).fold(0.0, f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy(n: usize) -> Dataset {
        let rows: Vec<Vec<f64>> = (0..n).map(|i| vec![i as f64, -(i as f64)]).collect();
        let y: Vec<f64> = (0..n).map(|i| i as f64).collect();
        Dataset::from_rows(&rows, &y).unwrap()
    }

    #[test]
    fn split_and_partition_keep_records_together() {
        let d = toy(10);
        let (train, test) = d.split(0.3, 5).unwrap();
        assert_eq!((train.len(), test.len()), (7, 3));
        let mut seen: Vec<f64> = train.y.iter().chain(test.y.iter()).copied().collect();
        seen.sort_by(f64::total_cmp);
        assert_eq!(seen, (0..10).map(|i| i as f64).collect::<Vec<_>>());
        for part in [&train, &test] {
            for i in 0..part.len() {
                assert_eq!(part.x[(i, 0)], part.y[i]);
                assert_eq!(part.x[(i, 1)], -part.y[i]);
            }
        }
        let sites = train.partition(3).unwrap();
        assert!(sites.iter().all(|s| s.len() == 2));
        assert_eq!(Dataset::concat(&sites).unwrap(), train.head(6));
        assert_eq!(d.split(0.3, 5).unwrap(), (train, test), "seeded");
    }

    #[test]
    fn refusals_name_the_problem() {
        assert_eq!(Dataset::from_rows(&[], &[]), Err(DatasetError::Empty));
        assert_eq!(
            Dataset::from_rows(&[vec![1.0], vec![1.0, 2.0]], &[0.0, 0.0]),
            Err(DatasetError::Ragged { row: 1, expected: 1, got: 2 })
        );
        assert_eq!(toy(3).split(1.0, 0), Err(DatasetError::TestFraction(1.0)));
        assert_eq!(
            toy(3).partition(4),
            Err(DatasetError::TooFewRecords { records: 3, sites: 4, min: 1 })
        );
    }
}
