//! Files the app serves next to itself (the bundled data sets), fetched from the page's origin.

use capelab_core::data::Dataset;
use capelab_core::efpsn::problem::labelled_csv;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// The text at `url` (relative to the page), or an error naming the file.
pub async fn text(url: &str) -> Result<String, String> {
    let window = web_sys::window().ok_or("no window")?;
    let failed = |e: wasm_bindgen::JsValue| {
        format!("could not fetch {url}: {}", e.as_string().unwrap_or_else(|| format!("{e:?}")))
    };
    let response = JsFuture::from(window.fetch_with_str(url)).await.map_err(failed)?;
    let response: web_sys::Response = response.dyn_into().map_err(failed)?;
    if !response.ok() {
        return Err(format!(
            "could not fetch {url}: HTTP {} (the app is built with it by scripts/setup.sh, which \
             writes data/digits.csv)",
            response.status()
        ));
    }
    let text = JsFuture::from(response.text().map_err(failed)?).await.map_err(failed)?;
    text.as_string().ok_or_else(|| format!("{url} is not text"))
}

/// A labelled CSV served with the app, as a data set and its number of classes.
pub async fn labelled_table(url: &str) -> Result<(Dataset, usize), String> {
    let csv = text(url).await?;
    labelled_csv(&csv).map_err(|e| format!("{url}: {e}"))
}
