//! The dashboard's "Vertical synthetic data (DP-VI + MPC)" panel: the form (which tab is the
//! dealer, which tabs hold which columns, K, σ, C, B, T), then the run's progress, ε per player,
//! and after the release a sample of the synthetic twin with its CSV and JSON exports; the test
//! NLL chart, with a CLI run's curve beside it when one is loaded ([`VviBaselineInput`]). It renders
//! [`DashboardStudy`]'s `vvi` signal; the numbers come from [`crate::studies::vertical_vi::view`].

use capelab_core::wire::{ParticipantId, Role};
use capelab_vertical_vi::model::generate::adult_like_schema;
use capelab_vertical_vi::{cps1988, schema::Schema};
use leptos::prelude::*;

use crate::components::charts::line;
use crate::components::charts::scale::format_value;
use crate::frame::dashboard::DashboardStudy;
use crate::frame::download_button::DownloadButton;
use crate::frame::start::{StartButton, StartError};
use crate::roster::{Presence, display_name};
use crate::session::RoomState;
use crate::studies::vertical_vi::baseline_card::VviBaselineInput;
use crate::studies::vertical_vi::run::{VviData, VviFields, VviLive, VviSource};

use crate::studies::vertical_vi::view::{nll_chart, status_text};

#[component]
pub fn VviPanel(study: DashboardStudy, state: RoomState) -> impl IntoView {
    let d = VviFields::default();
    let rows = RwSignal::new(d.rows.to_string());
    let components = RwSignal::new(d.components.to_string());
    let sigma = RwSignal::new(d.noise_multiplier.to_string());
    let clip = RwSignal::new(d.clip.to_string());
    let batch = RwSignal::new(d.batch.to_string());
    let steps = RwSignal::new(d.steps.to_string());
    let dealer = RwSignal::new(String::new());
    let party_a = RwSignal::new(String::new());
    let party_b = RwSignal::new(String::new());
    let source = RwSignal::new("generated".to_string());
    let cps = move || source.get() == "cps1988";
    let own = move || source.get() == "own";
    let form_error = RwSignal::new(None::<String>);
    let present = Memo::new(move |_| state.roster.with(|r| r.present_count(Role::Site)));
    let sites = Memo::new(move |_| {
        state.roster.with(|r| {
            r.with_role(Role::Site)
                .filter(|m| m.presence == Presence::Present)
                .map(|m| (m.peer.id, display_name(&m.peer)))
                .collect::<Vec<_>>()
        })
    });
    let running = move || study.view.busy();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let whole = |name: &str, v: String| {
            v.trim().parse::<usize>().map_err(|_| format!("{name}: “{v}” is not a whole number"))
        };
        let number = |name: &str, v: String| {
            v.trim().parse::<f64>().map_err(|_| format!("{name}: “{v}” is not a number"))
        };
        let pick = |v: String| v.parse::<ParticipantId>().ok();
        let fields = (|| {
            Ok::<_, String>(VviFields {
                rows: whole("rows N", rows.get_untracked())?,
                components: whole("components K", components.get_untracked())?,
                noise_multiplier: number("noise σ", sigma.get_untracked())?,
                clip: number("clip C", clip.get_untracked())?,
                batch: whole("batch B", batch.get_untracked())?,
                steps: whole("steps T", steps.get_untracked())? as u32,
                learning_rate: VviFields::default().learning_rate,
                dealer: pick(dealer.get_untracked()),
                parties: [pick(party_a.get_untracked()), pick(party_b.get_untracked())],
                source: match source.get_untracked().as_str() {
                    "cps1988" => VviSource::Cps1988,
                    "own" => VviSource::Own,
                    _ => VviSource::Generated,
                },
            })
        })();
        match fields {
            Ok(fields) => {
                form_error.set(None);
                study.start_vvi(fields);
            }
            Err(e) => form_error.set(Some(e)),
        }
    };
    let (generated, cps1988) = (adult_like_schema(), cps1988::schema());
    let columns = |schema: &Schema, p: usize| {
        let party = &schema.parties[p];
        let names: Vec<&str> = party.features.iter().map(|f| f.name.as_str()).collect();
        format!("{}: {}", party.name, names.join(", "))
    };
    let generated_note = format!(
        "Data: a seeded Adult-like table that every party tab draws and cuts to its own columns \
         (rows aligned by position). Party A {}; party B {}.",
        columns(&generated, 0),
        columns(&generated, 1)
    );
    let cps_note = format!(
        "Data: CPS1988 (28 155 men, March 1988 Current Population Survey), served with this app. \
         Each party tab fetches it in its worker and keeps only its own columns. Party A {}; \
         party B {}. The bounds (wage 50–20 000 $/week, log scale) and the category labels are \
         public, fixed before looking at the data.",
        columns(&cps1988, 0),
        columns(&cps1988, 1)
    );
    let own_note = format!(
        "Data: each party tab's own CSV columns, loaded on that tab (“Vertical study: your own \
         columns”) and never sent. This dashboard announces the schema, CPS1988's: party A {}; \
         party B {}, with the public bounds and labels shown on the party tabs, and N, the rows \
         every party's file must hold, aligned by position. A party whose file does not fit \
         declines before anything is sent, and says why here. No tab holds a whole row, so no \
         test NLL is drawn for this run (a CLI baseline can be).",
        columns(&cps1988, 0),
        columns(&cps1988, 1)
    );
    let note = move || match source.get().as_str() {
        "cps1988" => cps_note.clone(),
        "own" => own_note.clone(),
        _ => generated_note.clone(),
    };
    view! {
        <section class="card span-all mean-panel" data-testid="vvi-panel">
            <h2>"Vertical synthetic data (DP-VI + MPC)"</h2>
            <p class="muted">
                "Two party tabs hold different columns of the same people; together they fit a "
                "mixture model by differentially private variational inference without either "
                "seeing the other's columns. Each step the parties compute the clipped per-record "
                "gradients in secret shares (Beaver triples from the dealer tab), add Gaussian noise "
                "in shares, and open only the noisy batch sum to this dashboard, which updates the "
                "posterior. Anyone can then sample a synthetic twin of the joint table "
                "(Tajeddine, Jälkö, Kaski, Honkela; seed 004)."
            </p>
            <p class="muted" data-testid="vvi-data-note">
                {note}
            </p>
            <form class="mean-form" on:submit=submit>
                <fieldset class="field-grid" disabled=running>
                    <SitePick label="dealer" id="vvi-dealer" default="the last site present" sites value=dealer />
                    <SitePick label="party A" id="vvi-party-a" default="first free site" sites value=party_a />
                    <SitePick label="party B" id="vvi-party-b" default="next free site" sites value=party_b />
                    <label>"data"
                        <select id="vvi-source" bind:value=source>
                            <option value="generated">"generated (public seed)"</option>
                            <option value="cps1988">"CPS1988 (each party its own columns)"</option>
                            <option value="own">"each party's own CSV columns (CPS1988 schema)"</option>
                        </select>
                    </label>
                    <label>{move || if own() { "rows N (every party's file)" } else { "rows N" }}
                        <input id="vvi-rows" inputmode="numeric" bind:value=rows disabled=cps
                        title=move || cps().then_some("CPS1988 has its own N = 28 155") /></label>
                    <label>"components K"<input id="vvi-components" inputmode="numeric" bind:value=components /></label>
                    <label>"noise σ"<input id="vvi-sigma" inputmode="decimal" bind:value=sigma /></label>
                    <label>"clip C"<input id="vvi-clip" inputmode="decimal" bind:value=clip /></label>
                    <label>"batch B (expected, Poisson)"<input id="vvi-batch" inputmode="numeric" bind:value=batch /></label>
                    <label>"steps T"<input id="vvi-steps" inputmode="numeric" bind:value=steps /></label>
                </fieldset>
                <StartButton test_id="start-vvi" action="Start" present running=Signal::derive(running) />
            </form>
            {move || form_error.get().map(|e| view! { <p class="form-error" role="alert">{e}</p> })}
            <StartError error=study.view.start_error />
            <Show when=move || study.view.vvi_preparing.get()>
                <p class="live-phase" data-testid="vvi-preparing">"Loading CPS1988 for the test NLL…"</p>
            </Show>
            {move || study.view.vvi.get().map(|live| view! { <VviLiveView live study /> })}
            <VviBaselineInput study />
        </section>
    }
}

/// A role's tab among the sites present (its id as the value; empty: the form's default).
#[component]
fn SitePick(
    label: &'static str,
    id: &'static str,
    default: &'static str,
    sites: Memo<Vec<(ParticipantId, String)>>,
    value: RwSignal<String>,
) -> impl IntoView {
    let options = move || {
        sites
            .get()
            .into_iter()
            .map(|(id, name)| view! { <option value=id.to_string()>{format!("{name} ({id})")}</option> })
            .collect_view()
    };
    view! {
        <label>{label}
            <select id=id bind:value=value>
                <option value="">{default}</option>
                {options}
            </select>
        </label>
    }
}

#[component]
fn VviLiveView(live: VviLive, study: DashboardStudy) -> impl IntoView {
    let (text, progress) = status_text(&live.status, live.task.steps);
    let roles = live
        .task
        .parties
        .iter()
        .enumerate()
        .map(|(p, &id)| {
            format!("party {} {}", ["A", "B", "C", "D"].get(p).unwrap_or(&"?"), live.name(id))
        })
        .chain([format!("dealer {}", live.name(live.task.dealer))])
        .collect::<Vec<_>>()
        .join(" · ");
    let d = live.task.schema.zeta_gradient_len(live.task.components);
    let players = live
        .players
        .iter()
        .map(|p| {
            view! {
                <tr data-testid="vvi-epsilon-row" data-epsilon=p.epsilon data-pld=p.pld data-rdp=p.rdp>
                    <th scope="row">{p.viewer.clone()}</th>
                    <td>{p.adjacency.clone()}</td>
                    <td class="num">{format_value(p.pld)}</td>
                    <td class="num">{format_value(p.rdp)}</td>
                </tr>
            }
        })
        .collect_view();
    let twin = live.twin.clone().map(|t| {
        let header = t.sample.header.iter().map(|h| view! { <th scope="col">{h.clone()}</th> }).collect_view();
        let body = t
            .sample
            .rows
            .iter()
            .map(|r| {
                let cells = r
                    .iter()
                    .map(|c| {
                        let shown = c.parse::<f64>().map(format_value).unwrap_or_else(|_| c.clone());
                        view! { <td>{shown}</td> }
                    })
                    .collect_view();
                view! { <tr>{cells}</tr> }
            })
            .collect_view();
        let stem = format!("capelab-vertical-{}", live.number);
        view! {
            <div data-testid="vvi-twin">
                <h3>"Samples of the synthetic twin"</h3>
                <p class="muted">{format!("Drawn from the released posterior with seed {}: one θ from q, then per record a component and each column from it. The first {} rows:", t.seed, t.sample.rows.len())}</p>
                <div class="table-scroll">
                    <table class="numbers" data-testid="vvi-twin-table">
                        <thead><tr>{header}</tr></thead>
                        <tbody>{body}</tbody>
                    </table>
                </div>
                <p class="export-row">
                    <DownloadButton label="Synthetic CSV" file=format!("{stem}-twin.csv") mime="text/csv" text=t.csv testid="vvi-export-csv" />
                    <DownloadButton label="Release JSON" file=format!("{stem}.json") mime="application/json" text=t.json testid="vvi-export-json" />
                </p>
            </div>
        }
    });
    view! {
        <div class="live-study study-focus" data-testid="vvi-live" data-number=live.number data-finished=live.finished.to_string()
            data-released=matches!(live.status, capelab_vertical_vi::study::Status::Released(_)).to_string()>
            <p class="muted">{format!("{roles} · K = {}, σ = {}, C = {}, B = {}, T = {}, N = {} ({} training rows) · D = {d} gradient values per record", live.task.components, format_value(live.task.noise_multiplier), format_value(live.task.clip), live.task.batch, live.task.steps, live.task.rows, live.task.train_rows())}</p>
            <p class="live-phase" data-testid="vvi-status">
                <progress max="1" value=progress aria-label="steps done"></progress>
                {format!(" {} of {} steps · {text}", live.steps_done, live.task.steps)}
            </p>
            <NllFigure live=live.clone() study />
            <h3>"ε per player"</h3>
            <p class="muted">{format!("At δ = {} by the accountant (subsampled Gaussian, Poisson q = B/N_train). The parties' ledgers record the outside analyst's ε, charged by the tighter of the two bounds (PLD here); a party knows the batch indices and its own noise share, so the other parties' data are less hidden from it.", format_value(live.task.delta))}</p>
            <table class="numbers" data-testid="vvi-epsilons">
                <thead><tr><th scope="col">"who looks"</th><th scope="col">"neighbouring tables"</th><th scope="col">"ε by PLD"</th><th scope="col">"ε by RDP"</th></tr></thead>
                <tbody>{players}</tbody>
            </table>
            {twin}
            {(!live.refusals.is_empty()).then(|| view! {
                <p class="muted small">"Refused inputs: " {live.refusals.join("; ")}</p>
            })}
            <Show when=move || study.view.vvi.with(|l| l.as_ref().is_some_and(|l| !l.finished))>
                <button type="button" class="button" data-testid="stop-vvi" on:click=move |_| study.stop()>"Stop"</button>
            </Show>
        </div>
    }
}

/// Why the dashboard can draw a test NLL at all: the table is public.
fn nll_caption(data: &VviData) -> &'static str {
    match data {
        VviData::Generated { .. } => {
            "The dashboard can follow the test NLL only because this table is generated from a \
             public seed: it redraws the held-out rows. With private columns no tab holds a whole \
             row, and no tab could."
        }
        VviData::Cps1988 => {
            "The dashboard can follow the test NLL only because CPS1988 is a public data set: it \
             fetches the held-out rows itself. With private columns no tab holds a whole row, and \
             no tab could."
        }
        VviData::Own { .. } => {
            "No test NLL for this run: the columns are the parties' own, no tab holds a whole row, \
             and the study never joins them. A CLI run on the public CPS1988 can be drawn here \
             (Compare with a CLI run)."
        }
    }
}

/// The NLL chart: this run's curve and, when loaded, the CLI run's beside it.
#[component]
fn NllFigure(live: VviLive, study: DashboardStudy) -> impl IntoView {
    let baseline = study.view.vvi_baseline;
    let chart = {
        let (nll, steps) = (live.nll.clone(), live.task.steps);
        move || {
            baseline.with(|b| line::render(&nll_chart(&nll, steps, b.as_ref()), "vvi-nll-chart"))
        }
    };
    let cli_points = move || baseline.with(|b| b.as_ref().map(|b| b.test_nll.len()));
    view! {
        <figure class="chart" data-testid="vvi-nll" data-first=live.nll.first().map(|p| p.1) data-last=live.nll.last().map(|p| p.1) data-points=live.nll.len()
            data-cli-points=cli_points>
            <div inner_html=chart></div>
            <figcaption class="small">{nll_caption(&live.data)}</figcaption>
        </figure>
    }
}
