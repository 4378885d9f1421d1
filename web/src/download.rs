/*!
Files out of the page and into it: downloads of text (JSON, CSV), of a chart's SVG and of the
same chart as PNG, and reading a file the user picked. Charts are self-contained SVG (see
`components/charts/svg.rs`), so the PNG is the SVG drawn on a canvas at twice its size.
*/

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    Blob, BlobPropertyBag, CanvasRenderingContext2d, HtmlAnchorElement, HtmlCanvasElement,
    HtmlImageElement, Url,
};

/// Saves `text` as a file named `file_name`.
pub fn text(file_name: &str, mime: &str, text: &str) -> Result<(), String> {
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    let options = BlobPropertyBag::new();
    options.set_type(mime);
    let blob = Blob::new_with_str_sequence_and_options(&parts, &options).map_err(js_text)?;
    let url = Url::create_object_url_with_blob(&blob).map_err(js_text)?;
    let clicked = click_link(&url, file_name);
    // The download has started by the time click() returns.
    let _ = Url::revoke_object_url(&url);
    clicked
}

/// Saves the `<svg id="{svg_id}">` on the page as `{file_stem}.svg`.
pub fn svg(svg_id: &str, file_stem: &str) -> Result<(), String> {
    let markup = svg_markup(svg_id)?;
    text(&format!("{file_stem}.svg"), "image/svg+xml", &markup)
}

/// Saves the `<svg id="{svg_id}">` on the page as `{file_stem}.png`, at twice its size.
pub async fn png(svg_id: &str, file_stem: &str) -> Result<(), String> {
    let markup = svg_markup(svg_id)?;
    let document = document()?;
    let element = document.get_element_by_id(svg_id).ok_or("the chart is gone")?;
    let size = |name: &str| {
        element.get_attribute(name).and_then(|v| v.parse::<f64>().ok()).unwrap_or(800.0)
    };
    let (width, height) = (size("width"), size("height"));

    let image = HtmlImageElement::new().map_err(js_text)?;
    let loaded = js_sys::Promise::new(&mut |resolve, reject| {
        image.set_onload(Some(&resolve));
        image.set_onerror(Some(&reject));
    });
    let src = format!("data:image/svg+xml;charset=utf-8,{}", js_sys::encode_uri_component(&markup));
    image.set_src(&src);
    JsFuture::from(loaded).await.map_err(|_| "the browser could not draw the chart".to_owned())?;

    let canvas: HtmlCanvasElement =
        document.create_element("canvas").map_err(js_text)?.dyn_into().map_err(|_| "no canvas")?;
    const SCALE: f64 = 2.0;
    canvas.set_width((width * SCALE) as u32);
    canvas.set_height((height * SCALE) as u32);
    let context: CanvasRenderingContext2d = canvas
        .get_context("2d")
        .map_err(js_text)?
        .ok_or("no 2d canvas")?
        .dyn_into()
        .map_err(|_| "no 2d canvas")?;
    context.scale(SCALE, SCALE).map_err(js_text)?;
    context.draw_image_with_html_image_element(&image, 0.0, 0.0).map_err(js_text)?;
    let url = canvas.to_data_url_with_type("image/png").map_err(js_text)?;
    click_link(&url, &format!("{file_stem}.png"))
}

/// The text of the file the user picked in `input`, if one.
pub async fn picked_file_text(
    input: &web_sys::HtmlInputElement,
) -> Result<Option<(String, String)>, String> {
    let Some(file) = input.files().and_then(|files| files.get(0)) else { return Ok(None) };
    let text = JsFuture::from(file.text()).await.map_err(js_text)?;
    Ok(Some((file.name(), text.as_string().unwrap_or_default())))
}

/// The names and bytes of every file the user picked in `input` (a `multiple` input).
pub async fn picked_files_bytes(
    input: &web_sys::HtmlInputElement,
) -> Result<Vec<(String, Vec<u8>)>, String> {
    let Some(files) = input.files() else { return Ok(Vec::new()) };
    let mut out = Vec::with_capacity(files.length() as usize);
    for i in 0..files.length() {
        let Some(file) = files.get(i) else { continue };
        let buffer = JsFuture::from(file.array_buffer()).await.map_err(js_text)?;
        out.push((file.name(), js_sys::Uint8Array::new(&buffer).to_vec()));
    }
    Ok(out)
}

fn svg_markup(svg_id: &str) -> Result<String, String> {
    let element = document()?.get_element_by_id(svg_id).ok_or("the chart is not on the page")?;
    Ok(element.outer_html())
}

fn click_link(href: &str, file_name: &str) -> Result<(), String> {
    let link: HtmlAnchorElement =
        document()?.create_element("a").map_err(js_text)?.dyn_into().map_err(|_| "no link")?;
    link.set_href(href);
    link.set_download(file_name);
    link.click();
    Ok(())
}

fn document() -> Result<web_sys::Document, String> {
    web_sys::window().and_then(|w| w.document()).ok_or_else(|| "no document".to_owned())
}

fn js_text(err: JsValue) -> String {
    err.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| err.as_string())
        .unwrap_or_else(|| "the browser refused".into())
}
