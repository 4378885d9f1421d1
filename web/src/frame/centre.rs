//! The presenter view's frame for a study's centrepiece: its progress in one line and its one
//! chart, sized by the presenter's frame (`.present-centre`) so it fits the screen with the
//! budget bars beside it. Each study's own centrepiece (`studies/<study>/centre.rs`) fills it.

use leptos::prelude::*;

use crate::components::charts::{Chart, svg};

/// The headline and the chart, as every centrepiece lays them out.
#[component]
pub fn Centre(
    #[prop(into)] headline: Signal<String>,
    #[prop(into)] markup: Signal<String>,
    id: &'static str,
    file_stem: &'static str,
) -> impl IntoView {
    // Legible from the back of a room: no text under 18 px at 1280×800.
    let markup = Signal::derive(move || markup.with(|m| svg::for_presenter(m)));
    view! {
        <div class="present-centre" data-testid="present-centrepiece">
            <p class="present-headline" data-testid="present-progress">{move || headline.get()}</p>
            <Chart markup id=id.to_owned() file_stem=file_stem.to_owned() testid="present-chart" />
        </div>
    }
}
