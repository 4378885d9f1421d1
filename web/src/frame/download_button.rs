//! A button that saves one text file (a CSV, a JSON export), with the reason if the browser
//! refused.

use leptos::prelude::*;

use crate::download;

#[component]
pub fn DownloadButton(
    label: &'static str,
    file: String,
    mime: &'static str,
    text: String,
    testid: &'static str,
) -> impl IntoView {
    let error = RwSignal::new(None::<String>);
    let save = move |_| error.set(download::text(&file, mime, &text).err());
    view! {
        <button type="button" class="button button-small" data-testid=testid on:click=save>{label}</button>
        {move || error.get().map(|e| view! { <span class="form-error">{e}</span> })}
    }
}
