/*!
The built web app, served from `Config::static_dir` (every path but `/ws` and `/healthz`).

**Compression.** The build writes a brotli (`.br`) and a gzip (`.gz`) copy next to each text and
wasm file of `dist/` (`scripts/precompress.mjs`, trunk's post-build hook). A client that accepts
`br` or `gzip` gets that copy with `Content-Encoding`; any other client, or a file without a copy,
gets the file as it is. Nothing is compressed while serving. Every answer says
`Vary: Accept-Encoding`, so a cache never hands one client's encoding to another.

**Caching.** Trunk names the app's files by their content (`capelab-web-91f36b0d293aa9e5.js`,
`…_bg.wasm`, `style-b71d16067ab8b90.css`): a new build gives new names, so those files are
`Cache-Control: public, max-age=31536000, immutable` and a reload does not even ask for them.
`index.html` (which names them) and any other file are `no-cache`: kept, but revalidated on every
load with a weak `ETag` (length and modification time of the file) and `Last-Modified`, which
cost a 304 when nothing changed. Unknown paths answer `index.html` (the app reads `?room=CODE`
itself), with `index.html`'s headers, never the immutable ones.

The directory is read per request, so building the app while the relay runs just works. Without
an `index.html` every path answers a short page that says how to build the app.
*/

use std::path::{Component, Path, PathBuf};
use std::time::UNIX_EPOCH;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use tower_http::services::{ServeDir, ServeFile};

/// For files whose name carries a hash of their content.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// For `index.html` and every other file: keep, but ask before each use.
pub const REVALIDATE: &str = "no-cache";

/// Answers `request` from the app in `dir`.
pub async fn serve(dir: &Path, mut request: Request) -> Response {
    let index = dir.join("index.html");
    // Checked per request, so building the app while the relay runs just works.
    if !index.is_file() {
        return not_built(dir);
    }
    let path = request.uri().path();
    // The file `ServeDir` below will send: the one named (if it exists) or `index.html`. `None`
    // for paths this does not resolve the way `ServeDir` does (percent-escapes): those get no ETag.
    let (served, immutable) = match resolve(dir, path) {
        Some(file) if file.is_file() => {
            let hashed = is_content_hashed(&file);
            (Some(file), hashed)
        }
        Some(_) => (Some(index.clone()), false),
        None => (None, false),
    };
    let etag = served.as_deref().and_then(weak_etag);

    if let Some(etag) = &etag
        && matches!(*request.method(), Method::GET | Method::HEAD)
        && let Some(tags) = request.headers().get(header::IF_NONE_MATCH)
    {
        if none_match_fails(tags, etag) {
            let mut response = StatusCode::NOT_MODIFIED.into_response();
            set_headers(response.headers_mut(), immutable, Some(etag));
            return response;
        }
        // A changed ETag decides: the date must not turn it into a 304 (RFC 9110 §13.2.2).
        request.headers_mut().remove(header::IF_MODIFIED_SINCE);
    }

    let mut files = ServeDir::new(dir)
        .precompressed_br()
        .precompressed_gzip()
        .fallback(ServeFile::new(index).precompressed_br().precompressed_gzip());
    let mut response = match files.try_call(request).await {
        Ok(response) => response.map(Body::new),
        Err(error) => {
            return (StatusCode::INTERNAL_SERVER_ERROR, format!("could not read the app: {error}"))
                .into_response();
        }
    };
    let status = response.status();
    let headers = response.headers_mut();
    if status.is_success() || status == StatusCode::NOT_MODIFIED {
        set_headers(headers, immutable, etag.as_ref());
    } else {
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    response
}

fn set_headers(headers: &mut HeaderMap, immutable: bool, etag: Option<&HeaderValue>) {
    let cache = if immutable { IMMUTABLE } else { REVALIDATE };
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if let Some(etag) = etag {
        headers.insert(header::ETAG, etag.clone());
    }
}

/// The file under `dir` that `path` names (`…/` meaning its `index.html`), or `None` for a path
/// with percent-escapes or anything but plain names in it.
fn resolve(dir: &Path, path: &str) -> Option<PathBuf> {
    if path.contains('%') || path.contains('\\') {
        return None;
    }
    let relative = path.trim_start_matches('/');
    let mut file = dir.to_path_buf();
    for component in Path::new(relative).components() {
        match component {
            Component::Normal(name) => file.push(name),
            _ => return None,
        }
    }
    if relative.is_empty() || relative.ends_with('/') {
        file.push("index.html");
    }
    Some(file)
}

/// Whether trunk named this file after its content: `<name>-<hex>.<ext>`, the wasm as
/// `<name>-<hex>_bg.wasm`, with 8 to 16 lowercase hex digits (trunk writes a 64-bit hash in hex).
pub fn is_content_hashed(file: &Path) -> bool {
    let Some(name) = file.file_name().and_then(|name| name.to_str()) else { return false };
    let Some((stem, _extension)) = name.split_once('.') else { return false };
    let stem = stem.strip_suffix("_bg").unwrap_or(stem);
    let Some((_, hash)) = stem.rsplit_once('-') else { return false };
    (8..=16).contains(&hash.len()) && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `W/"<length>-<modified, ns>"` of the file as built (its `.br`/`.gz` copies are made from it).
fn weak_etag(file: &Path) -> Option<HeaderValue> {
    let meta = std::fs::metadata(file).ok()?;
    let modified = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?.as_nanos();
    HeaderValue::from_str(&format!("W/\"{:x}-{modified:x}\"", meta.len())).ok()
}

/// `If-None-Match` "fails" (the client's copy is current) when it lists `etag` or is `*`;
/// compared weakly, as RFC 9110 §13.1.2 asks.
fn none_match_fails(header: &HeaderValue, etag: &HeaderValue) -> bool {
    let Ok(listed) = header.to_str() else { return false };
    let opaque = |tag: &str| tag.trim().trim_start_matches("W/").to_owned();
    let ours = opaque(etag.to_str().unwrap_or_default());
    listed.split(',').any(|tag| tag.trim() == "*" || opaque(tag) == ours)
}

fn not_built(dir: &Path) -> Response {
    let dir = html_escape(&dir.display().to_string());
    let page = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>capelab relay: app not built</title></head><body>\n\
         <h1>The capelab app is not built yet</h1>\n\
         <p>This relay is running, but it serves the web app from <code>{dir}</code>, \
         which has no <code>index.html</code>.</p>\n\
         <p>Run <code>./scripts/demo</code> from the capelab checkout: it builds the app and \
         starts the relay. Or build the app into that directory and reload this page, or start \
         the relay with <code>--static-dir</code> pointing at a built app.</p>\n\
         </body></html>\n"
    );
    (StatusCode::SERVICE_UNAVAILABLE, [(header::CACHE_CONTROL, "no-store")], Html(page))
        .into_response()
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trunk_names_are_recognised_as_content_hashed() {
        for name in [
            "capelab-web-91f36b0d293aa9e5.js",
            "capelab-web-91f36b0d293aa9e5_bg.wasm",
            "style-b71d16067ab8b90.css",
            "capelab-web-91f36b0d293aa9e5_bg.wasm.br",
        ] {
            assert!(is_content_hashed(Path::new(name)), "{name}");
        }
        for name in [
            "index.html",
            "capelab-web.js",
            "style-main.css",
            "app-1234.js",
            "app-91F36B0D293AA9E5.js",
            "app-91f36b0d293aa9e5000.js",
            "91f36b0d293aa9e5",
        ] {
            assert!(!is_content_hashed(Path::new(name)), "{name}");
        }
    }

    #[test]
    fn paths_resolve_like_serve_dir_or_not_at_all() {
        let dir = Path::new("/srv/dist");
        assert_eq!(resolve(dir, "/"), Some(dir.join("index.html")));
        assert_eq!(resolve(dir, "/a/b.js"), Some(dir.join("a/b.js")));
        assert_eq!(resolve(dir, "/a/"), Some(dir.join("a/index.html")));
        assert_eq!(resolve(dir, "/../etc/passwd"), None);
        assert_eq!(resolve(dir, "/a%20b.js"), None);
    }

    #[test]
    fn if_none_match_compares_weakly_and_accepts_lists_and_star() {
        let ours = HeaderValue::from_static("W/\"10-abc\"");
        let check = |sent: &'static str| none_match_fails(&HeaderValue::from_static(sent), &ours);
        assert!(check("W/\"10-abc\""));
        assert!(check("\"10-abc\""));
        assert!(check("\"x\", W/\"10-abc\""));
        assert!(check("*"));
        assert!(!check("W/\"10-abd\""));
    }
}
