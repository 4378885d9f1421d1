//! Test harness: a real relay on a real socket (port 0) and a tokio-tungstenite client.
//!
//! Waiting helpers carry a generous guard (`HANG_GUARD`) only so a broken relay fails the test
//! instead of hanging it; no test asserts how long anything takes.

#![allow(dead_code)] // each test binary uses a different part of the harness

pub mod broker;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use capelab_relay::{Config, ManualClock, serve};
use capelab_wire::{
    ClientFrame, Envelope, ErrorCode, Limits, ParticipantId, Peer, PresenceEvent, RelayFrame, Role,
    To, WIRE_VERSION, encode_payload,
};
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// Fails a wait that would otherwise hang forever. Not a timing assertion.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// A relay serving on 127.0.0.1 with a manual clock.
pub struct Relay {
    pub addr: SocketAddr,
    pub clock: ManualClock,
}

/// Starts a relay with test defaults (quiet, manual clock, no static dir), adjusted by `adjust`.
pub async fn start(adjust: impl FnOnce(&mut Config)) -> Relay {
    let clock = ManualClock::new();
    let mut config = Config {
        quiet: true,
        clock: clock.clone().into(),
        static_dir: PathBuf::from("/nonexistent/capelab-relay-test"),
        ..Config::default()
    };
    adjust(&mut config);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { serve(listener, config).await.expect("relay failed") });
    Relay { addr, clock }
}

impl Relay {
    pub fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }

    pub async fn client(&self) -> Client {
        Client::connect(&self.ws_url()).await
    }

    /// A client that created a new room.
    pub async fn dashboard(&self, name: &str) -> (Client, Welcome) {
        let mut client = self.client().await;
        let welcome = client.create(name).await;
        (client, welcome)
    }

    /// A client that joined `room` as a site.
    pub async fn site(&self, room: &str, name: &str) -> (Client, Welcome) {
        let mut client = self.client().await;
        let welcome = client.join(room, Role::Site, name, None).await.expect_welcome();
        (client, welcome)
    }

    pub async fn get(&self, path: &str) -> HttpResponse {
        http_get(self.addr, path).await
    }
}

/// What a `Welcome` said.
#[derive(Clone, Debug)]
pub struct Welcome {
    pub room: String,
    pub you: Peer,
    pub resume: String,
    pub peers: Vec<Peer>,
    pub limits: Limits,
}

pub trait ExpectWelcome {
    fn expect_welcome(self) -> Welcome;
}

impl ExpectWelcome for RelayFrame {
    fn expect_welcome(self) -> Welcome {
        match self {
            RelayFrame::Welcome { room, you, resume, peers, limits, .. } => {
                Welcome { room, you, resume, peers, limits }
            }
            other => panic!("expected a Welcome, got {other:?}"),
        }
    }
}

/// How a connection ended, as the client saw it.
#[derive(Debug, PartialEq, Eq)]
pub enum Ending {
    /// A close frame with this code and reason.
    Closed(u16, String),
    /// The stream ended or failed without a close frame.
    Dropped,
}

pub struct Client {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    pub me: Option<Peer>,
    markers: u32,
}

static NEXT_MARKER: AtomicU32 = AtomicU32::new(1);

impl Client {
    pub async fn connect(url: &str) -> Self {
        let (ws, _) = tokio_tungstenite::connect_async(url).await.expect("websocket connects");
        Client { ws, me: None, markers: 0 }
    }

    /// A client that, like a browser, accepts messages beyond tungstenite's default 16 MiB.
    pub async fn connect_unlimited(url: &str) -> Self {
        let config = WebSocketConfig::default()
            .max_message_size(Some(usize::MAX))
            .max_frame_size(Some(usize::MAX));
        let (ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), false)
            .await
            .expect("websocket connects");
        Client { ws, me: None, markers: 0 }
    }

    pub async fn send_text(&mut self, text: impl Into<String>) {
        self.ws.send(Message::Text(text.into().into())).await.expect("send text");
    }

    /// Sends a text frame; `false` once the connection is gone.
    pub async fn try_send_text(&mut self, text: impl Into<String>) -> bool {
        self.ws.send(Message::Text(text.into().into())).await.is_ok()
    }

    /// Sends one raw websocket frame, however wrong (a reserved opcode, a text frame that is not
    /// UTF-8); `false` once the connection is gone.
    pub async fn send_raw(
        &mut self,
        frame: tokio_tungstenite::tungstenite::protocol::frame::Frame,
    ) -> bool {
        self.ws.send(Message::Frame(frame)).await.is_ok()
    }

    /// Queues a text frame without flushing (for floods); `false` once the connection is gone.
    pub async fn feed_text(&mut self, text: impl Into<String>) -> bool {
        self.ws.feed(Message::Text(text.into().into())).await.is_ok()
    }

    /// Flushes fed frames; `false` once the connection is gone.
    pub async fn flush(&mut self) -> bool {
        self.ws.flush().await.is_ok()
    }

    /// The next message of any kind, or `None` once the connection has ended.
    pub async fn next_raw(&mut self) -> Option<Message> {
        let next = tokio::time::timeout(HANG_GUARD, self.ws.next())
            .await
            .expect("no message from the relay (hang guard)");
        next.and_then(Result::ok)
    }

    pub async fn send_binary(&mut self, bytes: Vec<u8>) {
        self.ws.send(Message::Binary(bytes.into())).await.expect("send binary");
    }

    pub async fn send_frame(&mut self, frame: &ClientFrame) {
        self.send_text(serde_json::to_string(frame).unwrap()).await;
    }

    pub async fn send(&mut self, to: To, kind: &str, payload: &[u8]) {
        let frame = ClientFrame::Send {
            v: WIRE_VERSION,
            to,
            kind: kind.into(),
            payload: encode_payload(payload),
        };
        self.send_frame(&frame).await;
    }

    /// The next relay frame (pings are answered by the library and skipped).
    pub async fn recv(&mut self) -> RelayFrame {
        loop {
            let next = tokio::time::timeout(HANG_GUARD, self.ws.next())
                .await
                .expect("no frame from the relay (hang guard)");
            match next {
                Some(Ok(Message::Text(text))) => {
                    return serde_json::from_str(text.as_str())
                        .unwrap_or_else(|e| panic!("relay sent a non-frame {text}: {e}"));
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                other => panic!("expected a frame, got {other:?}"),
            }
        }
    }

    /// Reads until the connection ends, answering a close frame as a browser would; frames on
    /// the way are returned too.
    pub async fn until_end(&mut self) -> (Vec<RelayFrame>, Ending) {
        let mut frames = Vec::new();
        let mut ending = Ending::Dropped;
        loop {
            let next = tokio::time::timeout(HANG_GUARD, self.ws.next())
                .await
                .expect("the connection did not end (hang guard)");
            match next {
                Some(Ok(Message::Text(text))) => frames.push(serde_json::from_str(&text).unwrap()),
                // Keep polling after it: that sends the library's close reply.
                Some(Ok(Message::Close(Some(frame)))) => {
                    ending = Ending::Closed(frame.code.into(), frame.reason.to_string());
                }
                Some(Ok(_)) => continue,
                None | Some(Err(_)) => return (frames, ending),
            }
        }
    }

    pub async fn create(&mut self, name: &str) -> Welcome {
        self.send_frame(&ClientFrame::Create { v: WIRE_VERSION, name: name.into() }).await;
        let welcome = self.recv().await.expect_welcome();
        self.me = Some(welcome.you.clone());
        welcome
    }

    /// Sends a `Join` and returns the answer (a `Welcome` or an `Error`).
    pub async fn join(
        &mut self,
        room: &str,
        role: Role,
        name: &str,
        resume: Option<&str>,
    ) -> RelayFrame {
        let frame = ClientFrame::Join {
            v: WIRE_VERSION,
            room: room.into(),
            role,
            name: name.into(),
            resume: resume.map(str::to_owned),
        };
        self.send_frame(&frame).await;
        let answer = self.recv().await;
        if let RelayFrame::Welcome { you, .. } = &answer {
            self.me = Some(you.clone());
        }
        answer
    }

    /// The next frame must be an `Error` with this code; returns its message.
    pub async fn expect_error(&mut self, expected: ErrorCode) -> String {
        match self.recv().await {
            RelayFrame::Error { code, message, .. } if code == expected => message,
            other => panic!("expected a {expected:?} error, got {other:?}"),
        }
    }

    /// The next frame must be this presence event about `id`.
    pub async fn expect_presence(&mut self, event: PresenceEvent, id: ParticipantId) -> Peer {
        match self.recv().await {
            RelayFrame::Presence { event: got, peer, .. } if got == event && peer.id == id => peer,
            other => panic!("expected {event:?} for #{id}, got {other:?}"),
        }
    }

    /// The next frame must be an envelope; returns it.
    pub async fn expect_envelope(&mut self) -> Envelope {
        match self.recv().await {
            RelayFrame::Envelope(envelope) => envelope,
            other => panic!("expected an envelope, got {other:?}"),
        }
    }

    /// Proves the connection still works: a seated client echoes a message to itself; an
    /// unseated one creates a room.
    pub async fn assert_works(&mut self) {
        let Some(me) = self.me.clone() else {
            let welcome = self.create("recovered").await;
            assert_eq!(welcome.you.id, 1);
            return;
        };
        self.markers += 1;
        let kind = format!("echo/{}", self.markers);
        self.send(To::One(me.id), &kind, b"still here").await;
        let echo = self.expect_envelope().await;
        assert_eq!(
            (echo.from, echo.to, echo.kind.as_str()),
            (me.id, To::One(me.id), kind.as_str())
        );
        assert_eq!(echo.payload_bytes().unwrap(), b"still here");
    }

    pub async fn close(mut self) {
        self.ws.close(None).await.expect("close");
        // Drain until the relay acknowledges, so its `Left` is certain to have been sent.
        while let Some(Ok(_)) = self.ws.next().await {}
    }
}

/// Two participants in a room of their own, to show other rooms are not disturbed.
pub struct Bystanders {
    pub room: String,
    pub a: Client,
    pub b: Client,
}

impl Bystanders {
    pub async fn new(relay: &Relay) -> Self {
        let (mut a, welcome) = relay.dashboard("bystander A").await;
        let (b, _) = relay.site(&welcome.room, "bystander B").await;
        a.expect_presence(PresenceEvent::Joined, 2).await;
        Bystanders { room: welcome.room, a, b }
    }

    /// Each one's next frame is the other's marker: nothing else reached them meanwhile.
    pub async fn assert_undisturbed(&mut self) {
        let marker = NEXT_MARKER.fetch_add(1, Ordering::Relaxed);
        let kind = format!("marker/{marker}");
        self.a.send(To::One(2), &kind, b"a->b").await;
        let got = self.b.expect_envelope().await;
        assert_eq!(
            (got.from, got.kind.as_str(), got.room.as_str()),
            (1, kind.as_str(), &*self.room)
        );
        self.b.send(To::All, &kind, b"b->all").await;
        let got = self.a.expect_envelope().await;
        assert_eq!((got.from, got.to, got.kind.as_str()), (2, To::All, kind.as_str()));
    }
}

/// An HTTP/1.1 response, read until the server closes.
pub struct HttpResponse {
    pub status: u16,
    pub head: String,
    pub body: String,
}

pub async fn http_get(addr: SocketAddr, path: &str) -> HttpResponse {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(HANG_GUARD, stream.read_to_end(&mut raw))
        .await
        .expect("HTTP response (hang guard)")
        .unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status code");
    HttpResponse { status, head: head.to_owned(), body: body.to_owned() }
}

/// A scratch directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(label: &str) -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("capelab-relay-{label}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn write(&self, name: &str, contents: &str) {
        let path = self.0.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
