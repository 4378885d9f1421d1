//! The dashboard's "Joint ICA (fMRI)" panel: the form (data set, privacy unit, ε_p, ε_i, J), then
//! live: the recovered spatial maps next to the true ones, their privacy cost in plain numbers,
//! q_NGI, ε spent and the learning rate per iteration, each site's part; at the end the
//! guarantee, the exports and a control to tighten privacy and run again.

use capelab_core::djica::PrivacyUnit;
use capelab_core::study::iterative::pca::SyntheticPreset;
use capelab_core::wire::Role;
use leptos::prelude::*;

use crate::components::charts::scale::format_value;
use crate::components::charts::{Chart, heatmap, line};
use crate::download;
use crate::frame::budget::decline_sentence;
use crate::frame::consent::present_consent;
use crate::frame::dashboard::DashboardStudy;
use crate::frame::form::TextField;
use crate::frame::start::{StartButton, StartError};
use crate::frame::target::noise_mode;
use crate::frame::target::{CalibrationLine, EpsilonScope, NoiseModeSelect, ScopedEpsilon};
use crate::session::RoomState;
use crate::studies::ica::form::{self, IcaFields};
use crate::studies::ica::run::IcaLive;
use crate::studies::ica::view::{
    cost_lines, epsilon_chart, iterations_csv, maps_spec, mode_text, quality_chart, rate_chart,
    run_json,
};
use crate::studies::nn::view::{guarantee_lines, stop_text};

fn whole_study_untracked(scope: RwSignal<String>) -> bool {
    scope.get_untracked() == EpsilonScope::WholeStudy.value()
}

#[component]
pub fn IcaPanel(study: DashboardStudy, state: RoomState) -> impl IntoView {
    let d = IcaFields::default();
    let grid = RwSignal::new(d.grid);
    let components = RwSignal::new(d.components);
    let subjects = RwSignal::new(d.subjects_per_site);
    let timepoints = RwSignal::new(d.timepoints);
    let preset = RwSignal::new("well".to_owned());
    let unit = RwSignal::new("timepoint".to_owned());
    let epsilon_pca = RwSignal::new(d.epsilon_pca);
    let scope = RwSignal::new(d.scope.value().to_owned());
    let epsilon = RwSignal::new(d.epsilon_iteration);
    let epsilon_study = RwSignal::new(d.epsilon_study);
    let delta = RwSignal::new(d.delta);
    let iterations = RwSignal::new(d.iterations);
    let clip = RwSignal::new(d.clip);
    let mode = RwSignal::new("upfront".to_owned());
    let maps_seed = RwSignal::new(d.maps_seed);
    let source = RwSignal::new("generated".to_owned());
    let voxels = RwSignal::new(d.voxels);
    let min_samples = RwSignal::new(d.min_samples);
    let longest = RwSignal::new(d.longest_subject);
    let own = move || source.get() == "own";
    let present = Memo::new(move |_| state.roster.with(|r| r.present_count(Role::Site)));
    let running = move || study.view.busy();
    let error = study.view.start_error;
    let consent = present_consent(state, study);
    let start = move || {
        let fields = IcaFields {
            grid: grid.get_untracked(),
            components: components.get_untracked(),
            subjects_per_site: subjects.get_untracked(),
            timepoints: timepoints.get_untracked(),
            preset: if preset.get_untracked() == "paper" {
                SyntheticPreset::PaperLike
            } else {
                SyntheticPreset::WellConditioned
            },
            unit: if unit.get_untracked() == "subject" {
                PrivacyUnit::Subject
            } else {
                PrivacyUnit::TimePoint
            },
            epsilon_pca: epsilon_pca.get_untracked(),
            scope: EpsilonScope::from_value(&scope.get_untracked()),
            epsilon_iteration: epsilon.get_untracked(),
            epsilon_study: epsilon_study.get_untracked(),
            delta: delta.get_untracked(),
            iterations: iterations.get_untracked(),
            clip: clip.get_untracked(),
            mode: noise_mode(&mode.get_untracked()),
            maps_seed: maps_seed.get_untracked(),
            own_data: source.get_untracked() == "own",
            voxels: voxels.get_untracked(),
            min_samples: min_samples.get_untracked(),
            longest_subject: longest.get_untracked(),
        };
        study.start_ica(move |sites| fields.read(sites));
    };
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        start();
    };
    let whole_study = move || scope.get() == EpsilonScope::WholeStudy.value();
    // Closed form for unsampled Gaussians: well under a frame (frame::target), so inline.
    let calibration = Memo::new(move |_| {
        whole_study().then(|| {
            let typed = IcaFields {
                epsilon_study: epsilon_study.get(),
                delta: delta.get(),
                iterations: iterations.get(),
                mode: noise_mode(&mode.get()),
                ..IcaFields::default()
            };
            typed.calibration(present.get()).map(|c| c.summary()).map_err(|e| e.to_string())
        })
    });
    // Halves whichever ε the form uses.
    let tighten = Callback::new(move |()| {
        let field = if whole_study_untracked(scope) { epsilon_study } else { epsilon };
        if let Ok(e) = field.get_untracked().trim().parse::<f64>() {
            field.set(format_value(e / 2.0));
            start();
        }
    });
    // The way back from any number of tightenings: the privacy fields as a fresh dashboard has them.
    let privacy_changed = Signal::derive(move || {
        let d = IcaFields::default();
        epsilon_pca.get() != d.epsilon_pca
            || epsilon.get() != d.epsilon_iteration
            || epsilon_study.get() != d.epsilon_study
            || delta.get() != d.delta
    });
    let restore = Callback::new(move |()| {
        let d = IcaFields::default();
        epsilon_pca.set(d.epsilon_pca);
        epsilon.set(d.epsilon_iteration);
        epsilon_study.set(d.epsilon_study);
        delta.set(d.delta);
    });
    view! {
        <section class="card span-all mean-panel" data-testid="ica-panel">
            <h2>"Joint ICA of fMRI (capePCA + capeDJICA)"</h2>
            <p class="muted">
                "Every site generates its own subjects in its tab: R brain networks (the public "
                "maps of the data set, from the maps seed) switched on and off by each subject's "
                "own time courses, which never leave the tab. First capePCA: each site releases "
                "its noisy covariance once and the dashboard keeps the R leading directions. Then "
                "capeDJICA: each iteration the dashboard sends W and every site releases its "
                "clipped infomax gradient with CAPE noise; the noise cancels in the average. The "
                "sites' numerics run in a Web Worker, so their tabs stay responsive."
            </p>
            <form class="mean-form" on:submit=submit>
                <fieldset class="field-grid" disabled=running>
                    <label>"privacy unit"
                        <select id="ica-unit" bind:value=unit>
                            <option value="timepoint">"time point (weaker; the classroom demo)"</option>
                            <option value="subject">"subject (the paper's unit)"</option>
                        </select>
                    </label>
                    <ScopedEpsilon select=("ica-epsilon-scope", "capeDJICA's ε is")
                        options=("per release (ε_i)", "for all J iterations (PLD)") scope
                        per_iteration=(form::EPSILON, epsilon) whole_study=(form::EPSILON_STUDY, epsilon_study) error />
                    <TextField field=form::EPSILON_PCA value=epsilon_pca error />
                    <TextField field=form::DELTA value=delta error />
                    <TextField field=form::ITERATIONS value=iterations error numeric=true />
                    <NoiseModeSelect id="ica-mode" mode consent consent_testid="ica-consent" />
                    <TextField field=form::COMPONENTS value=components error numeric=true />
                    <TextField field=form::CLIP value=clip error />
                    <label>"data"
                        <select id="ica-source" bind:value=source>
                            <option value="generated">"generated at every site (public maps)"</option>
                            <option value="own">"the sites' own files (NIfTI or matrix)"</option>
                        </select>
                    </label>
                    <Show when=move || !own()>
                        <TextField field=form::GRID value=grid error numeric=true />
                        <TextField field=form::SUBJECTS value=subjects error numeric=true />
                        <TextField field=form::TIMEPOINTS value=timepoints error numeric=true />
                        <label>"maps"
                            <select id="ica-preset" bind:value=preset>
                                <option value="well">"well-conditioned (demo)"</option>
                                <option value="paper">"paper-like (overlapping blobs)"</option>
                            </select>
                        </label>
                        <TextField field=form::SEED value=maps_seed error numeric=true />
                    </Show>
                    <Show when=own>
                        <TextField field=form::VOXELS value=voxels error numeric=true />
                        <TextField field=form::MIN_SAMPLES value=min_samples error numeric=true />
                        <TextField field=form::LONGEST value=longest error numeric=true />
                    </Show>
                </fieldset>
                <CalibrationLine calibration prefix="ica" />
                <StartButton test_id="start-ica" action="Run" present running=Signal::derive(running) />
            </form>
            <StartError error=study.view.start_error />
            {move || study.view.ica.get().map(|live| view! { <IcaLiveView live study tighten restore privacy_changed /> })}
        </section>
    }
}

#[component]
fn IcaLiveView(
    live: IcaLive,
    study: DashboardStudy,
    tighten: Callback<()>,
    restore: Callback<()>,
    privacy_changed: Signal<bool>,
) -> impl IntoView {
    let total = live.form.max_iterations;
    let done = live.points.last().map_or(0, |p| p.iteration);
    let q_now = live.points.last().and_then(|p| p.q);
    let percent = 100.0 * f64::from(done.min(total)) / f64::from(total.max(1));
    let stem = format!("capelab-ica-{}", live.number);
    let maps = live.maps.clone().map(|maps| {
        let tiles = maps.truth.len() + maps.recovered.len();
        let title = if live.finished { "Spatial maps (final)" } else { "Spatial maps (live)" };
        let svg = heatmap::render(&maps_spec(&maps, q_now, title), "ica-maps-svg");
        view! {
            <div data-testid="ica-maps" data-tiles=tiles data-grid=maps.grid>
                <Chart markup=Signal::stored(svg) id="ica-maps-svg".to_owned() file_stem=format!("{stem}-maps") testid="ica-maps-chart" />
            </div>
        }
    });
    let pca = live.pca.as_ref().map(|o| {
        let cosines = o.records.last().and_then(|r| r.report.principal_cosines.clone()).unwrap_or_default();
        let smallest = cosines.iter().copied().fold(f64::INFINITY, f64::min);
        let error = o.records.last().and_then(|r| r.report.error.clone());
        view! {
            <p class="muted" data-testid="ica-pca" data-min-cosine=smallest>
                {format!(
                    "capePCA: {} sites released their covariance; subspace recovery (principal cosines with the true maps) from {} to {}.",
                    o.contributors.len(),
                    format_value(smallest),
                    format_value(cosines.first().copied().unwrap_or(f64::NAN)),
                )}
                {error.map(|e| format!(" No subspace: {e}"))}
            </p>
        }
    });
    let sites = site_lines(&live);
    let guarantee = live
        .djica
        .as_ref()
        .and_then(|o| o.privacy.as_ref())
        .map(guarantee_lines)
        .unwrap_or_default();
    let stop = live.djica.as_ref().map(|o| stop_text(&o.stop, |id| live.name(id)));
    let failure = live.failure.clone();
    let json = run_json(&live);
    let csv = iterations_csv(&live.points);
    let export_error = RwSignal::new(None::<String>);
    let (json_stem, csv_stem) = (stem.clone(), stem.clone());
    let export_json = move |_| {
        export_error
            .set(download::text(&format!("{json_stem}.json"), "application/json", &json).err());
    };
    let export_csv = move |_| {
        export_error
            .set(download::text(&format!("{csv_stem}-iterations.csv"), "text/csv", &csv).err());
    };
    let finished = live.finished;
    // Ended at capePCA: capeDJICA never ran, so no progress and no result for it.
    let not_run = finished && live.djica.is_none();
    let charts = (!live.points.is_empty()).then(|| {
        let q = line::render(&quality_chart(&live.points, total), "ica-q-svg");
        let eps = line::render(&epsilon_chart(&live.points, total, live.form.level.delta), "ica-eps-svg");
        let rate = line::render(&rate_chart(&live.points, total), "ica-rate-svg");
        let spent = live.points.last().and_then(|p| p.epsilon_spent).unwrap_or(f64::NAN);
        view! {
            <div data-testid="ica-q" data-points=live.points.len() data-final=q_now.unwrap_or(f64::NAN)>
                <Chart markup=Signal::stored(q) id="ica-q-svg".to_owned() file_stem=format!("{stem}-q") testid="ica-q-chart" />
            </div>
            <div data-testid="ica-epsilon" data-final=spent>
                <Chart markup=Signal::stored(eps) id="ica-eps-svg".to_owned() file_stem=format!("{stem}-epsilon") testid="ica-epsilon-chart" />
            </div>
            <Chart markup=Signal::stored(rate) id="ica-rate-svg".to_owned() file_stem=format!("{stem}-rate") testid="ica-rate-chart" />
        }
    });
    view! {
        <div class="live-study study-focus" data-testid="ica-live" data-number=live.number data-stage=live.stage.clone() data-finished=finished.to_string()>
            <h3>{format!("Study {} · {} · {}", live.number, live.stage, mode_text(live.form.mode))}</h3>
            <p class=if not_run { "live-phase callout callout-warn" } else { "live-phase" } data-testid="ica-phase" data-not-run=not_run.to_string()>{live.phase.clone()}</p>
            {live.repairs.iter().map(|r| view! { <p class="callout callout-warn" data-testid="ica-repair">{r.clone()}</p> }).collect_view()}
            {(!not_run).then(|| view! {
                <div data-testid="ica-progress" data-done=done data-total=total>
                    <p class="muted">
                        "capeDJICA iteration " {done} " of " {total}
                        {q_now.map(|q| format!(" · q_NGI {}", format_value(q)))}
                        {live.points.last().map(|p| format!(" · ρ {}", format_value(p.rate)))}
                    </p>
                    <div class="bar"><div class="bar-fill" style=format!("width: {percent:.1}%")></div></div>
                </div>
            })}
            <div class="callout" data-testid="ica-cost">
                {cost_lines(&live).into_iter().map(|l| view! { <p>{l}</p> }).collect_view()}
            </div>
            {maps}
            {live.form.data.synthetic.is_none().then(|| view! {
                <p class="muted" data-testid="ica-no-truth">
                    "The sites' own data: there is no ground truth, so no q_NGI and no matched maps. "
                    "K (capePCA) and W (capeDJICA) are in the JSON export."
                </p>
            })}
            {pca}
            <ul class="muted small" data-testid="ica-sites">
                {sites.into_iter().map(|s| view! { <li>{s}</li> }).collect_view()}
            </ul>
            {charts}
            {failure.map(|f| view! { <p class="callout callout-warn" data-testid="ica-failure">{f}</p> })}
            {stop.map(|s| view! { <p class="callout" data-testid="ica-stop">{s}</p> })}
            {(!guarantee.is_empty()).then(|| view! {
                <div class="callout" data-testid="ica-guarantee">
                    {guarantee.into_iter().map(|g| view! { <p>{g}</p> }).collect_view()}
                </div>
            })}
            {(!live.refusals.is_empty()).then(|| view! {
                <p class="muted small">"Refused inputs: " {live.refusals.join("; ")}</p>
            })}
            <div class="export-row">
                {(!finished).then(|| view! {
                    <button type="button" class="button" data-testid="stop-ica" on:click=move |_| study.stop()>"Stop"</button>
                })}
                {finished.then(|| view! {
                    <button type="button" class="button" data-testid="tighten-ica" on:click=move |_| tighten.run(())>
                        "Tighten privacy (ε_i ÷ 2) and run again"
                    </button>
                    {move || privacy_changed.get().then(|| view! {
                        <button type="button" class="button" data-testid="ica-restore-defaults" on:click=move |_| restore.run(())>
                            "Back to the default privacy"
                        </button>
                    })}
                    <button type="button" class="button" data-testid="ica-export-json" on:click=export_json>"Download JSON"</button>
                    <button type="button" class="button" data-testid="ica-export-csv" on:click=export_csv>"Download CSV"</button>
                })}
                {move || export_error.get().map(|e| view! { <span class="form-error">{e}</span> })}
            </div>
        </div>
    }
}

/// Each invited site's part: in capePCA's sum, in capeDJICA, declined and why.
fn site_lines(live: &IcaLive) -> Vec<String> {
    live.form
        .sites
        .iter()
        .map(|&site| {
            let name = live.name(site);
            let declined = live
                .pca
                .iter()
                .flat_map(|o| &o.declined)
                .chain(live.djica.iter().flat_map(|o| &o.declined))
                .find(|d| d.site == site);
            if let Some(d) = declined {
                return decline_sentence(&name, &d.reason, d.shortfall.as_ref());
            }
            let in_pca = live.pca.as_ref().is_some_and(|o| o.contributors.contains(&site));
            let in_ica = live.djica_params.as_ref().is_some_and(|p| p.sites.contains(&site));
            let unanswered = live.djica.as_ref().is_some_and(|o| !o.accepted.contains(&site));
            match (live.pca.is_some(), in_pca, in_ica) {
                (false, ..) => format!("{name}: invited to capePCA"),
                (true, false, _) => format!("{name}: not in capePCA's noise sum"),
                (true, true, true) if unanswered => {
                    format!("{name}: capePCA released · had not answered capeDJICA when it ended")
                }
                (true, true, true) => format!("{name}: capePCA released · in capeDJICA"),
                (true, true, false) => format!("{name}: capePCA released"),
            }
        })
        .collect()
}
