//! The real `capelab-relay` binary: start-up lines, a round trip, and SIGTERM.

mod common;

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

use capelab_relay::close_code;
use capelab_wire::{PresenceEvent, To};
use common::{Client, Ending, ExpectWelcome as _, TempDir};

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

#[tokio::test]
async fn the_binary_prints_its_address_relays_and_stops_on_sigterm() {
    let dist = TempDir::new("bin-dist");
    dist.write("index.html", "<p>capelab app</p>");
    let mut child = Child(
        Command::new(env!("CARGO_BIN_EXE_capelab-relay"))
            .args(["--port", "0", "--quiet", "--static-dir"])
            .arg(dist.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the relay binary starts"),
    );

    // Read stdout on a thread until the machine-readable line; keep the human lines.
    let stdout = child.0.stdout.take().unwrap();
    let (lines, listening, _stdout) = tokio::task::spawn_blocking(move || {
        let mut stdout = BufReader::new(stdout);
        let mut lines = Vec::new();
        let mut line = String::new();
        while stdout.read_line(&mut line).expect("readable stdout") > 0 {
            let text = std::mem::take(&mut line).trim_end().to_owned();
            if let Some(url) = text.strip_prefix("LISTENING ") {
                // The pipe stays open (returned) so later output cannot fail.
                return (lines, url.to_owned(), stdout);
            }
            lines.push(text);
        }
        panic!("the relay exited without a LISTENING line; it printed {lines:?}")
    })
    .await
    .unwrap();
    let port: u16 = listening
        .strip_prefix("http://127.0.0.1:")
        .and_then(|rest| rest.strip_suffix('/'))
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("LISTENING line has the wrong shape: {listening}"));
    assert_ne!(port, 0);
    assert!(lines.iter().any(|l| l.contains(&listening)), "a human line names the URL: {lines:?}");

    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let page = common::http_get(addr, "/?room=ABCDEF").await;
    assert!(page.body.contains("capelab app"));

    // A round trip between two tabs.
    let url = format!("ws://127.0.0.1:{port}/ws");
    let mut dash = Client::connect(&url).await;
    let room = dash.create("Teacher").await.room;
    let mut site = Client::connect(&url).await;
    let welcome = site.join(&room, capelab_wire::Role::Site, "Ana", None).await.expect_welcome();
    dash.expect_presence(PresenceEvent::Joined, welcome.you.id).await;
    site.send(To::One(1), "hello", b"\x00\x01\xff").await;
    let envelope = dash.expect_envelope().await;
    assert_eq!((envelope.from, envelope.kind.as_str()), (2, "hello"));
    assert_eq!(envelope.payload_bytes().unwrap(), b"\x00\x01\xff");
    dash.send(To::All, "reply", b"ok").await;
    assert_eq!(site.expect_envelope().await.from, 1);

    // SIGTERM (to this child, by its pid): websockets get 1001 and the process exits cleanly.
    let pid = child.0.id().to_string();
    let status = Command::new("kill").args(["-TERM", &pid]).status().expect("kill runs");
    assert!(status.success());
    for client in [&mut dash, &mut site] {
        let (_, ending) = client.until_end().await;
        assert!(
            matches!(ending, Ending::Closed(close_code::GOING_AWAY, _)),
            "expected a 1001 close, got {ending:?}"
        );
    }
    let exit = tokio::task::spawn_blocking(move || child.0.wait()).await.unwrap().unwrap();
    assert!(exit.success(), "the relay exits cleanly on SIGTERM: {exit:?}");
}

#[tokio::test]
async fn a_stderr_nobody_reads_does_not_freeze_the_relay() {
    let dist = TempDir::new("bin-stuck-stderr");
    // stderr is a pipe this test never reads: once its buffer (64 KiB on Linux) is full, any
    // write to it blocks.
    let mut child = Child(
        Command::new(env!("CARGO_BIN_EXE_capelab-relay"))
            .args(["--port", "0", "--static-dir"])
            .arg(dist.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the relay binary starts"),
    );
    let stdout = child.0.stdout.take().unwrap();
    let (port, _stdout) = tokio::task::spawn_blocking(move || {
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        while stdout.read_line(&mut line).expect("readable stdout") > 0 {
            if let Some(port) = line.trim_end().strip_prefix("LISTENING http://127.0.0.1:") {
                return (port.trim_end_matches('/').parse::<u16>().unwrap(), stdout);
            }
            line.clear();
        }
        panic!("no LISTENING line")
    })
    .await
    .unwrap();
    let url = format!("ws://127.0.0.1:{port}/ws");

    // Each room logs two lines of about 60 and 40 bytes: 1500 rooms are over twice the pipe.
    let name = "a name long enough to fill the log quickly";
    for _ in 0..1500 {
        let mut dash = Client::connect(&url).await;
        dash.create(name).await;
        dash.close().await;
    }
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let health = common::http_get(addr, "/healthz").await;
    assert_eq!((health.status, health.body.as_str()), (200, "ok"));
    let mut last = Client::connect(&url).await;
    last.create("still routing").await;
    last.assert_works().await;
}
