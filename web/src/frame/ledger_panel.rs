//! A site's privacy ledger: its budget (ε at δ), what it has spent, its studies (one row each,
//! opening to their releases), and export and import. The ledger is the core's
//! `accountant::Ledger`; this panel only shows it and forwards the user's changes to the site
//! driver, which refuses bad ones with the ledger's own message.

use leptos::prelude::*;

use crate::components::charts::scale::format_value;
use crate::download;
use crate::frame::ledger_groups::{StudyGroup, by_study};
use crate::frame::site::SiteStudy;
use crate::frame::text_input::TextFileInput;

#[component]
pub fn LedgerPanel(study: SiteStudy) -> impl IntoView {
    let ledger = study.view.ledger;
    let error = study.view.ledger_error;
    let budget_epsilon = RwSignal::new(String::new());
    let budget_delta = RwSignal::new(String::new());
    // The budget fields follow the ledger (on load, import and change).
    Effect::new(move || {
        if let Some(l) = ledger.get() {
            budget_epsilon.set(l.budget.epsilon.to_string());
            budget_delta.set(format!("{:e}", l.budget.delta));
        }
    });
    let set_budget = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let epsilon = budget_epsilon.get_untracked().trim().parse::<f64>();
        let delta = budget_delta.get_untracked().trim().parse::<f64>();
        match (epsilon, delta) {
            (Ok(e), Ok(d)) => study.set_budget(e, d),
            (Err(_), _) => error.set(Some(format!(
                "budget ε: “{}” is not a number",
                budget_epsilon.get_untracked().trim()
            ))),
            (_, Err(_)) => error.set(Some(format!(
                "budget δ: “{}” is not a number",
                budget_delta.get_untracked().trim()
            ))),
        }
    };
    let export = move |_| match study.export_ledger() {
        Some((file, json)) => error.set(download::text(&file, "application/json", &json).err()),
        None => error.set(Some("no ledger yet".into())),
    };
    let import = Callback::new(move |(_, text): (String, String)| study.import_ledger(&text));
    let unreadable = Callback::new(move |e: String| error.set(Some(e)));
    let body = move || {
        ledger.get().map(|l| {
            let share = (l.spent / l.budget.epsilon).clamp(0.0, 1.0);
            let groups = study.view.study_kinds.with(|k| by_study(&l.entries, k));
            let rows = groups.into_iter().rev().map(|g| view! { <StudyRow group=g /> }).collect_view();
            view! {
                <p class="ledger-total">
                    <span class="big" data-testid="ledger-spent" data-spent=l.spent>{format_value(l.spent)}</span>
                    " of ε = " {format_value(l.budget.epsilon)} " spent (at δ = " {format!("{:e}", l.budget.delta)} ")"
                </p>
                <div class="bar"><div class="bar-fill" style=format!("width: {:.1}%", 100.0 * share)></div></div>
                {(!l.entries.is_empty()).then(|| view! {
                    <p class="muted" data-testid="ledger-bound" data-bound=l.spend.bound.to_string()
                        data-rdp=l.spend.rdp data-pld=l.spend.pld>
                        "charged by " <strong>{l.spend.bound.to_string()}</strong> ", the tighter bound: PLD "
                        {format_value(l.spend.pld)} ", RDP " {format_value(l.spend.rdp)}
                    </p>
                })}
                {(l.spend.basic_epsilon > 0.0).then(|| view! {
                    <p class="muted" data-testid="ledger-basic" data-epsilon=l.spend.basic_epsilon
                        data-delta=l.spend.basic_delta>
                        "of which ε = " {format_value(l.spend.basic_epsilon)}
                        " is from releases known only to be (ε, δ)-DP, by basic composition; they use δ = "
                        {format!("{:e}", l.spend.basic_delta)} " of the budget's δ"
                    </p>
                })}
                <p class="muted">
                    <span data-testid="ledger-releases" data-count=l.entries.len()>{l.entries.len()} " releases"</span>
                    " · " {format_value(l.remaining)} " left"
                </p>
                {l.note.clone().map(|n| view! { <p class="callout callout-warn" data-testid="ledger-note">{n}</p> })}
                <p class="hint-plain">
                    "Kept in this browser under the site name “" <strong>{l.site.clone()}</strong>
                    "”: it survives reloads. Tabs on this computer with different names keep separate "
                    "ledgers; tabs with the same name share this one."
                </p>
                {(!l.entries.is_empty()).then(|| view! {
                    <h3>"By study (newest first)"</h3>
                    <ul class="ledger-studies" data-testid="ledger-studies">{rows}</ul>
                })}
            }
        })
    };
    view! {
        <section class="card ledger" data-testid="ledger">
            <h2>"Privacy ledger"</h2>
            {move || ledger.with(Option::is_none).then(|| view! {
                <p class="muted">"Loaded once the relay has named this site."</p>
            })}
            {body}
            <form class="inline-form" on:submit=set_budget>
                <label for="budget-epsilon">"Budget ε"</label>
                <input id="budget-epsilon" class="short" inputmode="decimal" bind:value=budget_epsilon />
                <label for="budget-delta">"at δ"</label>
                <input id="budget-delta" class="short" inputmode="decimal" bind:value=budget_delta />
                <button type="submit" class="button" data-testid="set-budget">"Set budget"</button>
            </form>
            {move || error.get().map(|e| view! { <p class="form-error" data-testid="ledger-error" role="alert">{e}</p> })}
            <div class="exports">
                <button type="button" class="button" data-testid="export-ledger" on:click=export>"Export JSON"</button>
                <label class="button file-button">"Import JSON"
                    <TextFileInput id="import-ledger" accept=".json,application/json" on_text=import on_error=unreadable />
                </label>
            </div>
        </section>
    }
}

/// One study of the ledger: its name, ε before → after and the bound charged; opens to its
/// releases.
#[component]
fn StudyRow(group: StudyGroup) -> impl IntoView {
    let releases = group
        .releases
        .iter()
        .rev()
        .map(|r| {
            view! {
                <tr>
                    <td>{r.label.clone()}</td>
                    <td>{r.mechanism.clone()}</td>
                    <td class="num">{r.collusion_factor.map_or_else(|| "—".to_owned(), format_value)}</td>
                    <td class="num">{format_value(r.epsilon_after)} " " <span class="muted">{r.bound.clone()}</span></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <li data-testid="ledger-study" data-study=group.key.clone() data-releases=group.releases.len()>
            <details class="ledger-study">
                <summary>
                    <span class="ledger-study-name">{group.name.clone()}</span>
                    <span class="muted">" · " {group.size.clone()}</span>
                    <span class="ledger-study-spend">
                        "ε " {format_value(group.epsilon_before)} " → " <strong>{format_value(group.epsilon_after)}</strong>
                        " " <span class="muted">"(" {group.bound.clone()} ")"</span>
                    </span>
                </summary>
                <div class="table-scroll">
                    <table class="numbers ledger-table">
                        <tr><th>"release"</th><th>"mechanism"</th><th class="num">"c_S"</th><th class="num">"ε after (by)"</th></tr>
                        {releases}
                    </table>
                </div>
            </details>
        </li>
    }
}
