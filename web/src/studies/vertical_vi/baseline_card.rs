//! "Compare with a CLI run" on the vertical study's panel: load the JSON of `cape vertical-vi
//! --mode nonpartitioned … --json`, see its settings and every one that differs from the run on
//! the dashboard; its test NLL is drawn beside the run's on the NLL chart (the panel and the
//! presenter view read [`DashboardView::vvi_baseline`]). Parsing and comparing are
//! [`crate::studies::vertical_vi::baseline`]'s.
//!
//! [`DashboardView::vvi_baseline`]: crate::frame::dashboard::DashboardView

use leptos::prelude::*;

use crate::frame::dashboard::DashboardStudy;
use crate::frame::text_input::TextFileInput;
use crate::studies::vertical_vi::baseline::{HOW, cli_command, parse};

#[component]
pub fn VviBaselineInput(study: DashboardStudy) -> impl IntoView {
    let baseline = study.view.vvi_baseline;
    let error = RwSignal::new(None::<String>);
    let on_text = Callback::new(move |(name, text): (String, String)| match parse(&text) {
        Ok(run) => {
            error.set(None);
            baseline.set(Some(run));
        }
        Err(e) => error.set(Some(format!("{name}: {e}"))),
    });
    let on_error = Callback::new(move |e: String| error.set(Some(e)));
    // The command for the run on the dashboard, or the general form before any run.
    let command = move || {
        study
            .view
            .vvi
            .with(|l| l.as_ref().map(|l| cli_command(&l.task, &l.data)))
            .unwrap_or_else(|| HOW.to_string())
    };
    let loaded = move || {
        baseline.get().map(|run| {
            let mismatches = study
                .view
                .vvi
                .with(|l| l.as_ref().map(|l| run.mismatches(&l.task, &l.data)))
                .unwrap_or_default();
            let compared = study.view.vvi.with(Option::is_some);
            let verdict = match (compared, mismatches.is_empty()) {
                (false, _) => None,
                (true, true) => Some(view! {
                    <p class="muted" data-testid="vvi-baseline-match">"Its settings are this run's."</p>
                }.into_any()),
                (true, false) => {
                    let items = mismatches
                        .into_iter()
                        .map(|m| view! { <li data-testid="vvi-baseline-mismatch">{m}</li> })
                        .collect_view();
                    Some(view! {
                        <p class="muted">"It differs from this run in:"</p>
                        <ul class="small" data-testid="vvi-baseline-mismatches">{items}</ul>
                    }.into_any())
                }
            };
            view! {
                <p data-testid="vvi-baseline-settings" data-points=run.test_nll.len()>{run.settings()}</p>
                {verdict}
                <button type="button" class="button button-small" on:click=move |_| baseline.set(None)>"Remove the CLI curve"</button>
            }
        })
    };
    view! {
        <div class="vvi-baseline" data-testid="vvi-baseline">
            <h3>"Compare with a CLI run"</h3>
            <p class="muted">
                "The CLI's non-partitioned DPVI runs on the joined table, which no tab here ever "
                "holds; its test NLL per evaluation is drawn beside this run's as a dashed line. "
                "For this run's settings:"
            </p>
            <p><code class="small" data-testid="vvi-baseline-command">{command}</code></p>
            <label>"CLI JSON "
                <TextFileInput id="vvi-baseline-file" accept=".json,application/json" testid="vvi-baseline-file" on_text on_error />
            </label>
            {move || error.get().map(|e| view! { <p class="form-error" role="alert" data-testid="vvi-baseline-error">{e}</p> })}
            {loaded}
        </div>
    }
}
