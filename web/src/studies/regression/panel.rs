//! The dashboard's "Private regression" panel (capeFM): the form, the live study (the mean
//! study's view: the protocol is the same), and, for a finished regression round, the fitted
//! model, the loss-vs-ε chart and the guarantee.

use capelab_core::wire::Role;
use leptos::prelude::*;

use crate::frame::start::{ChargePreview, StartButton, StartError};

use crate::components::charts::scale::format_value;
use crate::components::charts::{Chart, forest, line};
use crate::download;
use crate::frame::dashboard::{DashboardStudy, FinishedRound};
use crate::frame::form::{FieldError, TextField};
use crate::session::RoomState;
use crate::studies::mean::export;
use crate::studies::mean::panel::LiveStudyView;
use crate::studies::nn::compare::{RegressionRow, regression_rows};
use crate::studies::regression::form::{self, RegressionFields};
use crate::studies::regression::view::{
    bounds_delta_note, guarantee_bounds, loss_chart, summary, swamped_note, weights_chart,
};

#[component]
pub fn RegressionPanel(study: DashboardStudy, state: RoomState) -> impl IntoView {
    let d = RegressionFields::default();
    let epsilon = RwSignal::new(d.epsilon);
    let delta = RwSignal::new(d.delta);
    let records = RwSignal::new(d.records_per_site);
    let features = RwSignal::new(d.features);
    let logistic = RwSignal::new(d.logistic);
    let conventional = RwSignal::new(d.conventional);
    let analytic = RwSignal::new(d.analytic);
    let step_mode = RwSignal::new(d.step_mode);
    let bounds = RwSignal::new(d.bounds);
    let present = Memo::new(move |_| state.roster.with(|r| r.present_count(Role::Site)));
    let running = move || study.view.live.with(Option::is_some);
    let error = study.view.start_error;
    let fields = move || RegressionFields {
        epsilon: epsilon.get(),
        delta: delta.get(),
        records_per_site: records.get(),
        features: features.get(),
        logistic: logistic.get(),
        conventional: conventional.get(),
        analytic: analytic.get(),
        step_mode: step_mode.get(),
        bounds: bounds.get(),
    };
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let fields = untrack(fields);
        study.start_round(move |sites| fields.read(sites));
    };
    view! {
        <section class="card span-all mean-panel" data-testid="regression-panel">
            <h2>"Private regression (capeFM)"</h2>
            <p class="muted">
                "Every site holds part of the data: records of D features in the unit ball and a "
                "label. Each computes its functional-mechanism coefficient arrays Λ₀, Λ₁, Λ₂ and "
                "releases them through CAPE, all blocks in one release calibrated to their joint "
                "sensitivity (so the announced (ε, δ) holds for the whole release). The dashboard "
                "averages them and minimises the noisy objective. The bounds that bring raw data "
                "into the unit ball must be public: seeded sites draw x = u/√D by construction."
            </p>
            <form class="mean-form" on:submit=submit>
                <fieldset class="field-grid" disabled=running>
                    <TextField field=form::EPSILON value=epsilon error />
                    <TextField field=form::DELTA value=delta error />
                    <TextField field=form::RECORDS value=records error numeric=true />
                    <TextField field=form::FEATURES value=features error numeric=true />
                    <div class="checks">
                        <label class="check"><input type="checkbox" id="reg-logistic" bind:checked=logistic />"logistic regression (labels 0/1) instead of linear"</label>
                        <label class="check"><input type="checkbox" id="reg-conventional" bind:checked=conventional />"also ask for the conventional release"</label>
                        <label class="check"><input type="checkbox" id="reg-analytic" bind:checked=analytic />"analytic calibration (a guarantee at any ε)"</label>
                        <label class="check"><input type="checkbox" id="reg-step" bind:checked=step_mode />"step by step"</label>
                    </div>
                    <label class="span-all">
                        "Public bounds of a site's CSV columns (announced to every site: they are public)"
                        <textarea id="reg-bounds" rows="3" spellcheck="false" bind:value=bounds
                            aria-describedby="reg-bounds-error"
                            on:input=move |_| if error.with(|e| e.as_ref().is_some_and(|e| e.field == Some(form::BOUNDS.id))) { error.set(None) }></textarea>
                        <FieldError field=form::BOUNDS.id error />
                        <span class="muted small">
                            "One “lo, hi” for every column, or one line per feature and (linear) one for "
                            "the target, e.g. “age: 19, 79”. Each site maps its CSV onto the unit ball "
                            "with them and clamps values outside (it counts them but never sends the "
                            "count). Seeded sites ignore them: their records are generated in the "
                            "unit ball. Data-dependent scaling is not offered: it is not private."
                        </span>
                    </label>
                </fieldset>
                <StartButton test_id="start-regression" action="Run capeFM" present running=Signal::derive(running) />
            </form>
            <ChargePreview present reports=study.view.reports read=move |sites| fields().read(sites) />
            <StartError error=study.view.start_error />
            {move || study.view.live.get().map(|live| view! { <LiveStudyView live study /> })}
            {move || {
                let rows = regression_rows(&study.view.rounds.get());
                (!rows.is_empty()).then(|| view! { <RegressionComparison rows /> })
            }}
        </section>
    }
}

/// Every regression round of this session in one table: ε asked for and guaranteed, and the
/// room's loss at the CAPE and the conventional ŵ.
#[component]
fn RegressionComparison(rows: Vec<RegressionRow>) -> impl IntoView {
    let count = rows.len();
    let cell = |v: Option<f64>| v.map_or("—".to_owned(), format_value);
    view! {
        <div class="round-result" data-testid="regression-comparison" data-rounds=count>
            <h3 id="regression-comparison-title">"This session's regression rounds side by side"</h3>
            // focusable: on a phone the table scrolls sideways, and a keyboard must reach it
            <table class="numbers" tabindex="0" aria-labelledby="regression-comparison-title">
                <thead><tr>
                    <th>"round"</th><th>"model"</th><th>"ε (calibrated)"</th><th>"ε (guaranteed, full view)"</th>
                    <th>"sites"</th><th>"loss at capeFM ŵ"</th><th>"loss at conventional ŵ"</th>
                </tr></thead>
                <tbody>
                    {rows.into_iter().map(|r| view! {
                        <tr data-testid="regression-comparison-row" data-round=r.round data-cape-loss=r.cape_loss.unwrap_or(f64::NAN)>
                            <td>{r.round}</td><td>{r.model.name()}</td><td>{format_value(r.requested_epsilon)}</td>
                            <td>{cell(r.guaranteed_epsilon)}</td><td>{r.sites}</td>
                            <td>{cell(r.cape_loss)}</td><td>{cell(r.conventional_loss)}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
            <p class="muted small">
                "Losses are estimated from the released arrays (no extra privacy cost). The "
                "non-private fit of the room's data cannot be shown here: the dashboard never sees "
                "any records; each site compares locally with its own non-private fit."
            </p>
        </div>
    }
}

/// A finished regression round: the model, its guarantee, and the loss over the rounds so far.
#[component]
pub fn RegressionRoundView(
    round: FinishedRound,
    rounds: Vec<FinishedRound>,
    /// The δ the sites' ledgers account at, when they have reported it: the bounds are stated
    /// there, so they are what the ledgers charged.
    ledger_delta: Signal<Option<f64>>,
) -> impl IntoView {
    let Some(s) = summary(&round) else {
        let reason = round.outcome.abort_reason().map(|r| r.to_string()).unwrap_or_default();
        return view! {
            <div class="callout callout-error" data-testid="abort-reason">
                "Round " {round.number} " ended without a model: " {reason}
            </div>
        }
        .into_any();
    };
    let stem = format!("capelab-round-{}-{}", round.number, round.outcome.study);
    let weights_id = format!("weights-{}", round.number);
    let loss_id = format!("loss-{}", round.number);
    let weights_svg = forest::render(&weights_chart(&s), &weights_id);
    let loss_svg = line::render(&loss_chart(&rounds, s.model), &loss_id);
    let values = |v: &[f64]| v.iter().map(|x| format_value(*x)).collect::<Vec<_>>().join(", ");
    let json = |v: &[f64]| serde_json::to_string(v).unwrap_or_default();
    let guarantee = s.guarantee.clone().map(|g| {
        let warnings = g.warnings.clone();
        let for_bounds = g.clone();
        let bounds = move || {
            let g = &for_bounds;
            let delta = ledger_delta.get().unwrap_or(g.delta);
            guarantee_bounds(g, delta).map(|b| view! {
                <p data-testid="regression-bounds" data-pld=b.pld data-rdp=b.rdp data-bound=b.charged().to_string()>
                    {b.sentence()} {bounds_delta_note(delta, g.delta)} "."
                </p>
            })
        };
        view! {
            <div class="callout" data-testid="regression-guarantee" data-epsilon=g.epsilon>
                <p>
                    "Each site's release is (" {format_value(g.epsilon)} ", " {format!("{:e}", g.delta)}
                    ")-DP against the full adversary view (requested ε = " {format_value(g.requested_epsilon)} ")."
                </p>
                {bounds}
                <p class="muted">{g.how}</p>
                {warnings.into_iter().map(|w| view! { <p class="muted">"⚠ " {w}</p> }).collect_view()}
            </div>
        }
    });
    let conventional = s.conventional.clone().map(|c| view! {
        <div class="estimate estimate-conv" data-testid="regression-conventional" data-weights=json(&c.weights)>
            <p class="label">"Conventional ŵ"</p>
            <p class="estimate-value">{values(&c.weights)}</p>
            <p class="muted">"room loss (estimated) " {c.room_loss_estimate.map(format_value)}</p>
        </div>
    });
    let cape = s.cape.clone();
    let loss = cape.room_loss_estimate.unwrap_or(f64::NAN);
    // The fit's own files (ŵ next to w*, loss-vs-ε points, guarantee); the charts export
    // themselves as PNG/SVG from their Chart frames.
    let export_error = RwSignal::new(None::<String>);
    let fit_stem = format!("{stem}-regression");
    let files = StoredValue::new((round.clone(), rounds.clone(), fit_stem));
    let export = move |json: bool| {
        let (round, rounds, fit_stem) = files.get_value();
        let (text, ext, mime) = if json {
            (export::regression_json(&round, &rounds), "json", "application/json")
        } else {
            (export::regression_csv(&round, &rounds), "csv", "text/csv")
        };
        let result = match text {
            Some(text) => download::text(&format!("{fit_stem}.{ext}"), mime, &text),
            None => Err("this round produced no model".into()),
        };
        export_error.set(result.err());
    };
    view! {
        <div class="regression-result" data-testid="regression-result" data-model=s.model.name()>
            <div class="estimates">
                <div class="estimate estimate-cape" data-testid="regression-model" data-weights=json(&cape.weights) data-loss=loss>
                    <p class="label">"capeFM ŵ (" {s.sites} " sites)"</p>
                    <p class="estimate-value">{values(&cape.weights)}</p>
                    <p class="muted">"room loss (estimated from the release) " {format_value(loss)}</p>
                    <p class="muted">{cape.minimiser.method.clone()} " · kept " {cape.minimiser.kept_eigenvalues} " of " {cape.weights.len()} " eigen-directions"</p>
                </div>
                {conventional}
                <div class="estimate" data-testid="population-weights">
                    <p class="label">"Population w* (seeded data)"</p>
                    <p class="estimate-value">{values(&s.population)}</p>
                </div>
            </div>
            {swamped_note(&s).map(|n| view! { <p class="callout callout-warn" data-testid="regression-swamped">{n}</p> })}
            {guarantee}
            <Chart markup=Signal::stored(weights_svg) id=weights_id file_stem=format!("{stem}-weights") testid="weights-chart" />
            <Chart markup=Signal::stored(loss_svg) id=loss_id file_stem=format!("{stem}-loss") testid="loss-chart" />
            <div class="exports">
                <button type="button" class="button" data-testid="export-regression-json" on:click=move |_| export(true)>"Download the fit (JSON)"</button>
                <button type="button" class="button" data-testid="export-regression-csv" on:click=move |_| export(false)>"Download the fit (CSV)"</button>
                {move || export_error.get().map(|e| view! { <span class="form-error">{e}</span> })}
            </div>
        </div>
    }
    .into_any()
}
