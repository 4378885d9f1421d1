//! The dashboard's "Private mean" form, read and checked before anything is sent.

use capelab_core::fm::Model;
use capelab_core::secagg;
use capelab_core::study::mean::{Calibration, Query, StudyConfigError, StudyParams};
use capelab_core::study::regression::RegressionQuery;
use capelab_core::wire::ParticipantId;

/// What the teacher typed, as text (the form's fields).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeanFields {
    pub epsilon: String,
    pub delta: String,
    pub values_per_site: String,
    pub dimension: String,
    /// Empty: the default ⌊2S/3⌋ + 1.
    pub threshold: String,
    pub conventional: bool,
    pub analytic: bool,
    pub step_mode: bool,
}

impl Default for MeanFields {
    fn default() -> Self {
        MeanFields {
            epsilon: "0.5".into(),
            delta: "1e-5".into(),
            values_per_site: "1000".into(),
            dimension: "1".into(),
            threshold: String::new(),
            conventional: false,
            analytic: false,
            step_mode: true,
        }
    }
}

/// The checked form.
#[derive(Clone, Debug, PartialEq)]
pub struct MeanForm {
    pub params: StudyParams,
    pub step_mode: bool,
}

/// A form field that is not a number of the right kind, or parameters the core refuses.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FormError {
    #[error("{field}: “{value}” is not a number")]
    NotANumber { field: &'static str, value: String },
    #[error("{field}: “{value}” is not a whole number ≥ 1")]
    NotACount { field: &'static str, value: String },
    #[error(
        "only {present} site(s) present: a private mean needs at least 2 (SecureAgg needs t > S/2)"
    )]
    TooFewSites { present: usize },
    #[error("{0}")]
    Params(#[from] StudyConfigError),
}

/// The threshold the core picks when the field is empty: ⌊2S/3⌋ + 1.
pub fn default_threshold(sites: usize) -> usize {
    secagg::Params::default_threshold(sites)
}

impl MeanFields {
    /// Reads the fields for a study among `sites`; the core validates the parameters.
    pub fn read(&self, sites: Vec<ParticipantId>) -> Result<MeanForm, FormError> {
        if sites.len() < 2 {
            return Err(FormError::TooFewSites { present: sites.len() });
        }
        let epsilon = real("ε", &self.epsilon)?;
        let delta = real("δ", &self.delta)?;
        let values_per_site = count("values per site", &self.values_per_site)?;
        let dimension = count("dimension", &self.dimension)?;
        let calibration =
            if self.analytic { Calibration::Analytic } else { Calibration::Classical };
        let mut params = StudyParams::new(sites, epsilon, delta, values_per_site)?
            .with_dimension(dimension)?
            .with_conventional(self.conventional)
            .with_calibration(calibration)?;
        if !self.threshold.trim().is_empty() {
            params = params.with_threshold(count("threshold t", &self.threshold)?)?;
        }
        Ok(MeanForm { params, step_mode: self.step_mode })
    }
}

/// The dashboard's "Private regression" form (capeFM), as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegressionFields {
    pub epsilon: String,
    pub delta: String,
    pub records_per_site: String,
    pub features: String,
    pub logistic: bool,
    pub conventional: bool,
    pub analytic: bool,
    pub step_mode: bool,
}

impl Default for RegressionFields {
    fn default() -> Self {
        RegressionFields {
            epsilon: "0.5".into(),
            delta: "1e-5".into(),
            records_per_site: "500".into(),
            features: "5".into(),
            logistic: false,
            conventional: true,
            analytic: false,
            step_mode: false,
        }
    }
}

impl RegressionFields {
    /// Reads the fields for a capeFM study among `sites`; the core validates the parameters.
    pub fn read(&self, sites: Vec<ParticipantId>) -> Result<MeanForm, FormError> {
        if sites.len() < 2 {
            return Err(FormError::TooFewSites { present: sites.len() });
        }
        let epsilon = real("ε", &self.epsilon)?;
        let delta = real("δ", &self.delta)?;
        let records = count("records per site", &self.records_per_site)?;
        let features = count("features D", &self.features)?;
        let model = if self.logistic { Model::Logistic } else { Model::Linear };
        let calibration =
            if self.analytic { Calibration::Analytic } else { Calibration::Classical };
        let params = StudyParams::new(sites, epsilon, delta, records)?
            .with_query(Query::Regression(RegressionQuery::new(model)))?
            .with_dimension(features)?
            .with_conventional(self.conventional)
            .with_calibration(calibration)?;
        Ok(MeanForm { params, step_mode: self.step_mode })
    }
}

fn real(field: &'static str, text: &str) -> Result<f64, FormError> {
    text.trim()
        .parse::<f64>()
        .map_err(|_| FormError::NotANumber { field, value: text.trim().to_owned() })
}

fn count(field: &'static str, text: &str) -> Result<usize, FormError> {
    match text.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(FormError::NotACount { field, value: text.trim().to_owned() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_make_a_study_with_the_default_threshold() {
        let form = MeanFields::default().read(vec![5, 2, 3, 4, 6]).unwrap();
        assert_eq!(form.params.sites, [2, 3, 4, 5, 6]);
        assert_eq!(form.params.threshold, default_threshold(5));
        assert_eq!(default_threshold(5), 4);
        assert_eq!((form.params.epsilon, form.params.delta), (0.5, 1e-5));
        assert_eq!(form.params.values_per_site, 1000);
        assert!(form.step_mode && !form.params.also_conventional);
    }

    #[test]
    fn the_regression_form_makes_a_capefm_study() {
        let form = RegressionFields::default().read(vec![3, 2, 4]).unwrap();
        let Query::Regression(q) = form.params.query else { panic!("{:?}", form.params.query) };
        assert_eq!((q.model, q.release_constant), (Model::Linear, true));
        assert_eq!((form.params.dimension, form.params.values_per_site), (5, 500));
        assert_eq!(form.params.vector_len(), 1 + 5 + 15);
        let logistic = RegressionFields { logistic: true, ..RegressionFields::default() };
        let p = logistic.read(vec![2, 3]).unwrap().params;
        assert_eq!(p.vector_len(), 5 + 15);
        let wide = RegressionFields { features: "65".into(), ..RegressionFields::default() };
        assert!(matches!(
            wide.read(vec![2, 3]),
            Err(FormError::Params(StudyConfigError::Dimension { dimension: 65, max: 64 }))
        ));
    }

    #[test]
    fn every_field_is_checked_and_named() {
        let sites = || vec![2, 3, 4];
        let with = |f: fn(&mut MeanFields)| {
            let mut fields = MeanFields::default();
            f(&mut fields);
            fields.read(sites())
        };
        assert_eq!(
            with(|f| f.epsilon = "big".into()).unwrap_err().to_string(),
            "ε: “big” is not a number"
        );
        assert!(matches!(
            with(|f| f.values_per_site = "0".into()),
            Err(FormError::NotACount { field: "values per site", .. })
        ));
        assert!(matches!(
            with(|f| f.epsilon = "-1".into()),
            Err(FormError::Params(StudyConfigError::Epsilon(_)))
        ));
        // t ≤ S/2 is SecureAgg's refusal, in its own words
        let low = with(|f| f.threshold = "1".into()).unwrap_err();
        assert!(matches!(low, FormError::Params(StudyConfigError::SecAgg(_))), "{low}");
        let t3 = with(|f| {
            f.threshold = " 3 ".into();
            f.conventional = true;
            f.analytic = true;
            f.dimension = "4".into();
        })
        .unwrap();
        assert_eq!(t3.params.threshold, 3);
        assert_eq!(t3.params.dimension, 4);
        assert!(t3.params.also_conventional);
        assert_eq!(t3.params.calibration, Calibration::Analytic);
        assert_eq!(
            MeanFields::default().read(vec![2]).unwrap_err(),
            FormError::TooFewSites { present: 1 }
        );
    }
}
