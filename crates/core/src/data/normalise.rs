/*!
Normalisation into FM's domain (spec cape-fm §2.2–§2.4): every record with ‖x‖₂ ≤ 1, regression
targets in [−1, 1], class labels in {0, 1}.

The sensitivities of FM hold only on that domain, so how a data set gets there matters for privacy
(spec §7.9):
- [`Normaliser::PublicBounds`] and [`Normaliser::RowClip`] use numbers fixed before looking at the
  data (a user's public bounds, a clipping radius). Each record is mapped on its own, so replacing
  one record changes one normalised record: the DP guarantee holds for the raw data.
- [`Normaliser::DataDependent`] is the papers' recipe (spec §2.4 \[R\]): per-feature max |value|,
  then the largest row norm, targets by max |y|. Its scales are functions of every record, so one
  record can move all the others: **not private**. It is offered for reproducing the papers and
  always reported with a warning.

A normaliser is fitted on the training set ([`Normaliser::fit`]) and the fitted map is applied to
training and test data alike.
*/

use serde::{Deserialize, Serialize};

use super::dataset::{Dataset, DatasetError};

/// What the targets are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// Real values, mapped into [−1, 1] (linear regression).
    Regression,
    /// Class labels that must already be 0 or 1 (logistic regression, the network).
    Binary,
}

/// Public bounds on the raw values: one [lo, hi] per feature and, for regression, one for the
/// target. Fixed without looking at the data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bounds {
    pub features: Vec<(f64, f64)>,
    pub target: Option<(f64, f64)>,
}

/// How raw records are brought into the unit ball.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Normaliser {
    /// The data are already in FM's domain; they are checked, not changed.
    AlreadyNormalised,
    /// Feature d is mapped from its public [lo_d, hi_d] onto [−1, 1] (values outside are clipped),
    /// then every record is divided by √D, so ‖x‖₂ ≤ 1; the target likewise onto [−1, 1].
    PublicBounds(Bounds),
    /// Records longer than `radius` are scaled down to it, then all are divided by `radius`; the
    /// target is mapped from the public `target` bounds onto [−1, 1] (regression only).
    RowClip { radius: f64, target: Option<(f64, f64)> },
    /// The papers' recipe (spec §2.4 \[R\]), fitted on the training data. Not private.
    DataDependent,
}

/// Why normalisation failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum NormaliseError {
    #[error("{got} feature bounds for {expected} features")]
    BoundsLength { expected: usize, got: usize },
    #[error("bounds [{lo}, {hi}] of {what} are not an interval with lo < hi")]
    BadBounds { what: String, lo: f64, hi: f64 },
    #[error(
        "regression targets need public bounds (e.g. \"target\": [lo, hi]) or data-dependent \
         scaling"
    )]
    NoTargetBounds,
    #[error("clipping radius {0} must be positive and finite")]
    Radius(f64),
    #[error("label {value} of record {row} is not 0 or 1; recode the classes as 0/1")]
    NotBinary { row: usize, value: f64 },
    #[error(
        "record {row} has norm {norm} > 1 (or target {target} outside the allowed range): the \
         data are not normalised; choose a normaliser"
    )]
    OutsideDomain { row: usize, norm: f64, target: f64 },
    #[error("feature {feature} is zero in every training record; drop it")]
    ZeroFeature { feature: usize },
    #[error(transparent)]
    Dataset(#[from] DatasetError),
}

/// What was done, for the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Normalisation {
    pub method: String,
    /// Whether the DP guarantee extends to the raw data (false for data-dependent scaling).
    pub private: bool,
    pub warning: Option<String>,
}

/// A normaliser with its scales fixed: apply it to any record.
#[derive(Clone, Debug, PartialEq)]
pub struct Fitted {
    kind: TargetKind,
    /// Per feature: x ↦ (clamp(x, lo, hi) − centre)·scale, before the row step.
    feature_maps: Vec<FeatureMap>,
    row_step: RowStep,
    target_map: Option<FeatureMap>,
    pub description: Normalisation,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct FeatureMap {
    lo: f64,
    hi: f64,
    centre: f64,
    scale: f64,
}

impl FeatureMap {
    fn interval(lo: f64, hi: f64, what: &str) -> Result<Self, NormaliseError> {
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(NormaliseError::BadBounds { what: what.into(), lo, hi });
        }
        Ok(Self { lo, hi, centre: 0.5 * (lo + hi), scale: 2.0 / (hi - lo) })
    }

    fn divide_by(m: f64) -> Self {
        Self { lo: f64::NEG_INFINITY, hi: f64::INFINITY, centre: 0.0, scale: 1.0 / m }
    }

    fn apply(&self, v: f64) -> f64 {
        (v.clamp(self.lo, self.hi) - self.centre) * self.scale
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum RowStep {
    Check,
    Divide(f64),
    ClipThenDivide(f64),
}

impl Normaliser {
    /// Fixes the scales (from the training set `train` for [`Normaliser::DataDependent`]).
    pub fn fit(&self, train: &Dataset, kind: TargetKind) -> Result<Fitted, NormaliseError> {
        let d = train.features();
        let identity = vec![FeatureMap::divide_by(1.0); d];
        let target_from = |bounds: Option<(f64, f64)>| -> Result<_, NormaliseError> {
            match (kind, bounds) {
                (TargetKind::Binary, _) => Ok(None),
                (TargetKind::Regression, Some((lo, hi))) => {
                    Ok(Some(FeatureMap::interval(lo, hi, "the target")?))
                }
                (TargetKind::Regression, None) => Err(NormaliseError::NoTargetBounds),
            }
        };
        let (feature_maps, row_step, target_map, description) = match self {
            Normaliser::AlreadyNormalised => (
                identity,
                RowStep::Check,
                None,
                Normalisation {
                    method: "none: data generated inside the unit ball (public by construction)"
                        .into(),
                    private: true,
                    warning: None,
                },
            ),
            Normaliser::PublicBounds(bounds) => {
                if bounds.features.len() != d {
                    return Err(NormaliseError::BoundsLength {
                        expected: d,
                        got: bounds.features.len(),
                    });
                }
                let maps = bounds
                    .features
                    .iter()
                    .enumerate()
                    .map(|(i, &(lo, hi))| FeatureMap::interval(lo, hi, &format!("feature {i}")))
                    .collect::<Result<Vec<_>, _>>()?;
                (
                    maps,
                    RowStep::Divide((d as f64).sqrt()),
                    target_from(bounds.target)?,
                    Normalisation {
                        method: "public bounds: features onto [-1, 1], records divided by √D"
                            .into(),
                        private: true,
                        warning: None,
                    },
                )
            }
            Normaliser::RowClip { radius, target } => {
                if !(radius.is_finite() && *radius > 0.0) {
                    return Err(NormaliseError::Radius(*radius));
                }
                (
                    identity,
                    RowStep::ClipThenDivide(*radius),
                    target_from(*target)?,
                    Normalisation {
                        method: format!("records clipped to norm {radius}, then divided by it"),
                        private: true,
                        warning: None,
                    },
                )
            }
            Normaliser::DataDependent => {
                let mut maps = Vec::with_capacity(d);
                for j in 0..d {
                    let m = train.x.column(j).amax();
                    if m == 0.0 {
                        return Err(NormaliseError::ZeroFeature { feature: j });
                    }
                    maps.push(FeatureMap::divide_by(m));
                }
                let largest = (0..train.len())
                    .map(|i| {
                        (0..d).map(|j| maps[j].apply(train.x[(i, j)]).powi(2)).sum::<f64>().sqrt()
                    })
                    .fold(0.0, f64::max);
                let target = match kind {
                    TargetKind::Binary => None,
                    TargetKind::Regression => {
                        let m = train.y.amax();
                        Some(FeatureMap::divide_by(if m > 0.0 { m } else { 1.0 }))
                    }
                };
                (
                    maps,
                    RowStep::Divide(largest),
                    target,
                    Normalisation {
                        method: "data-dependent (spec §2.4 [R]): features by max |value|, records \
                                 by the largest norm, targets by max |y|"
                            .into(),
                        private: false,
                        warning: Some(
                            "the scales are computed from the training data, so the released \
                             model is NOT differentially private with respect to the raw data \
                             (spec §7.9); supply public bounds for a real guarantee"
                                .into(),
                        ),
                    },
                )
            }
        };
        Ok(Fitted { kind, feature_maps, row_step, target_map, description })
    }
}

impl Fitted {
    /// Maps every record of `data`. Labels of a binary task must be 0 or 1. With
    /// [`Normaliser::AlreadyNormalised`], records outside the domain are refused.
    pub fn apply(&self, data: &Dataset) -> Result<Dataset, NormaliseError> {
        let mut out = data.clone();
        for i in 0..data.len() {
            let mut row: Vec<f64> =
                (0..data.features()).map(|j| self.feature_maps[j].apply(data.x[(i, j)])).collect();
            let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
            let factor = match self.row_step {
                RowStep::Check => 1.0,
                RowStep::Divide(m) => 1.0 / m,
                RowStep::ClipThenDivide(r) => 1.0 / norm.max(r),
            };
            row.iter_mut().for_each(|v| *v *= factor);
            for (j, v) in row.into_iter().enumerate() {
                out.x[(i, j)] = v;
            }
            let y = data.y[i];
            out.y[i] = match (self.kind, &self.target_map) {
                (TargetKind::Binary, _) => {
                    if y != 0.0 && y != 1.0 {
                        return Err(NormaliseError::NotBinary { row: i, value: y });
                    }
                    y
                }
                (TargetKind::Regression, Some(map)) => map.apply(y),
                (TargetKind::Regression, None) => y,
            };
            if self.row_step == RowStep::Check
                && (norm > 1.0 + 1e-12 || (self.kind == TargetKind::Regression && y.abs() > 1.0))
            {
                return Err(NormaliseError::OutsideDomain { row: i, norm, target: y });
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw() -> Dataset {
        Dataset::from_rows(&[vec![10.0, -4.0], vec![0.0, 4.0], vec![5.0, 0.0]], &[3.0, -1.0, 1.0])
            .unwrap()
    }

    #[test]
    fn public_bounds_land_in_the_unit_ball_and_clip() {
        let n = Normaliser::PublicBounds(Bounds {
            features: vec![(0.0, 10.0), (-2.0, 2.0)],
            target: Some((-1.0, 3.0)),
        });
        let f = n.fit(&raw(), TargetKind::Regression).unwrap();
        let out = f.apply(&raw()).unwrap();
        let s = 2f64.sqrt();
        assert!((out.x[(0, 0)] - 1.0 / s).abs() < 1e-15);
        assert!((out.x[(0, 1)] + 1.0 / s).abs() < 1e-15, "clipped to −2 then mapped");
        assert!((out.x[(2, 0)]).abs() < 1e-15);
        assert_eq!(out.y.as_slice(), &[1.0, -1.0, 0.0]);
        assert!(out.max_row_norm() <= 1.0 + 1e-15);
        assert!(f.description.private);
    }

    #[test]
    fn row_clip_and_data_dependent() {
        let clip = Normaliser::RowClip { radius: 5.0, target: Some((-3.0, 3.0)) };
        let out = clip.fit(&raw(), TargetKind::Regression).unwrap().apply(&raw()).unwrap();
        assert!((out.x.row(0).norm() - 1.0).abs() < 1e-15, "long row clipped to the radius");
        assert!((out.x[(2, 0)] - 1.0).abs() < 1e-15);
        assert!((out.x[(1, 1)] - 0.8).abs() < 1e-15, "short row only divided");

        let f = Normaliser::DataDependent.fit(&raw(), TargetKind::Regression).unwrap();
        assert!(!f.description.private && f.description.warning.is_some());
        let out = f.apply(&raw()).unwrap();
        assert!((out.max_row_norm() - 1.0).abs() < 1e-15);
        assert_eq!(out.y[0], 1.0);
    }

    #[test]
    fn refusals() {
        let d = raw();
        assert!(matches!(
            Normaliser::AlreadyNormalised.fit(&d, TargetKind::Regression).unwrap().apply(&d),
            Err(NormaliseError::OutsideDomain { row: 0, .. })
        ));
        assert!(matches!(
            Normaliser::AlreadyNormalised.fit(&d, TargetKind::Binary).unwrap().apply(&d),
            Err(NormaliseError::NotBinary { row: 0, .. })
        ));
        assert_eq!(
            Normaliser::RowClip { radius: 1.0, target: None }.fit(&d, TargetKind::Regression),
            Err(NormaliseError::NoTargetBounds)
        );
        let b = Normaliser::PublicBounds(Bounds { features: vec![(0.0, 1.0)], target: None });
        assert_eq!(
            b.fit(&d, TargetKind::Binary),
            Err(NormaliseError::BoundsLength { expected: 2, got: 1 })
        );
    }
}
