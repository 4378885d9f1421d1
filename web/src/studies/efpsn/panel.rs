//! The dashboard's "Decentralised optimisation (EFPSN)" panel: the form, then the agents' graph,
//! each agent's progress per run, ‖x̄ − x*‖ and accuracy for EFPSN, the baseline and noise-free
//! side by side, the masks cancelling, ε, and what a curious neighbour sees. It renders
//! [`DashboardStudy`]'s EFPSN signals; the words and numbers come from
//! [`crate::studies::efpsn::view`].

use capelab_core::efpsn::attack::{Perturbed, reconstruct};
use capelab_core::efpsn::graph::Topology;
use capelab_core::efpsn::optimizer::Optimizer;
use capelab_core::efpsn::sim::Method;
use capelab_core::rng::os_rng;
use capelab_core::study::efpsn::Residual;
use capelab_core::wire::{ParticipantId, Role};
use leptos::prelude::*;
use rand_core::Rng;

use crate::components::charts::heatmap::{self, HeatmapSpec, Tile};
use crate::components::charts::{Chart, line};
use crate::frame::consent::present_consent;
use crate::frame::dashboard::DashboardStudy;
use crate::frame::form::TextField;
use crate::frame::start::{StartButton, StartError};
use crate::numbers::show;
use crate::roster::display_name;
use crate::session::RoomState;
use crate::studies::efpsn::form::{self, EfpsnFields, Room};
use crate::studies::efpsn::graph::{Activity, graph_svg};
use crate::studies::efpsn::run::EfpsnLive;
use crate::studies::efpsn::view::{
    accuracy_chart, activity, cancellation, cell, deviation_chart, method_label, notes, percent,
};

/// The site names of the room (those gone too: a run names who left).
pub fn site_names(state: RoomState) -> std::collections::BTreeMap<ParticipantId, String> {
    state.roster.with_untracked(|r| {
        r.with_role(Role::Site).map(|m| (m.peer.id, display_name(&m.peer))).collect()
    })
}

#[component]
pub fn EfpsnPanel(study: DashboardStudy, state: RoomState) -> impl IntoView {
    let d = EfpsnFields::default();
    let topology = RwSignal::new("ring".to_owned());
    let gamma = RwSignal::new(d.gamma);
    let optimizer = RwSignal::new("tracking".to_owned());
    let iterations = RwSignal::new(d.iterations);
    let step = RwSignal::new(d.step);
    let key_bits = RwSignal::new(d.key_bits.to_string());
    let perturbed = RwSignal::new("biases".to_owned());
    // The comparison runs need every site's consent: ticked by default only when every site
    // present allows them, until the teacher ticks or unticks them.
    let consent = present_consent(state, study);
    let with_baseline = RwSignal::new(false);
    let with_noise_free = RwSignal::new(false);
    let touched = RwSignal::new(false);
    Effect::new(move |_| {
        let all = consent.get().all();
        if !touched.get_untracked() {
            with_baseline.set(all);
            with_noise_free.set(all);
        }
    });
    let error = study.view.start_error;
    let present = Memo::new(move |_| state.roster.with(|r| r.present_count(Role::Site)));
    let running = move || study.view.busy();
    let typed = move || EfpsnFields {
        topology: Topology::parse(&topology.get()).unwrap_or(Topology::Ring),
        gamma: gamma.get(),
        optimizer: Optimizer::parse(&optimizer.get()).unwrap_or(Optimizer::Tracking),
        iterations: iterations.get(),
        step: step.get(),
        key_bits: if key_bits.get() == "1024" { 1024 } else { 2048 },
        perturbed: if perturbed.get() == "all" { Perturbed::All } else { Perturbed::Biases },
        baseline: with_baseline.get(),
        noise_free: with_noise_free.get(),
    };
    // What the run will record and how large a step it takes, as the form is filled in.
    let preview = Memo::new(move |_| {
        let sites: Vec<ParticipantId> = (1..=present.get() as ParticipantId).collect();
        let fields = typed();
        let form = fields.read(sites, &Room::default(), 0).ok()?;
        let bound = form.optimizer.finite_step_bound(&form.graph.mixing_spectrum(), form::RIDGE);
        Some(format!(
            "Each agent's ledger records ε = {} at δ = {} for the EFPSN run (Theorem IV.1 on this \
             graph at γ = {}), before anything is sent. Steps α below {} keep the iterates finite.",
            show(form.epsilon.epsilon),
            show(form.epsilon.delta),
            show(form.gamma),
            show(bound)
        ))
    });
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let fields = untrack(typed);
        let room = Room { reports: study.view.reports.get_untracked(), names: site_names(state) };
        let seed = os_rng().next_u64();
        study.start_efpsn(move |sites| fields.read(sites, &room, seed));
    };
    view! {
        <section class="card span-all mean-panel" data-testid="efpsn-panel">
            <h2>"Decentralised optimisation (EFPSN)"</h2>
            <p class="muted">
                "Every site tab is an agent on a graph; there is no aggregator. Agents learn a "
                "softmax regression on their part of scikit-learn's digits together by exchanging "
                "iterates with their neighbours. Before that (Phase 1) neighbours exchange Paillier "
                "keys and encrypted noise, so each agent hides its cost behind a polynomial mask "
                "and the masks sum to exactly zero over the agents (Zhou & Pu, seed 003)."
            </p>
            <p class="muted">
                "The baseline draws each agent's mask alone (Nozari et al.): it does not cancel. "
                "The baseline and noise-free runs are comparisons no guarantee covers: a site takes "
                "part in them only if its user allows non-private comparison runs."
            </p>
            <form class="mean-form" on:submit=submit>
                <fieldset class="field-grid" disabled=running>
                    <label>"graph"
                        <select id="efpsn-graph" bind:value=topology>
                            <option value="ring">"ring"</option>
                            <option value="path">"path"</option>
                            <option value="star">"star"</option>
                            <option value="complete">"complete"</option>
                            <option value="geometric">"random geometric"</option>
                        </select>
                    </label>
                    <TextField field=form::GAMMA value=gamma error />
                    <label>"optimiser"
                        <select id="efpsn-optimizer" bind:value=optimizer>
                            <option value="tracking">"gradient tracking"</option>
                            <option value="dsgd">"DSGD"</option>
                        </select>
                    </label>
                    <TextField field=form::ITERATIONS value=iterations error numeric=true />
                    <TextField field=form::STEP value=step error />
                    <label>"Paillier key"
                        <select id="efpsn-key" bind:value=key_bits>
                            <option value="2048">"2048 bits"</option>
                            <option value="1024">"1024 bits (demo only, not secure)"</option>
                        </select>
                    </label>
                    <label>"perturbed variables"
                        <select id="efpsn-perturbed" bind:value=perturbed>
                            <option value="biases">"the 10 biases (the paper's)"</option>
                            <option value="all">"all 650 parameters"</option>
                        </select>
                    </label>
                    <label class="check"><input type="checkbox" id="efpsn-baseline" bind:checked=with_baseline on:change=move |_| touched.set(true) />"run the baseline too"</label>
                    <label class="check"><input type="checkbox" id="efpsn-noise-free" bind:checked=with_noise_free on:change=move |_| touched.set(true) />"run noise-free too"</label>
                    <p class="muted small span-all" data-testid="efpsn-consent">{move || consent.get().sentence()}</p>
                </fieldset>
                {move || preview.get().map(|p| view! { <p class="muted" data-testid="efpsn-preview">{p}</p> })}
                <StartButton test_id="start-efpsn" action="Start" present running=Signal::derive(running) />
            </form>
            <StartError error />
            <Show when=move || study.view.efpsn_preparing.get()>
                <p class="live-phase" data-testid="efpsn-preparing">"Loading digits and solving x* centrally…"</p>
            </Show>
            {move || study.view.efpsn.get().map(|live| view! { <EfpsnLiveView live study /> })}
        </section>
    }
}

#[component]
fn EfpsnLiveView(live: EfpsnLive, study: DashboardStudy) -> impl IntoView {
    let iterations = live.task.runs[0].plan.phase2.iterations;
    let n = live.agents.len();
    let names: Vec<String> = (0..n).map(|i| live.name(i)).collect();
    let now: Vec<Activity> = (0..n).map(|i| activity(&live, i)).collect();
    let graph = graph_svg(&live.graph, &names, &now);
    let epsilon = live.runs.iter().find_map(|r| r.epsilon);
    let gamma = live.task.runs[0].plan.setup.law.gamma;
    let header = live
        .runs
        .iter()
        .map(|r| view! { <th scope="col">{method_label(r.method)}</th> })
        .collect_view();
    let rows = (0..n)
        .map(|i| {
            let cells = live
                .runs
                .iter()
                .map(|r| {
                    let (text, progress) = cell(&live, r, i);
                    view! {
                        <td>
                            <progress max="1" value=progress aria-label=format!("{} of {}", method_label(r.method), names[i])></progress>
                            <span class="small">{text}</span>
                        </td>
                    }
                })
                .collect_view();
            view! {
                <tr data-testid="efpsn-agent" data-agent=i>
                    <th scope="row">{names[i].clone()}<span class="muted small">{format!(" node {i}")}</span></th>
                    {cells}
                </tr>
            }
        })
        .collect_view();
    let notes = notes(&live)
        .into_iter()
        .map(|(testid, text)| view! { <p class="callout callout-warn" data-testid=testid>{text}</p> })
        .collect_view();
    let deviation = line::render(&deviation_chart(&live.runs, iterations), "efpsn-deviation");
    let accuracy =
        line::render(&accuracy_chart(&live.runs, iterations, live.x_star_score), "efpsn-accuracy");
    let finals = live
        .runs
        .iter()
        .filter_map(|r| r.trace.last().map(|p| (r.method, *p)))
        .map(|(m, p)| {
            view! {
                <li data-testid=format!("efpsn-final-{}", m.name()) data-accuracy=p.score data-deviation=p.deviation data-iteration=p.iteration>
                    {format!("{}: accuracy {} and ‖x̄ − x*‖ = {} at iteration {}", method_label(m), percent(p.score), show(p.deviation), show(f64::from(p.iteration)))}
                </li>
            }
        })
        .collect_view();
    let efpsn = live.runs.iter().find(|r| r.method == Method::Efpsn);
    let exact = live.runs.iter().find(|r| r.method == Method::NoiseFree);
    let cancel = efpsn.zip(exact).and_then(|(e, f)| cancellation(e, f));
    let stem = format!("capelab-efpsn-{}", live.number);
    let degree = live.graph.degree(0);
    let running = !live.finished;
    view! {
        <div class="live-study study-focus" data-testid="efpsn-live" data-finished=live.finished.to_string()>
            <div class="efpsn-top">
                <figure class="efpsn-graph" data-testid="efpsn-graph">
                    <div class="efpsn-graph-svg" inner_html=graph></div>
                    <figcaption class="small">"Blue moving dashes: iterates crossing a link (Phase 2); amber: Paillier keys and encrypted noise (Phase 1); grey: idle; red with a cross: cut, because an agent left or declined."</figcaption>
                </figure>
                <div class="efpsn-side">
                    <p data-testid="efpsn-epsilon">{match epsilon {
                        Some(e) => format!("Each agent's guarantee by Theorem IV.1 at γ = {}: ε = {} at δ = {} (μ₂ = {}, μ_max = {} of the graph's Laplacian). The paper's claim: the theorem ignores what corrupted neighbours know about an agent's edges.", show(gamma), show(e.epsilon), show(e.delta), show(e.mu2), show(e.mu_max)),
                        None => "No EFPSN run: no guarantee to state.".into(),
                    }}</p>
                    {notes}
                </div>
            </div>
            <div class="table-scroll">
                <table class="numbers efpsn-agents" data-testid="efpsn-agents">
                    <thead><tr><th scope="col">"site"</th>{header}</tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
            <ul data-testid="efpsn-finals">{finals}</ul>
            <Chart markup=Signal::stored(deviation) id="efpsn-deviation".to_owned() file_stem=format!("{stem}-deviation") testid="efpsn-deviation-chart" />
            <Chart markup=Signal::stored(accuracy) id="efpsn-accuracy".to_owned() file_stem=format!("{stem}-accuracy") testid="efpsn-accuracy-chart" />
            <ResidualView residual=live.residual.clone() />
            {cancel.map(|c| {
                let per: Vec<String> = c.per_agent.iter().enumerate().map(|(i, v)| format!("{}: {}", names[i], show(*v))).collect();
                let fraction = c.sum / c.per_agent.iter().cloned().fold(0.0, f64::max).max(f64::MIN_POSITIVE);
                view! {
                    <div data-testid="efpsn-cancellation" data-relative=fraction>
                        <h3>"The masks cancel"</h3>
                        <p>{format!("What each agent's mask adds to its gradient at x = 0, ‖∇f̂_i(0) − ∇f_i(0)‖: {}.", per.join(", "))}</p>
                        <p>{format!("Summed over the agents: ‖Σ_i ∇f̂_i(0) − Σ_i ∇f_i(0)‖ = {} (that is {} of the largest single mask; ‖Σ_i ∇f_i(0)‖ = {}). The integer masks sum to exactly 0: what remains is floating-point rounding.", show(c.sum), show(fraction), show(c.exact_sum))}</p>
                    </div>
                }
            })}
            <CuriousNeighbour probe=live.probe.clone() gamma degree />
            {(!live.refusals.is_empty()).then(|| view! {
                <p class="muted small">"Messages the dashboard could not use: " {live.refusals.join("; ")}</p>
            })}
            {running.then(|| view! {
                <button type="button" class="button" data-testid="stop-efpsn" on:click=move |_| study.stop()>"Stop"</button>
            })}
        </div>
    }
}

/// The zero-sum check: Σ_i η̄_i by SecureAgg over the agents' integer masks.
#[component]
fn ResidualView(residual: Residual) -> impl IntoView {
    let zero = residual.is_exactly_zero();
    let text = match &residual {
        Residual::Waiting => {
            "Waiting for every agent's mask before checking that they sum to zero.".to_owned()
        }
        Residual::Summing => "SecureAgg is summing the agents' integer masks…".to_owned(),
        Residual::Done { residual, survivors, agents } => {
            let shown: Vec<String> = residual.iter().take(12).map(|v| v.to_string()).collect();
            let more = if residual.len() > 12 { ", …" } else { "" };
            let verdict = if zero {
                "exactly zero: the masks cancel".to_owned()
            } else if survivors < agents {
                format!("over {survivors} of {agents} agents only: not a check")
            } else {
                "NOT zero: the masks do not cancel".to_owned()
            };
            format!(
                "Zero-sum residual Σ_i 10^P·η̄_i over the {survivors} agents' masks, by SecureAgg (the dashboard sees the sum, no single mask): ({}{more}), {verdict}.",
                shown.join(", ")
            )
        }
        Residual::Failed(why) => format!("The zero-sum check did not finish: {why}"),
    };
    view! { <p data-testid="efpsn-residual" data-zero=zero.to_string() class=if zero { "callout" } else { "muted" }>{text}</p> }
}

/// One held-out image read back from an agent's released gradient (softmax regression: each row
/// of the weight gradient is a multiple of the input), at γ = 0 and the study's γ, for both
/// choices of the perturbed variables. Row labels and captions are short so that none is cut or
/// runs into the next; the cosines are listed under the figure.
#[component]
fn CuriousNeighbour(probe: (Vec<f64>, usize), gamma: f64, degree: usize) -> impl IntoView {
    let (image, label) = probe;
    let side = (image.len() as f64).sqrt() as usize;
    let mut rows = vec![(
        "image".to_owned(),
        vec![Tile {
            label: format!("digit {label}"),
            width: side,
            height: side,
            values: image.clone(),
        }],
    )];
    let mut lines = Vec::new();
    for (perturbed, row) in [(Perturbed::Biases, "biases"), (Perturbed::All, "all 650")] {
        let mut tiles = Vec::new();
        for g in [0.0, gamma] {
            match reconstruct(&image, label, 10, perturbed, g, degree.max(1), 7) {
                Ok(r) => {
                    lines.push(format!(
                        "{} perturbed, γ = {}: cosine to the image {}; the mask is {} of the weight gradient",
                        perturbed.name(),
                        show(g),
                        show(r.cosine),
                        show(r.mask_to_signal)
                    ));
                    tiles.push(Tile {
                        label: format!("γ = {}", show(g)),
                        width: side,
                        height: side,
                        values: r.image,
                    });
                }
                Err(e) => lines.push(format!("{} at γ = {}: {e}", perturbed.name(), show(g))),
            }
        }
        rows.push((row.to_owned(), tiles));
    }
    let spec = HeatmapSpec {
        title: "What a curious neighbour reads from one released gradient".into(),
        rows,
        tile: 64.0,
        note: Some(
            "Measured here, as in `cape efpsn-attack`: neither choice hides the image.".into(),
        ),
    };
    let svg = heatmap::render(&spec, "efpsn-attack");
    view! {
        <div data-testid="efpsn-attack">
            <h3>"What a curious neighbour sees"</h3>
            <p class="muted">"A neighbour that knows the weights and an agent's iterates recovers its released gradient exactly. On a single image (here the first held-out digit) each row of the softmax weight gradient is that image times a number. Perturbing only the biases (the paper's choice) leaves the weight gradient untouched; an orthonormal affine basis on [−1, 1]^650 scales every function by 2^−325, so a mask on all 650 parameters is a vanishing share of the gradient. Neither choice hides the image: Theorem IV.1 protects changes of a cost in the perturbed variables, which a change of one image is not."</p>
            <Chart markup=Signal::stored(svg) id="efpsn-attack".to_owned() file_stem="capelab-efpsn-attack".to_owned() testid="efpsn-attack-chart" />
            <ul>{lines.into_iter().map(|l| view! { <li>{l}</li> }).collect_view()}</ul>
        </div>
    }
}
