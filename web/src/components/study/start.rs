//! What every study form ends with: the start button (it needs two sites present and no study
//! running) and the driver's refusal to start, in its own words.

use leptos::prelude::*;

/// The form's submit button: "Waiting for at least 2 sites", or "{action} with the S sites present".
#[component]
pub fn StartButton(
    test_id: &'static str,
    action: &'static str,
    present: Memo<usize>,
    #[prop(into)] running: Signal<bool>,
) -> impl IntoView {
    let label = move || match present.get() {
        0 | 1 => "Waiting for at least 2 sites".to_owned(),
        s => format!("{action} with the {s} sites present"),
    };
    view! {
        <button
            type="submit"
            class="button button-primary"
            data-testid=test_id
            disabled=move || running.get() || present.get() < 2
        >
            {label}
        </button>
    }
}

/// Why the last start was refused, if it was.
#[component]
pub fn StartError(error: RwSignal<Option<String>>) -> impl IntoView {
    move || {
        error.get().map(|e| {
            view! { <p class="callout callout-error" data-testid="start-error" role="alert">{e}</p> }
        })
    }
}
