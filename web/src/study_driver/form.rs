//! The dashboard's "Private mean" form, read and checked before anything is sent.

use capelab_core::accountant::{Event, PldAccountant};
use capelab_core::data::Bounds;
use capelab_core::fm::{Calibration as FmCalibration, Model};
use capelab_core::secagg;
use capelab_core::study::iterative::nn::NnTask;
use capelab_core::study::iterative::{IterativeConfigError, IterativeParams, NoiseMode};
use capelab_core::study::mean::{Calibration, Masking, Query, StudyConfigError, StudyParams};
use capelab_core::study::regression::RegressionQuery;
use capelab_core::wire::ParticipantId;

use super::target::{EpsilonScope, TARGET_FIELD, TargetCalibration, ledger_collusion_factor};
use crate::public_bounds::{BoundsError, DEFAULT_BOUNDS_TEXT, parse_bounds};

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
    /// SecAgg+ instead of the complete graph (issue 14 item 3).
    pub secagg_plus: bool,
    /// SecAgg+'s degree k and neighbourhood threshold; empty: [`Masking::secagg_plus_for`].
    pub plus_k: String,
    pub plus_threshold: String,
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
            secagg_plus: false,
            plus_k: String::new(),
            plus_threshold: String::new(),
        }
    }
}

/// The checked form.
#[derive(Clone, Debug, PartialEq)]
pub struct MeanForm {
    pub params: StudyParams,
    pub step_mode: bool,
    /// A regression's public bounds, announced to the sites with the study
    /// ([`crate::public_bounds`]); `None` for a mean.
    pub bounds: Option<Bounds>,
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
    #[error("{0}")]
    Iterative(#[from] IterativeConfigError),
    #[error("{field}: {value} must be positive and finite")]
    NotPositive { field: &'static str, value: f64 },
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Bounds(#[from] BoundsError),
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
        if self.secagg_plus {
            let masking = self.masking(params.site_count())?;
            params = params.with_masking(masking)?;
        }
        Ok(MeanForm { params, step_mode: self.step_mode, bounds: None })
    }

    /// SecAgg+ as the fields ask, each empty field at its default for `sites` sites.
    fn masking(&self, sites: usize) -> Result<Masking, FormError> {
        let Some(Masking::SecAggPlus { k, .. }) = Masking::secagg_plus_for(sites) else {
            return Err(FormError::Invalid(format!(
                "SecAgg+ needs at least 4 sites (k + 1 < S with k ≥ 2); {sites} are present: use \
                 the complete graph"
            )));
        };
        let k = match self.plus_k.trim() {
            "" => k,
            text => count("SecAgg+ neighbours k", text)?,
        };
        let threshold = match self.plus_threshold.trim() {
            "" => k / 2 + 1,
            text => count("SecAgg+ threshold per neighbourhood", text)?,
        };
        Ok(Masking::SecAggPlus { k, threshold })
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
    /// Public bounds of the sites' raw CSV columns ([`parse_bounds`]); seeded data ignore them.
    pub bounds: String,
}

impl Default for RegressionFields {
    fn default() -> Self {
        RegressionFields {
            epsilon: "0.5".into(),
            delta: "1e-5".into(),
            // 500 left the fit swamped by the noise (ŵ ≈ −0.08 on every coordinate, issue 17
            // item 11); at 10 000 it lands near w* (study_view::regression's test).
            records_per_site: "10000".into(),
            features: "5".into(),
            logistic: false,
            conventional: true,
            analytic: false,
            step_mode: false,
            bounds: DEFAULT_BOUNDS_TEXT.into(),
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
        let bounds = parse_bounds(&self.bounds, features, model)?;
        Ok(MeanForm { params, step_mode: self.step_mode, bounds: Some(bounds) })
    }
}

/// The dashboard's "Neural network (CAPE gradient descent)" form, as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NnFields {
    /// Whether the user typed ε per iteration or a target for the whole study.
    pub scope: EpsilonScope,
    pub epsilon_per_iteration: String,
    /// The whole-study target ([`EpsilonScope::WholeStudy`]), met under PLD.
    pub epsilon_study: String,
    pub delta: String,
    pub iterations: String,
    pub records_per_site: String,
    pub features: String,
    pub hidden: String,
    pub clip: String,
    pub learning_rate: String,
    pub mode: NoiseMode,
}

impl Default for NnFields {
    fn default() -> Self {
        NnFields {
            scope: EpsilonScope::PerIteration,
            epsilon_per_iteration: "0.5".into(),
            epsilon_study: "5".into(),
            delta: "1e-5".into(),
            iterations: "60".into(),
            records_per_site: "200".into(),
            features: "10".into(),
            hidden: "5".into(),
            clip: "1".into(),
            learning_rate: "0.05".into(),
            mode: NoiseMode::Upfront,
        }
    }
}

/// The checked NN form: the study's parameters, the network's public description, and Adam's
/// learning rate (the dashboard's own, never sent).
#[derive(Clone, Debug, PartialEq)]
pub struct NnForm {
    pub params: IterativeParams,
    pub task: NnTask,
    pub learning_rate: f64,
    /// As typed, or (whole-study target) one iteration's own ε at z, by exact composition.
    pub epsilon_per_iteration: f64,
    /// The whole-study calibration, when the form asked for one.
    pub calibration: Option<TargetCalibration>,
}

impl NnFields {
    /// Reads the fields for a study among `sites`. Δ = 2C/N_s needs N_s: every site uses exactly
    /// N_s records (a site with another count declines, its sensitivity differs).
    pub fn read(&self, sites: Vec<ParticipantId>) -> Result<NnForm, FormError> {
        if sites.len() < 2 {
            return Err(FormError::TooFewSites { present: sites.len() });
        }
        let delta = real("δ", &self.delta)?;
        let iterations = count("iterations J", &self.iterations)?;
        let (epsilon, z, calibration) = match self.scope {
            EpsilonScope::PerIteration => {
                let epsilon = real("ε per iteration", &self.epsilon_per_iteration)?;
                let z = IterativeParams::noise_multiplier_for(
                    epsilon,
                    delta,
                    FmCalibration::default(),
                )?;
                (epsilon, z, None)
            }
            EpsilonScope::WholeStudy => {
                let c = self.calibration(sites.len())?;
                (per_release_epsilon(c.noise_multiplier, delta)?, c.noise_multiplier, Some(c))
            }
        };
        let records = count("records per site N_s", &self.records_per_site)?;
        let features = count("features D", &self.features)?;
        let hidden = count("hidden units H", &self.hidden)?;
        let clip = positive("clipping norm C", real("clipping norm C", &self.clip)?)?;
        let learning_rate = positive("learning rate", real("learning rate", &self.learning_rate)?)?;
        let task = NnTask { features, hidden, clip };
        let params = IterativeParams::new(
            sites,
            self.mode,
            u32::try_from(iterations).unwrap_or(u32::MAX),
            task.num_params(),
            task.sensitivity(records),
            z,
            delta,
        )?;
        Ok(NnForm { params, task, learning_rate, epsilon_per_iteration: epsilon, calibration })
    }

    /// The whole-study target's calibration from the typed target, δ and J (the form shows it
    /// live, [`TargetCalibration::summary`]).
    /// `sites`: how many sites the study runs among (c_S of the ledger's view depends on it).
    pub fn calibration(&self, sites: usize) -> Result<TargetCalibration, FormError> {
        let target = real(TARGET_FIELD, &self.epsilon_study)?;
        let delta = real("δ", &self.delta)?;
        let iterations = real_count("iterations J", &self.iterations)?;
        TargetCalibration::new(target, delta, iterations, ledger_collusion_factor(sites, self.mode))
    }
}

/// The noise mode a form's `<select>` value names (upfront CAPE unless another is named).
pub fn noise_mode(value: &str) -> NoiseMode {
    match value {
        "conventional" => NoiseMode::Conventional,
        "nonprivate" => NoiseMode::NonPrivate,
        _ => NoiseMode::Upfront,
    }
}

/// One Gaussian release's own ε at `delta` (exact): what "ε per iteration" means for a study
/// calibrated for its whole length.
pub(super) fn per_release_epsilon(z: f64, delta: f64) -> Result<f64, FormError> {
    let mut a = PldAccountant::default();
    let event =
        Event::gaussian("iteration", z, 1).map_err(|e| FormError::Invalid(e.to_string()))?;
    a.compose(&event);
    Ok(a.epsilon(delta).map_err(|e| FormError::Invalid(format!("δ: {e}")))?.epsilon)
}

/// A whole number ≥ 0 (0 is left for the calibration to refuse by name).
pub(super) fn real_count(field: &'static str, text: &str) -> Result<usize, FormError> {
    text.trim()
        .parse::<usize>()
        .map_err(|_| FormError::NotACount { field, value: text.trim().to_owned() })
}

pub(super) fn positive(field: &'static str, value: f64) -> Result<f64, FormError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(FormError::NotPositive { field, value })
    }
}

pub(super) fn real(field: &'static str, text: &str) -> Result<f64, FormError> {
    text.trim()
        .parse::<f64>()
        .map_err(|_| FormError::NotANumber { field, value: text.trim().to_owned() })
}

pub(super) fn count(field: &'static str, text: &str) -> Result<usize, FormError> {
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
        assert_eq!(form.params.masking, Masking::Complete);
    }

    #[test]
    fn secagg_plus_takes_its_defaults_or_the_typed_degree_and_threshold() {
        let plus = MeanFields { secagg_plus: true, ..MeanFields::default() };
        let sites = |n: u32| (1..=n).collect::<Vec<_>>();
        let p = plus.read(sites(8)).unwrap().params;
        assert_eq!(p.masking, Masking::SecAggPlus { k: 6, threshold: 4 });
        let typed = MeanFields { plus_k: "4".into(), ..plus.clone() };
        assert_eq!(
            typed.read(sites(8)).unwrap().params.masking,
            Masking::SecAggPlus { k: 4, threshold: 3 }
        );
        let both = MeanFields { plus_threshold: "5".into(), ..typed.clone() };
        assert_eq!(
            both.read(sites(8)).unwrap().params.masking,
            Masking::SecAggPlus { k: 4, threshold: 5 }
        );
        // too few sites, a degree the graph cannot have, words: each named
        let few = plus.read(sites(3)).unwrap_err().to_string();
        assert!(few.contains("at least 4 sites"), "{few}");
        let wide = MeanFields { plus_k: "8".into(), ..plus.clone() };
        assert!(wide.read(sites(8)).unwrap_err().to_string().contains("k = 8"));
        let words = MeanFields { plus_k: "four".into(), ..plus };
        assert!(words.read(sites(8)).unwrap_err().to_string().contains("SecAgg+ neighbours k"));
    }

    #[test]
    fn the_regression_form_makes_a_capefm_study() {
        let form = RegressionFields::default().read(vec![3, 2, 4]).unwrap();
        let Query::Regression(q) = form.params.query else { panic!("{:?}", form.params.query) };
        assert_eq!((q.model, q.release_constant), (Model::Linear, true));
        assert_eq!((form.params.dimension, form.params.values_per_site), (5, 10_000));
        assert_eq!(form.params.vector_len(), 1 + 5 + 15);
        let logistic = RegressionFields { logistic: true, ..RegressionFields::default() };
        let p = logistic.read(vec![2, 3]).unwrap().params;
        assert_eq!(p.vector_len(), 5 + 15);
        // the default bounds: every column on [0, 1], announced with the study
        let b = form.bounds.expect("a regression announces bounds");
        assert_eq!((b.features, b.target), (vec![(0.0, 1.0); 5], Some((0.0, 1.0))));
        let typed = RegressionFields {
            features: "2".into(),
            bounds: "19, 79\n18, 42\n25, 346".into(),
            ..RegressionFields::default()
        };
        let b = typed.read(vec![2, 3]).unwrap().bounds.unwrap();
        assert_eq!((b.features, b.target), (vec![(19.0, 79.0), (18.0, 42.0)], Some((25.0, 346.0))));
        let short = RegressionFields { bounds: "0, 1\n0, 2".into(), ..RegressionFields::default() };
        assert!(matches!(short.read(vec![2, 3]), Err(FormError::Bounds(_))));
        assert!(MeanFields::default().read(vec![2, 3]).unwrap().bounds.is_none());
        let wide = RegressionFields { features: "65".into(), ..RegressionFields::default() };
        assert!(matches!(
            wide.read(vec![2, 3]),
            Err(FormError::Params(StudyConfigError::Dimension { dimension: 65, max: 64 }))
        ));
    }

    #[test]
    fn the_nn_form_makes_an_iterative_study_with_the_sensitivity_of_n_s() {
        let form = NnFields::default().read(vec![4, 2, 3]).unwrap();
        assert_eq!(form.params.sites, [2, 3, 4]);
        assert_eq!(form.params.mode, NoiseMode::Upfront);
        assert_eq!(form.params.max_iterations, 60);
        assert_eq!(form.params.statistic_len, 5 * 10 + 2 * 5 + 1);
        assert!((form.params.sensitivity - 2.0 / 200.0).abs() < 1e-15, "Δ = 2C/N_s");
        let z = FmCalibration::default().multiplier(0.5, 1e-5).unwrap().multiplier;
        assert_eq!(form.params.noise_multiplier, z);
        assert_eq!(form.learning_rate, 0.05);
        let bad_lr = NnFields { learning_rate: "0".into(), ..NnFields::default() };
        assert_eq!(
            bad_lr.read(vec![2, 3]).unwrap_err(),
            FormError::NotPositive { field: "learning rate", value: 0.0 }
        );
        let no_j = NnFields { iterations: "0".into(), ..NnFields::default() };
        assert!(matches!(
            no_j.read(vec![2, 3]),
            Err(FormError::NotACount { field: "iterations J", .. })
        ));
        assert_eq!(
            NnFields::default().read(vec![2]).unwrap_err(),
            FormError::TooFewSites { present: 1 }
        );
    }

    #[test]
    fn the_nn_form_calibrates_z_for_a_whole_study_target_under_pld() {
        let fields = NnFields {
            scope: EpsilonScope::WholeStudy,
            epsilon_study: "4".into(),
            ..NnFields::default()
        };
        let form = fields.read(vec![2, 3]).unwrap();
        let c = form.calibration.expect("a whole-study target calibrates");
        assert_eq!(c, fields.calibration(2).unwrap());
        assert!(c.collusion_factor > 1.0, "CAPE's ledger view: {c:?}");
        assert_eq!((c.target_epsilon, c.iterations), (4.0, 60));
        assert_eq!(form.params.noise_multiplier, c.noise_multiplier);
        assert!(c.epsilon <= 4.0 && c.rdp_noise_multiplier > c.noise_multiplier, "{c:?}");
        // one iteration's own ε is what the study composes 60 times
        assert!(form.epsilon_per_iteration > 0.0 && form.epsilon_per_iteration < 4.0);
        // the per-iteration field is ignored, a bad target is named
        let ignored = NnFields { epsilon_per_iteration: "x".into(), ..fields.clone() };
        assert!(ignored.read(vec![2, 3]).is_ok());
        let bad = |f: NnFields| f.read(vec![2, 3]).unwrap_err().to_string();
        let no_target = NnFields { epsilon_study: "0".into(), ..fields.clone() };
        assert!(bad(no_target).starts_with(TARGET_FIELD));
        let words = NnFields { epsilon_study: "lots".into(), ..fields.clone() };
        assert!(bad(words).starts_with(TARGET_FIELD));
        let big_delta = NnFields { delta: "2".into(), ..fields.clone() };
        assert!(bad(big_delta).starts_with("δ"));
        let no_j = NnFields { iterations: "0".into(), ..fields };
        assert!(bad(no_j).starts_with("iterations J"));
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
