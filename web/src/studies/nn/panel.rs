//! The dashboard's "Neural network (CAPE gradient descent)" panel: the form, the live training
//! (progress, held-out accuracy and loss, ε spent per iteration) and the finished studies (stop
//! reason, final guarantee). It renders [`DashboardStudy`]'s NN signals; the charts come from
//! [`crate::studies::nn::view`].

use capelab_core::wire::Role;
use leptos::prelude::*;

use crate::frame::start::{StartButton, StartError};

use crate::components::charts::scale::format_value;
use crate::components::charts::{Chart, line};
use crate::frame::budget::decline_sentence;
use crate::frame::consent::present_consent;
use crate::frame::dashboard::DashboardStudy;
use crate::frame::form::TextField;
use crate::frame::target::noise_mode;
use crate::frame::target::{CalibrationLine, EpsilonScope, NoiseModeSelect, ScopedEpsilon};
use crate::session::RoomState;
use crate::studies::nn::compare::nn_comparison_chart;
use crate::studies::nn::form::{self, NnFields};
use crate::studies::nn::run::{NnFinished, NnLive};
use crate::studies::nn::view::{
    NnRecord, Progress, epsilon_chart, final_accuracy, final_epsilon_spent, guarantee_bounds,
    guarantee_lines, repair_lines, stop_text, training_chart,
};

#[component]
pub fn NnPanel(study: DashboardStudy, state: RoomState) -> impl IntoView {
    let d = NnFields::default();
    let scope = RwSignal::new(d.scope.value().to_owned());
    let epsilon = RwSignal::new(d.epsilon_per_iteration);
    let epsilon_study = RwSignal::new(d.epsilon_study);
    let delta = RwSignal::new(d.delta);
    let iterations = RwSignal::new(d.iterations);
    let records = RwSignal::new(d.records_per_site);
    let features = RwSignal::new(d.features);
    let hidden = RwSignal::new(d.hidden);
    let clip = RwSignal::new(d.clip);
    let learning_rate = RwSignal::new(d.learning_rate);
    let mode = RwSignal::new("upfront".to_owned());
    let present = Memo::new(move |_| state.roster.with(|r| r.present_count(Role::Site)));
    let running = move || study.view.busy();
    let error = study.view.start_error;
    let consent = present_consent(state, study);
    // What the calibration reads of the form (tracked: it follows every keystroke).
    let typed = move || NnFields {
        epsilon_study: epsilon_study.get(),
        delta: delta.get(),
        iterations: iterations.get(),
        mode: noise_mode(&mode.get()),
        ..NnFields::default()
    };
    let whole_study = move || scope.get() == EpsilonScope::WholeStudy.value();
    // Closed form for unsampled Gaussians: well under a frame (frame::target), so inline.
    let calibration = Memo::new(move |_| {
        whole_study().then(|| {
            typed().calibration(present.get()).map(|c| c.summary()).map_err(|e| e.to_string())
        })
    });
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let fields = NnFields {
            scope: EpsilonScope::from_value(&scope.get_untracked()),
            epsilon_per_iteration: epsilon.get_untracked(),
            epsilon_study: epsilon_study.get_untracked(),
            delta: delta.get_untracked(),
            iterations: iterations.get_untracked(),
            records_per_site: records.get_untracked(),
            features: features.get_untracked(),
            hidden: hidden.get_untracked(),
            clip: clip.get_untracked(),
            learning_rate: learning_rate.get_untracked(),
            mode: noise_mode(&mode.get_untracked()),
        };
        study.start_nn(move |sites| fields.read(sites));
    };
    view! {
        <section class="card span-all mean-panel" data-testid="nn-panel">
            <h2>"Neural network (CAPE gradient descent)"</h2>
            <p class="muted">
                "A two-layer network (H hidden units) is trained by full-batch gradient descent. "
                "Each iteration the dashboard sends the current weights; each site computes the "
                "mean of its per-record gradients clipped to norm C (sensitivity Δ = 2C/N_s) and "
                "releases it with noise; the dashboard averages and takes one Adam step. In CAPE "
                "mode the zero-sum noise of all J iterations comes from one SecureAgg run before "
                "the first iteration, so a site that leaves afterwards stops the training."
            </p>
            <p class="muted">
                "Seeded sites draw records of two Gaussian classes (μ = ±0.25 per feature, the "
                "generator of cape nn). The accuracy shown is on a public held-out set of the same "
                "population from a public seed: the dashboard has no private data."
            </p>
            <form class="mean-form" on:submit=submit>
                <fieldset class="field-grid" disabled=running>
                    <ScopedEpsilon select=("nn-epsilon-scope", "ε is")
                        options=("per iteration", "for the whole study (J iterations, PLD)") scope
                        per_iteration=(form::EPSILON, epsilon) whole_study=(form::EPSILON_STUDY, epsilon_study) error />
                    <TextField field=form::DELTA value=delta error />
                    <TextField field=form::ITERATIONS value=iterations error numeric=true />
                    <TextField field=form::RECORDS value=records error numeric=true />
                    <TextField field=form::FEATURES value=features error numeric=true />
                    <TextField field=form::HIDDEN value=hidden error numeric=true />
                    <TextField field=form::CLIP value=clip error />
                    <TextField field=form::LEARNING_RATE value=learning_rate error />
                    <NoiseModeSelect id="nn-mode" mode consent consent_testid="nn-consent" />
                </fieldset>
                <CalibrationLine calibration prefix="nn" />
                <StartButton test_id="start-nn" action="Train" present running=Signal::derive(running) />
            </form>
            <StartError error=study.view.start_error />
            {move || study.view.nn_live.get().map(|live| view! { <NnLiveView live study /> })}
            {move || {
                let runs = study.view.nn_rounds.get();
                (runs.len() >= 2).then(|| view! { <NnComparison runs /> })
            }}
            {move || {
                study.view.nn_rounds.get().into_iter().rev().map(|round| view! { <NnRoundView round /> }).collect_view()
            }}
        </section>
    }
}

/// The session's finished trainings overlaid (accuracy per iteration), newest runs included.
#[component]
fn NnComparison(runs: Vec<NnFinished>) -> impl IntoView {
    let spec = nn_comparison_chart(&runs);
    let id = format!("nn-compare-{}", runs.len());
    let svg = line::render(&spec, &id);
    view! {
        <div class="round-result" data-testid="nn-comparison" data-runs=runs.len()>
            <h3>"This session's trainings side by side"</h3>
            <Chart markup=Signal::stored(svg) id=id file_stem="capelab-nn-comparison".to_owned() testid="nn-comparison-chart" />
        </div>
    }
}

#[component]
fn NnLiveView(live: NnLive, study: DashboardStudy) -> impl IntoView {
    let total = live.params.max_iterations;
    view! {
        <div class="live-study study-focus" data-testid="nn-live">
            <p class="live-phase" data-testid="nn-phase">{live.phase.clone()}</p>
            {live.repairs.iter().map(|r| view! { <p class="callout callout-warn" data-testid="nn-repair">{r.clone()}</p> }).collect_view()}
            <TrainingView records=live.records.clone() total chance=live.chance delta=live.params.delta stem=format!("capelab-nn-live-{}", live.number) id_suffix="live".to_owned() />
            {(!live.refusals.is_empty()).then(|| view! {
                <p class="muted small">"Refused inputs: " {live.refusals.join("; ")}</p>
            })}
            <button type="button" class="button" data-testid="stop-nn" on:click=move |_| study.stop()>"Stop"</button>
        </div>
    }
}

/// The progress bar and the two charts of one study's records.
#[component]
fn TrainingView(
    records: Vec<NnRecord>,
    total: u32,
    chance: f64,
    delta: f64,
    stem: String,
    id_suffix: String,
) -> impl IntoView {
    let progress = Progress::of(&records, total);
    let accuracy = final_accuracy(&records);
    let spent = final_epsilon_spent(&records);
    let acc_id = format!("nn-accuracy-{id_suffix}");
    let eps_id = format!("nn-epsilon-{id_suffix}");
    let acc_svg = line::render(&training_chart(&records, total, chance), &acc_id);
    let eps_svg = line::render(&epsilon_chart(&records, total, delta, None), &eps_id);
    let private = spent.is_some();
    view! {
        <div data-testid="nn-progress" data-done=progress.done data-total=progress.total>
            <p class="muted">
                "Iteration " {progress.done} " of " {progress.total}
                " · held-out accuracy " {accuracy.map_or("—".to_owned(), format_value)}
                " (chance " {format_value(chance)} ")"
                {spent.map(|e| format!(" · ε spent per site {}", format_value(e)))}
            </p>
            <div class="bar"><div class="bar-fill" style=format!("width: {:.1}%", progress.percent())></div></div>
        </div>
        <div data-testid="nn-accuracy" data-points=records.len() data-final=accuracy.unwrap_or(f64::NAN)>
            <Chart markup=Signal::stored(acc_svg) id=acc_id file_stem=format!("{stem}-accuracy") testid="nn-accuracy-chart" />
        </div>
        {private.then(|| view! {
            <div data-testid="nn-epsilon" data-final=spent.unwrap_or(f64::NAN)>
                <Chart markup=Signal::stored(eps_svg) id=eps_id file_stem=format!("{stem}-epsilon") testid="nn-epsilon-chart" />
            </div>
        })}
    }
}

#[component]
fn NnRoundView(round: NnFinished) -> impl IntoView {
    let o = &round.outcome;
    let stop = stop_text(&o.stop, |id| round.name(id));
    let guarantee = o.privacy.as_ref().map(guarantee_lines).unwrap_or_default();
    let declined = o
        .declined
        .iter()
        .map(|d| decline_sentence(&round.name(d.site), &d.reason, d.shortfall.as_ref()))
        .collect::<Vec<_>>();
    let completed = matches!(o.stop, capelab_core::study::iterative::StopReason::Completed { .. });
    let repairs = repair_lines(&o.repairs, |id| round.name(id));
    let epsilon = o.privacy.as_ref().map_or(f64::NAN, |p| p.epsilon);
    let bounds = o.privacy.as_ref().and_then(guarantee_bounds);
    let (pld, rdp) = bounds.map_or((f64::NAN, f64::NAN), |b| (b.pld, b.rdp));
    let bound = bounds.map(|b| b.charged().to_string());
    view! {
        <div class="round-result study-focus" data-testid="nn-result" data-round=round.number data-completed=completed.to_string() data-iterations=o.iterations>
            <h3>{format!("Training {} · {} · {} sites", round.number, o.params.mode.name(), o.contributors.len())}</h3>
            <p class=if completed { "callout callout-ok" } else { "callout callout-warn" } data-testid="nn-stop">{stop}</p>
            {repairs.into_iter().map(|r| view! { <p class="callout callout-warn" data-testid="nn-repair">{r}</p> }).collect_view()}
            {declined.into_iter().map(|d| view! { <p class="callout callout-warn" data-testid="nn-declined">{d}</p> }).collect_view()}
            <div class="callout" data-testid="nn-guarantee" data-epsilon=epsilon data-pld=pld data-rdp=rdp data-bound=bound>
                {if guarantee.is_empty() {
                    view! { <p>"Non-private run: no guarantee, nothing recorded in the ledgers."</p> }.into_any()
                } else {
                    guarantee.into_iter().map(|g| view! { <p>{g}</p> }).collect_view().into_any()
                }}
            </div>
            <TrainingView records=o.records.clone() total=o.params.max_iterations chance=round.chance delta=o.params.delta stem=format!("capelab-nn-{}", round.number) id_suffix=round.number.to_string() />
        </div>
    }
}
