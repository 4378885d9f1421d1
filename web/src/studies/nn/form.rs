//! The dashboard's "Neural network (CAPE gradient descent)" form: ε per iteration or for the
//! whole study, the network's public description, and Adam's learning rate.

use capelab_core::fm::Calibration as FmCalibration;
use capelab_core::study::iterative::nn::NnTask;
use capelab_core::study::iterative::{IterativeConfigError, IterativeParams, NoiseMode};
use capelab_core::wire::ParticipantId;

use crate::frame::form::{Field, FormError};
use crate::frame::target::{
    EpsilonScope, TargetCalibration, calibrate_fields, iterative_config_error, per_release_epsilon,
};
use crate::numbers::show;
use crate::studies::mean::form::{MAX_DELTA, MAX_EPSILON, MAX_SITE_VALUES, MIN_DELTA, MIN_EPSILON};

pub const EPSILON: Field = Field::new("nn-epsilon", "ε per iteration");
pub const EPSILON_STUDY: Field = Field::new("nn-epsilon-study", "ε for the whole study");
pub const DELTA: Field = Field::new("nn-delta", "δ");
pub const ITERATIONS: Field = Field::new("nn-iterations", "iterations J");
pub const RECORDS: Field = Field::new("nn-records", "records per site N_s");
pub const FEATURES: Field = Field::new("nn-features", "features D");
pub const HIDDEN: Field = Field::new("nn-hidden", "hidden units H");
pub const CLIP: Field = Field::new("nn-clip", "clipping norm C");
pub const LEARNING_RATE: Field = Field::new("nn-lr", "learning rate (Adam)");

/// The longest training the form starts: J iterations of one round trip each.
pub const MAX_ITERATIONS: usize = 5_000;
/// The widest network: H·D + 2H + 1 values per gradient, every iteration, every site.
pub const MAX_FEATURES: usize = 256;
pub const MAX_HIDDEN: usize = 64;

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
            return Err(FormError::too_few_sites(sites.len(), 2, "CAPE needs at least two"));
        }
        let delta = DELTA.real_in(&self.delta, MIN_DELTA, MAX_DELTA)?;
        let iterations = ITERATIONS.count(&self.iterations, 1, MAX_ITERATIONS)?;
        let (epsilon, z, calibration) = match self.scope {
            EpsilonScope::PerIteration => {
                let epsilon =
                    EPSILON.positive(&self.epsilon_per_iteration, MIN_EPSILON, MAX_EPSILON)?;
                let z =
                    IterativeParams::noise_multiplier_for(epsilon, delta, FmCalibration::default())
                        .map_err(|e| EPSILON.error(format!("no noise level meets it ({e})")))?;
                (epsilon, z, None)
            }
            EpsilonScope::WholeStudy => {
                let c = self.calibration(sites.len())?;
                let per = per_release_epsilon(c.noise_multiplier, delta)
                    .map_err(|e| EPSILON_STUDY.error(e))?;
                (per, c.noise_multiplier, Some(c))
            }
        };
        let features = FEATURES.count(&self.features, 1, MAX_FEATURES)?;
        let records = RECORDS.count(&self.records_per_site, 1, MAX_SITE_VALUES / features)?;
        let hidden = HIDDEN.count(&self.hidden, 1, MAX_HIDDEN)?;
        let clip = CLIP.positive(&self.clip, 1e-6, 1e6)?;
        let learning_rate = LEARNING_RATE.positive(&self.learning_rate, 1e-6, 10.0)?;
        let task = NnTask { features, hidden, clip };
        let params = IterativeParams::new(
            sites,
            self.mode,
            u32::try_from(iterations).unwrap_or(u32::MAX),
            task.num_params(),
            task.sensitivity(records),
            z,
            delta,
        )
        .map_err(|e| match e {
            IterativeConfigError::NoiseTooLong { got, max } => ITERATIONS.error(format!(
                "J × the network's {} weights is {} noise values, more than one SecureAgg run \
                 carries ({}): lower J, D or H",
                show(task.num_params() as f64),
                show(got as f64),
                show(max as f64)
            )),
            other => iterative_config_error(&other, EPSILON, DELTA),
        })?;
        Ok(NnForm { params, task, learning_rate, epsilon_per_iteration: epsilon, calibration })
    }

    /// The whole-study target's calibration from the typed target, δ and J (the form shows it
    /// live, [`TargetCalibration::summary`]).
    /// `sites`: how many sites the study runs among (c_S of the ledger's view depends on it).
    pub fn calibration(&self, sites: usize) -> Result<TargetCalibration, FormError> {
        calibrate_fields(
            (EPSILON_STUDY, &self.epsilon_study),
            (DELTA, &self.delta),
            (ITERATIONS, &self.iterations, MAX_ITERATIONS),
            sites,
            self.mode,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(bad_lr.read(vec![2, 3]).unwrap_err().field, Some(LEARNING_RATE.id));
        let no_j = NnFields { iterations: "0".into(), ..NnFields::default() };
        assert_eq!(no_j.read(vec![2, 3]).unwrap_err().field, Some(ITERATIONS.id));
        let one = NnFields::default().read(vec![2]).unwrap_err();
        assert_eq!(one.field, None);
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
        let bad = |f: NnFields| f.read(vec![2, 3]).unwrap_err().field;
        assert_eq!(
            bad(NnFields { epsilon_study: "0".into(), ..fields.clone() }),
            Some(EPSILON_STUDY.id)
        );
        assert_eq!(
            bad(NnFields { epsilon_study: "lots".into(), ..fields.clone() }),
            Some(EPSILON_STUDY.id)
        );
        assert_eq!(bad(NnFields { delta: "2".into(), ..fields.clone() }), Some(DELTA.id));
        assert_eq!(bad(NnFields { iterations: "0".into(), ..fields }), Some(ITERATIONS.id));
    }

    #[test]
    fn typed_nonsense_in_any_field_is_a_named_refusal_never_a_panic() {
        let fields: [crate::frame::form::FuzzField<NnFields>; 9] = [
            (EPSILON.id, |f| &mut f.epsilon_per_iteration),
            (EPSILON_STUDY.id, |f| &mut f.epsilon_study),
            (DELTA.id, |f| &mut f.delta),
            (ITERATIONS.id, |f| &mut f.iterations),
            (RECORDS.id, |f| &mut f.records_per_site),
            (FEATURES.id, |f| &mut f.features),
            (HIDDEN.id, |f| &mut f.hidden),
            (CLIP.id, |f| &mut f.clip),
            (LEARNING_RATE.id, |f| &mut f.learning_rate),
        ];
        for scope in [EpsilonScope::PerIteration, EpsilonScope::WholeStudy] {
            let base = || NnFields { scope, ..NnFields::default() };
            crate::frame::form::each_mistake(&fields, base, |id, typed, f| {
                match f.read(vec![1, 2, 3]) {
                    Ok(form) => assert!(form.params.validate().is_ok()),
                    Err(e) => assert_eq!(e.field, Some(id), "{typed}: {e:?}"),
                }
            });
        }
    }
}
