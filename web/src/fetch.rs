//! Files the app serves next to itself (the bundled data sets), fetched from the page's origin,
//! on the page or in a worker.

use capelab_core::data::Dataset;
use capelab_core::efpsn::problem::labelled_csv;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// The global `fetch`: the window's on a page, the worker's in a Web Worker.
    #[wasm_bindgen(js_name = fetch)]
    fn global_fetch(url: &str) -> js_sys::Promise;
}

/// `url` made absolute against the page's base address: what a worker started from a `blob:`
/// URL must be given, as it cannot resolve the page's relative addresses.
pub fn absolute(url: &str) -> Result<String, String> {
    let document = web_sys::window().and_then(|w| w.document()).ok_or("no document")?;
    let base = document.base_uri().ok().flatten().ok_or("no base address")?;
    web_sys::Url::new_with_base(url, &base).map(|u| u.href()).map_err(|e| format!("{url}: {e:?}"))
}

/// The text at `url` (relative to the page, or absolute in a worker), or an error naming the
/// file.
pub async fn text(url: &str) -> Result<String, String> {
    let failed = |e: wasm_bindgen::JsValue| {
        format!("could not fetch {url}: {}", e.as_string().unwrap_or_else(|| format!("{e:?}")))
    };
    let response = JsFuture::from(global_fetch(url)).await.map_err(failed)?;
    let response: web_sys::Response = response.dyn_into().map_err(failed)?;
    if !response.ok() {
        return Err(format!(
            "could not fetch {url}: HTTP {} (the app is built with it by scripts/setup.sh, which \
             writes data/)",
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
