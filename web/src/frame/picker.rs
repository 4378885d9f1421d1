//! The dashboard's study frame: the picker (one tab per registered study), the picked study's
//! section (its form, live view and results), and a status line that announces a run starting
//! and ending to screen readers while the page scrolls to what changed.

use leptos::prelude::*;
use wasm_bindgen::JsCast;

use crate::frame::dashboard::DashboardStudy;
use crate::session::RoomState;
use crate::studies::registry::{STUDIES, Stage, entry};

#[component]
pub fn StudyFrame(
    study: DashboardStudy,
    state: RoomState,
    picked: RwSignal<&'static str>,
) -> impl IntoView {
    let section = NodeRef::<leptos::html::Section>::new();
    let stage = Memo::new(move |_| (entry(picked.get()).stage)(study));
    // Scroll to the live view when a run starts and to the result when it ends; not on every
    // update of a running study (that would fight the reader's own scrolling).
    Effect::new(move |previous: Option<(&'static str, bool, bool)>| {
        let s = stage.get();
        let now = (picked.get(), matches!(s, Stage::Running(_)), matches!(s, Stage::Done(_)));
        if let Some(before) = previous
            && before.0 == now.0
            && (now.1 && !before.1 || now.2 && !before.2)
        {
            scroll_to_focus(section);
        }
        now
    });
    let announcement = move || match stage.get() {
        Stage::Idle => String::new(),
        Stage::Running(s) | Stage::Done(s) => s,
    };
    let tabs = STUDIES
        .iter()
        .map(|e| {
            let key = e.key;
            view! {
                <button type="button" role="tab" data-testid=format!("pick-{key}")
                    aria-selected=move || (picked.get() == key).to_string()
                    class=move || if picked.get() == key { "button button-small button-on" } else { "button button-small" }
                    disabled=move || study.view.busy()
                    on:click=move |_| {
                        picked.set(key);
                        // A refusal belongs to the form it was about.
                        study.view.start_error.set(None);
                    }>{e.label}</button>
            }
        })
        .collect_view();
    view! {
        <nav class="card span-all study-picker" data-testid="study-picker" aria-labelledby="study-picker-label">
            <span class="label" id="study-picker-label">"Study"</span>
            // The tab list holds only the tabs (ARIA); the status line is the nav's, beside it.
            <div class="picker-tabs" role="tablist" aria-labelledby="study-picker-label">{tabs}</div>
            <p class="study-status" role="status" aria-live="polite" data-testid="study-status">{announcement}</p>
        </nav>
        <section class="span-all study-section" node_ref=section data-testid="study-section" data-study=move || picked.get()
            data-stage=move || match stage.get() { Stage::Idle => "idle", Stage::Running(_) => "running", Stage::Done(_) => "done" }>
            {move || (entry(picked.get()).panel)(study, state)}
        </section>
    }
}

/// Brings the section's first `.study-focus` element (its live view or latest result) into view,
/// once the update that made it has rendered.
fn scroll_to_focus(section: NodeRef<leptos::html::Section>) {
    request_animation_frame(move || {
        let Some(section) = section.get_untracked() else { return };
        let section: web_sys::HtmlElement = section.unchecked_into();
        if let Ok(Some(target)) = section.query_selector(".study-focus") {
            target.scroll_into_view();
        }
    });
}
