/*!
The headers every answer of the relay carries, for the app's pages and files and everything else.

**Content-Security-Policy.** Only what the app needs, nothing inline: its own scripts
(`script-src 'self'`: the page starts the app from `boot.js`, a file, not an inline script) and
wasm (`'wasm-unsafe-eval'`); Web Workers from `blob:` URLs and this origin (`worker/host.rs`
starts the Joint ICA, EFPSN and vertical-study workers from a `blob:` module that imports the
app's own bundle, and a module worker's static imports are fetched as workers, so they fall
under `worker-src`, not `script-src`; a `blob:` URL can only be made by script already running
on this origin); its own
stylesheet, plus `style` attributes (`style-src-attr 'unsafe-inline'`: the progress bars'
widths and the heat maps' pixelated tiles are set there; attributes cannot load anything or
match selectors, unlike `<style>` elements, which stay forbidden); images from itself and
`data:` (the heat maps' BMP tiles, the PNG export draws its SVG from a `data:` URL); fetches and
websockets to itself only (`connect-src 'self'` covers `ws:`/`wss:` to the same host). Nothing
else: `default-src 'none'`, no plugins, no `<base>`, no form submissions, no framing.

**The rest.** `X-Frame-Options: DENY` for browsers older than `frame-ancestors`;
`X-Content-Type-Options: nosniff`; `Referrer-Policy: no-referrer`, because a page's address holds
its room code (`?room=…`); `Cross-Origin-Opener-Policy: same-origin`, so a page another site
opened cannot script the app's window; `Strict-Transport-Security` only when the relay itself
serves TLS (over plain HTTP browsers ignore it, and behind a TLS proxy the proxy sends it). A
browser that met a certificate error on the way ignores it too (RFC 6797 §8.1), so a LAN
relay's self-signed certificate never locks a name to HTTPS.
*/

use axum::http::{HeaderMap, HeaderName, HeaderValue, header};

/// The app's Content-Security-Policy (see the module's text for each directive).
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; \
     script-src 'self' 'wasm-unsafe-eval'; worker-src 'self' blob:; connect-src 'self'; \
     style-src 'self'; style-src-attr 'unsafe-inline'; img-src 'self' data:; \
     object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// One year, with neither `includeSubDomains` (the relay does not speak for other names) nor
/// `preload`.
pub const STRICT_TRANSPORT_SECURITY: &str = "max-age=31536000";

/// Every header but HSTS, as (name, value).
pub const HEADERS: [(HeaderName, &str); 5] = [
    (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
    (header::X_FRAME_OPTIONS, "DENY"),
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    (header::REFERRER_POLICY, "no-referrer"),
    (HeaderName::from_static("cross-origin-opener-policy"), "same-origin"),
];

/// Adds the headers to an answer; HSTS too when it goes out over the relay's own TLS.
pub fn add(headers: &mut HeaderMap, tls: bool) {
    for (name, value) in HEADERS {
        headers.insert(name, HeaderValue::from_static(value));
    }
    if tls {
        headers.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static(STRICT_TRANSPORT_SECURITY),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_no_inline_script_and_no_eval_but_wasm() {
        let script = CONTENT_SECURITY_POLICY
            .split(';')
            .map(str::trim)
            .find(|d| d.starts_with("script-src "))
            .unwrap();
        assert_eq!(script, "script-src 'self' 'wasm-unsafe-eval'");
        assert!(!CONTENT_SECURITY_POLICY.contains("'unsafe-eval'"));
        assert!(!CONTENT_SECURITY_POLICY.contains("'unsafe-inline'; img"), "only attributes");
        assert!(CONTENT_SECURITY_POLICY.contains("style-src-attr 'unsafe-inline'"));
        for directive in CONTENT_SECURITY_POLICY.split(';').map(str::trim) {
            assert!(!directive.contains('*'), "no wildcard: {directive}");
            if directive.contains("'unsafe-inline'") {
                assert!(directive.starts_with("style-src-attr "), "{directive}");
            }
        }
    }

    #[test]
    fn hsts_only_over_tls() {
        let mut plain = HeaderMap::new();
        add(&mut plain, false);
        assert!(plain.get(header::STRICT_TRANSPORT_SECURITY).is_none());
        assert_eq!(plain.get(header::X_CONTENT_TYPE_OPTIONS).unwrap(), "nosniff");
        let mut tls = HeaderMap::new();
        add(&mut tls, true);
        assert_eq!(tls.get(header::STRICT_TRANSPORT_SECURITY).unwrap(), STRICT_TRANSPORT_SECURITY);
        assert_eq!(tls.len(), HEADERS.len() + 1);
    }
}
