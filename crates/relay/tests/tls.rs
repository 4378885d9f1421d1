//! The relay over TLS with a certificate the test makes: https and wss on one port, a client that
//! trusts the certificate through `--ca` (capelab-tls's `client_config`, what the native clients
//! use) and one that trusts only the system's roots, the security headers with HSTS, plain HTTP
//! sent to the TLS port, and the fair-share refusal told over TLS.

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;

use capelab_relay::ServerTls;
use capelab_relay::security_headers::{CONTENT_SECURITY_POLICY, STRICT_TRANSPORT_SECURITY};
use capelab_tls::{SelfSigned, client_config};
use capelab_wire::{ClientFrame, RelayFrame, Role, To, WIRE_VERSION, encode_payload};
use common::{ExpectWelcome as _, HANG_GUARD, TempDir, start};
use futures_util::{SinkExt as _, StreamExt as _};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

/// A relay serving TLS with a freshly made certificate for localhost and 127.0.0.1, the app
/// directory and the certificate's file (what a client passes as `--ca`).
struct TlsRelay {
    relay: common::Relay,
    ca: PathBuf,
    _dir: TempDir,
}

async fn tls_relay(adjust: impl FnOnce(&mut capelab_relay::Config)) -> TlsRelay {
    let dir = TempDir::new("tls");
    dir.write("dist/index.html", "<!doctype html><p>capelab app</p>");
    let made = SelfSigned::generate(&["localhost".into(), "127.0.0.1".into()]).unwrap();
    let (cert, key) = made.write_to(&dir.path().join("tls")).unwrap();
    let tls = ServerTls::from_pem_files(&cert, &key).unwrap();
    assert_eq!(tls.fingerprints, made.fingerprints);
    let static_dir = dir.path().join("dist");
    let relay = start(move |config| {
        config.tls = Some(tls);
        config.static_dir = static_dir;
        adjust(config);
    })
    .await;
    TlsRelay { relay, ca: cert, _dir: dir }
}

/// A TLS connection to `addr` as `name`, trusting `ca` (and the system's roots).
async fn connect(addr: SocketAddr, ca: Option<&PathBuf>) -> std::io::Result<TlsStream<TcpStream>> {
    let config = client_config(ca.map(PathBuf::as_path)).unwrap().config;
    let tcp = TcpStream::connect(addr).await?;
    TlsConnector::from(config).connect(ServerName::try_from("localhost").unwrap(), tcp).await
}

/// One HTTPS GET; the head (lower-cased) and the body.
async fn https_get(addr: SocketAddr, ca: &PathBuf, path: &str) -> (String, String) {
    let mut stream = connect(addr, Some(ca)).await.expect("the handshake succeeds");
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(HANG_GUARD, stream.read_to_end(&mut raw)).await.unwrap().unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
    (head.to_ascii_lowercase(), body.to_owned())
}

type Wss = WebSocketStream<TlsStream<TcpStream>>;

async fn wss(addr: SocketAddr, ca: &PathBuf) -> Wss {
    let stream = connect(addr, Some(ca)).await.unwrap();
    let url = format!("wss://localhost:{}/ws", addr.port());
    let (ws, answer) = tokio_tungstenite::client_async(url, stream).await.expect("wss upgrades");
    let hsts = answer.headers().get("strict-transport-security");
    assert_eq!(hsts.map(|v| v.to_str().unwrap()), Some(STRICT_TRANSPORT_SECURITY));
    ws
}

async fn send(ws: &mut Wss, frame: &ClientFrame) {
    ws.send(Message::Text(serde_json::to_string(frame).unwrap().into())).await.unwrap();
}

async fn recv(ws: &mut Wss) -> RelayFrame {
    loop {
        let next = tokio::time::timeout(HANG_GUARD, ws.next()).await.expect("a frame (hang guard)");
        match next {
            Some(Ok(Message::Text(text))) => return serde_json::from_str(&text).unwrap(),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            other => panic!("expected a frame, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn https_and_wss_share_the_port_and_a_client_trusting_the_ca_gets_through() {
    let TlsRelay { relay, ca, _dir } = tls_relay(|_| {}).await;

    let (head, body) = https_get(relay.addr, &ca, "/?room=K7QX2M").await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(body.contains("capelab app"));
    for expected in [
        format!("content-security-policy: {}", CONTENT_SECURITY_POLICY.to_ascii_lowercase()),
        format!("strict-transport-security: {STRICT_TRANSPORT_SECURITY}"),
        "x-content-type-options: nosniff".to_owned(),
        "x-frame-options: deny".to_owned(),
        "referrer-policy: no-referrer".to_owned(),
    ] {
        assert!(head.lines().any(|line| line == expected), "{expected} in\n{head}");
    }

    // A room over wss: a dashboard creates it, a site joins, an envelope crosses.
    let mut dashboard = wss(relay.addr, &ca).await;
    send(&mut dashboard, &ClientFrame::Create { v: WIRE_VERSION, name: "Hospital A".into() }).await;
    let room = recv(&mut dashboard).await.expect_welcome().room;
    let mut site = wss(relay.addr, &ca).await;
    let join = ClientFrame::Join {
        v: WIRE_VERSION,
        room,
        role: Role::Site,
        name: "Hospital B".into(),
        resume: None,
    };
    send(&mut site, &join).await;
    let me = recv(&mut site).await.expect_welcome().you.id;
    let share = ClientFrame::Send {
        v: WIRE_VERSION,
        to: To::One(1),
        kind: "secagg/masked".into(),
        payload: encode_payload(b"\x01\x02\x03"),
    };
    send(&mut site, &share).await;
    loop {
        match recv(&mut dashboard).await {
            RelayFrame::Envelope(envelope) => {
                assert_eq!(envelope.from, me);
                assert_eq!(envelope.payload_bytes().unwrap(), b"\x01\x02\x03");
                break;
            }
            RelayFrame::Presence { .. } => continue,
            other => panic!("expected the envelope, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_client_trusting_only_the_system_roots_refuses_the_self_signed_relay() {
    let TlsRelay { relay, ca, _dir } = tls_relay(|_| {}).await;
    match client_config(None) {
        Err(capelab_tls::TlsError::NoRoots) => return, // no ca-certificates on this machine
        Err(other) => panic!("{other}"),
        Ok(_) => {}
    }
    let refused = connect(relay.addr, None).await.expect_err("an unknown issuer");
    let inner = refused.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>());
    assert!(
        matches!(
            inner,
            Some(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer))
        ),
        "{refused:?}"
    );
    // The relay is fine afterwards.
    assert_eq!(https_get(relay.addr, &ca, "/healthz").await.1, "ok");
}

#[tokio::test]
async fn plain_http_to_the_tls_port_is_told_to_use_https() {
    let TlsRelay { relay, ca, _dir } = tls_relay(|_| {}).await;
    let answer = relay.get("/").await;
    assert_eq!(answer.status, 400);
    assert!(answer.body.contains("this port speaks HTTPS") && answer.body.contains("https://"));
    // …and the port still speaks TLS to the next client.
    assert_eq!(https_get(relay.addr, &ca, "/healthz").await.1, "ok");
}

#[tokio::test]
async fn over_its_share_an_address_is_told_so_over_tls_while_another_gets_in() {
    let TlsRelay { relay, ca, _dir } = tls_relay(|config| {
        config.limits.max_connections = 10;
        config.limits.max_connections_per_address = 2;
    })
    .await;
    let _held: Vec<_> =
        [connect(relay.addr, Some(&ca)).await, connect(relay.addr, Some(&ca)).await]
            .into_iter()
            .map(|c| c.expect("within the share"))
            .collect();
    let (head, body) = https_get(relay.addr, &ca, "/healthz").await;
    assert!(head.starts_with("http/1.1 429"), "{head}");
    assert!(head.contains("retry-after: 5"), "{head}");
    assert!(body.contains("its share") && body.contains("--max-connections-per-address 2"));

    // 127.0.0.2 is another address on the same loopback.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let tcp = socket.connect(relay.addr).await.unwrap();
    let config = client_config(Some(&ca)).unwrap().config;
    let mut tls = TlsConnector::from(config)
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .expect("another address gets in");
    tls.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut raw = String::new();
    tls.read_to_string(&mut raw).await.unwrap();
    assert!(raw.starts_with("HTTP/1.1 200") && raw.ends_with("ok"), "{raw}");
}
