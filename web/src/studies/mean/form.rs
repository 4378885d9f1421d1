//! The dashboard's "Private mean" form, read and checked before anything is sent: every field's
//! range here, the core's own checks after, each refusal named by the field it is about.

use capelab_core::accountant::gaussian::CalibrationError;
use capelab_core::data::Bounds;
use capelab_core::secagg::{self, ConfigError};
use capelab_core::study::mean::{Calibration, Masking, StudyConfigError, StudyParams};
use capelab_core::wire::ParticipantId;

use crate::frame::form::{Field, FormError};
use crate::numbers::show;

pub const EPSILON: Field = Field::new("mean-epsilon", "ε (privacy per study)");
pub const DELTA: Field = Field::new("mean-delta", "δ");
pub const VALUES: Field = Field::new("mean-values", "values per site N_s");
pub const DIMENSION: Field = Field::new("mean-dimension", "dimension d");
pub const THRESHOLD: Field = Field::new("mean-threshold", "threshold t");
pub const PLUS_K: Field = Field::new("mean-plus-k", "neighbours k (even)");
pub const PLUS_THRESHOLD: Field = Field::new("mean-plus-threshold", "threshold per neighbourhood");

/// The most values one site's tab generates or uses for one study (N_s · d): 80 MB of numbers.
pub const MAX_SITE_VALUES: usize = 10_000_000;
/// The largest ε a form takes: beyond it no guarantee means anything.
pub const MAX_EPSILON: f64 = 100.0;
/// The smallest ε a form takes (the noise of anything smaller swamps any table a tab holds).
pub const MIN_EPSILON: f64 = 1e-3;
/// δ from here to [`MAX_DELTA`]: the ledgers' δ is 1e-5 by default.
pub const MIN_DELTA: f64 = 1e-15;
pub const MAX_DELTA: f64 = 0.1;

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
    /// ([`crate::studies::regression::public_bounds`]); `None` for a mean.
    pub bounds: Option<Bounds>,
}

/// The threshold the core picks when the field is empty: ⌊2S/3⌋ + 1.
pub fn default_threshold(sites: usize) -> usize {
    secagg::Params::default_threshold(sites)
}

/// Too few sites for a round: SecureAgg needs two.
pub fn too_few_for_a_round(present: usize) -> FormError {
    FormError::too_few_sites(present, 2, "SecureAgg sums the noise of at least two")
}

/// ε and δ as a round's form reads them: ε above 1 only with the analytic calibration.
pub fn privacy(
    epsilon: Field,
    delta: Field,
    fields: (&str, &str),
    analytic: bool,
) -> Result<(f64, f64), FormError> {
    let e = epsilon.positive(fields.0, MIN_EPSILON, MAX_EPSILON)?;
    if !analytic && e >= 1.0 {
        return Err(epsilon.error(format!(
            "{} is not below 1: the classical calibration gives a guarantee only below 1; tick \
             “analytic calibration” for a larger ε",
            show(e)
        )));
    }
    let d = delta.real_in(fields.1, MIN_DELTA, MAX_DELTA)?;
    Ok((e, d))
}

impl MeanFields {
    /// Reads the fields for a study among `sites`; the core validates the parameters.
    pub fn read(&self, sites: Vec<ParticipantId>) -> Result<MeanForm, FormError> {
        if sites.len() < 2 {
            return Err(too_few_for_a_round(sites.len()));
        }
        let present = sites.len();
        let (epsilon, delta) =
            privacy(EPSILON, DELTA, (&self.epsilon, &self.delta), self.analytic)?;
        let values_per_site = VALUES.count(&self.values_per_site, 1, MAX_SITE_VALUES)?;
        let dimension = DIMENSION.count(&self.dimension, 1, StudyParams::MAX_DIMENSION)?;
        if values_per_site.saturating_mul(dimension) > MAX_SITE_VALUES {
            return Err(VALUES.error(format!(
                "{} values of dimension {} are {} numbers per site, more than a tab holds ({}): \
                 lower N_s or d",
                show(values_per_site as f64),
                show(dimension as f64),
                show(values_per_site as f64 * dimension as f64),
                show(MAX_SITE_VALUES as f64)
            )));
        }
        let calibration =
            if self.analytic { Calibration::Analytic } else { Calibration::Classical };
        let threshold = THRESHOLD.optional_count(&self.threshold, 1, present.max(1))?;
        let mut params = StudyParams::new(sites, epsilon, delta, values_per_site)
            .and_then(|p| p.with_dimension(dimension))
            .map(|p| p.with_conventional(self.conventional))
            .and_then(|p| p.with_calibration(calibration))
            .map_err(|e| study_config_error(&e, present))?;
        if let Some(t) = threshold {
            params = params.with_threshold(t).map_err(|e| study_config_error(&e, present))?;
        }
        if self.secagg_plus {
            let masking = self.masking(present)?;
            params = params.with_masking(masking).map_err(|e| study_config_error(&e, present))?;
        }
        Ok(MeanForm { params, step_mode: self.step_mode, bounds: None })
    }

    /// SecAgg+ as the fields ask, each empty field at its default for `sites` sites.
    fn masking(&self, sites: usize) -> Result<Masking, FormError> {
        let Some(Masking::SecAggPlus { k, .. }) = Masking::secagg_plus_for(sites) else {
            return Err(FormError::whole(format!(
                "SecAgg+ needs at least 4 sites ({sites} are present): untick SecAgg+ to mask \
                 with every other site"
            )));
        };
        let k = PLUS_K.optional_count(&self.plus_k, 2, sites)?.unwrap_or(k);
        let threshold =
            PLUS_THRESHOLD.optional_count(&self.plus_threshold, 1, k + 1)?.unwrap_or(k / 2 + 1);
        Ok(Masking::SecAggPlus { k, threshold })
    }
}

/// The core's refusal of a round's parameters, on the field it is about, in the form's words.
pub fn study_config_error(e: &StudyConfigError, sites: usize) -> FormError {
    match e {
        StudyConfigError::Epsilon(_)
        | StudyConfigError::Calibration(CalibrationError::Epsilon(_)) => {
            EPSILON.error("must be a number above 0")
        }
        StudyConfigError::Calibration(CalibrationError::EpsilonNotBelowOne(e)) => EPSILON.error(
            format!("{} is not below 1: tick “analytic calibration” for a larger ε", show(*e)),
        ),
        StudyConfigError::Delta(_) | StudyConfigError::Calibration(CalibrationError::Delta(_)) => {
            DELTA.error("must lie between 0 and 1")
        }
        StudyConfigError::NoValues => VALUES.error("must be at least 1"),
        StudyConfigError::Dimension { max, .. } => {
            DIMENSION.error(format!("the most it takes is {}", show(*max as f64)))
        }
        StudyConfigError::NoiseFormat(_) | StudyConfigError::Calibration(_) => EPSILON
            .error("the noise this ε calls for is too large to be summed exactly: raise ε, or N_s"),
        StudyConfigError::SecAgg(c) => secagg_error(c, sites),
        other => FormError::whole(other.to_string()),
    }
}

fn secagg_error(e: &ConfigError, sites: usize) -> FormError {
    let least = sites / 2 + 1;
    match e {
        ConfigError::ThresholdAboveSites { threshold, .. } => THRESHOLD.error(format!(
            "{threshold} is more than the {sites} sites present: leave it empty for the default \
             ({})",
            default_threshold(sites)
        )),
        ConfigError::ThresholdAtMostHalf { threshold, .. } => THRESHOLD.error(format!(
            "{threshold} is at most half of the {sites} sites present: an aggregator could then \
             unmask one site; use {least} or more (empty: {})",
            default_threshold(sites)
        )),
        ConfigError::HararyDegreeOutOfRange { k, .. } => PLUS_K.error(format!(
            "k = {k} needs more sites: with {sites} sites k can be at most {}; untick SecAgg+ to \
             mask with every other site",
            sites.saturating_sub(2) & !1
        )),
        ConfigError::HararyDegreeOdd { k } => {
            PLUS_K.error(format!("k = {k} is odd: SecAgg+ needs an even number of neighbours"))
        }
        ConfigError::TooFewSites { sites } => too_few_for_a_round(*sites),
        other => {
            let text = other.to_string();
            if text.contains("neighbourhood") {
                PLUS_THRESHOLD
                    .error(format!("must be more than half of k + 1 and at most k + 1 ({text})"))
            } else {
                FormError::whole(text)
            }
        }
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
        let few = plus.read(sites(3)).unwrap_err();
        assert!(few.message.contains("at least 4 sites") && few.field.is_none(), "{few}");
        let wide = MeanFields { plus_k: "8".into(), ..plus.clone() }.read(sites(8)).unwrap_err();
        assert_eq!(wide.field, Some(PLUS_K.id));
        assert!(wide.message.contains("k = 8"), "{wide}");
        let odd = MeanFields { plus_k: "3".into(), ..plus.clone() }.read(sites(8)).unwrap_err();
        assert!(odd.message.contains("odd"), "{odd}");
        let words = MeanFields { plus_k: "four".into(), ..plus }.read(sites(8)).unwrap_err();
        assert_eq!(words.field, Some(PLUS_K.id));
    }

    #[test]
    fn every_field_is_checked_and_named_in_the_forms_words() {
        let sites = || vec![2, 3, 4];
        let with = |f: fn(&mut MeanFields)| {
            let mut fields = MeanFields::default();
            f(&mut fields);
            fields.read(sites())
        };
        let e = with(|f| f.epsilon = "big".into()).unwrap_err();
        assert_eq!(
            (e.field, e.message.as_str()),
            (Some(EPSILON.id), "ε (privacy per study): “big” is not a number")
        );
        let e = with(|f| f.values_per_site = "0".into()).unwrap_err();
        assert_eq!(e.field, Some(VALUES.id));
        let e = with(|f| f.values_per_site = "100000000".into()).unwrap_err();
        assert!(e.message.contains("too many"), "{e}");
        let e = with(|f| f.epsilon = "-1".into()).unwrap_err();
        assert!(e.message.contains("more than 0"), "{e}");
        let e = with(|f| f.epsilon = "2".into()).unwrap_err();
        assert!(e.message.contains("analytic calibration"), "{e}");
        let e = with(|f| f.delta = "1".into()).unwrap_err();
        assert_eq!(e.field, Some(DELTA.id));
        // t ≤ S/2 is SecureAgg's refusal, in the form's words, on the threshold
        let low = with(|f| f.threshold = "1".into()).unwrap_err();
        assert_eq!(low.field, Some(THRESHOLD.id));
        assert!(
            low.message.contains("at most half") && low.message.contains("use 2 or more"),
            "{low}"
        );
        let e = with(|f| {
            f.dimension = "65536".into();
            f.values_per_site = "1000".into();
        })
        .unwrap_err();
        assert!(e.message.contains("more than a tab holds"), "{e}");
        let t3 = with(|f| {
            f.threshold = " 3 ".into();
            f.conventional = true;
            f.analytic = true;
            f.epsilon = "2".into();
            f.dimension = "4".into();
        })
        .unwrap();
        assert_eq!(t3.params.threshold, 3);
        assert_eq!(t3.params.dimension, 4);
        assert!(t3.params.also_conventional);
        assert_eq!(t3.params.calibration, Calibration::Analytic);
        let few = MeanFields::default().read(vec![2]).unwrap_err();
        assert_eq!(few.field, None);
        assert!(few.message.starts_with("1 site is present"), "{few}");
    }

    /// What a person types into any field, as the browser's form fuzzer does: every answer is a
    /// form, or a refusal about a field of this form (or the form as a whole).
    #[test]
    fn typed_nonsense_in_any_field_is_a_named_refusal_never_a_panic() {
        let fields: [crate::frame::form::FuzzField<MeanFields>; 7] = [
            (EPSILON.id, |f| &mut f.epsilon),
            (DELTA.id, |f| &mut f.delta),
            (VALUES.id, |f| &mut f.values_per_site),
            (DIMENSION.id, |f| &mut f.dimension),
            (THRESHOLD.id, |f| &mut f.threshold),
            (PLUS_K.id, |f| &mut f.plus_k),
            (PLUS_THRESHOLD.id, |f| &mut f.plus_threshold),
        ];
        let base = || MeanFields { secagg_plus: true, ..MeanFields::default() };
        crate::frame::form::each_mistake(&fields, base, |id, typed, f| {
            match f.read((1..=6).collect()) {
                Ok(form) => assert!(form.params.validate().is_ok()),
                Err(e) => assert!(e.field.is_none_or(|f| f == id), "{id} {typed}: {e:?}"),
            }
        });
    }
}
