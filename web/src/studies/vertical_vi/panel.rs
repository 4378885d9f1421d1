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
use crate::frame::dashboard::DashboardStudy;
use crate::frame::download_button::DownloadButton;
use crate::frame::form::{Field, FieldError, FormError, TextField};
use crate::frame::start::{StartButton, StartError};
use crate::numbers::{group, show};
use crate::roster::{Presence, display_name};
use crate::session::RoomState;
use crate::studies::vertical_vi::baseline_card::VviBaselineInput;
use crate::studies::vertical_vi::data::VviSource;
use crate::studies::vertical_vi::form::{self, VviText};
use crate::studies::vertical_vi::run::{VviData, VviLive};
use crate::studies::vertical_vi::view::{nll_chart, party_letter, status_text};

#[component]
pub fn VviPanel(study: DashboardStudy, state: RoomState) -> impl IntoView {
    let d = VviText::default();
    let rows = RwSignal::new(d.rows);
    let components = RwSignal::new(d.components);
    let sigma = RwSignal::new(d.sigma);
    let clip = RwSignal::new(d.clip);
    let batch = RwSignal::new(d.batch);
    let steps = RwSignal::new(d.steps);
    let dealer = RwSignal::new(String::new());
    let party_a = RwSignal::new(String::new());
    let party_b = RwSignal::new(String::new());
    let source = RwSignal::new("generated".to_string());
    let error = study.view.start_error;
    let cps = move || source.get() == "cps1988";
    let own = move || source.get() == "own";
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
        let pick = |v: RwSignal<String>| v.get_untracked().parse::<ParticipantId>().ok();
        let text = VviText {
            rows: rows.get_untracked(),
            components: components.get_untracked(),
            sigma: sigma.get_untracked(),
            clip: clip.get_untracked(),
            batch: batch.get_untracked(),
            steps: steps.get_untracked(),
            source: match source.get_untracked().as_str() {
                "cps1988" => VviSource::Cps1988,
                "own" => VviSource::Own,
                _ => VviSource::Generated,
            },
            dealer: pick(dealer),
            parties: [pick(party_a), pick(party_b)],
        };
        study.start_vvi(move |sites, names| text.read(sites, names));
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
        "Data: CPS1988 ({} men, March 1988 Current Population Survey), served with this app. \
         Each party tab fetches it in its worker and keeps only its own columns. Party A {}; \
         party B {}. The bounds (wage 50 to 20 000 $ a week, log scale) and the category labels \
         are public, fixed before looking at the data.",
        group(cps1988::ROWS),
        columns(&cps1988, 0),
        columns(&cps1988, 1)
    );
    let own_note = format!(
        "Data: each party tab's own CSV columns, loaded on that tab (“Vertical study: your own \
         columns”) and never sent. This dashboard announces the schema, CPS1988's: party A {}; \
         party B {}, with the public bounds and labels shown on the party tabs, and N, the rows \
         every party's file must hold, aligned by position. Pick each tab for the columns its \
         file holds (its tab says which). A party whose file does not fit declines before \
         anything is sent, and says why here. No tab holds a whole row, so no test NLL and no \
         real marginals are drawn here (a CLI baseline can be).",
        columns(&cps1988, 0),
        columns(&cps1988, 1)
    );
    let note = move || match source.get().as_str() {
        "cps1988" => cps_note.clone(),
        "own" => own_note.clone(),
        _ => generated_note.clone(),
    };
    let rows_label: Field = form::ROWS;
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
                    <SitePick field=form::PARTY_A default="first free site" sites value=party_a error />
                    <SitePick field=form::PARTY_B default="next free site" sites value=party_b error />
                    <SitePick field=form::DEALER default="the last free site" sites value=dealer error />
                    <label>"data"
                        <select id="vvi-source" bind:value=source on:change=move |_| error.set(None)>
                            <option value="generated">"generated (public seed)"</option>
                            <option value="cps1988">"CPS1988 (each party its own columns)"</option>
                            <option value="own">"each party's own CSV columns (CPS1988 schema)"</option>
                        </select>
                    </label>
                    <Show
                        when=cps
                        fallback=move || view! {
                            <TextField field=rows_label value=rows error numeric=true />
                        }
                    >
                        <label>{format!("{} (CPS1988's own)", rows_label.label)}
                            <input id=rows_label.id value=group(cps1988::ROWS) disabled=true
                                data-testid="vvi-rows-fixed" />
                        </label>
                    </Show>
                    <TextField field=form::COMPONENTS value=components error numeric=true />
                    <TextField field=form::SIGMA value=sigma error />
                    <TextField field=form::CLIP value=clip error />
                    <TextField field=form::BATCH value=batch error numeric=true />
                    <TextField field=form::STEPS value=steps error numeric=true />
                </fieldset>
                <Show when=own>
                    <p class="muted small">"N is the rows each party's file holds (every file the same N)."</p>
                </Show>
                <StartButton test_id="start-vvi" action="Start" present running=Signal::derive(running) />
            </form>
            <StartError error=study.view.start_error />
            <Show when=move || study.view.vvi_preparing.get()>
                <p class="live-phase" data-testid="vvi-preparing">"Loading CPS1988 for the test NLL…"</p>
            </Show>
            {move || study.view.vvi.get().map(|live| view! { <VviLiveView live study /> })}
            <VviBaselineInput study />
        </section>
    }
}

/// A role's tab among the sites present (its id as the value; empty: the form's default), with
/// the form's error about it beside it. Choosing clears that error.
#[component]
fn SitePick(
    field: Field,
    default: &'static str,
    sites: Memo<Vec<(ParticipantId, String)>>,
    value: RwSignal<String>,
    error: RwSignal<Option<FormError>>,
) -> impl IntoView {
    let options = move || {
        sites
            .get()
            .into_iter()
            .map(|(id, name)| view! { <option value=id.to_string()>{name}</option> })
            .collect_view()
    };
    let invalid = move || error.with(|e| e.as_ref().is_some_and(|e| e.field == Some(field.id)));
    view! {
        <label>{field.label}
            <select id=field.id bind:value=value aria-invalid=move || invalid().to_string()
                aria-describedby=format!("{}-error", field.id)
                on:change=move |_| if error.with(|e| e.as_ref().is_some_and(|e| e.field.is_none_or(|f| f == field.id))) { error.set(None) }>
                <option value="">{default}</option>
                {options}
            </select>
            <FieldError field=field.id error />
        </label>
    }
}

#[component]
fn VviLiveView(live: VviLive, study: DashboardStudy) -> impl IntoView {
    let (_, progress) = status_text(&live.status, live.task.steps);
    let status = live.status_line();
    let roles = live
        .task
        .parties
        .iter()
        .enumerate()
        .map(|(p, &id)| format!("party {} {}", party_letter(p), live.name(id)))
        .chain([format!("dealer {}", live.name(live.task.dealer))])
        .collect::<Vec<_>>()
        .join(" · ");
    let d = live.task.gradient_len();
    let players = live
        .players
        .iter()
        .map(|p| {
            view! {
                <tr data-testid="vvi-epsilon-row" data-epsilon=p.epsilon data-pld=p.pld data-rdp=p.rdp>
                    <th scope="row">{p.viewer.clone()}</th>
                    <td>{p.adjacency.clone()}</td>
                    <td class="num">{show(p.pld)}</td>
                    <td class="num">{show(p.rdp)}</td>
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
                        let shown = c.parse::<f64>().map(show).unwrap_or_else(|_| c.clone());
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
                <p class="muted">{format!("Drawn from the released posterior with seed {}, the seed every party tab drew its CSV with: one θ from q, then per record a component and each column from it. The first {} rows (numbers to 3 significant digits; the CSV has them all in full):", t.seed, t.sample.rows.len())}</p>
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
    let phase = match &live.status {
        _ if live.budget.is_some() => "budget",
        capelab_vertical_vi::study::Status::Waiting => "waiting",
        capelab_vertical_vi::study::Status::Running { .. } => "running",
        capelab_vertical_vi::study::Status::Released(_) => "released",
        capelab_vertical_vi::study::Status::Stopped(_) => "stopped",
    };
    view! {
        <div class="live-study study-focus" data-testid="vvi-live" data-number=live.number data-finished=live.finished.to_string()
            data-phase=phase
            data-released=matches!(live.status, capelab_vertical_vi::study::Status::Released(_)).to_string()>
            <p class="muted">{format!("{roles} · K = {}, σ = {}, C = {}, B = {}, T = {}, N = {} ({} training rows) · D = {d} gradient values per record", live.task.components, show(live.task.noise_multiplier), show(live.task.clip), group(live.task.batch), group(live.task.steps as usize), group(live.task.rows), group(live.task.train_rows()))}</p>
            <p class="live-phase" data-testid="vvi-status" data-steps=live.steps_done role="status">
                <progress max="1" value=progress aria-label="steps done"></progress>
                {format!(" {} of {} steps · {status}", live.steps_done, live.task.steps)}
            </p>
            {live.budget.as_ref().map(|_| view! {
                <p class="callout callout-error" data-testid="vvi-budget" role="alert">{status.clone()}</p>
            })}
            <NllFigure live=live.clone() study />
            <h3>"ε per player"</h3>
            <p class="muted">{format!("At δ = {} by the accountant (subsampled Gaussian, Poisson q = B/N_train). The parties' ledgers record the outside analyst's ε, charged by the tighter of the two bounds (PLD here); a party knows the batch indices and its own noise share, so the other parties' data are less hidden from it.", show(live.task.delta))}</p>
            <table class="numbers" data-testid="vvi-epsilons">
                <thead><tr><th scope="col">"who looks"</th><th scope="col">"neighbouring tables"</th><th scope="col">"ε by PLD"</th><th scope="col">"ε by RDP"</th></tr></thead>
                <tbody>{players}</tbody>
            </table>
            {twin}
            {(!live.refusals.is_empty()).then(|| view! {
                <p class="muted small">"Messages the dashboard refused: " {live.refusals.iter().map(|r| crate::studies::vertical_vi::view::named(r, &live.task, live.me, &live.names)).collect::<Vec<_>>().join("; ")}</p>
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
            <div class="chart-svg" inner_html=chart></div>
            <figcaption class="small">{nll_caption(&live.data)}</figcaption>
        </figure>
    }
}
