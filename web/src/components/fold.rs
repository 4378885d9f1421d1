//! A section that folds away: a card with a title (and a short hint beside it) that opens to its
//! content. Used for settings that matter only to some studies, so a phone shows what is relevant
//! first. `open` follows the page's state (a study that needs the section opens it); the user can
//! still open or close it by hand, and `shown` (when given) follows whether it is open now, so a
//! page can leave a fold's content out until someone looks at it.

use leptos::prelude::*;

#[component]
pub fn Fold(
    title: &'static str,
    /// One line next to the title, e.g. what the folded settings are for.
    #[prop(into)]
    hint: Signal<String>,
    testid: &'static str,
    #[prop(into)] open: Signal<bool>,
    /// Set to whether the fold is open, each time it opens or closes (by hand or by `open`).
    #[prop(optional)]
    shown: Option<RwSignal<bool>>,
    children: Children,
) -> impl IntoView {
    let details = NodeRef::<leptos::html::Details>::new();
    let toggled = move |_| {
        if let (Some(shown), Some(details)) = (shown, details.get()) {
            shown.set(details.open());
        }
    };
    view! {
        <details class="card fold" data-testid=testid node_ref=details prop:open=move || open.get() on:toggle=toggled>
            <summary>
                <span class="fold-title">{title}</span>
                <span class="fold-hint">{move || hint.get()}</span>
            </summary>
            <div class="fold-body">{children()}</div>
        </details>
    }
}
