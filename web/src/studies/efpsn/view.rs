//! What the EFPSN panels say and draw, as pure functions of the study's state: each agent's cell
//! in a run (one progress and one short word; why a run did not happen is said once, under the
//! table), why the study stopped, in the site names people typed, the deviation and accuracy
//! charts of the runs side by side, what the graph shows of each agent, the masks cancelling.

use capelab_core::efpsn::sim::Method;
use capelab_core::study::efpsn::{Decline, ObservedRun, RunStatus, Stop};
use capelab_core::wire::ParticipantId;

use crate::components::charts::line::{LineChartSpec, Series};
use crate::components::charts::scale::Scale;
use crate::components::charts::svg::PALETTE;
use crate::numbers::show;
use crate::studies::efpsn::graph::Activity;
use crate::studies::efpsn::run::EfpsnLive;

pub fn method_label(method: Method) -> &'static str {
    match method {
        Method::Efpsn => "EFPSN (zero-sum masks)",
        Method::Baseline => "baseline (independent masks)",
        Method::NoiseFree => "noise-free",
    }
}

/// The method's short name, for a headline.
pub fn method_short(method: Method) -> &'static str {
    match method {
        Method::Efpsn => "EFPSN",
        Method::Baseline => "baseline",
        Method::NoiseFree => "noise-free",
    }
}

pub fn colour(method: Method) -> &'static str {
    match method {
        Method::Efpsn => PALETTE[0],
        Method::Baseline => PALETTE[1],
        Method::NoiseFree => PALETTE[2],
    }
}

/// Phase 1 is the first tenth of a progress bar, Phase 2 the rest.
fn progress(status: &RunStatus, iterations: u32) -> f64 {
    match status {
        RunStatus::Phase1 { keys, noise_sent, noise_received, neighbours } => {
            let steps = 3 * (*neighbours).max(1);
            0.1 * (keys + noise_sent + noise_received) as f64 / steps as f64
        }
        RunStatus::Phase2 { iteration } => {
            0.1 + 0.9 * f64::from(*iteration) / f64::from(iterations.max(1))
        }
        RunStatus::Done => 1.0,
        RunStatus::Declined(_) | RunStatus::Stopped(_) => 0.0,
    }
}

/// Where a stopped run ended, the same for every agent: the last iteration every agent
/// reported, at which x̄ was last measured (`None`: in Phase 1, before any iterate).
pub fn stopped_at(run: &ObservedRun) -> Option<u32> {
    run.trace.last().map(|p| p.iteration)
}

/// Agent `i`'s cell in `run`: a few words and its progress. A run that stopped keeps each
/// agent's progress, at the iteration all of them reached.
pub fn cell(live: &EfpsnLive, run: &ObservedRun, i: usize) -> (String, f64) {
    let iterations = live.task.runs[0].plan.phase2.iterations;
    let status = &run.status[i];
    match status {
        RunStatus::Phase1 { keys, noise_sent, noise_received, neighbours } => (
            format!(
                "Phase 1: keys {keys}/{neighbours}, noise sent {noise_sent}/{neighbours}, \
                 received {noise_received}/{neighbours}"
            ),
            progress(status, iterations),
        ),
        RunStatus::Phase2 { iteration } => (
            format!("iteration {} of {}", show(f64::from(*iteration)), show(f64::from(iterations))),
            progress(status, iterations),
        ),
        RunStatus::Done => ("done".into(), 1.0),
        RunStatus::Declined(_) => ("declined".into(), 0.0),
        RunStatus::Stopped(stop) => {
            let reached = match (&run.reached[i], stopped_at(run)) {
                (RunStatus::Phase2 { .. }, Some(t)) => RunStatus::Phase2 { iteration: t },
                (other, _) => other.clone(),
            };
            let at = match &reached {
                RunStatus::Phase2 { iteration } => {
                    format!("at iteration {}", show(f64::from(*iteration)))
                }
                _ => "in Phase 1".into(),
            };
            let left = matches!(stop, Stop::Left(p) if *p == live.agents[i]);
            let word = if left { "left the room" } else { "stopped" };
            (format!("{word} {at}"), progress(&reached, iterations))
        }
    }
}

/// Why the study (or a run of it) stopped, in a sentence with the names people typed.
pub fn stop_sentence(live: &EfpsnLive, stop: &Stop) -> String {
    match stop {
        Stop::Left(who) => format!("{} left the room", live.name_of(*who)),
        Stop::Declined { who, why } => decline_sentence(&live.name_of(*who), why),
        Stop::ByDashboard(_) => "you stopped the study".into(),
        Stop::Refused(why) => format!("an agent could not go on: {why}"),
    }
}

/// Why `name` declined, with what to do about it.
pub fn decline_sentence(name: &str, why: &Decline) -> String {
    match why {
        Decline::NoConsent => {
            format!("{name} has not allowed non-private comparison runs (the switch on its page)")
        }
        Decline::Budget { shortfall, .. } => {
            crate::frame::budget::decline_sentence(name, "", Some(shortfall))
        }
        Decline::Refused(words) => format!("{name} could not take part: {words}"),
    }
}

/// What the page says under the agents' table: why the study stopped (once), and how many sites
/// declined the comparison runs (once, not in every cell).
pub fn notes(live: &EfpsnLive) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let n = live.agents.len();
    if let Some(stop) = &live.stopped {
        let efpsn = live.runs.iter().find(|r| r.method == Method::Efpsn);
        let text = match stop {
            Stop::Declined { .. } => format!(
                "The study stopped before any iterate of the EFPSN run was sent: {}.",
                stop_sentence(live, stop)
            ),
            Stop::ByDashboard(_) => format!(
                "You stopped the study{}.",
                efpsn
                    .and_then(stopped_at)
                    .map_or(String::new(), |t| format!(" after iteration {}", show(f64::from(t))))
            ),
            other => format!("The study stopped: {}.", stop_sentence(live, other)),
        };
        out.push(("efpsn-stopped", text));
    }
    // A departure: said once, with the iteration every row shows.
    let left = live.runs.iter().find_map(|r| {
        r.status.iter().find_map(|s| match s {
            RunStatus::Stopped(Stop::Left(who)) => Some((*who, stopped_at(r))),
            _ => None,
        })
    });
    if let (Some((who, at)), None) = (left, &live.stopped) {
        let at = at.map_or("in Phase 1, before any iterate".to_owned(), |t| {
            format!("after iteration {} (the last every agent reported)", show(f64::from(t)))
        });
        out.push((
            "efpsn-stopped",
            format!(
                "{} left the room: every run stopped {at}; the iterates so far are kept.",
                live.name_of(who)
            ),
        ));
    }
    // Consent: how many sites declined a comparison run.
    let declined: Vec<usize> = (0..n)
        .filter(|&i| {
            live.runs.iter().any(|r| r.status[i] == RunStatus::Declined(Decline::NoConsent))
        })
        .collect();
    if !declined.is_empty() {
        let runs: Vec<&str> = live
            .runs
            .iter()
            .filter(|r| r.status.contains(&RunStatus::Declined(Decline::NoConsent)))
            .map(|r| method_short(r.method))
            .collect();
        let names: Vec<String> = declined.iter().map(|&i| live.name(i)).collect();
        // "1 of 4 sites …": the noun counts the sites present, the verb those that declined.
        let sites = if n == 1 { "site" } else { "sites" };
        let them = if declined.len() == 1 { "its user has" } else { "their users have" };
        out.push((
            "efpsn-declined",
            format!(
                "{} of {n} {sites} declined the comparison run{} ({}): {them} not allowed \
                 non-private comparison runs (the switch on each site's page), so {} did not run. \
                 Declined: {}.",
                declined.len(),
                if runs.len() == 1 { "" } else { "s" },
                runs.join(", "),
                if runs.len() == 1 { "it" } else { "they" },
                names.join(", ")
            ),
        ));
    }
    // Any other refusal, once per site.
    for (i, why) in (0..n).filter_map(|i| {
        live.runs.iter().find_map(|r| match &r.status[i] {
            RunStatus::Declined(d @ Decline::Refused(_)) => Some((i, d)),
            _ => None,
        })
    }) {
        out.push(("efpsn-refused", format!("{}.", decline_sentence(&live.name(i), why))));
    }
    out
}

/// What agent `i` is doing over the runs, as the graph shows it.
pub fn activity(live: &EfpsnLive, i: usize) -> Activity {
    let me: ParticipantId = live.agents[i];
    let statuses: Vec<&RunStatus> = live.runs.iter().map(|r| &r.status[i]).collect();
    let left = statuses.iter().any(|s| matches!(s, RunStatus::Stopped(Stop::Left(p)) if *p == me));
    let declined_all = statuses.iter().all(|s| matches!(s, RunStatus::Declined(_)));
    let declined_efpsn = live
        .runs
        .iter()
        .any(|r| r.method == Method::Efpsn && matches!(r.status[i], RunStatus::Declined(_)));
    if left || declined_all || declined_efpsn {
        Activity::Gone
    } else if statuses.iter().any(|s| matches!(s, RunStatus::Phase2 { .. })) {
        Activity::Iterating
    } else if statuses.iter().any(|s| matches!(s, RunStatus::Phase1 { .. })) {
        Activity::Encrypting
    } else if statuses.iter().any(|s| matches!(s, RunStatus::Stopped(_))) {
        Activity::Halted
    } else if statuses.iter().any(|s| **s == RunStatus::Done) {
        Activity::Done
    } else {
        Activity::Waiting
    }
}

/// ‖x̄ − x*‖ per iteration, one line per run (log axis: the runs differ by decades).
pub fn deviation_chart(runs: &[ObservedRun], iterations: u32) -> LineChartSpec {
    let series: Vec<Series> = runs
        .iter()
        .map(|r| Series {
            name: method_label(r.method).into(),
            color: colour(r.method),
            points: r.trace.iter().map(|p| (f64::from(p.iteration), p.deviation)).collect(),
            dashed: r.method == Method::NoiseFree,
            dots: false,
        })
        .collect();
    let values = series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).filter(|v| *v > 0.0);
    let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let y = if hi > 0.0 {
        Scale::Log {
            min: 10f64.powf(lo.log10().floor()),
            max: 10f64.powf(hi.log10().ceil().max(lo.log10().floor() + 1.0)),
        }
    } else {
        Scale::Log { min: 1e-3, max: 1.0 }
    };
    LineChartSpec {
        title: "Distance of the agents' average x̄ to the centralised optimum x*".into(),
        x_label: "iteration t".into(),
        y_label: "‖x̄ − x*‖".into(),
        x: Scale::Linear { min: 0.0, max: f64::from(iterations.max(1)) },
        y,
        series,
        markers: Vec::new(),
        note: Some(
            "x* is solved centrally from the public copy of digits the dashboard holds.".into(),
        ),
    }
}

/// Test accuracy of x̄ per iteration, one line per run, with x*'s own accuracy for reference.
pub fn accuracy_chart(runs: &[ObservedRun], iterations: u32, x_star_score: f64) -> LineChartSpec {
    let mut series: Vec<Series> = runs
        .iter()
        .map(|r| Series {
            name: method_label(r.method).into(),
            color: colour(r.method),
            points: r.trace.iter().map(|p| (f64::from(p.iteration), p.score)).collect(),
            dashed: r.method == Method::NoiseFree,
            dots: false,
        })
        .collect();
    series.push(Series {
        name: "x* (centralised)".into(),
        color: PALETTE[6],
        points: vec![(0.0, x_star_score), (f64::from(iterations.max(1)), x_star_score)],
        dashed: true,
        dots: false,
    });
    LineChartSpec {
        title: "Test accuracy of x̄ (held-out digits)".into(),
        x_label: "iteration t".into(),
        y_label: "accuracy".into(),
        x: Scale::Linear { min: 0.0, max: f64::from(iterations.max(1)) },
        y: Scale::Linear { min: 0.0, max: 1.0 },
        series,
        markers: Vec::new(),
        note: None,
    }
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// Per agent ‖∇f̂_i(0) − ∇f_i(0)‖ (what its mask adds) and, for the sum over the agents, the
/// same: from the EFPSN run and the noise-free one (which holds the exact gradients).
pub struct Cancellation {
    pub per_agent: Vec<f64>,
    pub sum: f64,
    /// ‖Σ_i ∇f_i(0)‖, for scale.
    pub exact_sum: f64,
}

pub fn cancellation(efpsn: &ObservedRun, exact: &ObservedRun) -> Option<Cancellation> {
    let mut per_agent = Vec::new();
    for (p, q) in efpsn.gradient_at_zero.iter().zip(&exact.gradient_at_zero) {
        let (p, q) = (p.as_ref()?, q.as_ref()?);
        per_agent.push(norm(&p.iter().zip(q).map(|(a, b)| a - b).collect::<Vec<_>>()));
    }
    let (se, sf) = (efpsn.gradient_sum()?, exact.gradient_sum()?);
    Some(Cancellation {
        per_agent,
        sum: norm(&se.iter().zip(&sf).map(|(a, b)| a - b).collect::<Vec<_>>()),
        exact_sum: norm(&sf),
    })
}

/// An accuracy as people read it: "93.1%".
pub fn percent(score: f64) -> String {
    if score.is_finite() { format!("{:.1}%", 100.0 * score) } else { "—".into() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capelab_core::accountant::ledger::Shortfall;
    use capelab_core::efpsn::metrics::TracePoint;

    use crate::studies::efpsn::form::{EfpsnFields, Room};

    fn live(methods: &[Method], status: Vec<Vec<RunStatus>>, reached: Vec<RunStatus>) -> EfpsnLive {
        let fields = EfpsnFields::default();
        let form = fields.read(vec![2, 3, 4, 5], &Room::default(), 1).unwrap();
        let mut task = form.task(10, 64).unwrap();
        task.runs.retain(|r| methods.contains(&r.method));
        let runs = task
            .runs
            .iter()
            .zip(status)
            .map(|(plan, status)| ObservedRun {
                id: plan.plan.study,
                method: plan.method,
                epsilon: None,
                status,
                reached: reached.clone(),
                iterates: Vec::new(),
                gradient_at_zero: Vec::new(),
                trace: [0, 50, 100, 150]
                    .map(|t| TracePoint {
                        iteration: t,
                        deviation: 1.0,
                        score: 0.5,
                        disagreement: 0.0,
                    })
                    .to_vec(),
                x_bar: Vec::new(),
            })
            .collect();
        let names = [(2, "Agent A"), (3, "Agent B"), (4, "Agent C"), (5, "Agent D")]
            .map(|(id, n)| (id, n.to_owned()))
            .into_iter()
            .collect();
        EfpsnLive {
            number: 1,
            finished: true,
            stopped: None,
            graph: form.graph.clone(),
            agents: vec![2, 3, 4, 5],
            names,
            task,
            runs,
            x_star_score: 0.95,
            residual: capelab_core::study::efpsn::Residual::Waiting,
            probe: (Vec::new(), 0),
            refusals: Vec::new(),
        }
    }

    #[test]
    fn a_departure_reads_the_same_on_every_row_with_the_name_people_typed() {
        let left = RunStatus::Stopped(Stop::Left(4));
        let l = live(
            &[Method::Efpsn],
            vec![vec![left.clone(); 4]],
            // the agents had reported different iterations; the rows agree on 150
            vec![
                RunStatus::Phase2 { iteration: 155 },
                RunStatus::Phase2 { iteration: 150 },
                RunStatus::Phase2 { iteration: 150 },
                RunStatus::Phase2 { iteration: 155 },
            ],
        );
        let cells: Vec<(String, f64)> = (0..4).map(|i| cell(&l, &l.runs[0], i)).collect();
        assert_eq!(cells[2].0, "left the room at iteration 150");
        for i in [0, 1, 3] {
            assert_eq!(cells[i].0, "stopped at iteration 150");
        }
        for (_, p) in &cells {
            assert!((p - (0.1 + 0.9 * 150.0 / 200.0)).abs() < 1e-12, "the bar keeps its progress");
        }
        let notes = notes(&l);
        assert_eq!(notes.len(), 1);
        assert_eq!(
            notes[0].1,
            "Agent C left the room: every run stopped after iteration 150 (the last every agent reported); the iterates so far are kept."
        );
        assert!(!notes[0].1.contains("participant"));
        // only Agent C's node is gone: only its links are cut
        let acts: Vec<Activity> = (0..4).map(|i| activity(&l, i)).collect();
        assert_eq!(acts, [Activity::Halted, Activity::Halted, Activity::Gone, Activity::Halted]);
    }

    #[test]
    fn declined_comparisons_are_counted_once_not_explained_in_every_cell() {
        let no = RunStatus::Declined(Decline::NoConsent);
        let stopped = RunStatus::Stopped(Stop::Declined { who: 2, why: Decline::NoConsent });
        let l = live(
            &Method::ALL,
            vec![
                vec![RunStatus::Done; 4],
                vec![no.clone(), stopped.clone(), no.clone(), stopped.clone()],
                vec![no.clone(), stopped.clone(), no, stopped],
            ],
            vec![RunStatus::Phase2 { iteration: 0 }; 4],
        );
        assert_eq!(cell(&l, &l.runs[1], 0).0, "declined");
        let notes = notes(&l);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(notes[0].0, "efpsn-declined");
        assert!(
            notes[0]
                .1
                .starts_with("2 of 4 sites declined the comparison runs (baseline, noise-free)"),
            "{}",
            notes[0].1
        );
        assert!(notes[0].1.ends_with("Declined: Agent A, Agent C."), "{}", notes[0].1);
        assert_eq!(activity(&l, 0), Activity::Done, "EFPSN ran on it");
        // One site of four: "1 of 4 sites", and its user (not theirs).
        let one = RunStatus::Stopped(Stop::Declined { who: 2, why: Decline::NoConsent });
        let comparison =
            vec![RunStatus::Declined(Decline::NoConsent), one.clone(), one.clone(), one];
        let l = live(
            &Method::ALL,
            vec![vec![RunStatus::Done; 4], comparison.clone(), comparison],
            vec![RunStatus::Phase2 { iteration: 0 }; 4],
        );
        let notes = super::notes(&l);
        assert!(notes[0].1.starts_with("1 of 4 sites declined the comparison runs (baseline, noise-free): its user has not allowed"), "{}", notes[0].1);
    }

    #[test]
    fn a_budget_refusal_names_the_site_and_what_to_raise_its_budget_to() {
        let why = Decline::Budget {
            shortfall: Shortfall { budget: 10.0, needed: Some(12.3456), delta: 1e-5 },
            run_epsilon: 2.5,
        };
        assert_eq!(
            decline_sentence("Lab B", &why),
            "Lab B declined before releasing anything: its budget (ε = 10 at δ = 10⁻⁵) does not cover this study: raise it to at least ε = 12.4 (2.35 more) on Lab B's page"
        );
        let mut l = live(
            &[Method::Efpsn],
            vec![vec![RunStatus::Declined(why.clone()); 4]],
            vec![RunStatus::Done; 4],
        );
        l.stopped = Some(Stop::Declined { who: 3, why });
        let notes = notes(&l);
        assert_eq!(
            notes[0].1,
            "The study stopped before any iterate of the EFPSN run was sent: Agent B declined before releasing anything: its budget (ε = 10 at δ = 10⁻⁵) does not cover this study: raise it to at least ε = 12.4 (2.35 more) on Agent B's page."
        );
    }
}
