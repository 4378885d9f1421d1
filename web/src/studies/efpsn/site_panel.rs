//! A site's view of its agent in an EFPSN study: one status line that is true at every moment
//! (starting, Phase 1's Paillier exchange, iteration k of T, done, declined before anything was
//! charged, stopped because someone left), its place on the graph, the (ε, δ) its ledger
//! recorded (only when it did), and the comparison runs it joined or declined.

use capelab_core::efpsn::sim::Method;
use capelab_core::study::efpsn::{Decline, RunStatus, Stop};
use leptos::prelude::*;

use crate::frame::budget::own_decline;
use crate::frame::site::SiteStudy;
use crate::numbers::show;
use crate::studies::efpsn::view::method_short;
use crate::studies::efpsn::worker::{AgentRunView, EfpsnSiteView};

/// The status line: a phase for tests and styling (`data-phase`), and the sentence.
pub fn site_status(view: Option<&EfpsnSiteView>) -> (&'static str, String) {
    let Some(v) = view else {
        return (
            "starting",
            "The dashboard started an EFPSN study: loading the data set, checking this site's \
             budget and making its Paillier key…"
                .into(),
        );
    };
    if let Some(why) = &v.declined {
        return ("declined", declined_sentence(why));
    }
    let Some(run) = v.runs.iter().find(|r| r.method == Method::Efpsn) else {
        return ("starting", "Waiting for the study's task…".into());
    };
    let of = |t: u32| show(f64::from(t));
    match &run.status {
        RunStatus::Phase1 { keys, noise_sent, noise_received, neighbours } => (
            "phase1",
            format!(
                "Phase 1: exchanging Paillier keys and encrypted noise with its {} ({}): keys \
                 {keys}/{neighbours}, noise sent {noise_sent}/{neighbours}, received and \
                 decrypted {noise_received}/{neighbours}.",
                if *neighbours == 1 {
                    "neighbour".to_owned()
                } else {
                    format!("{neighbours} neighbours")
                },
                neighbour_names(v)
            ),
        ),
        RunStatus::Phase2 { iteration } => {
            ("running", format!("Running: iteration {} of {}.", of(*iteration), of(run.iterations)))
        }
        RunStatus::Done => ("done", format!("Done: all {} iterations.", of(run.iterations))),
        RunStatus::Declined(why) => ("declined", declined_sentence(why)),
        RunStatus::Stopped(stop) => ("stopped", stopped_sentence(v, run, stop)),
    }
}

fn neighbour_names(v: &EfpsnSiteView) -> String {
    v.neighbours
        .iter()
        .filter_map(|&j| v.agents.get(j))
        .map(|&p| v.name_of(p))
        .collect::<Vec<_>>()
        .join(", ")
}

fn declined_sentence(why: &Decline) -> String {
    let head = "This site declined the study before anything was charged or sent";
    match why {
        Decline::Budget { shortfall, .. } => own_decline(shortfall),
        Decline::NoConsent => {
            format!("{head}: it has not allowed non-private comparison runs (the switch below).")
        }
        Decline::Refused(words) => format!("{head}: {words}."),
    }
}

fn stopped_sentence(v: &EfpsnSiteView, run: &AgentRunView, stop: &Stop) -> String {
    let at = match run.iteration {
        Some(t) => {
            format!(" at iteration {} of {}", show(f64::from(t)), show(f64::from(run.iterations)))
        }
        None => " in Phase 1, before any iterate was sent".into(),
    };
    let kept = if run.iteration.is_some() { "; the iterates so far are kept" } else { "" };
    match stop {
        Stop::Left(who) if *who == v.me => format!("Stopped{at}: this tab left the room{kept}."),
        Stop::Left(who) => format!("Stopped{at} because {} left{kept}.", v.name_of(*who)),
        Stop::Declined { who, why } => {
            let why = match why {
                Decline::Budget { .. } => "its budget does not cover the run".to_owned(),
                Decline::NoConsent => "it has not allowed non-private comparison runs".to_owned(),
                Decline::Refused(words) => words.clone(),
            };
            format!("Stopped{at} because {} declined the run ({why}){kept}.", v.name_of(*who))
        }
        Stop::ByDashboard(_) => format!("Stopped{at}: the teacher stopped the study{kept}."),
        Stop::Refused(words) => format!("Stopped{at}: {words}{kept}."),
    }
}

/// One run's short line in the list of runs.
fn run_line(v: &EfpsnSiteView, run: &AgentRunView) -> (String, f64) {
    let total = f64::from(run.iterations.max(1));
    let at = |t: Option<u32>| t.map_or(0.1, |t| 0.1 + 0.9 * f64::from(t) / total);
    match &run.status {
        RunStatus::Phase1 { .. } => ("Phase 1".into(), 0.05),
        RunStatus::Phase2 { iteration } => (
            format!("iteration {} of {}", show(f64::from(*iteration)), show(total)),
            at(Some(*iteration)),
        ),
        RunStatus::Done => ("done".into(), 1.0),
        RunStatus::Declined(Decline::NoConsent) => {
            ("declined: this site has not allowed non-private comparison runs".into(), 0.0)
        }
        RunStatus::Declined(_) => ("declined".into(), 0.0),
        RunStatus::Stopped(Stop::Left(who)) if *who != v.me => {
            (format!("stopped: {} left", v.name_of(*who)), at(run.iteration))
        }
        RunStatus::Stopped(_) => ("stopped".into(), at(run.iteration)),
    }
}

#[component]
pub fn EfpsnSitePanel(study: SiteStudy) -> impl IntoView {
    move || {
        let view = study.view.efpsn.get();
        let (phase, status) = site_status(view.as_ref());
        let place = view.as_ref().and_then(|v| {
            let i = v.agent?;
            Some(format!(
                "Agent {i} on the graph; its neighbours: {}. It optimises on {} rows of {}, kept in this tab.{}",
                neighbour_names(v),
                show(v.rows as f64),
                if v.own_data { "its own table" } else { "digits" },
                if v.own_data {
                    " The dashboard's ‖x̄ − x*‖ and accuracy are measured on the shared digits split, whose x* does not know these rows."
                } else {
                    ""
                }
            ))
        });
        let guarantee = view.as_ref().and_then(|v| v.epsilon.map(|(e, d)| (e, d, v.key_bits))).map(|(e, d, bits)| {
            format!(
                "EFPSN run: ε = {} at δ = {} (Theorem IV.1), recorded in this site's ledger before anything was sent; {bits}-bit Paillier key.",
                show(e),
                show(d),
            )
        });
        let runs = view.as_ref().map(|v| {
            v.runs
                .iter()
                .map(|r| {
                    let (text, progress) = run_line(v, r);
                    let label = method_short(r.method);
                    view! {
                        <li data-testid=format!("efpsn-site-run-{}", r.method.name())>
                            <span class="label">{label}</span>
                            <progress max="1" value=progress aria-label=format!("{label} progress")></progress>
                            <span class="small">{text}</span>
                        </li>
                    }
                })
                .collect_view()
        });
        let refusals = view.as_ref().map(|v| v.refusals.clone()).unwrap_or_default();
        view! {
            <section class="card site-study" data-testid="efpsn-site-panel">
                <h2>"This site in the EFPSN study"</h2>
                <p class="live-phase" data-testid="efpsn-site-status" data-phase=phase>{status}</p>
                {place.map(|p| view! { <p class="muted">{p}</p> })}
                {guarantee.map(|g| view! { <p data-testid="efpsn-site-epsilon">{g}</p> })}
                <ul class="efpsn-runs">{runs}</ul>
                {(!refusals.is_empty()).then(|| view! {
                    <p class="muted small">"Messages this tab could not use: " {refusals.join("; ")}</p>
                })}
            </section>
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capelab_core::accountant::ledger::Shortfall;

    fn view(status: RunStatus, iteration: Option<u32>) -> EfpsnSiteView {
        EfpsnSiteView {
            me: 2,
            agents: vec![2, 3, 4, 5],
            names: [(2, "Agent A"), (3, "Agent B"), (4, "Agent C"), (5, "Agent D")]
                .map(|(i, n)| (i, n.to_owned()))
                .into_iter()
                .collect(),
            agent: Some(0),
            neighbours: vec![1, 3],
            rows: 359,
            own_data: false,
            epsilon: Some((0.133, 1e-6)),
            key_bits: 2048,
            runs: vec![AgentRunView { method: Method::Efpsn, status, iteration, iterations: 200 }],
            declined: None,
            refusals: Vec::new(),
        }
    }

    #[test]
    fn the_status_line_says_where_the_agent_is_with_names() {
        assert_eq!(site_status(None).0, "starting");
        let p1 = RunStatus::Phase1 { keys: 1, noise_sent: 0, noise_received: 0, neighbours: 2 };
        let (phase, text) = site_status(Some(&view(p1, None)));
        assert_eq!(phase, "phase1");
        assert!(text.contains("with its 2 neighbours (Agent B, Agent D): keys 1/2"), "{text}");
        let (_, text) = site_status(Some(&view(RunStatus::Phase2 { iteration: 120 }, Some(120))));
        assert_eq!(text, "Running: iteration 120 of 200.");
        let (phase, text) = site_status(Some(&view(RunStatus::Stopped(Stop::Left(4)), Some(155))));
        assert_eq!(phase, "stopped");
        assert_eq!(
            text,
            "Stopped at iteration 155 of 200 because Agent C left; the iterates so far are kept."
        );
        assert_eq!(
            site_status(Some(&view(RunStatus::Done, Some(200)))).1,
            "Done: all 200 iterations."
        );
    }

    #[test]
    fn a_budget_refusal_says_nothing_was_charged_and_what_to_raise_the_budget_to() {
        let why = Decline::Budget {
            shortfall: Shortfall { budget: 10.0, needed: Some(11.6594), delta: 1e-5 },
            run_epsilon: 11.0,
        };
        let mut v = view(RunStatus::Declined(why.clone()), None);
        v.declined = Some(why);
        v.epsilon = None;
        let (phase, text) = site_status(Some(&v));
        assert_eq!(phase, "declined");
        assert_eq!(
            text,
            "This site declined before releasing anything (nothing was recorded or sent): its budget (ε = 10 at δ = 10⁻⁵) does not cover this study: raise it to at least ε = 11.7 (1.66 more) in the ledger card below."
        );
    }
}
