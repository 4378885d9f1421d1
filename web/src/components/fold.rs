//! A section that folds away: a card with a title (and a short hint beside it) that opens to its
//! content. Used for settings that matter only to some studies, so a phone shows what is relevant
//! first. `open` follows the page's state (a study that needs the section opens it); the user can
//! still open or close it by hand.

use leptos::prelude::*;

#[component]
pub fn Fold(
    title: &'static str,
    /// One line next to the title, e.g. what the folded settings are for.
    #[prop(into)]
    hint: Signal<String>,
    testid: &'static str,
    #[prop(into)] open: Signal<bool>,
    children: Children,
) -> impl IntoView {
    view! {
        <details class="card fold" data-testid=testid prop:open=move || open.get()>
            <summary>
                <span class="fold-title">{title}</span>
                <span class="fold-hint">{move || hint.get()}</span>
            </summary>
            <div class="fold-body">{children()}</div>
        </details>
    }
}
