//! The private-mean study's roles for JavaScript (spec cape-secagg-pca-djica §2–§3, the core's
//! [`capelab_core::study::mean`]): sans-IO state machines that take a message and return the
//! messages to send. The caller moves them (a websocket, an in-memory room) and keeps the clock.
//!
//! Call order, as for every core role ([`Machine`](capelab_core::driver::Machine)): feed each
//! message (`handle`) and departure (`handleDeparture`) as it comes and send what each call
//! returns, in order; for the aggregator also call `handleTimeout` once the clock reaches
//! `pollTimeout()`, re-reading it after every call.

use capelab_core::rng::{CapeRng, derive, os_rng};
use capelab_core::study::mean::{
    self as mean, AggregatorPhase, AggregatorSettings, Calibration, SiteOutcome, SitePhase,
    StudyParams,
};
use capelab_core::wire::ParticipantId;
use js_sys::Array;
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::convert::{self, millis, participant};
use crate::ledger::{Ledger, Shared};

/// `MeanStudyOptions` of `TYPES`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StudyOptions {
    sites: Vec<ParticipantId>,
    epsilon: f64,
    delta: f64,
    values_per_site: usize,
    #[serde(default)]
    dimension: Option<usize>,
    #[serde(default)]
    threshold: Option<usize>,
    #[serde(default)]
    conventional: Option<bool>,
    #[serde(default)]
    calibration: Option<Calibration>,
    #[serde(default)]
    max_reruns: Option<u32>,
    #[serde(default)]
    round_timeout_ms: Option<u64>,
    #[serde(default)]
    seed: Option<f64>,
}

impl StudyOptions {
    /// The core's parameters; each bad value is refused with the core's own message.
    fn params(&self) -> Result<StudyParams, String> {
        let e = |e: mean::StudyConfigError| e.to_string();
        let mut params =
            StudyParams::new(self.sites.clone(), self.epsilon, self.delta, self.values_per_site)
                .map_err(e)?
                .with_dimension(self.dimension.unwrap_or(1))
                .map_err(e)?
                .with_conventional(self.conventional.unwrap_or(false))
                .with_calibration(self.calibration.unwrap_or_default())
                .map_err(e)?
                .with_max_reruns(self.max_reruns.unwrap_or(StudyParams::DEFAULT_MAX_RERUNS))
                .map_err(e)?;
        if let Some(t) = self.threshold {
            params = params.with_threshold(t).map_err(e)?;
        }
        Ok(params)
    }
}

/// `MeanSiteOptions` of `TYPES`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SiteOptions {
    me: ParticipantId,
    aggregator: ParticipantId,
    rows: Vec<Vec<f64>>,
    #[serde(default)]
    seed: Option<f64>,
}

/// A generator for privacy noise and keys: the OS's (`crypto.getRandomValues`), or reproducible
/// from a fixed seed for tests.
pub(crate) fn rng(seed: Option<f64>, label: &str) -> Result<CapeRng, String> {
    Ok(match seed {
        None => os_rng(),
        Some(s) => derive(convert::seed(s)?, label),
    })
}

fn js_error(message: impl AsRef<str>) -> JsError {
    JsError::new(message.as_ref())
}

/// The site role of one private-mean study: create it when `mean/start` arrives from the
/// aggregator, then feed it that message and every later one.
///
/// Privacy gate: the site checks its ledger before it answers and records each release in the
/// call that returns the message carrying it; a study the ledger cannot afford is declined with
/// only `mean/decline` sent.
#[wasm_bindgen]
pub struct MeanSite {
    role: mean::MeanSite<Shared>,
}

#[wasm_bindgen]
impl MeanSite {
    /// A site holding `options.rows`, answering `options.aggregator`, recording into `ledger`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "MeanSiteOptions")] options: JsValue,
        ledger: &Ledger,
    ) -> Result<MeanSite, JsError> {
        let o: SiteOptions = convert::read(options, "MeanSiteOptions")?;
        let rng = rng(o.seed, &format!("js/site/{}", o.me)).map_err(js_error)?;
        let role = mean::MeanSite::new(o.me, o.aggregator, o.rows, ledger.shared(), rng);
        Ok(MeanSite { role })
    }

    /// A message from participant `from`: what to send in answer. Throws (changing nothing)
    /// for a message the role refuses: out of order, from a stranger, unreadable.
    #[wasm_bindgen(unchecked_return_type = "Outgoing[]")]
    pub fn handle(
        &mut self,
        from: f64,
        payload: &[u8],
        #[wasm_bindgen(js_name = "nowMs")] now_ms: f64,
    ) -> Result<Array, JsError> {
        let from = participant(from, "from").map_err(js_error)?;
        let now = millis(now_ms).map_err(js_error)?;
        let out = self.role.handle(now, from, payload).map_err(|e| js_error(e.to_string()))?;
        Ok(convert::outgoing(out))
    }

    /// Participant `who` left the room (only the aggregator's departure matters to a site).
    #[wasm_bindgen(js_name = handleDeparture, unchecked_return_type = "Outgoing[]")]
    pub fn handle_departure(
        &mut self,
        who: f64,
        #[wasm_bindgen(js_name = "nowMs")] now_ms: f64,
    ) -> Result<Array, JsError> {
        let who = participant(who, "who").map_err(js_error)?;
        let now = millis(now_ms).map_err(js_error)?;
        let out = self.role.handle_departure(now, who).map_err(|e| js_error(e.to_string()))?;
        Ok(convert::outgoing(out))
    }

    /// Where the site is, its own noise and how its part ended.
    #[wasm_bindgen(unchecked_return_type = "SiteStatus")]
    pub fn status(&self) -> Result<JsValue, JsError> {
        convert::object(&status(&self.role))
    }

    /// Whether the study has ended for this site (no input changes it any more).
    #[wasm_bindgen(getter, js_name = isFinished)]
    pub fn is_finished(&self) -> bool {
        self.role.outcome().is_some()
    }
}

/// The aggregator role of one private-mean study (the dashboard's): invites the sites, runs
/// SecureAgg over their noise, collects the releases and forms the CAPE estimate, re-running
/// among the survivors when a site breaks the zero sum.
#[wasm_bindgen]
pub struct MeanAggregator {
    role: mean::MeanAggregator,
    start: Vec<capelab_core::driver::Outgoing>,
}

#[wasm_bindgen]
impl MeanAggregator {
    /// Opens a study at `nowMs`; send `startMessages()` to begin.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "MeanStudyOptions")] options: JsValue,
        #[wasm_bindgen(js_name = "nowMs")] now_ms: f64,
    ) -> Result<MeanAggregator, JsError> {
        let o: StudyOptions = convert::read(options, "MeanStudyOptions")?;
        let params = o.params().map_err(js_error)?;
        let now = millis(now_ms).map_err(js_error)?;
        let mut settings = AggregatorSettings::default();
        if let Some(ms) = o.round_timeout_ms {
            settings.round_timeout_ms = ms;
        }
        let rng = rng(o.seed, "js/aggregator").map_err(js_error)?;
        let (role, start) = mean::MeanAggregator::start(params, settings, rng, now)
            .map_err(|e| js_error(e.to_string()))?;
        Ok(MeanAggregator { role, start })
    }

    /// The `mean/start` broadcast that opens the study: send it once.
    #[wasm_bindgen(js_name = startMessages, unchecked_return_type = "Outgoing[]")]
    pub fn start_messages(&self) -> Array {
        convert::outgoing(self.start.clone())
    }

    /// A message from participant `from`: what to send in answer. Throws (changing nothing)
    /// for a message the role refuses.
    #[wasm_bindgen(unchecked_return_type = "Outgoing[]")]
    pub fn handle(
        &mut self,
        from: f64,
        payload: &[u8],
        #[wasm_bindgen(js_name = "nowMs")] now_ms: f64,
    ) -> Result<Array, JsError> {
        let from = participant(from, "from").map_err(js_error)?;
        let now = millis(now_ms).map_err(js_error)?;
        let out = self.role.handle(now, from, payload).map_err(|e| js_error(e.to_string()))?;
        Ok(convert::outgoing(out))
    }

    /// Participant `who` left the room.
    #[wasm_bindgen(js_name = handleDeparture, unchecked_return_type = "Outgoing[]")]
    pub fn handle_departure(
        &mut self,
        who: f64,
        #[wasm_bindgen(js_name = "nowMs")] now_ms: f64,
    ) -> Result<Array, JsError> {
        let who = participant(who, "who").map_err(js_error)?;
        let now = millis(now_ms).map_err(js_error)?;
        let out = self.role.handle_departure(now, who).map_err(|e| js_error(e.to_string()))?;
        Ok(convert::outgoing(out))
    }

    /// The clock reached `pollTimeout()`: close the rounds whose deadline passed.
    #[wasm_bindgen(js_name = handleTimeout, unchecked_return_type = "Outgoing[]")]
    pub fn handle_timeout(
        &mut self,
        #[wasm_bindgen(js_name = "nowMs")] now_ms: f64,
    ) -> Result<Array, JsError> {
        let now = millis(now_ms).map_err(js_error)?;
        let out = self.role.handle_timeout(now).map_err(|e| js_error(e.to_string()))?;
        Ok(convert::outgoing(out))
    }

    /// When `handleTimeout` should next be called (ms, the clock of `nowMs`), if ever.
    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&self) -> Option<f64> {
        self.role.poll_timeout().map(|t| t as f64)
    }

    /// Ends the study now: the `mean/abort` broadcast to send.
    #[wasm_bindgen(unchecked_return_type = "Outgoing[]")]
    pub fn stop(
        &mut self,
        #[wasm_bindgen(js_name = "nowMs")] now_ms: f64,
        reason: &str,
    ) -> Result<Array, JsError> {
        let now = millis(now_ms).map_err(js_error)?;
        Ok(convert::outgoing(self.role.stop(now, reason)))
    }

    /// The study's id: 32 hex digits, also in every site's ledger (`mean <id>`).
    #[wasm_bindgen(getter)]
    pub fn study(&self) -> String {
        self.role.study().to_hex()
    }

    /// "inviting", "summing", "collecting" or "finished".
    #[wasm_bindgen(getter)]
    pub fn phase(&self) -> String {
        match self.role.phase() {
            AggregatorPhase::Inviting => "inviting",
            AggregatorPhase::Summing { .. } => "summing",
            AggregatorPhase::Collecting { .. } => "collecting",
            AggregatorPhase::Finished => "finished",
        }
        .into()
    }

    /// Who the current round still waits for.
    #[wasm_bindgen(js_name = waitingFor, unchecked_return_type = "ParticipantId[]")]
    pub fn waiting_for(&self) -> Array {
        self.role.waiting_for().into_iter().map(JsValue::from).collect()
    }

    /// τ, z and Δ of the study, all public.
    #[wasm_bindgen(
        unchecked_return_type = "{ sensitivity: number; local_sd: number; noise_multiplier: number }"
    )]
    pub fn noise(&self) -> Result<JsValue, JsError> {
        convert::json(self.role.noise_plan())
    }

    /// The end of the study (estimates or why there are none); `undefined` while it runs.
    #[wasm_bindgen(unchecked_return_type = "StudyOutcome | undefined")]
    pub fn outcome(&self) -> Result<JsValue, JsError> {
        match self.role.outcome() {
            Some(outcome) => convert::json(outcome),
            None => Ok(JsValue::UNDEFINED),
        }
    }

    #[wasm_bindgen(getter, js_name = isFinished)]
    pub fn is_finished(&self) -> bool {
        self.role.outcome().is_some()
    }
}

/// `SiteStatus` of `TYPES`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Status {
    phase: &'static str,
    description: String,
    study: Option<String>,
    local_mean: Option<Vec<f64>>,
    noise: Option<Noise>,
    attempts: Vec<Attempt>,
    end: Option<End>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Noise {
    local_sd: f64,
    noise_multiplier: f64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Attempt {
    attempt: u32,
    survivors: Vec<ParticipantId>,
    quantised_noise: Vec<f64>,
    zero_sum_noise: Option<Vec<f64>>,
    release: Option<Vec<f64>>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum End {
    Done { estimate: Vec<f64>, conventional: Option<Vec<f64>>, survivors: Vec<ParticipantId> },
    Declined { reason: String },
    NotInvited,
    Aborted { reason: String },
}

/// What a site shows of its part in a study.
pub(crate) fn status(site: &mean::MeanSite<Shared>) -> Status {
    let (phase, description) = phase_words(site.phase());
    let end = site.outcome().map(|o| match o {
        SiteOutcome::Done(r) => End::Done {
            estimate: r.cape.clone(),
            conventional: r.conventional.clone(),
            survivors: r.survivors.clone(),
        },
        SiteOutcome::Declined(reason) => End::Declined { reason: reason.to_string() },
        SiteOutcome::NotInvited => End::NotInvited,
        SiteOutcome::Aborted(reason) => End::Aborted { reason: reason.to_string() },
    });
    Status {
        phase,
        description,
        study: site.study().map(|s| s.to_hex()),
        local_mean: site.local_value().map(<[f64]>::to_vec),
        noise: site
            .noise_plan()
            .map(|p| Noise { local_sd: p.local_sd, noise_multiplier: p.noise_multiplier }),
        attempts: site
            .attempts()
            .iter()
            .map(|a| Attempt {
                attempt: a.attempt,
                survivors: a.survivors.clone(),
                quantised_noise: a.quantised_noise.clone(),
                zero_sum_noise: a.zero_sum_noise.clone(),
                release: a.release.clone(),
            })
            .collect(),
        end,
    }
}

/// The phase's name and a sentence for the page.
fn phase_words(phase: SitePhase) -> (&'static str, String) {
    match phase {
        SitePhase::AwaitingStart => ("awaiting_start", "Waiting for the dashboard's study".into()),
        SitePhase::Accepted => {
            ("accepted", "Accepted: the ledger affords it; waiting for SecureAgg".into())
        }
        SitePhase::Summing { attempt, .. } => {
            ("summing", format!("SecureAgg over this site's noise, attempt {attempt}"))
        }
        SitePhase::Released { attempt } => {
            ("released", format!("Released â_s (attempt {attempt}); waiting for the result"))
        }
        SitePhase::Excluded { attempt } => {
            ("excluded", format!("Not in attempt {attempt}'s sum; waiting for the result"))
        }
        SitePhase::Done => ("done", "Done: the dashboard published the estimate".into()),
        SitePhase::Declined => ("declined", "Declined: only the refusal was sent".into()),
        SitePhase::NotInvited => ("not_invited", "Not invited to this study".into()),
        SitePhase::Aborted => ("aborted", "The study ended without an estimate".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(sites: Vec<ParticipantId>) -> StudyOptions {
        StudyOptions {
            sites,
            epsilon: 0.5,
            delta: 1e-5,
            values_per_site: 10,
            dimension: None,
            threshold: None,
            conventional: None,
            calibration: None,
            max_reruns: None,
            round_timeout_ms: None,
            seed: None,
        }
    }

    #[test]
    fn options_become_the_cores_parameters_or_its_refusal() {
        let p = options(vec![3, 1, 2]).params().unwrap();
        assert_eq!((p.sites, p.threshold, p.dimension), (vec![1, 2, 3], 3, 1));
        let e = StudyOptions { epsilon: -1.0, ..options(vec![1, 2, 3]) }.params().unwrap_err();
        assert!(e.contains("-1"), "{e}");
        let e = StudyOptions { max_reruns: Some(11), ..options(vec![1, 2, 3]) }.params();
        assert!(e.is_err());
        assert!(options(vec![1]).params().is_err(), "one site is no study");
        assert!(rng(Some(0.5), "x").is_err());
    }
}
