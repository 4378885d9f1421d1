//! The outside probe's case, on the real binary: a relay whose process may open 64 file
//! descriptors (`ulimit -n 64` in the shell that starts it), 80 idle sockets from one address,
//! and another address that must still get in. Before the cap followed the limit, the 80 sockets
//! used every descriptor and nobody else got in.

mod common;

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{HANG_GUARD, TempDir};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};

/// Kills the child if the test fails before it exits on its own.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The relay binary run by `sh` after `ulimit -n LIMIT` (soft and hard: it cannot raise it).
fn relay_with_limit(limit: u32, args: &[&str]) -> Command {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_capelab-relay"))
        .args(args);
    command
}

async fn connect_from(from: &str, relay: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(relay).await.unwrap()
}

#[tokio::test]
async fn with_64_descriptors_80_idle_sockets_from_one_address_lock_nobody_else_out() {
    let dist = TempDir::new("fd-dist");
    dist.write("index.html", "<p>capelab app</p>");
    let mut child = Child(
        relay_with_limit(64, &["--port", "0", "--quiet", "--static-dir"])
            .arg(dist.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("sh starts the relay"),
    );
    let stdout = child.0.stdout.take().unwrap();
    let (lines, port, _stdout) = tokio::task::spawn_blocking(move || {
        let mut stdout = BufReader::new(stdout);
        let mut lines = Vec::new();
        let mut line = String::new();
        while stdout.read_line(&mut line).unwrap() > 0 {
            let text = std::mem::take(&mut line).trim_end().to_owned();
            if let Some(url) = text.strip_prefix("LISTENING http://127.0.0.1:") {
                let port: u16 = url.trim_end_matches('/').parse().unwrap();
                return (lines, port, stdout);
            }
            lines.push(text);
        }
        panic!("the relay exited without a LISTENING line; it printed {lines:?}")
    })
    .await
    .unwrap();
    // 64 = 32 kept for the process + 4 refusing at once + 2 × 14 connections.
    let said = "connections: at most 14 at once, 3 from one address (file descriptors: 64)";
    assert!(lines.iter().any(|l| l == said), "{lines:?}");
    let relay: SocketAddr = ([127, 0, 0, 1], port).into();

    // The probe: 80 sockets from one address, opened and left idle.
    let mut probe = Vec::new();
    for _ in 0..80 {
        probe.push(connect_from("127.0.0.1", relay).await);
    }
    // Another address gets in, with HTTP and a websocket, while they are all still open.
    let mut stream = connect_from("127.0.0.2", relay).await;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(HANG_GUARD, stream.read_to_string(&mut answer)).await.unwrap().unwrap();
    assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("ok"), "{answer}");
    let stream = connect_from("127.0.0.2", relay).await;
    let url = format!("ws://127.0.0.1:{port}/ws");
    let (mut ws, _) =
        tokio::time::timeout(HANG_GUARD, tokio_tungstenite::client_async(url, stream))
            .await
            .unwrap()
            .expect("a websocket from the other address");
    use futures_util::{SinkExt as _, StreamExt as _};
    let create = r#"{"type":"create","v":1,"name":"Teacher"}"#;
    ws.send(tokio_tungstenite::tungstenite::Message::Text(create.into())).await.unwrap();
    let welcome = tokio::time::timeout(HANG_GUARD, ws.next()).await.unwrap().unwrap().unwrap();
    assert!(welcome.to_text().unwrap().contains("\"welcome\""), "{welcome:?}");

    // The probe's sockets past its share were told why (or, past the refusals the limit leaves
    // room for, closed without a word); none of them was served.
    let mut told = 0;
    for socket in &mut probe[3..] {
        let mut got = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut got)).await;
        let got = String::from_utf8_lossy(&got);
        assert!(read.is_ok(), "a refused socket was left open");
        if got.starts_with("HTTP/1.1 429 Too Many Requests") {
            told += 1;
        } else {
            assert!(got.is_empty(), "{got}");
        }
    }
    assert!(told >= 1, "at least the first refusals are answered");
}

#[test]
fn asking_for_more_connections_than_the_limit_allows_says_how_to_raise_it() {
    let output = relay_with_limit(64, &["--port", "0", "--max-connections", "100"])
        .output()
        .expect("sh starts the relay");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "--max-connections 100 needs 236 file descriptors, but this process may open 64"
        ) && stderr.contains("ulimit -n 236")
            && stderr.contains("at most --max-connections 14"),
        "{stderr}"
    );
}
