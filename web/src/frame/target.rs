/*!
"ε for the whole study": the smallest noise multiplier z with which J Gaussian releases (one per
iteration, unsampled) meet a target (ε, δ) under PLD accounting, next to what RDP would have
needed. The NN and Joint ICA forms offer it as an alternative to "ε per iteration".

The target holds in the view each site's ledger charges: CAPE's full adversary view (c_S of the
room's sites, worst case over who may drop out, [`ledger_collusion_factor`]; 1 for conventional
releases), so the study's whole cost equals the typed ε. A view with factor c sees multiplier z/√c,
so z = √c·z*, where z* is PLD's answer for J releases. The CLI's `--target-epsilon` does the same.

Cost: unsampled Gaussians compose in closed form (the PLD of J releases at z is one Gaussian at
z/√J), so both bisections are a few dozen closed-form evaluations: 0.18 ms for the PLD and the RDP
calibration together at J = 150, measured natively in the test build by
`calibration_is_quick_enough_for_every_keystroke`. Well under a frame even at wasm's few-times
slowdown, so the forms compute it inline as the user types, not in the worker.
*/

use capelab_core::accountant::pld::{calibrate_noise_multiplier, calibrate_noise_multiplier_rdp};
use capelab_core::accountant::{Event, PldAccountant};
use capelab_core::accountant::{PldError, pld::DEFAULT_INTERVAL};
use capelab_core::study::iterative::{IterativeConfigError, IterativeParams, NoiseMode};
use serde::{Deserialize, Serialize};

use crate::components::charts::scale::format_value;

use leptos::prelude::*;

use crate::frame::consent::Consent;
use crate::frame::form::{Field, FormError, TextField};
use crate::numbers::show;

/// How a form's ε is meant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum EpsilonScope {
    /// ε of each iteration's release (the papers' x-axis); the default.
    #[default]
    PerIteration,
    /// ε of all J iterations together, under PLD.
    WholeStudy,
}

impl EpsilonScope {
    /// The `<select>` value.
    pub fn value(self) -> &'static str {
        match self {
            EpsilonScope::PerIteration => "iteration",
            EpsilonScope::WholeStudy => "study",
        }
    }

    pub fn from_value(value: &str) -> Self {
        match value {
            "study" => EpsilonScope::WholeStudy,
            _ => EpsilonScope::PerIteration,
        }
    }
}

/// The multiplier calibrated for a whole-study target, and RDP's for comparison.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetCalibration {
    pub target_epsilon: f64,
    pub delta: f64,
    pub iterations: u32,
    /// The smallest z (to a relative 1e−4, rounded up) with PLD ε ≤ the target: the study's.
    pub noise_multiplier: f64,
    /// The ε it achieves (≤ the target).
    pub epsilon: f64,
    /// What RDP (improved conversion) would have needed for the same target.
    pub rdp_noise_multiplier: f64,
    /// c_S of the view the target holds in (the ledger's).
    pub collusion_factor: f64,
}

/// The collusion factor a site's ledger charges a study of `mode` among `sites` sites with
/// (the worst case over the survivors SecureAgg's default threshold allows).
pub fn ledger_collusion_factor(sites: usize, mode: NoiseMode) -> f64 {
    let ids = (1..=sites.max(2)).map(|i| i as _).collect();
    IterativeParams::new(ids, mode, 1, 1, 1.0, 1.0, 1e-5)
        .map_or(1.0, |p| p.worst_case_collusion_factor())
}

impl TargetCalibration {
    /// Calibrates under PLD and under RDP for a target the form has read (`target` is the field
    /// it came from, named when no multiplier meets it).
    pub fn new(
        target: Field,
        target_epsilon: f64,
        delta: f64,
        iterations: usize,
        collusion_factor: f64,
    ) -> Result<TargetCalibration, FormError> {
        if !(target_epsilon.is_finite() && target_epsilon > 0.0) {
            return Err(target.error("must be a number above 0"));
        }
        if !(delta > 0.0 && delta < 1.0) || iterations == 0 {
            return Err(FormError::whole(format!(
                "δ = {} and J = {iterations} cannot be calibrated for",
                show(delta)
            )));
        }
        let j = iterations as u64;
        let wrap = |e: PldError| match e {
            PldError::GridTooLarge { .. } => target.error(format!(
                "{} over {} iterations is more than the accountant can bound: lower ε or J",
                show(target_epsilon),
                show(iterations as f64)
            )),
            other => target.error(format!("no noise level meets it ({other})")),
        };
        let pld = calibrate_noise_multiplier(target_epsilon, delta, j, 1.0, DEFAULT_INTERVAL)
            .map_err(wrap)?;
        let rdp = calibrate_noise_multiplier_rdp(target_epsilon, delta, j, 1.0).map_err(wrap)?;
        let scale = collusion_factor.max(1.0).sqrt();
        Ok(TargetCalibration {
            target_epsilon,
            delta,
            iterations: u32::try_from(iterations).unwrap_or(u32::MAX),
            noise_multiplier: pld.noise_multiplier * scale,
            epsilon: pld.epsilon,
            rdp_noise_multiplier: rdp.noise_multiplier * scale,
            collusion_factor: collusion_factor.max(1.0),
        })
    }

    /// How much more noise RDP would have needed, in percent of PLD's.
    pub fn rdp_extra_percent(&self) -> f64 {
        100.0 * (self.rdp_noise_multiplier / self.noise_multiplier - 1.0)
    }

    /// "PLD: z = 12.31 per iteration; RDP needs 13.02 (5.8% more noise); each site's ledger
    /// view, c_S = 1.87".
    pub fn summary(&self) -> String {
        format!(
            "PLD: z = {} per iteration; RDP needs {} ({:.1}% more noise); in each site's ledger \
             view (c_S = {})",
            format_value(self.noise_multiplier),
            format_value(self.rdp_noise_multiplier),
            self.rdp_extra_percent(),
            format_value(self.collusion_factor),
        )
    }
}

/// A form's whole-study calibration, read from its fields as typed: the target, δ and J (at most
/// `max_iterations`), for a study among `sites` sites in `mode`.
pub fn calibrate_fields(
    target: (Field, &str),
    delta: (Field, &str),
    iterations: (Field, &str, usize),
    sites: usize,
    mode: NoiseMode,
) -> Result<TargetCalibration, FormError> {
    use crate::studies::mean::form::{MAX_DELTA, MAX_EPSILON, MIN_DELTA, MIN_EPSILON};
    let epsilon = target.0.positive(target.1, MIN_EPSILON, 10.0 * MAX_EPSILON)?;
    let delta = delta.0.real_in(delta.1, MIN_DELTA, MAX_DELTA)?;
    let j = iterations.0.count(iterations.1, 1, iterations.2)?;
    TargetCalibration::new(target.0, epsilon, delta, j, ledger_collusion_factor(sites, mode))
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
pub fn per_release_epsilon(z: f64, delta: f64) -> Result<f64, String> {
    let mut a = PldAccountant::default();
    let event = Event::gaussian("iteration", z, 1).map_err(|e| e.to_string())?;
    a.compose(&event);
    Ok(a.epsilon(delta).map_err(|e| e.to_string())?.epsilon)
}

/// The core's refusal of an iterative study's parameters, on the form's ε or δ field where it
/// is about them, in the form's words.
pub fn iterative_config_error(e: &IterativeConfigError, epsilon: Field, delta: Field) -> FormError {
    match e {
        IterativeConfigError::Delta(_) => delta.error("must lie between 0 and 1"),
        IterativeConfigError::NoiseMultiplier(_) | IterativeConfigError::Calibration(_) => {
            epsilon.error("no noise level meets it: raise ε or δ")
        }
        IterativeConfigError::NoiseFormat(_) => epsilon.error(
            "the noise this ε calls for is too large to be summed exactly: raise ε, or the \
             records per site",
        ),
        IterativeConfigError::FollowingStage { error, .. } => {
            iterative_config_error(error, epsilon, delta)
        }
        other => FormError::whole(other.to_string()),
    }
}

/// What an iterative study's form asks about its ε: the scope ("per iteration" or "for the whole
/// study"), then the field of that scope. `testid` prefixes the ids of the scope's `<select>`.
#[component]
pub fn ScopedEpsilon(
    /// The scope `<select>`'s id, its label and the two options' words.
    select: (&'static str, &'static str),
    options: (&'static str, &'static str),
    scope: RwSignal<String>,
    per_iteration: (Field, RwSignal<String>),
    whole_study: (Field, RwSignal<String>),
    error: RwSignal<Option<FormError>>,
) -> impl IntoView {
    let whole = move || scope.get() == EpsilonScope::WholeStudy.value();
    let (per_field, per_value) = per_iteration;
    let (whole_field, whole_value) = whole_study;
    view! {
        <label>{select.1}
            <select id=select.0 bind:value=scope>
                <option value=EpsilonScope::PerIteration.value()>{options.0}</option>
                <option value=EpsilonScope::WholeStudy.value()>{options.1}</option>
            </select>
        </label>
        <Show
            when=whole
            fallback=move || view! { <TextField field=per_field value=per_value error /> }
        >
            <TextField field=whole_field value=whole_value error />
        </Show>
    }
}

/// An iterative study's noise: CAPE, conventional, or non-private (with how many sites present
/// allow that, beside it).
#[component]
pub fn NoiseModeSelect(
    id: &'static str,
    mode: RwSignal<String>,
    consent: Memo<Consent>,
    consent_testid: &'static str,
) -> impl IntoView {
    view! {
        <label>"noise"
            <select id=id bind:value=mode>
                <option value="upfront">"CAPE (upfront zero-sum noise)"</option>
                <option value="conventional">"conventional (independent noise)"</option>
                <option value="nonprivate">"non-private (sites that allow it)"</option>
            </select>
        </label>
        <Show when=move || mode.get() == "nonprivate">
            <p class="muted small span-all" data-testid=consent_testid>{move || consent.get().sentence()}</p>
        </Show>
    }
}

/// The whole-study calibration as the form stands (recomputed as the user types), or why it
/// cannot be made; nothing when ε is per iteration.
#[component]
pub fn CalibrationLine(
    calibration: Memo<Option<Result<String, String>>>,
    /// `{prefix}-calibration` and `{prefix}-calibration-error`.
    prefix: &'static str,
) -> impl IntoView {
    move || {
        calibration.get().map(|c| match c {
            Ok(text) => view! { <p class="muted" data-testid=format!("{prefix}-calibration")>{text}</p> }
                .into_any(),
            Err(e) => view! { <p class="form-error" data-testid=format!("{prefix}-calibration-error")>{e}</p> }
                .into_any(),
        })
    }
}

#[cfg(test)]
mod tests {
    use capelab_core::accountant::Mechanism;

    use super::*;

    const T: Field = Field::new("t", "ε for the whole study");

    fn pld_epsilon(z: f64, j: u64, delta: f64) -> f64 {
        viewed_epsilon(z, j, delta, 1.0)
    }

    fn viewed_epsilon(z: f64, j: u64, delta: f64, c: f64) -> f64 {
        let mut a = PldAccountant::default();
        let event = Event::with_collusion_factor(
            "iteration",
            Mechanism::Gaussian { noise_multiplier: z },
            j,
            c,
        );
        a.compose(&event.unwrap());
        a.epsilon(delta).unwrap().epsilon
    }

    /// With four CAPE sites the target holds in the ledger's full view: composed with c_S, the
    /// calibrated z spends the target, and c_S is the ledger preview's.
    #[test]
    fn the_target_holds_in_the_ledger_view() {
        let c_s = ledger_collusion_factor(4, NoiseMode::Upfront);
        assert!(c_s > 1.5, "{c_s}");
        assert_eq!(ledger_collusion_factor(4, NoiseMode::Conventional), 1.0);
        let c = TargetCalibration::new(T, 5.0, 1e-5, 150, c_s).unwrap();
        let spent = viewed_epsilon(c.noise_multiplier, 150, 1e-5, c_s);
        assert!(spent <= 5.0 && spent > 4.99, "{spent}");
        assert!(c.summary().contains(&format_value(c_s)), "{}", c.summary());
    }

    #[test]
    fn the_multiplier_meets_the_target_and_is_the_smallest_that_does() {
        for (target, delta, j) in
            [(5.0, 1e-5, 60), (1.0, 1e-5, 150), (8.0, 1e-2, 150), (0.3, 1e-6, 1)]
        {
            let c = TargetCalibration::new(T, target, delta, j, 1.0).unwrap();
            let z = c.noise_multiplier;
            let eps = pld_epsilon(z, j as u64, delta);
            assert!(eps <= target, "z = {z}: ε = {eps} > {target}");
            assert_eq!(eps, c.epsilon);
            // smallest: 1e-3 less noise misses the target
            let below = pld_epsilon(z * (1.0 - 1e-3), j as u64, delta);
            assert!(below > target, "z·(1 − 1e-3) still meets {target}: {below}");
            assert!(c.rdp_noise_multiplier > z, "{c:?}");
            assert!(c.rdp_extra_percent() > 0.0);
            let text = c.summary();
            assert!(text.starts_with(&format!("PLD: z = {}", format_value(z))), "{text}");
            assert!(text.contains("more noise"), "{text}");
        }
    }

    #[test]
    fn bad_input_names_the_field() {
        let err = |t, d, j| TargetCalibration::new(T, t, d, j, 1.0).unwrap_err();
        for bad in [0.0, -1.0, f64::NAN] {
            assert_eq!(err(bad, 1e-5, 10).field, Some(T.id));
        }
        assert_eq!(err(1.0, 0.0, 10).field, None);
        assert_eq!(err(1.0, 1e-5, 0).field, None);
    }

    /// Not an assertion on time (no timed tests): prints the cost the module docs quote.
    #[test]
    fn calibration_is_quick_enough_for_every_keystroke() {
        let start = std::time::Instant::now();
        let runs = 20;
        for i in 0..runs {
            TargetCalibration::new(T, 1.0 + f64::from(i) * 0.1, 1e-5, 150, 1.0).unwrap();
        }
        let per = start.elapsed().as_secs_f64() * 1e3 / f64::from(runs);
        println!("one PLD + RDP calibration at J = 150: {per:.3} ms");
    }
}
