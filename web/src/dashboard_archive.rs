/*!
What a dashboard keeps across a reload of its tab: every study of the session, as JSON, in
`sessionStorage`, shown again after the reload and downloadable as one file.

The roles themselves cannot be kept: their randomness, SecureAgg's secrets and the worker's
matrices live only in memory, so a study running when the page reloads is not resumed. It stops
cleanly instead: the sites see the dashboard leave and their roles end their part (the core's site
roles abort when their aggregator leaves), each site's ledger keeps every release it made, and the
reloaded dashboard lists the study as interrupted with what it had reached (issue 16 §3).

The archive belongs to one room: a dashboard that creates a new room, or leaves, starts empty.
*/

use std::collections::BTreeMap;

use gloo::storage::{SessionStorage, Storage};
use gloo::timers::callback::Timeout;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::frame::dashboard::{DashboardView, FinishedRound, LiveStudy};
use crate::ledger_report::LedgerReport;
use crate::studies::mean::export::round_json;
use crate::studies::nn::run::{NnFinished, NnLive};
use crate::transport::Hello;
use capelab_core::study::mean::StudyResult;
use capelab_core::wire::{ParticipantId, Role};

const KEY: &str = "capelab.dashboard.archive";

/// Where a study was when it was archived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StudyState {
    Finished,
    Running,
    /// Running when the page reloaded: stopped there.
    Interrupted,
}

/// One study of the session, as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArchivedStudy {
    /// "Private mean", "NN", "Joint ICA", "EFPSN", "Vertical DP-VI".
    pub kind: String,
    /// The study's number among those of its kind on this dashboard page.
    pub number: usize,
    pub state: StudyState,
    /// One line for the list, e.g. "iteration 12 of 100".
    pub summary: String,
    /// Everything the dashboard showed of it.
    pub record: Value,
}

/// The session file: the room, then the studies of earlier lives of this page and of this one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Archive {
    pub room: String,
    pub studies: Vec<ArchivedStudy>,
}

impl Archive {
    /// The file a user downloads.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}

/// The studies an earlier life of this tab archived, if `hello` re-enters that room as its
/// dashboard (a reload). Anything else (a new room) forgets the old archive. A study that was
/// running then is marked interrupted.
pub fn earlier(hello: &Hello) -> Vec<ArchivedStudy> {
    let room = match hello {
        Hello::Join { room, role: Role::Dashboard, resume: Some(_), .. } => room,
        _ => {
            clear();
            return Vec::new();
        }
    };
    let Ok(archive) = SessionStorage::get::<Archive>(KEY) else { return Vec::new() };
    if &archive.room != room {
        return Vec::new();
    }
    interrupt(archive.studies)
}

/// Marks what was running as interrupted (the page that ran it is gone).
fn interrupt(mut studies: Vec<ArchivedStudy>) -> Vec<ArchivedStudy> {
    for study in &mut studies {
        if study.state == StudyState::Running {
            study.state = StudyState::Interrupted;
        }
    }
    studies
}

/// Keeps `archive` for the next life of this tab. Storage can be full or disabled; then a reload
/// loses the list (the download still works while the page lives).
pub fn save(archive: &Archive) {
    let _ = SessionStorage::set(KEY, archive);
}

pub fn clear() {
    SessionStorage::delete(KEY);
}

/// Keeps the archive of `room` up to date while the dashboard lives: `earlier` (from before a
/// reload), then every study the view shows. Saves at most every [`SAVE_EVERY_MS`] while things
/// change (a Joint ICA study's maps are large), and once more as the page goes away, so a reload
/// loses nothing of a running study's progress.
pub fn keep(view: DashboardView, room: Memo<Option<String>>, earlier: Vec<ArchivedStudy>) {
    let save_now = move || {
        if let Some(room) = room.get_untracked() {
            save(&now(room, &earlier, &view));
        }
    };
    let pending = StoredValue::new_local(None::<Timeout>);
    let on_change = save_now.clone();
    Effect::new(move || {
        track(&view);
        room.track();
        if pending.with_value(Option::is_some) {
            return;
        }
        let save_now = on_change.clone();
        let timer = Timeout::new(SAVE_EVERY_MS, move || {
            pending.set_value(None);
            save_now();
        });
        pending.set_value(Some(timer));
    });
    let leaving = window_event_listener_untyped("pagehide", move |_| save_now());
    on_cleanup(move || leaving.remove());
}

/// How often a changing dashboard is written to storage, at most.
pub const SAVE_EVERY_MS: u32 = 300;

/// Subscribes the running effect to every signal [`snapshot`] reads.
fn track(view: &DashboardView) {
    view.reports.track();
    view.rounds.track();
    view.live.track();
    view.nn_rounds.track();
    view.nn_live.track();
    view.ica.track();
    view.efpsn.track();
    view.vvi.track();
}

/// The session as it stands: `earlier`, then every study the view shows now (read untracked).
pub fn now(room: String, earlier: &[ArchivedStudy], view: &DashboardView) -> Archive {
    let mut studies = earlier.to_vec();
    studies.extend(untrack(|| snapshot(view)));
    Archive { room, studies }
}

/// Every study the dashboard shows now.
fn snapshot(view: &DashboardView) -> Vec<ArchivedStudy> {
    let mut studies = Vec::new();
    view.reports.with(|reports| {
        view.rounds.with(|rounds| studies.extend(rounds.iter().map(|r| finished_mean(r, reports))));
    });
    view.live.with(|live| studies.extend(live.as_ref().map(running_mean)));
    view.nn_rounds.with(|rounds| studies.extend(rounds.iter().map(finished_nn)));
    view.nn_live.with(|live| studies.extend(live.as_ref().map(running_nn)));
    view.ica.with(|ica| {
        studies.extend(ica.as_ref().map(|live| {
            let summary = match (&live.failure, live.finished) {
                (Some(failure), _) => format!("{}: {failure}", live.stage),
                (None, true) => format!("{} finished", live.stage),
                (None, false) => format!("{}: {}", live.stage, live.phase),
            };
            study("Joint ICA", live.number, live.finished, summary, live)
        }))
    });
    view.efpsn.with(|efpsn| {
        studies.extend(efpsn.as_ref().map(|live| {
            let summary = match (&live.stopped, live.finished) {
                (Some(reason), _) => format!("stopped: {reason}"),
                (None, true) => format!("{} runs finished", live.runs.len()),
                (None, false) => format!("{} runs under way", live.runs.len()),
            };
            study("EFPSN", live.number, live.finished, summary, live)
        }))
    });
    view.vvi.with(|vvi| {
        studies.extend(vvi.as_ref().map(|live| {
            let summary = format!("{} of {} steps", live.steps_done, live.task.steps);
            study("Vertical DP-VI", live.number, live.finished, summary, live)
        }))
    });
    studies
}

fn study(
    kind: &str,
    number: usize,
    finished: bool,
    summary: String,
    record: &impl Serialize,
) -> ArchivedStudy {
    ArchivedStudy {
        kind: kind.into(),
        number,
        state: if finished { StudyState::Finished } else { StudyState::Running },
        summary,
        record: to_value(record),
    }
}

fn to_value(record: &impl Serialize) -> Value {
    serde_json::to_value(record).unwrap_or_else(|e| json!({ "error": e.to_string() }))
}

fn finished_mean(
    round: &FinishedRound,
    reports: &BTreeMap<ParticipantId, LedgerReport>,
) -> ArchivedStudy {
    let summary = match &round.outcome.result {
        StudyResult::Estimated(e) => format!("estimate over {} sites", e.survivors.len()),
        StudyResult::Aborted { reason } => format!("stopped: {reason}"),
    };
    let record = serde_json::from_str(&round_json(round, reports))
        .unwrap_or_else(|e| json!({ "error": e.to_string() }));
    ArchivedStudy {
        kind: "Private mean".into(),
        number: round.number,
        state: StudyState::Finished,
        summary,
        record,
    }
}

fn running_mean(live: &LiveStudy) -> ArchivedStudy {
    let record = json!({
        "study": live.study,
        "params": live.params,
        "phase": format!("{:?}", live.phase),
        "accepted": live.accepted,
        "waiting_for": live.waiting_for,
        "dropouts": live.dropouts,
        "site_names": live.names,
    });
    ArchivedStudy {
        kind: "Private mean".into(),
        number: live.number,
        state: StudyState::Running,
        summary: format!("under way ({:?})", live.phase),
        record,
    }
}

fn finished_nn(round: &NnFinished) -> ArchivedStudy {
    let summary = format!("{} iterations; {}", round.outcome.iterations, round.outcome.stop);
    study("NN", round.number, true, summary, round)
}

fn running_nn(live: &NnLive) -> ArchivedStudy {
    let summary = format!("iteration {} of {}", live.records.len(), live.params.max_iterations);
    study("NN", live.number, false, summary, live)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archived(kind: &str, state: StudyState) -> ArchivedStudy {
        ArchivedStudy {
            kind: kind.into(),
            number: 1,
            state,
            summary: "s".into(),
            record: json!({ "k": 1 }),
        }
    }

    #[test]
    fn a_reload_marks_what_was_running_as_interrupted_and_keeps_the_rest() {
        let studies = vec![
            archived("Private mean", StudyState::Finished),
            archived("NN", StudyState::Running),
            archived("EFPSN", StudyState::Interrupted),
        ];
        let states: Vec<StudyState> = interrupt(studies).iter().map(|s| s.state).collect();
        assert_eq!(
            states,
            [StudyState::Finished, StudyState::Interrupted, StudyState::Interrupted]
        );
    }

    #[test]
    fn the_session_file_reads_back_as_written() {
        let archive =
            Archive { room: "K7QX2M".into(), studies: vec![archived("NN", StudyState::Running)] };
        let text = archive.to_json();
        assert!(text.contains("\"state\": \"running\""), "{text}");
        assert_eq!(serde_json::from_str::<Archive>(&text).unwrap(), archive);
    }
}
