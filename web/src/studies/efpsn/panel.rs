//! The dashboard's "Decentralised optimisation (EFPSN)" panel: the form, then the agents' graph,
//! each agent's progress per run, ‖x̄ − x*‖ and accuracy for EFPSN, the baseline and noise-free
//! side by side, the masks cancelling, ε, and what a curious neighbour sees. It renders
//! [`DashboardStudy`]'s EFPSN signals; the numbers come from [`crate::studies::efpsn::view`].

use capelab_core::efpsn::attack::{Perturbed, reconstruct};
use capelab_core::efpsn::graph::Topology;
use capelab_core::efpsn::optimizer::Optimizer;
use capelab_core::efpsn::sim::Method;
use capelab_core::study::efpsn::Residual;
use capelab_core::wire::Role;
use leptos::prelude::*;

use crate::components::charts::heatmap::{self, HeatmapSpec, Tile};
use crate::components::charts::scale::format_value;
use crate::components::charts::{Chart, line};
use crate::frame::dashboard::DashboardStudy;
use crate::frame::start::{StartButton, StartError};
use crate::session::RoomState;
use crate::studies::efpsn::run::{EfpsnFields, EfpsnLive};
use crate::studies::efpsn::view::{
    Activity, accuracy_chart, activity, cancellation, deviation_chart, graph_svg, method_label,
    status_text,
};

#[component]
pub fn EfpsnPanel(study: DashboardStudy, state: RoomState) -> impl IntoView {
    let d = EfpsnFields::default();
    let topology = RwSignal::new("ring".to_owned());
    let gamma = RwSignal::new(format!("{}", d.gamma));
    let optimizer = RwSignal::new("tracking".to_owned());
    let iterations = RwSignal::new(d.iterations.to_string());
    let step = RwSignal::new(d.step.to_string());
    let key_bits = RwSignal::new(d.key_bits.to_string());
    let perturbed = RwSignal::new("biases".to_owned());
    let with_baseline = RwSignal::new(true);
    let with_noise_free = RwSignal::new(true);
    let form_error = RwSignal::new(None::<String>);
    let present = Memo::new(move |_| state.roster.with(|r| r.present_count(Role::Site)));
    let running = move || study.view.busy();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let number = |name: &str, v: String| {
            v.trim().parse::<f64>().map_err(|_| format!("{name}: “{v}” is not a number"))
        };
        let fields = (|| {
            let mut methods = vec![Method::Efpsn];
            if with_baseline.get_untracked() {
                methods.push(Method::Baseline);
            }
            if with_noise_free.get_untracked() {
                methods.push(Method::NoiseFree);
            }
            let iterations = iterations.get_untracked();
            Ok::<_, String>(EfpsnFields {
                topology: Topology::parse(&topology.get_untracked()).unwrap_or(Topology::Ring),
                gamma: number("γ", gamma.get_untracked())?,
                optimizer: Optimizer::parse(&optimizer.get_untracked())
                    .unwrap_or(Optimizer::Tracking),
                iterations: iterations
                    .trim()
                    .parse()
                    .ok()
                    .filter(|&t: &u32| (1..=100_000).contains(&t))
                    .ok_or(format!(
                        "iterations: “{iterations}” is not a whole number in 1..=100000"
                    ))?,
                step: number("step α", step.get_untracked())?,
                key_bits: if key_bits.get_untracked() == "1024" { 1024 } else { 2048 },
                perturbed: if perturbed.get_untracked() == "all" {
                    Perturbed::All
                } else {
                    Perturbed::Biases
                },
                methods,
                delta: EfpsnFields::default().delta,
            })
        })();
        match fields {
            Ok(fields) => {
                form_error.set(None);
                study.start_efpsn(fields);
            }
            Err(e) => form_error.set(Some(e)),
        }
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
                "part in them only if its user ticked “non-private comparison runs”."
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
                    <label>"noise scale γ"<input id="efpsn-gamma" inputmode="decimal" bind:value=gamma /></label>
                    <label>"optimiser"
                        <select id="efpsn-optimizer" bind:value=optimizer>
                            <option value="tracking">"gradient tracking"</option>
                            <option value="dsgd">"DSGD"</option>
                        </select>
                    </label>
                    <label>"iterations T"<input id="efpsn-iterations" inputmode="numeric" bind:value=iterations /></label>
                    <label>"step α"<input id="efpsn-step" inputmode="decimal" bind:value=step /></label>
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
                    <label class="check"><input type="checkbox" id="efpsn-baseline" bind:checked=with_baseline />"run the baseline too"</label>
                    <label class="check"><input type="checkbox" id="efpsn-noise-free" bind:checked=with_noise_free />"run noise-free too"</label>
                </fieldset>
                <StartButton test_id="start-efpsn" action="Start" present running=Signal::derive(running) />
            </form>
            {move || form_error.get().map(|e| view! { <p class="form-error" role="alert">{e}</p> })}
            <StartError error=study.view.start_error />
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
    let names: Vec<String> = (0..live.agents.len()).map(|i| live.name(i)).collect();
    let activity: Vec<Activity> = (0..live.agents.len()).map(|i| activity(&live.runs, i)).collect();
    let graph = graph_svg(&live.graph, &names, &activity);
    let epsilon = live.runs.iter().find_map(|r| r.epsilon);
    let gamma = live.task.runs[0].plan.setup.law.gamma;
    let header = live
        .runs
        .iter()
        .map(|r| view! { <th scope="col">{method_label(r.method)}</th> })
        .collect_view();
    let rows = (0..live.agents.len())
        .map(|i| {
            let cells = live
                .runs
                .iter()
                .map(|r| {
                    let (text, progress) = status_text(&r.status[i], iterations);
                    view! {
                        <td>
                            <progress max="1" value=progress></progress>
                            <span class="small">{text}</span>
                        </td>
                    }
                })
                .collect_view();
            view! { <tr data-testid="efpsn-agent"><th scope="row">{format!("{i}: {}", names[i])}</th>{cells}</tr> }
        })
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
                    {format!("{}: accuracy {:.1}% and ‖x̄ − x*‖ = {} at iteration {}", method_label(m), 100.0 * p.score, format_value(p.deviation), p.iteration)}
                </li>
            }
        })
        .collect_view();
    let efpsn = live.runs.iter().find(|r| r.method == Method::Efpsn);
    let exact = live.runs.iter().find(|r| r.method == Method::NoiseFree);
    let cancel = efpsn.zip(exact).and_then(|(e, f)| cancellation(e, f));
    let stem = format!("capelab-efpsn-{}", live.number);
    view! {
        <div class="live-study study-focus" data-testid="efpsn-live" data-finished=live.finished.to_string()>
            <div class="efpsn-top">
                <figure class="chart" data-testid="efpsn-graph">
                    <div inner_html=graph></div>
                    <figcaption class="small">"Moving dashes: messages crossing a link (amber: Phase 1's keys and encrypted noise; blue: Phase 2's iterates). Grey dashes: a link cut because an agent left or declined."</figcaption>
                </figure>
                <div>
                    <p data-testid="efpsn-epsilon">{match epsilon {
                        Some(e) => format!("Each agent's guarantee by Theorem IV.1 at γ = {}: ε = {} at δ = {} (μ₂ = {}, μ_max = {} of the graph's Laplacian). The paper's claim: the theorem ignores what corrupted neighbours know about an agent's edges.", format_value(gamma), format_value(e.epsilon), format_value(e.delta), format_value(e.mu2), format_value(e.mu_max)),
                        None => "No EFPSN run: no guarantee to state.".into(),
                    }}</p>
                    {live.stopped.clone().map(|s| view! { <p class="form-error">{format!("Stopped: {s}")}</p> })}
                </div>
            </div>
            <div class="table-scroll">
                <table class="numbers efpsn-agents" data-testid="efpsn-agents">
                    <thead><tr><th scope="col">"agent"</th>{header}</tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
            <ul data-testid="efpsn-finals">{finals}</ul>
            <Chart markup=Signal::stored(deviation) id="efpsn-deviation".to_owned() file_stem=format!("{stem}-deviation") testid="efpsn-deviation-chart" />
            <Chart markup=Signal::stored(accuracy) id="efpsn-accuracy".to_owned() file_stem=format!("{stem}-accuracy") testid="efpsn-accuracy-chart" />
            <ResidualView residual=live.residual.clone() />
            {cancel.map(|c| {
                let per: Vec<String> = c.per_agent.iter().enumerate().map(|(i, v)| format!("agent {i}: {}", format_value(*v))).collect();
                let fraction = c.sum / c.per_agent.iter().cloned().fold(0.0, f64::max).max(f64::MIN_POSITIVE);
                view! {
                    <div data-testid="efpsn-cancellation" data-relative=fraction>
                        <h3>"The masks cancel"</h3>
                        <p>{format!("What each agent's mask adds to its gradient at x = 0, ‖∇f̂_i(0) − ∇f_i(0)‖: {}.", per.join(", "))}</p>
                        <p>{format!("Summed over the agents: ‖Σ_i ∇f̂_i(0) − Σ_i ∇f_i(0)‖ = {} (that is {} of the largest single mask; ‖Σ_i ∇f_i(0)‖ = {}). The integer masks sum to exactly 0: what remains is floating-point rounding.", format_value(c.sum), format_value(fraction), format_value(c.exact_sum))}</p>
                    </div>
                }
            })}
            <CuriousNeighbour probe=live.probe.clone() gamma degree=live.graph.degree(0) />
            {(!live.refusals.is_empty()).then(|| view! {
                <p class="muted small">"Refused inputs: " {live.refusals.join("; ")}</p>
            })}
            <Show when=move || study.view.efpsn.with(|l| l.as_ref().is_some_and(|l| !l.finished))>
                <button type="button" class="button" data-testid="stop-efpsn" on:click=move |_| study.stop()>"Stop"</button>
            </Show>
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
/// choices of the perturbed variables.
#[component]
fn CuriousNeighbour(probe: (Vec<f64>, usize), gamma: f64, degree: usize) -> impl IntoView {
    let (image, label) = probe;
    let side = (image.len() as f64).sqrt() as usize;
    let mut rows = vec![(
        "the image".to_owned(),
        vec![Tile {
            label: format!("label {label}"),
            width: side,
            height: side,
            values: image.clone(),
        }],
    )];
    let mut lines = Vec::new();
    for perturbed in [Perturbed::Biases, Perturbed::All] {
        let mut tiles = Vec::new();
        for g in [0.0, gamma] {
            match reconstruct(&image, label, 10, perturbed, g, degree.max(1), 7) {
                Ok(r) => {
                    lines.push(format!(
                        "{} perturbed, γ = {}: cosine to the image {:.6}; the mask is {} of the weight gradient",
                        perturbed.name(),
                        format_value(g),
                        r.cosine,
                        format_value(r.mask_to_signal)
                    ));
                    tiles.push(Tile {
                        label: format!("γ = {}: cos {:.2}", format_value(g), r.cosine),
                        width: side,
                        height: side,
                        values: r.image,
                    });
                }
                Err(e) => {
                    lines.push(format!("{} at γ = {}: {e}", perturbed.name(), format_value(g)))
                }
            }
        }
        rows.push((format!("{} perturbed", perturbed.name()), tiles));
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
