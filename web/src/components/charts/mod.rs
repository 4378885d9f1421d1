/*!
Charts as small SVG writers of our own: log axes for δ, values with error bars, and bit images,
each a pure function from a spec to a self-contained SVG string that renders in the page,
downloads as SVG and rasterises to PNG.

Why not a chart library: `leptos-chartistry` 0.2.3 (the one for Leptos 0.8) builds here, but it
has linear axes only and no error bars or scatter, and one line chart with it made a minimal
Leptos app's optimised wasm 420 KB larger (69.9 KB → 490.1 KB; gzip 29 KB → 181 KB), more than
this whole app.

- [`scale`]: linear and log axes, ticks, number formats.
- [`svg`]: the frame, legend, notes, palette.
- [`line`], [`forest`], [`bits`], [`heatmap`], [`bars`]: the kinds of chart.
- [`Chart`]: shows one chart with its SVG and PNG download buttons.
*/

pub mod bars;
pub mod bits;
pub mod forest;
pub mod heatmap;
pub mod line;
pub mod scale;
pub mod svg;

use leptos::prelude::*;

use crate::download;

/// Shows an SVG chart (`markup` must be an `<svg id="{id}">`) with download buttons.
#[component]
pub fn Chart(
    #[prop(into)] markup: Signal<String>,
    id: String,
    file_stem: String,
    testid: &'static str,
) -> impl IntoView {
    let error = RwSignal::new(None::<String>);
    let svg_download = {
        let (id, stem) = (id.clone(), file_stem.clone());
        move |_| error.set(download::svg(&id, &stem).err())
    };
    let png_download = {
        let (id, stem) = (id.clone(), file_stem.clone());
        move |_| {
            let (id, stem) = (id.clone(), stem.clone());
            leptos::task::spawn_local(async move {
                error.set(download::png(&id, &stem).await.err());
            });
        }
    };
    view! {
        <figure class="chart" data-testid=testid>
            <div class="chart-svg" inner_html=move || markup.get()></div>
            // A chart with too few points is a sentence (`line::render`): nothing to download.
            <Show when=move || markup.with(|m| m.starts_with("<svg"))>
                <figcaption class="chart-tools">
                    <button type="button" class="button button-small" on:click=svg_download.clone()>"SVG"</button>
                    <button type="button" class="button button-small" on:click=png_download.clone()>"PNG"</button>
                    {move || error.get().map(|e| view! { <span class="form-error">{e}</span> })}
                </figcaption>
            </Show>
        </figure>
    }
}
