//! The built app as a browser gets it: a real relay on a real socket, asked by a real HTTP
//! client (hyper) with the `Accept-Encoding` a browser sends. The app directory is laid out as
//! trunk and `scripts/precompress.mjs` lay out `dist/`: content-hashed names, `.br` and `.gz`
//! copies next to the files.

mod common;

use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, SystemTime};

use axum::http::{HeaderMap, Request, StatusCode, header};
use capelab_relay::static_files::{IMMUTABLE, REVALIDATE};
use common::{HANG_GUARD, Relay, TempDir, start};
use http_body_util::{BodyExt as _, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

const JS: &str = "capelab-web-0123456789abcdef.js";
const WASM: &str = "capelab-web-0123456789abcdef_bg.wasm";
const CSS: &str = "style-b71d16067ab8b90.css"; // trunk drops leading zeros: 15 digits
const NOTES: &str = "notes.txt";

struct App {
    dist: TempDir,
    relay: Relay,
}

fn index_html(version: &str) -> String {
    format!(
        "<!doctype html><html><head><title>capelab {version}</title>\
         <link rel=\"stylesheet\" href=\"/{CSS}\"></head><body>{}\
         <script type=\"module\">import init from '/{JS}'; await init('/{WASM}');</script>\
         </body></html>",
        "<p>capelab app</p>".repeat(20)
    )
}

fn wasm_bytes() -> Vec<u8> {
    let mut bytes = b"\0asm\x01\0\0\0".to_vec();
    bytes.extend((0u32..20_000).map(|i| (i * 7 % 251) as u8 ^ (i % 13) as u8));
    bytes
}

fn brotli(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut writer = brotli::CompressorWriter::new(&mut out, 4096, 11, 22);
    writer.write_all(raw).unwrap();
    drop(writer);
    out
}

fn gzip(raw: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(raw).unwrap();
    encoder.finish().unwrap()
}

/// Writes `name` and, as the build step does, the copies listed in `copies` ("br", "gz").
fn write_file(dir: &Path, name: &str, raw: &[u8], copies: &[&str]) {
    std::fs::write(dir.join(name), raw).unwrap();
    for copy in copies {
        let bytes = match *copy {
            "br" => brotli(raw),
            "gz" => gzip(raw),
            other => panic!("unknown copy {other}"),
        };
        assert!(bytes.len() < raw.len(), "the fixture's {name}.{copy} must be smaller");
        std::fs::write(dir.join(format!("{name}.{copy}")), bytes).unwrap();
    }
}

/// The originals, by path.
fn originals() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("index.html", index_html("1").into_bytes()),
        (JS, "export default async function init() { /* glue */ }\n".repeat(40).into_bytes()),
        (WASM, wasm_bytes()),
        (CSS, "body { font: 16px system-ui; }\n".repeat(40).into_bytes()),
        (NOTES, b"no copies of this one".to_vec()),
    ]
}

async fn app() -> App {
    let dist = TempDir::new("precompressed");
    for (name, raw) in originals() {
        // The CSS has only a gzip copy and the notes none: the relay must fall back per file.
        let copies: &[&str] = match name {
            CSS => &["gz"],
            NOTES => &[],
            _ => &["br", "gz"],
        };
        write_file(dist.path(), name, &raw, copies);
    }
    let dir = dist.path().to_owned();
    let relay = start(move |config| config.static_dir = dir).await;
    App { dist, relay }
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: header::HeaderName) -> &str {
        self.headers.get(&name).map_or("", |value| value.to_str().unwrap())
    }

    /// The body with its `Content-Encoding` undone.
    fn decoded(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self.header(header::CONTENT_ENCODING) {
            "br" => {
                brotli::Decompressor::new(&self.body[..], 4096).read_to_end(&mut out).unwrap();
            }
            "gzip" => {
                flate2::read::GzDecoder::new(&self.body[..]).read_to_end(&mut out).unwrap();
            }
            "" => out.clone_from(&self.body),
            other => panic!("unexpected content-encoding {other}"),
        };
        out
    }
}

/// One GET over its own HTTP/1.1 connection, with `headers`.
async fn get(addr: SocketAddr, path: &str, headers: &[(header::HeaderName, &str)]) -> Answer {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(connection);
    let mut request = Request::get(path).header(header::HOST, addr.to_string());
    for (name, value) in headers {
        request = request.header(name, *value);
    }
    let request = request.body(Empty::<Bytes>::new()).unwrap();
    let exchange = async {
        let response = sender.send_request(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.unwrap().to_bytes().to_vec();
        Answer { status, headers, body }
    };
    tokio::time::timeout(HANG_GUARD, exchange).await.expect("HTTP answer (hang guard)")
}

/// What Chromium sends.
const BROWSER: &str = "gzip, deflate, br, zstd";

#[tokio::test]
async fn each_file_comes_in_the_best_encoding_the_client_accepts_and_decodes_to_the_original() {
    let app = app().await;
    let cases: [(&str, [&str; 5]); 4] = [
        //                   index  js      wasm    css     notes
        (BROWSER, ["br", "br", "br", "gzip", ""]),
        ("gzip", ["gzip", "gzip", "gzip", "gzip", ""]),
        ("identity", [""; 5]),
        ("", [""; 5]), // no Accept-Encoding at all
    ];
    for (accept, expected) in cases {
        for ((name, original), encoding) in originals().into_iter().zip(expected) {
            let headers =
                if accept.is_empty() { vec![] } else { vec![(header::ACCEPT_ENCODING, accept)] };
            let answer = get(app.relay.addr, &format!("/{name}"), &headers).await;
            let case = format!("{name} with Accept-Encoding {accept:?}");
            assert_eq!(answer.status, StatusCode::OK, "{case}");
            assert_eq!(answer.header(header::CONTENT_ENCODING), encoding, "{case}");
            assert_eq!(answer.header(header::VARY), "accept-encoding", "{case}");
            assert_eq!(
                answer.header(header::CONTENT_LENGTH),
                answer.body.len().to_string(),
                "{case}"
            );
            assert_eq!(answer.decoded(), original, "{case}: the decoded bytes");
            if !encoding.is_empty() {
                assert!(answer.body.len() < original.len(), "{case}: compressed on the wire");
            }
        }
    }
    // The type is the original's, whatever the encoding (wasm streaming compilation needs it).
    let wasm =
        get(app.relay.addr, &format!("/{WASM}"), &[(header::ACCEPT_ENCODING, BROWSER)]).await;
    assert_eq!(wasm.header(header::CONTENT_TYPE), "application/wasm");
    let js = get(app.relay.addr, &format!("/{JS}"), &[(header::ACCEPT_ENCODING, "gzip")]).await;
    assert!(js.header(header::CONTENT_TYPE).contains("javascript"), "{:?}", js.headers);
    let root = get(app.relay.addr, "/", &[(header::ACCEPT_ENCODING, BROWSER)]).await;
    assert!(root.header(header::CONTENT_TYPE).starts_with("text/html"), "{:?}", root.headers);
}

#[tokio::test]
async fn content_hashed_files_are_immutable_and_everything_else_is_revalidated() {
    let app = app().await;
    let addr = app.relay.addr;
    for name in [JS, WASM, CSS] {
        for accept in [BROWSER, "identity"] {
            let answer = get(addr, &format!("/{name}"), &[(header::ACCEPT_ENCODING, accept)]).await;
            assert_eq!(answer.status, StatusCode::OK, "{name}");
            assert_eq!(answer.header(header::CACHE_CONTROL), IMMUTABLE, "{name}");
        }
    }
    assert_eq!(IMMUTABLE, "public, max-age=31536000, immutable");
    assert_eq!(REVALIDATE, "no-cache");
    // index.html under all its names, an unhashed file, and a hashed name that is not there
    // (an old build's script): the last answers index.html, so it must not be cached for good.
    let index = index_html("1").into_bytes();
    for (path, body) in [
        ("/", &index),
        ("/index.html", &index),
        ("/?room=K7QX2M", &index),
        ("/join/somewhere?room=K7QX2M", &index),
        ("/capelab-web-ffffffffffffffff.js", &index),
        (&format!("/{NOTES}"), &b"no copies of this one".to_vec()),
    ] {
        let answer = get(addr, path, &[(header::ACCEPT_ENCODING, BROWSER)]).await;
        assert_eq!(answer.status, StatusCode::OK, "{path}");
        assert_eq!(answer.header(header::CACHE_CONTROL), REVALIDATE, "{path}");
        assert!(answer.header(header::ETAG).starts_with("W/\""), "{path}: {:?}", answer.headers);
        assert!(!answer.header(header::LAST_MODIFIED).is_empty(), "{path}");
        assert_eq!(answer.header(header::VARY), "accept-encoding", "{path}");
        assert_eq!(&answer.decoded(), body, "{path}");
    }
    // /healthz and the websocket are not files.
    let health = get(addr, "/healthz", &[]).await;
    assert_eq!((health.status, health.body.as_slice()), (StatusCode::OK, &b"ok"[..]));
    assert_eq!(health.header(header::CACHE_CONTROL), "");
    app.relay.client().await.assert_works().await;
}

#[tokio::test]
async fn index_html_is_revalidated_by_etag_and_date_and_a_new_build_is_seen_at_once() {
    let app = app().await;
    let addr = app.relay.addr;
    let first = get(addr, "/?room=K7QX2M", &[(header::ACCEPT_ENCODING, BROWSER)]).await;
    let etag = first.header(header::ETAG).to_owned();
    let date = first.header(header::LAST_MODIFIED).to_owned();

    // Unchanged: 304 with no body, and the same caching headers.
    for validator in [(header::IF_NONE_MATCH, etag.as_str()), (header::IF_MODIFIED_SINCE, &date)] {
        let again = get(addr, "/", &[(header::ACCEPT_ENCODING, BROWSER), validator.clone()]).await;
        assert_eq!(again.status, StatusCode::NOT_MODIFIED, "{validator:?}");
        assert!(again.body.is_empty());
        assert_eq!(again.header(header::CACHE_CONTROL), REVALIDATE);
        assert_eq!(again.header(header::VARY), "accept-encoding");
        assert_eq!(again.header(header::ETAG), etag);
    }
    // The same ETag in every encoding (it is weak: same file, other bytes on the wire).
    let plain = get(addr, "/", &[(header::IF_NONE_MATCH, &etag)]).await;
    assert_eq!(plain.status, StatusCode::NOT_MODIFIED);

    // A new build: new content with a later time. The old ETag no longer matches, and the old
    // date does not turn that into a 304 either.
    let later = SystemTime::now() + Duration::from_secs(5);
    let index = index_html("2").into_bytes();
    write_file(app.dist.path(), "index.html", &index, &["br", "gz"]);
    std::fs::File::options()
        .write(true)
        .open(app.dist.path().join("index.html"))
        .unwrap()
        .set_modified(later)
        .unwrap();
    let fresh = get(
        addr,
        "/",
        &[
            (header::ACCEPT_ENCODING, BROWSER),
            (header::IF_NONE_MATCH, &etag),
            (header::IF_MODIFIED_SINCE, &date),
        ],
    )
    .await;
    assert_eq!(fresh.status, StatusCode::OK);
    assert_eq!(fresh.decoded(), index);
    assert_ne!(fresh.header(header::ETAG), etag);
}

/// The security headers (crates/relay/src/security_headers.rs) on every answer: each file, the
/// `index.html` fallback for unknown paths, a 304, a 404-free miss, `/healthz`, and the page
/// that says the app is not built; no HSTS without the relay's own TLS (tests/tls.rs has it).
#[tokio::test]
async fn every_answer_carries_the_security_headers_and_no_hsts_over_plain_http() {
    use capelab_relay::security_headers::{CONTENT_SECURITY_POLICY, HEADERS};
    let app = app().await;
    let addr = app.relay.addr;
    let index = get(addr, "/", &[]).await;
    let etag = index.header(header::ETAG).to_owned();
    let mut answers = vec![("/", index)];
    for path in [JS, WASM, CSS, NOTES].map(|name| format!("/{name}")) {
        answers.push(("a file", get(addr, &path, &[(header::ACCEPT_ENCODING, BROWSER)]).await));
    }
    answers.push(("fallback", get(addr, "/room/K7QX2M?x=1", &[]).await));
    answers.push(("304", get(addr, "/", &[(header::IF_NONE_MATCH, etag.as_str())]).await));
    answers.push(("healthz", get(addr, "/healthz", &[]).await));
    let unbuilt = start(|_| {}).await; // its static dir does not exist
    answers.push(("not built", get(unbuilt.addr, "/", &[]).await));
    for (what, answer) in &answers {
        for (name, value) in HEADERS {
            assert_eq!(answer.header(name.clone()), value, "{what} ({}): {name}", answer.status);
        }
        assert_eq!(answer.header(header::STRICT_TRANSPORT_SECURITY), "", "{what}");
    }
    assert_eq!(answers[6].1.status, StatusCode::NOT_MODIFIED);
    assert_eq!(answers[8].1.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(CONTENT_SECURITY_POLICY.contains("script-src 'self' 'wasm-unsafe-eval';"));
}
