//! A site's view of its part in the current study: where it is in the protocol, the noise it drew
//! and released (ê_s, e_s, g_s, â_s), and how it ended.

use capelab_core::study::mean::{PublicResult, Query, SitePhase, StudyParams};
use capelab_core::study::regression::{fit_model, local_comparison};
use leptos::prelude::*;

use crate::components::charts::scale::format_value;
use crate::frame::site::{AttemptView, SiteEnd, SiteStudy, phase_text};
use crate::local_data::DataSource;

#[component]
pub fn SiteStudyPanel(study: SiteStudy) -> impl IntoView {
    let content = move || match study.view.study.get() {
        None => view! {
            <p class="live-phase" data-testid="site-phase" data-phase="idle">
                "Waiting for the dashboard to start a study."
            </p>
        }
        .into_any(),
        Some(s) => {
            let token = phase_token(s.phase);
            let params = s.params.as_ref().map(|p| {
                format!(
                    "ε = {}, δ = {:e}, N_s = {}, d = {}, t = {} of S = {}{}",
                    format_value(p.epsilon),
                    p.delta,
                    p.values_per_site,
                    p.dimension,
                    p.threshold,
                    p.site_count(),
                    if p.also_conventional { ", with the conventional release" } else { "" },
                )
            });
            let noise = s.noise.map(|n| {
                format!(
                    "τ = {} (sd of each message's noise), z = τ/Δ = {}",
                    format_value(n.local_sd),
                    format_value(n.noise_multiplier)
                )
            });
            let end = s.end.clone().map(|end| match end {
                SiteEnd::Done(result) => view! {
                    <p class="callout callout-ok" data-testid="site-result">
                        "Result: CAPE estimate "
                        {result.cape.iter().map(|v| format_value(*v)).collect::<Vec<_>>().join(", ")}
                        {result.conventional.map(|c| format!(
                            " · conventional {}",
                            c.iter().map(|v| format_value(*v)).collect::<Vec<_>>().join(", ")
                        ))}
                        {format!(" · from {} sites", result.survivors.len())}
                    </p>
                }
                .into_any(),
                SiteEnd::Declined(reason) => view! {
                    <p class="callout callout-error" data-testid="site-declined" role="alert">
                        {reason}
                    </p>
                }
                .into_any(),
                SiteEnd::NotInvited => view! {
                    <p class="callout callout-warn">"This site was not invited to the study (it joined later)."</p>
                }
                .into_any(),
                SiteEnd::Aborted(reason) => view! {
                    <p class="callout callout-warn" data-testid="site-aborted">"The study ended: " {reason}</p>
                }
                .into_any(),
            });
            let attempts = s.attempts.clone();
            let local = match (&s.end, &s.params, &s.noise) {
                (Some(SiteEnd::Done(result)), Some(p), Some(n)) => {
                    local_view(p, n.local_sd, result, &study.view.data.get_untracked())
                }
                _ => None,
            };
            view! {
                <p class="live-phase" data-testid="site-phase" data-phase=token>{phase_text(s.phase)}</p>
                {params.map(|p| view! { <p class="muted">{p}</p> })}
                {noise.map(|n| view! { <p class="muted">{n}</p> })}
                {end}
                {local}
                {(!attempts.is_empty()).then(|| view! { <NoiseTable attempts /> })}
            }
            .into_any()
        }
    };
    view! {
        <section class="card site-study" data-testid="site-study">
            <h2>"This site in the study"</h2>
            {content}
        </section>
    }
}

/// A regression study's shared model against this site's own non-private fit, on this site's
/// records: computed here, never sent.
fn local_view(
    params: &StudyParams,
    local_sd: f64,
    result: &PublicResult,
    data: &DataSource,
) -> Option<AnyView> {
    let Query::Regression(q) = params.query else { return None };
    let fitted = fit_model(params, &result.cape, local_sd / result.survivors.len() as f64).ok()?;
    let rows = data.rows_for_study(params);
    params.query.check_rows(&rows, params.values_per_site, params.dimension).ok()?;
    let c = local_comparison(q.model, &rows, params.dimension, &fitted.weights);
    let values = |v: &[f64]| v.iter().map(|x| format_value(*x)).collect::<Vec<_>>().join(", ");
    Some(
        view! {
            <div class="callout callout-ok" data-testid="site-regression" data-shared-loss=c.shared_loss data-local-loss=c.local_loss>
                <p>"Shared capeFM model ŵ: " {values(&fitted.weights)}</p>
                <table class="numbers">
                    <tr><th>"on this site's records"</th><th>"loss"</th><th>{c.metric_name.clone()}</th></tr>
                    <tr><td>"shared private ŵ"</td><td>{format_value(c.shared_loss)}</td><td>{format_value(c.shared_metric)}</td></tr>
                    <tr><td>"this site's own non-private fit"</td><td>{format_value(c.local_loss)}</td><td>{format_value(c.local_metric)}</td></tr>
                </table>
                <p class="muted small">
                    "Computed in this tab on this site's records only; nothing of it is sent. The "
                    "own fit sees only these records, the shared model all sites' (with noise)."
                </p>
            </div>
        }
        .into_any(),
    )
}

/// Reads one quantity of an attempt (its noise vector, if it got that far).
type NoiseOf = fn(&AttemptView) -> Option<&Vec<f64>>;

/// The noise of each attempt, first coordinate (and the count of the others): one row per
/// quantity, one column per attempt, so that on a phone the labels wrap at their spaces and the
/// numbers stay whole (one column per quantity broke both letter by letter).
#[component]
fn NoiseTable(attempts: Vec<AttemptView>) -> impl IntoView {
    let first = |v: Option<&Vec<f64>>| {
        v.and_then(|v| v.first()).map(|x| format_value(*x)).unwrap_or_else(|| "—".into())
    };
    let more = attempts.first().map_or(0, |a| a.quantised_noise.len().saturating_sub(1));
    let quantities: [(&str, NoiseOf); 5] = [
        ("ê_s (into SecureAgg)", |a| Some(&a.quantised_noise)),
        ("e_s = ê_s − Σê/|U|", |a| a.zero_sum_noise.as_ref()),
        ("g_s (fresh)", |a| a.fresh_noise.as_ref()),
        ("â_s = f + e_s + g_s (sent)", |a| a.release.as_ref()),
        ("conventional (sent)", |a| a.conventional.as_ref()),
    ];
    let head = attempts
        .iter()
        .map(|a| view! { <th scope="col">{format!("attempt {}", a.attempt)}</th> })
        .collect_view();
    let rows = quantities
        .into_iter()
        .map(|(label, of)| {
            let cells = attempts
                .iter()
                .map(|a| view! { <td class="num">{first(of(a))}</td> })
                .collect_view();
            view! { <tr><th scope="row">{label}</th>{cells}</tr> }
        })
        .collect_view();
    view! {
        <h3>"The noise this site added"</h3>
        <table class="numbers noise-table" data-testid="site-noise" data-attempts=attempts.len()>
            <tr><td></td>{head}</tr>
            {rows}
        </table>
        <p class="muted small">
            "Only â_s (and the conventional message, if asked) leave this tab; ê_s goes into "
            "SecureAgg under masks. e_s of all sites sum to exactly zero, so they cancel in the "
            "average while each single â_s stays noisy."
            {(more > 0).then(|| format!(" Coordinate 1 shown, {more} more not shown."))}
        </p>
    }
}

fn phase_token(phase: SitePhase) -> &'static str {
    match phase {
        SitePhase::AwaitingStart => "awaiting-start",
        SitePhase::Accepted => "accepted",
        SitePhase::Summing { .. } => "summing",
        SitePhase::Released { .. } => "released",
        SitePhase::Excluded { .. } => "excluded",
        SitePhase::Done => "done",
        SitePhase::Declined => "declined",
        SitePhase::NotInvited => "not-invited",
        SitePhase::Aborted => "aborted",
    }
}
