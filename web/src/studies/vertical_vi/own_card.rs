//! A site's own columns for the vertical study: a CSV file (or pasted text) holding one party's
//! columns of the announced schema, rows aligned by position with the other party's. Checked here
//! as it is loaded ([`preview`]: which party's columns, how many rows, or the row, column and value
//! that do not fit), kept on this tab, and read by its worker when the dashboard starts a run on
//! the parties' own columns; never sent.

use capelab_vertical_vi::cps1988;
use leptos::prelude::*;

use crate::frame::site::SiteStudy;
use crate::frame::text_input::{PasteBox, TextFileInput};
use crate::numbers::show;
use crate::studies::vertical_vi::own::{OwnColumns, column_rule, preview};
use crate::studies::vertical_vi::view::party_letter;

#[component]
pub fn VviOwnCard(study: SiteStudy) -> impl IntoView {
    let own = study.view.vvi_own;
    let pasted = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let keep = move |origin: String, text: String| {
        error.set(None);
        own.set(Some(OwnColumns { origin, text }));
    };
    let on_file =
        Callback::new(move |(name, text): (String, String)| keep(format!("file {name}"), text));
    let on_paste = Callback::new(move |text: String| keep("pasted".into(), text));
    let on_error = Callback::new(move |e: String| error.set(Some(e)));
    let schema = cps1988::schema();
    let announced = schema
        .parties
        .iter()
        .enumerate()
        .map(|(p, party)| {
            let rules: Vec<String> =
                party.features.iter().map(|f| column_rule(&f.kind, &f.name)).collect();
            let letter = party_letter(p);
            view! { <li>{format!("party {letter} ({}): {}", party.name, rules.join("; "))}</li> }
        })
        .collect_view();
    // The check of what is loaded, against the schema the dashboard announces for own columns:
    // which party's columns the file holds, so this tab knows which party it can be.
    let status = move || {
        own.get().map(|o| {
            let checked = preview(&cps1988::schema(), &o.text);
            let (party, line) = match &checked {
                Ok(f) => (
                    Some(party_letter(f.party)),
                    format!(
                        "{}: holds {}'s columns, {} rows{}. In a run on the parties' own \
                         columns this tab can be {} only: the dashboard picks it as party {} \
                         and N = {}.",
                        o.origin,
                        f.name,
                        show(f.rows as f64),
                        match f.clamped {
                            0 => String::new(),
                            n => format!(
                                ", {} value{} outside the public bounds (clamped to them)",
                                show(n as f64),
                                if n == 1 { "" } else { "s" }
                            ),
                        },
                        f.name,
                        party_letter(f.party),
                        show(f.rows as f64)
                    ),
                ),
                Err(e) => (
                    None,
                    format!(
                        "{}: does not fit the announced schema, so this tab would decline a run \
                         on it: {e}. Fix the file and load it again.",
                        o.origin
                    ),
                ),
            };
            let class = if party.is_some() { "muted" } else { "callout callout-error" };
            let rows = checked.as_ref().map_or(0, |f| f.rows);
            view! {
                <p class=class data-testid="vvi-own-status" data-fits=party.is_some().to_string()
                    data-party=party.unwrap_or_default() data-rows=rows>{line}</p>
                <button type="button" class="button button-small" on:click=move |_| own.set(None)>"Forget these columns"</button>
            }
        })
    };
    view! {
        <div data-testid="vvi-own-data">
            <p class="muted">
                "When the dashboard runs the vertical study on “each party's own CSV columns”, this "
                "tab is a party on the columns loaded here: one header row naming them, then one row "
                "per person, in the same order as the other party's rows (rows are aligned by "
                "position). They stay on this tab: its worker reads them and sends only secret "
                "shares. The columns, bounds and labels the dashboard announces (CPS1988's):"
            </p>
            <ul class="small">{announced}</ul>
            <div class="field-grid">
                <label>"CSV file" <TextFileInput id="vvi-own-file" accept=".csv,text/csv,text/plain" testid="vvi-own-file" on_text=on_file on_error /></label>
            </div>
            <PasteBox id="vvi-own-paste" text=pasted button="Use the pasted columns" button_testid="vvi-own-use-paste" on_use=on_paste label="or paste the CSV here" />
            {move || error.get().map(|e| view! { <p class="form-error" role="alert">{e}</p> })}
            {status}
        </div>
    }
}
