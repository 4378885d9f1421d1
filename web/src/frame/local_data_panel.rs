//! A site's "Local data" panel: where its private values come from (a seed, typed values, or a
//! CSV file), with validation errors that name the line, column and value, and the site's own
//! local mean, which never leaves the tab.

use capelab_core::study::mean::row_mean;
use leptos::prelude::*;

use crate::components::charts::scale::format_value;
use crate::frame::site::SiteStudy;
use crate::frame::text_input::{PasteBox, TextFileInput};
use crate::ledger_store;
use crate::local_data::{DataSource, Table, TableError, parse_raw_table, parse_table};
use crate::studies::regression::public_bounds::{PreparedNote, table_fit};

/// The size of the seeded preview before any study has said how many values it needs.
const PREVIEW_ROWS: usize = 1000;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Choice {
    Seed,
    Typed,
    File,
}

#[component]
pub fn LocalDataPanel(
    study: SiteStudy,
    #[prop(into)] name: Signal<Option<String>>,
) -> impl IntoView {
    let data = study.view.data;
    let initial_seed = match data.get_untracked() {
        DataSource::Seeded { seed } => seed.to_string(),
        DataSource::Table { .. } => String::new(),
    };
    let choice = RwSignal::new(Choice::Seed);
    let seed_text = RwSignal::new(initial_seed);
    let typed = RwSignal::new("0.42\n0.57\n0.61\n0.38\n0.50".to_owned());
    let error = RwSignal::new(None::<String>);
    let file_name = RwSignal::new(None::<String>);
    // Raw-scale values (a regression maps them with the dashboard's public bounds) skip the
    // [0, 1] check; any other study then declines them with the reason.
    let raw_scale = RwSignal::new(false);
    let parse = move |text: &str| -> Result<Table, TableError> {
        if raw_scale.get_untracked() { parse_raw_table(text) } else { parse_table(text) }
    };

    // The seed field follows a seed loaded from storage after the welcome.
    Effect::new(move || {
        if let DataSource::Seeded { seed } = data.get() {
            seed_text.set(seed.to_string());
        }
    });

    let use_seed = move || match seed_text.get_untracked().trim().parse::<u64>() {
        Ok(seed) => {
            error.set(None);
            if let Some(name) = name.get_untracked() {
                ledger_store::save_seed(&name, seed);
            }
            data.set(DataSource::Seeded { seed });
        }
        Err(_) => error.set(Some(format!(
            "seed: “{}” is not a whole number (0 to 18446744073709551615)",
            seed_text.get_untracked().trim()
        ))),
    };
    let use_typed = Callback::new(move |text: String| match parse(&text) {
        Ok(table) => {
            error.set(None);
            data.set(DataSource::Table { origin: "typed".into(), table });
        }
        Err(e) => error.set(Some(e.to_string())),
    });
    let on_file = Callback::new(move |(file, text): (String, String)| match parse(&text) {
        Ok(table) => {
            error.set(None);
            file_name.set(Some(file.clone()));
            data.set(DataSource::Table { origin: format!("file {file}"), table });
        }
        Err(e) => error.set(Some(format!("{file}: {e}"))),
    });
    let on_error = Callback::new(move |e: String| error.set(Some(e)));

    // What the site holds now, and its mean: the study's own f(x_s) once a study has started.
    let summary = move || {
        let study_mean = study
            .view
            .study
            .with(|s| s.as_ref().and_then(|s| Some((s.local_mean.clone()?, s.params.clone()?))));
        let source = data.get();
        // A regression's f(x_s) is the functional mechanism's coefficient arrays, not a mean.
        let regression = study_mean.as_ref().is_some_and(|(_, p)| {
            matches!(p.query, capelab_core::study::mean::Query::Regression(_))
        });
        let title = if regression {
            "Local FM coefficients Λ₀, Λ₁, Λ₂ (private: never sent)"
        } else {
            "Local mean (private: never sent)"
        };
        let (label, mean) = match (&study_mean, &source) {
            (Some((mean, params)), _) if regression => (
                format!(
                    "the {} records × {} features of the current regression",
                    params.values_per_site, params.dimension
                ),
                mean.clone(),
            ),
            (Some((mean, params)), _) => (
                format!(
                    "the {} × {} values of the current study",
                    params.values_per_site, params.dimension
                ),
                mean.clone(),
            ),
            (None, DataSource::Seeded { .. }) => {
                let rows = source.rows_for(PREVIEW_ROWS, 1);
                (format!("a preview of {PREVIEW_ROWS} values"), row_mean(&rows, 1))
            }
            (None, DataSource::Table { table, .. }) => {
                (format!("{} rows × {} columns", table.rows.len(), table.width()), table.mean())
            }
        };
        let origin = match &source {
            DataSource::Seeded { seed } => format!("generated from seed {seed}"),
            DataSource::Table { origin, table } => format!(
                "{origin}: {} rows × {} column(s){}",
                table.rows.len(),
                table.width(),
                table.header.as_ref().map(|h| format!(" ({})", h.join(", "))).unwrap_or_default()
            ),
        };
        let json = serde_json::to_string(&mean).unwrap_or_default();
        let shown = mean.iter().map(|m| format_value(*m)).collect::<Vec<_>>().join(", ");
        let in_study = study_mean.is_some();
        view! {
            <p class="muted" data-testid="data-origin">"Values " {origin} "."</p>
            <div class="local-mean">
                <p class="label">{title}</p>
                <p class="local-mean-value" data-testid="local-mean" data-values=json data-in-study=in_study.to_string()>{shown}</p>
                <p class="muted small">"of " {label}</p>
            </div>
        }
    };

    // A table loaded after a study was announced is checked against it here, as the core would.
    let fit = move || {
        let (params, study_id) = study
            .view
            .study
            .with(|s| s.as_ref().and_then(|s| Some((s.announced.clone()?, s.study))))?;
        let bounds = study.view.announced_bounds.get();
        let bounds = bounds.filter(|b| Some(b.study) == study_id).map(|b| b.bounds);
        let fit = data.with(|source| table_fit(source, &params, bounds.as_ref()))?;
        Some(match fit {
            Ok(text) => {
                view! { <p class="muted" data-testid="data-fit" data-fits="true">{text}</p> }
                    .into_any()
            }
            Err(text) => view! {
                <p class="callout callout-warn" data-testid="data-fit" data-fits="false">{text}</p>
            }
            .into_any(),
        })
    };
    let radio = move |value: Choice, label: &'static str, testid: &'static str| {
        view! {
            <label class="check">
                <input type="radio" name="data-source" data-testid=testid
                    prop:checked=move || choice.get() == value
                    on:change=move |_| choice.set(value) />
                {label}
            </label>
        }
    };
    view! {
        <div class="local-data" data-testid="local-data">
            <p class="muted">
                "Values in [0, 1], one row per line (several columns for d > 1). A study uses N_s "
                "rows of d values: a seed makes exactly that many; typed or loaded values must match."
            </p>
            <p class="muted small" data-testid="efpsn-data-hint">
                "EFPSN: with a seed the site takes its part of the shared digits; a typed or loaded "
                "table (raw scale ticked, e.g. digits' pixel counts 0–16) is its own labelled rows "
                "instead: the label in a column headed target, or the last; as many features as "
                "the study's model, each in its public range."
            </p>
            <div class="source-choice">
                {radio(Choice::Seed, "from a seed", "source-seed")}
                {radio(Choice::Typed, "typed", "source-typed")}
                {radio(Choice::File, "CSV file", "source-file")}
            </div>
            <Show when=move || choice.get() == Choice::Seed>
                <div class="inline-form">
                    <label for="data-seed">"Seed"</label>
                    <input id="data-seed" inputmode="numeric" bind:value=seed_text />
                    <button type="button" class="button" data-testid="use-seed" on:click=move |_| use_seed()>"Use this seed"</button>
                </div>
            </Show>
            <Show when=move || choice.get() == Choice::Typed>
                <PasteBox id="data-typed" text=typed button="Use these values" button_testid="use-typed" on_use=use_typed />
            </Show>
            <Show when=move || choice.get() == Choice::File>
                <TextFileInput id="data-file" accept=".csv,text/csv,text/plain" on_text=on_file on_error />
                {move || file_name.get().map(|f| view! { <p class="muted small">"Loaded " {f}</p> })}
            </Show>
            <Show when=move || choice.get() != Choice::Seed>
                <label class="check">
                    <input type="checkbox" data-testid="raw-scale" bind:checked=raw_scale />
                    "raw scale (a regression maps the columns with the dashboard's public bounds; "
                    "the target in the last column)"
                </label>
            </Show>
            {move || error.get().map(|e| view! { <p class="form-error" data-testid="data-error" role="alert">{e}</p> })}
            {move || study.view.prepared.get().map(|note| match note {
                PreparedNote::Mapped { clamped, records } => view! {
                    <p class="muted" data-testid="data-prepared" data-clamped=clamped>
                        {records} " records mapped onto the unit ball with the public bounds; "
                        {clamped} " value(s) outside them clamped (private: the count is never sent)."
                    </p>
                }.into_any(),
                PreparedNote::Refused(why) => view! {
                    <p class="form-error" data-testid="data-refused" role="alert">
                        "This table cannot be used for the regression, nothing was sent: " {why}
                    </p>
                }.into_any(),
            })}
            {fit}
            {summary}
        </div>
    }
}
