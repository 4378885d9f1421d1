//! Text a user brings into a tab: the text of a picked file, or text typed or pasted into a box.
//! The Local data panel, the ledger's import, a party's own columns in the vertical study and the
//! dashboard's CLI-run comparison all take text this way; what the text means is their caller's
//! to check (and to say what is wrong with it).

use leptos::prelude::*;
use wasm_bindgen::JsCast;

use crate::download;

/// A file input: the picked file's (name, text) go to `on_text`, a read failure to `on_error`.
/// Picking the same file again reads it again.
#[component]
pub fn TextFileInput(
    id: &'static str,
    accept: &'static str,
    #[prop(optional)] testid: Option<&'static str>,
    #[prop(optional)] label: Option<&'static str>,
    on_text: Callback<(String, String)>,
    on_error: Callback<String>,
) -> impl IntoView {
    let on_change = move |ev: leptos::ev::Event| {
        let Some(input) = ev.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
        else {
            return;
        };
        leptos::task::spawn_local(async move {
            match download::picked_file_text(&input).await {
                Ok(Some(picked)) => on_text.run(picked),
                Ok(None) => {}
                Err(e) => on_error.run(format!("could not read the file: {e}")),
            }
            input.set_value("");
        });
    };
    view! {
        <input id=id type="file" accept=accept data-testid=testid aria-label=label on:change=on_change />
    }
}

/// A box to type or paste text into, and a button that hands its text to `on_use`.
#[component]
pub fn PasteBox(
    id: &'static str,
    text: RwSignal<String>,
    button: &'static str,
    button_testid: &'static str,
    on_use: Callback<String>,
    #[prop(optional)] label: Option<&'static str>,
) -> impl IntoView {
    view! {
        <textarea id=id rows="6" spellcheck="false" aria-label=label bind:value=text></textarea>
        <button type="button" class="button" data-testid=button_testid
            on:click=move |_| on_use.run(text.get_untracked())>{button}</button>
    }
}
