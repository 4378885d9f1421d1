//! The dashboard's "Private mean" panel: the study form, and while a study runs, where it is,
//! who it waits for, and (in step-by-step mode) the held round with its explanation.

use capelab_core::study::mean::{AggregatorPhase, Masking};
use capelab_core::wire::{ParticipantId, Role};
use leptos::prelude::*;

use crate::frame::start::{ChargePreview, MaskingNote, StartButton, StartError};

use crate::components::charts::scale::format_value;
use crate::frame::dashboard::{DashboardStudy, LiveStudy};
use crate::frame::form::TextField;
use crate::session::RoomState;
use crate::studies::mean::form::{self, MeanFields, default_threshold};
use crate::studies::mean::results::{decline_text, dropout_sentence, phase_token};
use crate::studies::mean::step_gate::Step;

#[component]
pub fn MeanPanel(study: DashboardStudy, state: RoomState) -> impl IntoView {
    let d = MeanFields::default();
    let epsilon = RwSignal::new(d.epsilon);
    let delta = RwSignal::new(d.delta);
    let values = RwSignal::new(d.values_per_site);
    let dimension = RwSignal::new(d.dimension);
    let threshold = RwSignal::new(d.threshold);
    let conventional = RwSignal::new(d.conventional);
    let analytic = RwSignal::new(d.analytic);
    let step_mode = RwSignal::new(d.step_mode);
    let secagg_plus = RwSignal::new(d.secagg_plus);
    let plus_k = RwSignal::new(d.plus_k);
    let plus_threshold = RwSignal::new(d.plus_threshold);

    let present = Memo::new(move |_| state.roster.with(|r| r.present_count(Role::Site)));
    let running = move || study.view.live.with(Option::is_some);
    let error = study.view.start_error;
    let fields = move || MeanFields {
        epsilon: epsilon.get(),
        delta: delta.get(),
        values_per_site: values.get(),
        dimension: dimension.get(),
        threshold: threshold.get(),
        conventional: conventional.get(),
        analytic: analytic.get(),
        step_mode: step_mode.get(),
        secagg_plus: secagg_plus.get(),
        plus_k: plus_k.get(),
        plus_threshold: plus_threshold.get(),
    };
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let fields = untrack(fields);
        study.start_round(move |sites| fields.read(sites));
    };
    let threshold_hint = move || {
        let s = present.get();
        if s >= 2 {
            format!("default: t = {} for S = {s}", default_threshold(s))
        } else {
            "default: ⌊2S/3⌋ + 1".to_owned()
        }
    };
    let plus_hint = move || match Masking::secagg_plus_for(present.get()) {
        Some(Masking::SecAggPlus { k, .. }) => format!("default: k = {k}"),
        _ => "default: 2⌈log₂ S⌉".to_owned(),
    };
    view! {
        <section class="card span-all mean-panel" data-testid="mean-panel">
            <h2>"Private mean"</h2>
            <p class="muted">
                "Every site computes the mean of its own values and adds noise that cancels across "
                "sites (CAPE) after SecureAgg has summed the noise. The dashboard sees only noisy "
                "messages and their average."
            </p>
            <form class="mean-form" on:submit=submit>
                <fieldset class="field-grid" disabled=running>
                    <TextField field=form::EPSILON value=epsilon error />
                    <TextField field=form::DELTA value=delta error />
                    <TextField field=form::VALUES value=values error numeric=true />
                    <TextField field=form::DIMENSION value=dimension error numeric=true />
                    <TextField field=form::THRESHOLD value=threshold error numeric=true placeholder=Signal::derive(threshold_hint) />
                    <div class="checks">
                        <label class="check"><input type="checkbox" id="mean-conventional" bind:checked=conventional />"also ask for the conventional release"</label>
                        <label class="check"><input type="checkbox" id="mean-analytic" bind:checked=analytic />"analytic calibration (a guarantee at any ε)"</label>
                        <label class="check"><input type="checkbox" id="mean-step" bind:checked=step_mode />"step by step (hold each round until “Next round”)"</label>
                        <label class="check"><input type="checkbox" id="mean-secagg-plus" bind:checked=secagg_plus />"SecAgg+: each site masks with k neighbours, not all S − 1"</label>
                    </div>
                    <Show when=move || secagg_plus.get()>
                        <TextField field=form::PLUS_K value=plus_k error numeric=true placeholder=Signal::derive(plus_hint) />
                        <TextField field=form::PLUS_THRESHOLD value=plus_threshold error numeric=true placeholder="default: k/2 + 1" />
                    </Show>
                </fieldset>
                <StartButton test_id="start-mean" action="Start a round" present running=Signal::derive(running) />
            </form>
            <ChargePreview present reports=study.view.reports read=move |sites| fields().read(sites) />
            <MaskingNote present read=move |sites| fields().read(sites) />
            <StartError error=study.view.start_error />
            {move || study.view.live.get().map(|live| view! { <LiveStudyView live study /> })}
        </section>
    }
}

#[component]
pub fn LiveStudyView(live: LiveStudy, study: DashboardStudy) -> impl IntoView {
    let name = |site: ParticipantId, live: &LiveStudy| {
        live.names.get(&site).cloned().unwrap_or_else(|| format!("Site {site}"))
    };
    let waiting: Vec<String> = live.waiting_for.iter().map(|s| name(*s, &live)).collect();
    let phase = phase_sentence(&live);
    let noise = format!(
        "τ = {} per message · z = τ/Δ = {} · t = {} of S = {}",
        format_value(live.noise.local_sd),
        format_value(live.noise.noise_multiplier),
        live.params.threshold,
        live.params.site_count(),
    );
    let dropouts: Vec<(ParticipantId, String, &'static str)> = live
        .dropouts
        .iter()
        .map(|d| (d.site, dropout_sentence(d, &name(d.site, &live)), phase_token(d.phase)))
        .collect();
    let declines: Vec<String> =
        live.declined.iter().map(|d| decline_text(&name(d.site, &live), &d.reason)).collect();
    let held = live.held;
    view! {
        <div class="live study-focus" data-testid="live-study" data-study=live.study.to_string()>
            <div class="live-head">
                <h3>"Round " {live.number} <span class="muted">" · study " {live.study.to_string()}</span></h3>
                <button type="button" class="button button-quiet-dark" data-testid="stop-study" on:click=move |_| study.stop()>
                    "Stop"
                </button>
            </div>
            <p class="live-phase" data-testid="study-phase">{phase}</p>
            <p class="muted">{noise}</p>
            {(!waiting.is_empty()).then(|| view! {
                <p class="muted">"Waiting for: " {waiting.join(", ")}</p>
            })}
            {live.step_mode.then(|| view! { <StepTimeline live=live.clone() /> })}
            {held.map(|step| view! {
                <div class="callout callout-step" data-testid="held-step" data-step=step.token()>
                    <p class="step-title">"Next: " {step.title()}</p>
                    <p>{step.explanation()}</p>
                    <div class="step-buttons">
                        <button type="button" class="button button-primary" data-testid="next-round" on:click=move |_| study.next_round()>
                            "Next round"
                        </button>
                        <button type="button" class="button" data-testid="run-to-end" on:click=move |_| study.run_to_end()>
                            "Run to the end"
                        </button>
                    </div>
                </div>
            })}
            <ul class="event-list">
                {dropouts.into_iter().map(|(site, text, token)| view! {
                    <li class="callout callout-warn" data-testid="live-dropout" data-site-id=site data-phase=token>{text}</li>
                }).collect_view()}
                {declines.into_iter().map(|text| view! {
                    <li class="callout callout-warn" data-testid="live-decline">{text}</li>
                }).collect_view()}
            </ul>
        </div>
    }
}

/// The five steps, ticked off as the teacher lets them through.
#[component]
fn StepTimeline(live: LiveStudy) -> impl IntoView {
    let steps = Step::ALL.into_iter().map(|step| {
        let done = live.released.contains(&step);
        let next = live.held == Some(step);
        let class = if next {
            "step step-next"
        } else if done {
            "step step-done"
        } else {
            "step"
        };
        view! { <li class=class data-step=step.token()>{step.title()}</li> }
    });
    view! { <ol class="step-timeline">{steps.collect_view()}</ol> }
}

pub fn phase_sentence(live: &LiveStudy) -> String {
    match live.phase {
        AggregatorPhase::Inviting => format!(
            "Invitation sent: {} of {} sites have accepted so far.",
            live.accepted.len(),
            live.params.site_count()
        ),
        AggregatorPhase::Summing { attempt, round } => match (round, live.held) {
            (_, Some(step)) => format!(
                "Attempt {attempt}: holding the messages that open {} until you click “Next round”.",
                step.title()
            ),
            (Some(round), None) => format!("Attempt {attempt}: SecureAgg {round} is collecting."),
            (None, None) => format!("Attempt {attempt}: SecureAgg is closing."),
        },
        AggregatorPhase::Collecting { attempt } => match live.held {
            Some(_) => format!(
                "Attempt {attempt}: the noise sum is ready; holding it until you click “Next round”."
            ),
            None => format!("Attempt {attempt}: collecting the sites' releases â_s."),
        },
        AggregatorPhase::Finished => "Finished.".into(),
    }
}
