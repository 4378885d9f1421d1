/*!
The dashboard's side of the NN study: the core's [`IterativeAggregator`] over [`NnAggregator`]
(CAPE gradient descent, spec cape-fm §5) in a [`Driver`] on the room's websocket, exactly as the
mean study's aggregator runs in [`crate::frame::dashboard`]: events are fed with `Date.now()`, a timer
is kept at the role's `poll_timeout()`. There is no step-by-step mode here: an iteration is one
state broadcast and one release per site, so the view follows it live.

The aggregator's held-out data is public ([`crate::local_data::nn_held_out`]): the dashboard has
no private data of its own.
*/

use std::collections::BTreeMap;

use capelab_core::driver::{Driver, DriverEvent};
use capelab_core::rng::os_rng;
use capelab_core::study::StudyId;
use capelab_core::study::iterative::nn::{NnAggregator, NnIterationReport};
use capelab_core::study::iterative::{
    IterAggregatorPhase, IterativeAggregator, IterativeOutcome, IterativeParams,
};
use capelab_core::wire::ParticipantId;
use serde::Serialize;

use crate::frame::wire::StudyTransport;
use crate::local_data::nn_held_out;
use crate::studies::nn::form::NnForm;
use crate::studies::nn::view::{NnRecord, chance_accuracy, repair_lines};

/// How long the aggregator waits for the sites' answers and for each iteration's releases.
pub const ROUND_TIMEOUT_MS: u64 = 30_000;

pub type NnOutcome = IterativeOutcome<Vec<f64>, NnIterationReport>;

/// The running NN study, for the live view.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NnLive {
    pub number: usize,
    pub study: StudyId,
    pub params: IterativeParams,
    pub phase: String,
    pub records: Vec<NnRecord>,
    /// The held-out set's larger class share: what guessing scores.
    pub chance: f64,
    pub epsilon_per_iteration: f64,
    pub names: BTreeMap<ParticipantId, String>,
    pub refusals: Vec<String>,
    /// One line per zero-sum repair so far (who left, at which iteration, the new S).
    pub repairs: Vec<String>,
}

/// A finished NN study.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NnFinished {
    pub number: usize,
    pub outcome: NnOutcome,
    pub chance: f64,
    pub epsilon_per_iteration: f64,
    pub names: BTreeMap<ParticipantId, String>,
}

impl NnFinished {
    pub fn name(&self, site: ParticipantId) -> String {
        self.names.get(&site).cloned().unwrap_or_else(|| format!("Site {site}"))
    }
}

/// One NN study in a [`Driver`].
pub struct NnRun {
    pub number: usize,
    pub driver: Driver<StudyTransport, IterativeAggregator<NnAggregator>>,
    pub names: BTreeMap<ParticipantId, String>,
    pub chance: f64,
    pub epsilon_per_iteration: f64,
}

impl NnRun {
    /// Opens the study at `now_ms` and sends `iter/start`.
    pub fn start(
        number: usize,
        form: NnForm,
        transport: StudyTransport,
        names: BTreeMap<ParticipantId, String>,
        now_ms: u64,
    ) -> Result<Self, String> {
        let held_out = nn_held_out(form.task.features);
        let chance = chance_accuracy(held_out.y.iter().copied());
        let mut init = os_rng();
        let step = NnAggregator::new(form.task, form.learning_rate, &mut init, Some(held_out));
        let (aggregator, start) =
            IterativeAggregator::start(form.params, step, ROUND_TIMEOUT_MS, os_rng(), now_ms)
                .map_err(|e| e.to_string())?;
        let mut driver = Driver::new(transport, aggregator);
        driver.send(now_ms, start);
        Ok(NnRun {
            number,
            driver,
            names,
            chance,
            epsilon_per_iteration: form.epsilon_per_iteration,
        })
    }

    pub fn finished(&self) -> Option<NnFinished> {
        self.driver.machine.outcome().map(|outcome| NnFinished {
            number: self.number,
            outcome: outcome.clone(),
            chance: self.chance,
            epsilon_per_iteration: self.epsilon_per_iteration,
            names: self.names.clone(),
        })
    }

    pub fn live(&self) -> NnLive {
        let agg = &self.driver.machine;
        let refusals: Vec<String> = self
            .driver
            .log()
            .iter()
            .filter_map(|e| match e {
                DriverEvent::Refused { error, .. } => Some(error.to_string()),
                _ => None,
            })
            .collect();
        let skip = refusals.len().saturating_sub(5);
        let repairs = repair_lines(agg.repairs(), |id| {
            self.names.get(&id).cloned().unwrap_or_else(|| format!("Site {id}"))
        });
        NnLive {
            number: self.number,
            study: agg.study(),
            params: agg.params().clone(),
            phase: phase_text(agg.phase()),
            records: agg.records().to_vec(),
            chance: self.chance,
            epsilon_per_iteration: self.epsilon_per_iteration,
            names: self.names.clone(),
            refusals: refusals[skip..].to_vec(),
            repairs,
        }
    }
}

/// Where the aggregator is, in words for the dashboard.
pub fn phase_text(phase: IterAggregatorPhase) -> String {
    match phase {
        IterAggregatorPhase::Inviting => "Inviting the sites: each checks its ledger".into(),
        IterAggregatorPhase::Summing(Some(round)) => {
            format!("Upfront SecureAgg of all iterations' noise: {round}")
        }
        IterAggregatorPhase::Summing(None) => "Upfront SecureAgg of all iterations' noise".into(),
        IterAggregatorPhase::Repairing { from_iteration, round } => {
            let round = round.map(|r| format!(": {r}")).unwrap_or_default();
            format!(
                "Zero-sum repair: the remaining sites sum fresh noise for iterations \
                 {from_iteration} on{round}"
            )
        }
        IterAggregatorPhase::Iterating { iteration } => {
            format!("Iteration {iteration}: waiting for the sites' releases")
        }
        IterAggregatorPhase::Finished => "Finished".into(),
    }
}
