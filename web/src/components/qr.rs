//! A QR code of a link, as inline SVG, so phones in a classroom can join by camera.

use leptos::prelude::*;
use qrcode::QrCode as Qr;
use qrcode::render::svg;

/// Renders `text` as a QR code (`data-testid="join-qr"`). The SVG scales with its box.
#[component]
pub fn QrCode(text: String) -> impl IntoView {
    match qr_svg(&text) {
        Ok(svg) => view! {
            <div class="qr" data-testid="join-qr" role="img" aria-label=format!("QR code of {text}") inner_html=svg></div>
        }
        .into_any(),
        Err(err) => view! { <p class="muted">"No QR code for this link: " {err}</p> }.into_any(),
    }
}

/// The SVG markup of `text`'s QR code, without the XML prolog (it is inlined in HTML).
fn qr_svg(text: &str) -> Result<String, String> {
    let code = Qr::new(text.as_bytes()).map_err(|e| e.to_string())?;
    let svg = code
        .render::<svg::Color>()
        .min_dimensions(240, 240)
        .dark_color(svg::Color("#111"))
        .light_color(svg::Color("#fff"))
        .build();
    Ok(match svg.find("<svg") {
        Some(start) => svg[start..].to_owned(),
        None => svg,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_svg_is_inline_markup_that_encodes_the_whole_link() {
        let link = "http://192.168.1.20:8080/?room=K7QX2M";
        let svg = qr_svg(link).unwrap();
        assert!(svg.starts_with("<svg"), "{svg:.40}");
        assert!(svg.ends_with("</svg>"));
        // Independent check: the encoder picked a version big enough for the link's bytes.
        let code = Qr::new(link.as_bytes()).unwrap();
        assert!(code.width() >= 25, "a 38-byte link needs at least version 2 (25 modules)");
    }
}
