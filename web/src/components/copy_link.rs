//! A link in a read-only field with a Copy button.
//!
//! The Clipboard API exists only in secure contexts (https or localhost); a classroom server on
//! `http://192.168.…` has none, so the fallback selects the text and uses the legacy copy command.

use std::time::Duration;

use leptos::html::Input;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// Shows `link` (`data-testid="join-link"`) and copies it on click.
#[component]
pub fn CopyLink(link: String) -> impl IntoView {
    let input = NodeRef::<Input>::new();
    let feedback = RwSignal::new(None::<&'static str>);
    let copy = {
        let link = link.clone();
        move |_| {
            let link = link.clone();
            leptos::task::spawn_local(async move {
                let copied = copy_to_clipboard(&link).await || copy_by_selection(input);
                feedback.set(Some(if copied { "Copied" } else { "Select the link and copy it" }));
                set_timeout(move || feedback.set(None), Duration::from_secs(3));
            });
        }
    };
    view! {
        <div class="copy-link">
            <input
                node_ref=input
                class="link-field"
                data-testid="join-link"
                readonly
                value=link
                aria-label="Join link"
                on:focus=move |_| {
                    if let Some(el) = input.get() {
                        el.select();
                    }
                }
            />
            <button type="button" class="button" data-testid="copy-link" on:click=copy>
                {move || feedback.get().unwrap_or("Copy")}
            </button>
        </div>
    }
}

/// Writes through the async Clipboard API, if this page has one.
async fn copy_to_clipboard(text: &str) -> bool {
    let Some(window) = web_sys::window() else { return false };
    let navigator = window.navigator();
    let has_clipboard = js_sys::Reflect::get(&navigator, &"clipboard".into())
        .map(|c| !c.is_undefined() && !c.is_null())
        .unwrap_or(false);
    if !has_clipboard {
        return false;
    }
    let promise = navigator.clipboard().write_text(text);
    wasm_bindgen_futures::JsFuture::from(promise).await.is_ok()
}

/// Selects the field's text and asks the document to copy the selection.
fn copy_by_selection(input: NodeRef<Input>) -> bool {
    let Some(el) = input.get() else { return false };
    el.select();
    web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.dyn_into::<web_sys::HtmlDocument>().ok())
        .and_then(|d| d.exec_command("copy").ok())
        .unwrap_or(false)
}
