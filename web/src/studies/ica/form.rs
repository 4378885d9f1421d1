/*!
The Joint ICA study's form: the public synthetic data set every site generates its own subjects
of, capePCA's and capeDJICA's privacy, and the loop's length. Checked here and by the core
before anything is sent.

The defaults are the classroom demo: 20×20 maps of R = 8 networks, 8 subjects of 250 time points
per site, time-point level, capePCA at ε_p = 1.5, capeDJICA at ε_i = 0.3 for J = 150, both at
δ = 1e-5, the δ of every other study and of the ledgers (the paper's δ = 1e-2 gave nearly the same
noise the look of ε_p = 1, ε_i = 0.2). With four sites the maps emerge (`cape djica` with the same
settings, seeds 1–6: q_NGI 0.031–0.037, overall ε 6.86 in the full view); halving ε_i to 0.15 or
quartering it makes them fade (q 0.11–0.29, 0.29–0.40). A fresh site's ledger (ε = 10 at
δ = 1e-5) pays for the default run (7.19 by PLD, capePCA included) and one tightened rerun
(1.26): tested below. Subject level (the paper's unit) is one click away and says
what it costs: at this size its maps do not emerge at any ε a study would accept (spec §9).
*/

use capelab_core::djica::{ClipBounds, GaussianLevel, Precision, PrivacyUnit};
use capelab_core::pca::{CovarianceSensitivity, Whitening};
use capelab_core::study::iterative::djica::{DjicaSchedule, DjicaTask, noise_for};
use capelab_core::study::iterative::pca::{MAX_VOXELS, PcaTask, PublicSynthetic, SyntheticPreset};
use capelab_core::study::iterative::{IterativeConfigError, IterativeParams, NoiseMode};
use capelab_core::wire::ParticipantId;
use serde::{Deserialize, Serialize};

use crate::frame::form::{Field, FormError};
use crate::frame::target::{
    EpsilonScope, TargetCalibration, calibrate_fields, iterative_config_error,
};
use crate::numbers::show;
use crate::studies::mean::form::{MAX_DELTA, MAX_EPSILON, MIN_DELTA, MIN_EPSILON};

pub const GRID: Field = Field::new("ica-grid", "grid G (maps are G×G)");
pub const COMPONENTS: Field = Field::new("ica-components", "networks R");
pub const SUBJECTS: Field = Field::new("ica-subjects", "subjects per site");
pub const TIMEPOINTS: Field = Field::new("ica-timepoints", "time points per subject");
pub const SEED: Field = Field::new("ica-seed", "maps seed");
pub const VOXELS: Field = Field::new("ica-voxels", "voxels D (every site's)");
pub const MIN_SAMPLES: Field = Field::new("ica-min-samples", "time points per site (at least)");
pub const LONGEST: Field = Field::new("ica-longest", "longest subject (time points)");
pub const EPSILON_PCA: Field = Field::new("ica-epsilon-pca", "ε_p for capePCA");
pub const EPSILON: Field = Field::new("ica-epsilon", "ε_i per release");
pub const EPSILON_STUDY: Field = Field::new("ica-epsilon-study", "ε for all J iterations");
pub const DELTA: Field = Field::new("ica-delta", "δ");
pub const ITERATIONS: Field = Field::new("ica-iterations", "iterations J");
pub const CLIP: Field = Field::new("ica-clip", "clip B_G");

/// The longest capeDJICA run the form starts.
pub const MAX_ITERATIONS: usize = 2_000;
/// The most subjects and time points a site generates (the data's size is checked as a whole
/// by the core's `PublicSynthetic::validate`, against what a tab holds).
pub const MAX_SUBJECTS: usize = 256;
pub const MAX_TIMEPOINTS: usize = 10_000;

/// The form's fields as typed.
#[derive(Clone, Debug, PartialEq)]
pub struct IcaFields {
    pub grid: String,
    pub components: String,
    pub subjects_per_site: String,
    pub timepoints: String,
    pub preset: SyntheticPreset,
    pub unit: PrivacyUnit,
    pub epsilon_pca: String,
    /// Whether capeDJICA's ε is per release (ε_i) or a target for all J iterations.
    pub scope: EpsilonScope,
    pub epsilon_iteration: String,
    /// capeDJICA's whole-run target ([`EpsilonScope::WholeStudy`]), met under PLD.
    pub epsilon_study: String,
    pub delta: String,
    pub iterations: String,
    pub clip: String,
    pub mode: NoiseMode,
    pub maps_seed: String,
    /// The sites' own files instead of generated subjects.
    pub own_data: bool,
    /// Own data: D (every site's files must have it), the fewest time points a site holds, and
    /// the longest subject (the public shape the sensitivities are calibrated for).
    pub voxels: String,
    pub min_samples: String,
    pub longest_subject: String,
}

impl Default for IcaFields {
    fn default() -> Self {
        IcaFields {
            grid: "20".into(),
            components: "8".into(),
            subjects_per_site: "8".into(),
            timepoints: "250".into(),
            preset: SyntheticPreset::WellConditioned,
            unit: PrivacyUnit::TimePoint,
            epsilon_pca: "1.5".into(),
            scope: EpsilonScope::PerIteration,
            epsilon_iteration: "0.3".into(),
            epsilon_study: "5".into(),
            delta: "1e-5".into(),
            iterations: "150".into(),
            clip: "30".into(),
            mode: NoiseMode::Upfront,
            maps_seed: "1".into(),
            own_data: false,
            voxels: "400".into(),
            min_samples: "2000".into(),
            longest_subject: "250".into(),
        }
    }
}

/// Where the sites' data come from, and the public shape the noise is calibrated for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DataSpec {
    /// The public synthetic data set each site generates its subjects of, or `None`: the sites'
    /// own files (no ground truth: no q_NGI, no matched maps).
    pub synthetic: Option<PublicSynthetic>,
    pub voxels: usize,
    pub components: usize,
    /// N_s every site holds at least: Δ is calibrated for it, a site with fewer declines.
    pub min_samples: usize,
    /// The longest subject N_m (subject-level Δ); a site with a longer one declines.
    pub longest_subject: usize,
}

/// The checked form: what both steps announce.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IcaForm {
    pub data: DataSpec,
    pub sites: Vec<ParticipantId>,
    pub unit: PrivacyUnit,
    pub mode: NoiseMode,
    /// (ε_p, δ) of capePCA's one release.
    pub pca_level: GaussianLevel,
    /// (ε_i, δ) of each of capeDJICA's two releases per iteration (the paper's ε_i). With a
    /// whole-run target, the ε_i whose multiplier is the calibrated one.
    pub level: GaussianLevel,
    /// capeDJICA's whole-run calibration, when the form asked for one: its multiplier is the one
    /// announced (and recorded in the ledgers) per iteration.
    #[serde(default)]
    pub calibration: Option<TargetCalibration>,
    pub max_iterations: u32,
    pub bounds: ClipBounds,
    pub pca_params: IterativeParams,
    pub pca_task: PcaTask,
}

impl IcaFields {
    pub fn read(&self, sites: Vec<ParticipantId>) -> Result<IcaForm, FormError> {
        if sites.len() < 2 {
            return Err(FormError::too_few_sites(sites.len(), 2, "CAPE needs at least two"));
        }
        let data = self.data_spec()?;
        let delta = DELTA.real_in(&self.delta, MIN_DELTA, MAX_DELTA)?;
        let pca_level = GaussianLevel {
            epsilon: EPSILON_PCA.positive(&self.epsilon_pca, MIN_EPSILON, MAX_EPSILON)?,
            delta,
        };
        let iterations = ITERATIONS.count(&self.iterations, 1, MAX_ITERATIONS)?;
        let max_iterations = u32::try_from(iterations).unwrap_or(u32::MAX);
        let (level, calibration) = match self.scope {
            EpsilonScope::PerIteration => {
                let epsilon =
                    EPSILON.positive(&self.epsilon_iteration, MIN_EPSILON, MAX_EPSILON)?;
                (GaussianLevel { epsilon, delta }, None)
            }
            EpsilonScope::WholeStudy => {
                let c = self.calibration(sites.len())?;
                (equivalent_level(c.noise_multiplier, delta)?, Some(c))
            }
        };
        let clip = CLIP.positive(&self.clip, 1e-6, 1e6)?;
        let bounds = ClipBounds { gradient: clip, bias: clip.sqrt() };
        let pca_task = PcaTask {
            voxels: data.voxels,
            components: data.components,
            sensitivity: CovarianceSensitivity { unit: self.unit, rigorous: false },
            whitening: Whitening::Runica,
            synthetic: data.synthetic.clone(),
        };
        let (samples, longest) = (data.min_samples, data.longest_subject);
        let z_pca = pca_level
            .multiplier()
            .map_err(|e| EPSILON_PCA.error(format!("no noise level meets it ({e})")))?;
        let pca_params = IterativeParams::new(
            sites.clone(),
            self.mode,
            1,
            pca_task.statistic_len(),
            pca_task.sensitivity.delta(samples, longest),
            z_pca,
            delta,
        )
        .map_err(|e| iterative_config_error(&e, EPSILON_PCA, DELTA))?;
        // capeDJICA's parameters are checked now too, with a stand-in projection, and announced
        // with capePCA's: each site admits or declines both stages before its first release.
        let mut form = IcaForm {
            data,
            sites,
            unit: self.unit,
            mode: self.mode,
            pca_level,
            level,
            calibration,
            max_iterations,
            bounds,
            pca_params,
            pca_task,
        };
        let (djica, _) = form.djica_params(
            &form.sites,
            form.djica_task(vec![0.0; form.data.components * form.data.voxels]),
        )?;
        form.pca_params = form
            .pca_params
            .with_followed_by(vec![djica])
            .map_err(|e| iterative_config_error(&e, EPSILON, DELTA))?;
        Ok(form)
    }

    /// capeDJICA's whole-run calibration from the typed target, δ and J: the multiplier of each
    /// iteration's one release (the form shows it live).
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

    fn data_spec(&self) -> Result<DataSpec, FormError> {
        if self.own_data {
            let voxels = VOXELS.count(&self.voxels, 2, MAX_VOXELS)?;
            let components = COMPONENTS.count(&self.components, 2, voxels)?;
            let min_samples = MIN_SAMPLES.count(&self.min_samples, 2, 1_000_000)?;
            let longest_subject = LONGEST.count(&self.longest_subject, 1, 1_000_000)?;
            if longest_subject > min_samples {
                return Err(LONGEST.error(format!(
                    "{} is more than a site's time points ({}): a subject cannot be longer than \
                     a site's whole data",
                    show(longest_subject as f64),
                    show(min_samples as f64)
                )));
            }
            return Ok(DataSpec {
                synthetic: None,
                voxels,
                components,
                min_samples,
                longest_subject,
            });
        }
        let grid = GRID.count(&self.grid, 2, 32)?;
        let components = COMPONENTS.count(&self.components, 2, (grid * grid).min(64))?;
        let maps_seed = SEED.count(&self.maps_seed, 0, u32::MAX as usize)? as u64;
        let synthetic = PublicSynthetic {
            preset: self.preset,
            grid,
            components,
            timepoints: TIMEPOINTS.count(&self.timepoints, 2, MAX_TIMEPOINTS)?,
            subjects_per_site: SUBJECTS.count(&self.subjects_per_site, 1, MAX_SUBJECTS)?,
            maps_seed,
        };
        synthetic.validate().map_err(|e| {
            let text = e.to_string();
            if text.contains("values") {
                SUBJECTS.error(format!(
                    "{} subjects of {} time points on a {}×{} grid are more numbers than a tab \
                     holds: fewer subjects or time points",
                    synthetic.subjects_per_site, synthetic.timepoints, grid, grid
                ))
            } else {
                FormError::whole(text)
            }
        })?;
        Ok(DataSpec {
            voxels: synthetic.voxels(),
            components,
            min_samples: synthetic.subjects_per_site * synthetic.timepoints,
            longest_subject: synthetic.timepoints,
            synthetic: Some(synthetic),
        })
    }
}

/// The paper's ε_i whose two releases per iteration make one release at multiplier `m`
/// ([`noise_for`]: m = z/√2 with z = c(δ)/ε_i), so ε_i = c(δ)/(m·√2).
fn equivalent_level(m: f64, delta: f64) -> Result<GaussianLevel, FormError> {
    let c = GaussianLevel { epsilon: 1.0, delta }
        .multiplier()
        .map_err(|e| DELTA.error(format!("no noise level meets it ({e})")))?;
    Ok(GaussianLevel { epsilon: c / (m * std::f64::consts::SQRT_2), delta })
}

impl IcaForm {
    /// capeDJICA's task once capePCA released K.
    pub fn djica_task(&self, projection: Vec<f64>) -> DjicaTask {
        DjicaTask {
            voxels: self.data.voxels,
            components: self.data.components,
            projection,
            bounds: self.bounds,
            unit: self.unit,
            precision: Precision::F32,
        }
    }

    /// capeDJICA's parameters among `sites` (those capePCA heard from).
    pub fn djica_params(
        &self,
        sites: &[ParticipantId],
        task: DjicaTask,
    ) -> Result<(IterativeParams, DjicaTask), FormError> {
        let (samples, longest) = (self.data.min_samples, self.data.longest_subject);
        let (sensitivity, z) = match &self.calibration {
            Some(c) => (task.sensitivity(samples, longest), c.noise_multiplier),
            None => noise_for(&task, self.level, samples, longest)
                .map_err(|e| EPSILON.error(format!("no noise level meets it ({e})")))?,
        };
        let params = IterativeParams::new(
            sites.to_vec(),
            self.mode,
            self.max_iterations,
            task.statistic_len(),
            sensitivity,
            z,
            self.level.delta,
        )
        .map_err(|e| match e {
            IterativeConfigError::NoiseTooLong { got, max } => ITERATIONS.error(format!(
                "J × {} values per iteration is {} noise values, more than one SecureAgg run \
                 carries ({}): lower J or R",
                show(task.statistic_len() as f64),
                show(got as f64),
                show(max as f64)
            )),
            other => iterative_config_error(&other, EPSILON, DELTA),
        })?;
        Ok((params, task))
    }

    pub fn schedule(&self) -> DjicaSchedule {
        DjicaSchedule::for_private(self.mode.is_private())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_defaults_read_and_bad_fields_are_named() {
        let form = IcaFields::default().read(vec![1, 2, 3, 4]).unwrap();
        assert_eq!(form.pca_task.statistic_len(), 400 * 401 / 2);
        // Time point level: Δ_C = 1/N_s with N_s = 8 × 250.
        assert!((form.pca_params.sensitivity - 1.0 / 2000.0).abs() < 1e-15);
        let (params, task) =
            form.djica_params(&[1, 2, 3, 4], form.djica_task(vec![0.0; 8 * 400])).unwrap();
        assert_eq!(params.statistic_len, 72);
        // Δ = √2·2·B_G/N_s and z/√2: τ = z·2·B_G/N_s on every coordinate.
        let z = GaussianLevel { epsilon: 0.3, delta: 1e-5 }.multiplier().unwrap();
        assert!((params.local_sd() - z * 60.0 / 2000.0).abs() < 1e-12);
        assert_eq!(task.components, 8);
        // capePCA announces capeDJICA's J_max releases with itself: a site admits both or neither.
        assert_eq!(form.pca_params.followed_by, vec![params]);

        let bad = |f: fn(&mut IcaFields)| {
            let mut fields = IcaFields::default();
            f(&mut fields);
            fields.read(vec![1, 2, 3]).unwrap_err()
        };
        let e = bad(|f| f.grid = "40".into());
        assert_eq!(e.field, Some(GRID.id));
        assert!(e.message.contains("the most it takes is 32"), "{e}");
        assert_eq!(bad(|f| f.epsilon_iteration = "-1".into()).field, Some(EPSILON.id));
        assert!(bad(|f| f.components = "x".into()).message.starts_with("networks R"));
        assert!(IcaFields::default().read(vec![1]).is_err());
    }

    #[test]
    fn a_whole_run_target_sets_capedjicas_multiplier_under_pld() {
        use capelab_core::accountant::PldAccountant;

        let fields = IcaFields {
            scope: EpsilonScope::WholeStudy,
            epsilon_study: "6".into(),
            epsilon_iteration: "not read".into(),
            ..IcaFields::default()
        };
        let form = fields.read(vec![1, 2, 3, 4]).unwrap();
        let c = form.calibration.expect("calibrated");
        assert_eq!((c.target_epsilon, c.iterations, c.delta), (6.0, 150, 1e-5));
        let (params, _) =
            form.djica_params(&[1, 2, 3, 4], form.djica_task(vec![0.0; 8 * 400])).unwrap();
        assert_eq!(params.noise_multiplier, c.noise_multiplier);
        // J releases at that multiplier meet the target in the view the ledger charges
        let c_s = params.worst_case_collusion_factor();
        assert_eq!(c.collusion_factor, c_s);
        let mut a = PldAccountant::default();
        a.compose(&params.event("djica".into(), 150, c_s).unwrap());
        let spent = a.epsilon(1e-5).unwrap().epsilon;
        assert!(spent <= 6.0 && spent > 5.99, "{spent}");
        assert!(c.rdp_noise_multiplier > c.noise_multiplier);
        // the equivalent ε_i gives the same multiplier through the paper's calibration
        let task = form.djica_task(vec![0.0; 8 * 400]);
        let (_, z) = noise_for(&task, form.level, 2000, 250).unwrap();
        assert!((z / c.noise_multiplier - 1.0).abs() < 1e-12, "{z} vs {c:?}");
        // capePCA keeps ε_p
        assert_eq!(form.pca_level.epsilon, 1.5);
        let bad = |f: IcaFields| f.read(vec![1, 2]).unwrap_err().field;
        assert_eq!(
            bad(IcaFields { epsilon_study: "-2".into(), ..fields.clone() }),
            Some(EPSILON_STUDY.id)
        );
        assert_eq!(bad(IcaFields { delta: "1".into(), ..fields.clone() }), Some(DELTA.id));
        assert_eq!(bad(IcaFields { iterations: "0".into(), ..fields }), Some(ITERATIONS.id));
    }

    #[test]
    fn own_data_announces_d_and_calibrates_for_the_public_shape() {
        let fields = IcaFields {
            own_data: true,
            voxels: "25".into(),
            components: "3".into(),
            min_samples: "300".into(),
            longest_subject: "100".into(),
            unit: PrivacyUnit::Subject,
            ..IcaFields::default()
        };
        let form = fields.read(vec![1, 2]).unwrap();
        assert_eq!(form.pca_task.synthetic, None);
        assert_eq!(form.pca_task.voxels, 25);
        // Subject level: Δ_C = N_m/N_s = 100/300.
        assert!((form.pca_params.sensitivity - 1.0 / 3.0).abs() < 1e-15);
        let bad = IcaFields { longest_subject: "400".into(), ..fields.clone() };
        assert_eq!(bad.read(vec![1, 2]).unwrap_err().field, Some(LONGEST.id));
        let bad = IcaFields { voxels: "2".into(), ..fields };
        assert!(bad.read(vec![1, 2]).is_err());
    }

    #[test]
    fn the_demo_and_one_tightened_rerun_fit_a_fresh_sites_default_budget() {
        use capelab_core::accountant::{Ledger, Release};

        // What each run records in a site's ledger: capePCA once, capeDJICA J times, at the
        // largest collusion factor (the gate's preview).
        let spend = |fields: &IcaFields, ledger: &mut Ledger| {
            let form = fields.read(vec![1, 2, 3, 4]).unwrap();
            let task = form.djica_task(vec![0.0; 8 * 400]);
            let (params, _) = form.djica_params(&form.sites, task).unwrap();
            for (p, count) in [(&form.pca_params, 1), (&params, u64::from(params.max_iterations))] {
                let event = p.event("run".into(), count, p.worst_case_collusion_factor()).unwrap();
                ledger.try_spend(Release::new("ica", event, 0)).unwrap();
            }
        };
        let mut ledger = Ledger::new("Lab A", crate::ledger_store::DEFAULT_BUDGET).unwrap();
        let demo = IcaFields::default();
        spend(&demo, &mut ledger);
        let after_demo = ledger.spent();
        assert!(after_demo > 5.0 && after_demo < 9.0, "the demo costs {after_demo}");
        let tightened = IcaFields { epsilon_iteration: "0.15".into(), ..demo };
        spend(&tightened, &mut ledger);
        assert!(ledger.spent() <= 10.0, "both runs: {}", ledger.spent());
    }

    #[test]
    fn typed_nonsense_in_any_field_is_a_named_refusal_never_a_panic() {
        let fields: [crate::frame::form::FuzzField<IcaFields>; 14] = [
            (GRID.id, |f| &mut f.grid),
            (COMPONENTS.id, |f| &mut f.components),
            (SUBJECTS.id, |f| &mut f.subjects_per_site),
            (TIMEPOINTS.id, |f| &mut f.timepoints),
            (SEED.id, |f| &mut f.maps_seed),
            (VOXELS.id, |f| &mut f.voxels),
            (MIN_SAMPLES.id, |f| &mut f.min_samples),
            (LONGEST.id, |f| &mut f.longest_subject),
            (EPSILON_PCA.id, |f| &mut f.epsilon_pca),
            (EPSILON.id, |f| &mut f.epsilon_iteration),
            (EPSILON_STUDY.id, |f| &mut f.epsilon_study),
            (DELTA.id, |f| &mut f.delta),
            (ITERATIONS.id, |f| &mut f.iterations),
            (CLIP.id, |f| &mut f.clip),
        ];
        for (own_data, scope) in
            [(false, EpsilonScope::PerIteration), (true, EpsilonScope::WholeStudy)]
        {
            let base = || IcaFields { own_data, scope, ..IcaFields::default() };
            crate::frame::form::each_mistake(&fields, base, |id, typed, f| {
                match f.read(vec![1, 2, 3]) {
                    Ok(form) => assert!(form.pca_params.validate().is_ok()),
                    // the longest subject is checked against the site's time points
                    Err(e) if id == MIN_SAMPLES.id && e.field == Some(LONGEST.id) => {}
                    // R is checked against D
                    Err(e) if id == VOXELS.id && e.field == Some(COMPONENTS.id) => {}
                    Err(e) => assert_eq!(e.field, Some(id), "{typed}: {e:?}"),
                }
            });
        }
    }
}
