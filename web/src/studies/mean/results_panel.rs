//! A finished round on the dashboard: the two estimates side by side, each message against the
//! aggregate, the variance gain, the δ each site gets, what SecureAgg let the dashboard see, who
//! dropped or declined, and the exports.

use std::collections::BTreeMap;

use capelab_core::study::mean::{Masking, Query, StudyOutcome, ViewPrivacy};
use capelab_core::wire::ParticipantId;
use leptos::prelude::*;

use crate::components::charts::Chart;
use crate::components::charts::scale::format_value;
use crate::components::charts::{bits, forest};
use crate::download;
use crate::frame::dashboard::{DashboardStudy, FinishedRound};
use crate::ledger_report::LedgerReport;
use crate::studies::mean::masked::shown_attempt;
use crate::studies::mean::results::{
    decline_text, dropout_sentence, gain, messages_chart, phase_token,
};
use crate::studies::mean::round_charge::{self, RoundCharge};
use crate::studies::mean::{export, masked};
use crate::studies::regression::panel::RegressionRoundView;

/// The latest round of one study (earlier rounds can be picked from the list).
#[component]
pub fn ResultsPanel(
    study: DashboardStudy,
    /// Which of the two studies on the round machinery: the regression's rounds or the mean's.
    regression: bool,
) -> impl IntoView {
    let rounds = study.view.rounds;
    let mine = move |r: &FinishedRound| {
        matches!(r.outcome.params.query, Query::Regression(_)) == regression
    };
    let picked = RwSignal::new(None::<usize>);
    let shown = Memo::new(move |_| {
        rounds.with(|rs| match picked.get() {
            Some(n) => rs.iter().find(|r| r.number == n).cloned(),
            None => rs.iter().rev().find(|r| mine(r)).cloned(),
        })
    });
    let picker = move || {
        let rs: Vec<FinishedRound> = rounds.get().into_iter().filter(|r| mine(r)).collect();
        (rs.len() > 1).then(|| {
            let current = shown.with(|r| r.as_ref().map(|r| r.number));
            view! {
                <div class="round-picker">
                    "Round: "
                    {rs.iter().map(|r| {
                        let n = r.number;
                        let class = if current == Some(n) { "button button-small button-on" } else { "button button-small" };
                        view! { <button type="button" class=class on:click=move |_| picked.set(Some(n))>{n}</button> }
                    }).collect_view()}
                </div>
            }
        })
    };
    view! {
        <Show when=move || shown.with(Option::is_some)>
            <section class="card span-all results study-focus" data-testid="results">
                <div class="results-head">
                    <h2>"Results"</h2>
                    {picker}
                </div>
                {move || shown.get().map(|round| view! { <RoundView round reports=study.view.reports rounds /> })}
            </section>
        </Show>
    }
}

#[component]
fn RoundView(
    round: FinishedRound,
    reports: RwSignal<BTreeMap<ParticipantId, LedgerReport>>,
    rounds: RwSignal<Vec<FinishedRound>>,
) -> impl IntoView {
    let regression = matches!(round.outcome.params.query, Query::Regression(_));
    let upto: Vec<FinishedRound> =
        rounds.get_untracked().into_iter().filter(|r| r.number <= round.number).collect();
    let outcome = round.outcome.clone();
    // The δ the invited sites' ledgers account at (their latest reports): what the guarantee is
    // stated at, so it equals what they charged.
    let invited = outcome.params.sites.clone();
    let ledger_delta = Signal::derive(move || {
        reports.with(|r| {
            round_charge::ledger_delta(
                invited.iter().filter_map(|s| r.get(s)).map(|r| r.budget_delta),
            )
        })
    });
    let status = if outcome.estimates().is_some() { "estimated" } else { "aborted" };
    let stem = format!("capelab-round-{}-{}", round.number, outcome.study);
    let json_round = round.clone();
    let csv_round = round.clone();
    let export_error = RwSignal::new(None::<String>);
    let (json_stem, csv_stem) = (stem.clone(), stem.clone());
    let export_json = move |_| {
        let text = export::round_json(&json_round, &reports.get_untracked());
        export_error
            .set(download::text(&format!("{json_stem}.json"), "application/json", &text).err());
    };
    let export_csv = move |_| {
        let text = export::round_csv(&csv_round);
        export_error.set(download::text(&format!("{csv_stem}.csv"), "text/csv", &text).err());
    };
    view! {
        <div class="round" data-testid="round-result" data-round=round.number data-status=status>
            {if regression {
                view! { <RegressionRoundView round=round.clone() rounds=upto ledger_delta /> }.into_any()
            } else {
                view! {
                    <Estimates round=round.clone() />
                    <Guarantee outcome=outcome.clone() ledger_delta />
                    <Happenings round=round.clone() />
                    <MessagesChart round=round.clone() stem=stem.clone() />
                    <GainView outcome=outcome.clone() />
                }
                .into_any()
            }}
            {regression.then(|| view! { <Happenings round=round.clone() /> })}
            <DeltaTable outcome=outcome.clone() />
            <MaskedView round=round.clone() stem=stem.clone() />
            <div class="exports">
                <button type="button" class="button" data-testid="export-json" on:click=export_json>"Download JSON"</button>
                <button type="button" class="button" data-testid="export-csv" on:click=export_csv>"Download CSV"</button>
                {move || export_error.get().map(|e| view! { <span class="form-error">{e}</span> })}
            </div>
        </div>
    }
}

/// CAPE and conventional estimates side by side, with their theoretical sds.
#[component]
fn Estimates(round: FinishedRound) -> impl IntoView {
    let outcome = &round.outcome;
    let Some(est) = outcome.estimates() else {
        let reason = outcome.abort_reason().map(|r| r.to_string()).unwrap_or_default();
        return view! {
            <div class="callout callout-error" data-testid="abort-reason">
                "Round " {round.number} " ended without an estimate: " {reason}
            </div>
        }
        .into_any();
    };
    let theory = outcome.theory.clone();
    let sd = |v: Option<f64>| v.map(f64::sqrt);
    let sd_cape = sd(theory.as_ref().map(|t| t.var_cape));
    let sd_conv = sd(theory.as_ref().map(|t| t.var_conventional));
    let survivors: Vec<String> =
        est.survivors.iter().map(|s| format!("{} (#{s})", round.name(*s))).collect();
    let survivor_ids = est.survivors.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    let values = |v: &[f64]| v.iter().map(|x| format_value(*x)).collect::<Vec<_>>().join(", ");
    let json = |v: &[f64]| serde_json::to_string(v).unwrap_or_default();
    let cape_text = values(&est.cape);
    let cape_json = json(&est.cape);
    let conventional = est.conventional.clone();
    let note = outcome.calibration_note.clone();
    view! {
        <div class="estimates">
            <div class="estimate estimate-cape" data-testid="cape-estimate" data-values=cape_json data-sd=sd_cape.unwrap_or(f64::NAN)>
                <p class="label">"CAPE estimate"</p>
                <p class="estimate-value">{cape_text}</p>
                <p class="muted">"sd (theory) τ/|U| = " {sd_cape.map(format_value)}</p>
            </div>
            {match conventional {
                Some(conv) => view! {
                    <div class="estimate estimate-conv" data-testid="conventional-estimate" data-values=json(&conv) data-sd=sd_conv.unwrap_or(f64::NAN)>
                        <p class="label">"Conventional estimate"</p>
                        <p class="estimate-value">{values(&conv)}</p>
                        <p class="muted">"sd (theory) τ/√|U| = " {sd_conv.map(format_value)}</p>
                    </div>
                }.into_any(),
                None => view! {
                    <div class="estimate estimate-none">
                        <p class="label">"Conventional estimate"</p>
                        <p class="muted">"Not asked for in this round. Tick “also ask for the conventional release” to compare."</p>
                    </div>
                }.into_any(),
            }}
        </div>
        <p data-testid="survivors" data-ids=survivor_ids>
            "In the estimate (U, attempt " {est.attempt} "): " {survivors.join(", ")}
        </p>
        {note.map(|n| view! { <p class="callout callout-warn" data-testid="calibration-note">{n}</p> })}
    }
    .into_any()
}

/// Who dropped (in which round) and who declined (why).
#[component]
fn Happenings(round: FinishedRound) -> impl IntoView {
    let outcome = &round.outcome;
    let dropouts: Vec<_> = outcome
        .dropouts
        .iter()
        .map(|d| {
            (d.site, d.attempt, phase_token(d.phase), dropout_sentence(d, &round.name(d.site)))
        })
        .collect();
    let declines: Vec<_> = outcome
        .declined
        .iter()
        .map(|d| {
            let when = if d.attempt == 0 {
                "at the invitation".to_owned()
            } else {
                format!("in attempt {}", d.attempt)
            };
            let text = decline_text(&round.name(d.site), &d.reason);
            (d.site, format!("{text} ({when})"))
        })
        .collect();
    let reruns = outcome.reruns();
    (!dropouts.is_empty() || !declines.is_empty() || reruns > 0).then(|| view! {
        <ul class="event-list">
            {dropouts.into_iter().map(|(site, attempt, token, text)| view! {
                <li class="callout callout-warn" data-testid="dropout" data-site-id=site data-attempt=attempt data-phase=token>{text}</li>
            }).collect_view()}
            {declines.into_iter().map(|(site, text)| view! {
                <li class="callout callout-warn" data-testid="decline" data-site-id=site>{text}</li>
            }).collect_view()}
            {(reruns > 0).then(|| view! {
                <li class="callout">{format!("{reruns} re-run(s) among the survivors with fresh noise, after a site of U never released (the zero sum needs all of U).")}</li>
            })}
        </ul>
    })
}

#[component]
fn MessagesChart(round: FinishedRound, stem: String) -> impl IntoView {
    let dimension = round.outcome.params.dimension;
    let coordinate = RwSignal::new(0usize);
    let id = format!("chart-messages-{}", round.number);
    let markup = {
        let (round, id) = (round.clone(), id.clone());
        Signal::derive(move || {
            messages_chart(&round, coordinate.get())
                .map(|s| forest::render(&s, &id))
                .unwrap_or_default()
        })
    };
    let has_chart = round.outcome.estimates().is_some();
    has_chart.then(|| view! {
        {(dimension > 1).then(|| view! {
            <label class="inline-field">"coordinate "
                <input type="number" min="1" max=dimension prop:value=move || coordinate.get() + 1
                    on:input=move |ev| {
                        if let Ok(j) = event_target_value(&ev).parse::<usize>() {
                            coordinate.set(j.clamp(1, dimension) - 1);
                        }
                    } />
            </label>
        })}
        <Chart markup id file_stem=format!("{stem}-messages") testid="chart-messages" />
    })
}

#[component]
fn GainView(outcome: StudyOutcome) -> impl IntoView {
    gain(&outcome).map(|g| {
        let measured = g.measured.map(|m| {
            format!(
                "This round's messages measure τ̂ = {} from {} differences â_s − c_s (theory τ = {}).",
                format_value(m.tau),
                m.samples,
                format_value(g.var_message.sqrt())
            )
        });
        view! {
            <div class="gain" data-testid="gain">
                <h3>"Noise-variance gain"</h3>
                <table class="numbers">
                    <tr><th></th><th>"sites"</th><th>"var(conventional) / var(CAPE)"</th></tr>
                    <tr><td>"theory, all S invited"</td><td>{g.invited}</td><td>{format_value(g.invited_gain)}</td></tr>
                    <tr><td>"this round, |U| in the estimate"</td><td>{g.survivors}</td><td data-testid="round-gain">{format_value(g.round_gain)}</td></tr>
                </table>
                <p class="muted">
                    "Variances in this round: each message τ² = " {format_value(g.var_message)}
                    ", conventional τ²/|U| = " {format_value(g.var_conventional)}
                    ", CAPE τ²/|U|² = " {format_value(g.var_cape)} " (the pooled data's)."
                </p>
                {measured.map(|m| view! { <p>{m}</p> })}
            </div>
        }
    })
}

/// The round's one headline guarantee: what every site's ledger charged for it
/// ([`RoundCharge::at`] with the c_S of the estimate's sites, at the ledgers' δ).
#[component]
fn Guarantee(outcome: StudyOutcome, ledger_delta: Signal<Option<f64>>) -> impl IntoView {
    move || {
        let t = outcome.theory.as_ref()?;
        let charge =
            RoundCharge::at(&outcome.params, t.privacy.full_view.c_s, ledger_delta.get()).ok()?;
        Some(view! {
            <p class="callout" data-testid="round-guarantee" data-epsilon=charge.epsilon()
                data-delta=charge.delta data-bound=charge.pair.charged().to_string()>
                {charge.guarantee_sentence(t.sites, outcome.params.epsilon)}
            </p>
        })
    }
}

/// δ each site gets at the study's ε, under each view of the adversary: the paper's analysis,
/// shown as other views beside the headline [`Guarantee`].
#[component]
fn DeltaTable(outcome: StudyOutcome) -> impl IntoView {
    outcome.theory.map(|theory| {
        let p = theory.privacy;
        let row = |label: &'static str, testid: &'static str, v: Option<ViewPrivacy>, note: &'static str| {
            v.map(|v| view! {
                <tr data-testid=testid>
                    <td>{label}<br/><span class="muted small">{note}</span></td>
                    <td>{format_value(v.c_s)}</td>
                    <td>{v.delta_tail.map(format_value).unwrap_or_else(|| "undefined (ε ≤ μ_z)".into())}</td>
                    <td>{v.delta_phi_bound.map(format_value).unwrap_or_else(|| "—".into())}</td>
                </tr>
            })
        };
        let baseline = |label: &'static str, v: Option<f64>| view! {
            <tr><td>{label}</td><td>"—"</td><td>{v.map(format_value).unwrap_or_else(|| "—".into())}</td><td></td></tr>
        };
        view! {
            <div class="deltas">
                <h3>"Other views: the δ each site gets at the requested ε = " {format_value(p.epsilon)}</h3>
                <p class="muted">
                    "S = " {theory.sites} " sites in the estimate, up to S_C = " {theory.colluders}
                    " colluding with the dashboard; noise multiplier z = " {format_value(p.noise_multiplier)} "."
                </p>
                <table class="numbers">
                    <tr><th>"view of the adversary"</th><th>"c_S"</th><th>"δ (exact tail)"</th><th>"δ (paper's φ bound)"</th></tr>
                    {row("Full view: the guarantee", "delta-full-view", Some(p.full_view),
                        "the adversary also knows the colluders' own noise, as the threat model allows")}
                    {row("Paper's Theorem 1 (exact c_S)", "delta-theorem1", Some(p.theorem1),
                        "a finding of this project: this view leaves out what colluders know")}
                    {row("Theorem 1, eq. (1) as printed", "delta-eq1", p.paper_eq1, "the printed formula (spec erratum)")}
                    {baseline("δ_conv: conventional noise at CAPE's accuracy", p.delta_conv)}
                    {baseline("δ_pool: pooled data at the same accuracy", p.delta_pool)}
                </table>
                {(!p.classical_bound_covers).then(|| view! {
                    <p class="muted small">"δ_conv and δ_pool use the classical bound, which holds only for ε < 1."</p>
                })}
            </div>
        }
    })
}

/// Which graph masked the round, for the page and the e2e tests.
fn masking_token(masking: Masking) -> &'static str {
    match masking {
        Masking::Complete => "complete",
        Masking::SecAggPlus { .. } => "secagg-plus",
    }
}

fn masking_line(masking: Masking, threshold: usize) -> String {
    match masking {
        Masking::Complete => format!(
            "Masked on the complete graph: every pair of sites shared a mask, t = {threshold} of \
             all sites had to stay."
        ),
        plus => format!("Masked by {plus}: each site shared masks with its neighbours only."),
    }
}

/// What SecureAgg let the dashboard see: masked vectors as numbers and bits.
#[component]
fn MaskedView(round: FinishedRound, stem: String) -> impl IntoView {
    let outcome = round.outcome.clone();
    let attempt = shown_attempt(&outcome).cloned();
    let spec = masked::bit_image(&round);
    let id = format!("chart-bits-{}", round.number);
    attempt.map(|attempt| {
        let tau = outcome.noise.local_sd;
        let releases: BTreeMap<ParticipantId, f64> =
            attempt.releases.iter().filter_map(|r| Some((r.site, *r.values.first()?))).collect();
        let rows = attempt.masked_inputs.iter().map(|m| {
            let first = m.ring.first().copied().unwrap_or(0);
            let decoded = m.decoded.first().copied().unwrap_or(f64::NAN);
            let plain = releases.get(&m.site).map(|v| format_value(*v)).unwrap_or_else(|| "— (did not release)".into());
            view! {
                <tr data-testid="masked-row" data-site-id=m.site>
                    <td>{format!("{} (#{})", round.name(m.site), m.site)}</td>
                    <td class="mono hex">{format!("{first:016x}")}</td>
                    <td>{format_value(decoded)}</td>
                    <td>{plain}</td>
                </tr>
            }
        }).collect_view();
        let markup = spec.map(|s| bits::render(&s, &id)).unwrap_or_default();
        view! {
            <div class="masked">
                <h3>"What the relay and the dashboard saw"</h3>
                <p class="muted">
                    "In R2 each site sent its noise ê_s (sd τ = " {format_value(tau)} ") hidden under masks. "
                    "Read in the noise's own format, each masked value is a huge random number; the "
                    "sites' plain messages â_s (sent only after the masks cancelled) are next to them."
                </p>
                <p class="muted" data-testid="round-masking" data-masking=masking_token(outcome.params.masking)>
                    {masking_line(outcome.params.masking, outcome.params.threshold)}
                </p>
                <table class="numbers">
                    <tr><th>"site"</th><th>"y_s as received (hex, coordinate 1)"</th><th>"y_s read as a number"</th><th>"its plain message â_s"</th></tr>
                    {rows}
                </table>
                <Chart markup=Signal::derive(move || markup.clone()) id file_stem=format!("{stem}-masked-bits") testid="chart-bits" />
            </div>
        }
    })
}
