//! What an outside probe found, one test each: slow or half-open HTTP clients, too many
//! connections, refusals nobody reads, protocol violations, sneaky names and a second dashboard.

mod common;

use std::time::Duration;

use capelab_relay::{Config, close_code, serve_with_shutdown};
use capelab_wire::{ClientFrame, ErrorCode, PresenceEvent, RelayFrame, Role};
use common::{Bystanders, Ending, ExpectWelcome as _, HANG_GUARD, start};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};

/// Reads until the relay closes the TCP connection; what it sent on the way.
async fn until_closed(stream: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let read = tokio::time::timeout(HANG_GUARD, stream.read(&mut buf))
            .await
            .expect("the relay never closed the connection (hang guard)");
        match read {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&got).into_owned(),
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test]
async fn a_half_sent_request_does_not_hold_up_shutdown() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let config = Config {
        quiet: true,
        // Long enough that only the bounded shutdown wait can end this.
        handshake_timeout: Duration::from_secs(600),
        shutdown_wait: Duration::from_millis(300),
        ..Config::default()
    };
    let server = tokio::spawn(serve_with_shutdown(listener, config, async move {
        let _ = stopped.await;
    }));
    let mut half = TcpStream::connect(addr).await.unwrap();
    half.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    // The relay is serving it (a full request on another connection answers).
    assert_eq!(common::http_get(addr, "/healthz").await.status, 200);

    stop.send(()).unwrap();
    tokio::time::timeout(HANG_GUARD, server)
        .await
        .expect("serve returns although a request was never finished (hang guard)")
        .unwrap()
        .unwrap();
    drop(half);
}

#[tokio::test]
async fn idle_and_half_sent_connections_are_dropped_before_the_upgrade() {
    let relay = start(|config| config.handshake_timeout = Duration::from_millis(200)).await;
    let mut silent = TcpStream::connect(relay.addr).await.unwrap();
    let mut half = TcpStream::connect(relay.addr).await.unwrap();
    half.write_all(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: web").await.unwrap();
    until_closed(&mut silent).await;
    until_closed(&mut half).await;
    // A websocket, once upgraded, is not subject to it.
    let mut client = relay.client().await;
    client.assert_works().await;
    tokio::time::sleep(Duration::from_millis(400)).await; // past the handshake timeout
    client.assert_works().await;
}

#[tokio::test]
async fn connections_past_the_cap_get_a_503_that_says_so() {
    let relay = start(|config| config.limits.max_connections = 3).await;
    let mut clients = Vec::new();
    for _ in 0..3 {
        let mut client = relay.client().await;
        client.assert_works().await;
        clients.push(client);
    }
    let busy = relay.get("/healthz").await;
    assert_eq!(busy.status, 503);
    assert!(busy.body.contains("all 3 connections are in use"), "{}", busy.body);
    assert!(busy.body.contains("--max-connections"), "{}", busy.body);
    // The connected ones are unaffected; once one leaves, there is room again.
    clients[0].assert_works().await;
    clients.pop().unwrap().close().await;
    let mut answered = None;
    for _ in 0..200 {
        let health = relay.get("/healthz").await;
        if health.status == 200 {
            answered = Some(health);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(answered.expect("room again after a close").body, "ok");
}

#[tokio::test]
async fn a_client_that_leaves_its_refusals_unread_is_closed() {
    let relay = relay_with_defaults().await;
    let mut bystanders = Bystanders::new(&relay).await;
    let mut abuser = relay.client().await;
    // Far more refusals than socket buffers and the 64 KiB backlog hold; never read meanwhile.
    let mut sent = 0;
    while sent < 300_000 && abuser.feed_text("x").await {
        sent += 1;
        if sent % 1000 == 0 && !abuser.flush().await {
            break;
        }
    }
    let (frames, ending) = abuser.until_end().await;
    assert!(frames.iter().all(|f| matches!(f, RelayFrame::Error { .. })));
    assert!((frames.len() as u64) < sent, "not every refusal was kept for it");
    let Ending::Closed(code, reason) = ending else { panic!("no close frame: {ending:?}") };
    assert_eq!(code, close_code::POLICY);
    assert!(reason.contains("refusals went unread"), "{reason}");
    bystanders.assert_undisturbed().await;
}

async fn relay_with_defaults() -> common::Relay {
    start(|_| {}).await
}

#[tokio::test]
async fn a_reserved_opcode_closes_with_1002_and_bad_utf8_with_1007() {
    let relay = relay_with_defaults().await;
    let mut bystanders = Bystanders::new(&relay).await;

    let mut client = relay.client().await;
    client.send_raw(Frame::message(vec![1u8, 2, 3], OpCode::Data(Data::Reserved(3)), true)).await;
    let (_, ending) = client.until_end().await;
    let Ending::Closed(code, reason) = ending else { panic!("no close frame: {ending:?}") };
    assert_eq!(code, close_code::PROTOCOL_ERROR);
    assert!(reason.starts_with("websocket protocol error"), "{reason}");

    let mut client = relay.client().await;
    client.send_raw(Frame::message(vec![b'{', 0xff, 0xfe], OpCode::Data(Data::Text), true)).await;
    let (_, ending) = client.until_end().await;
    assert_eq!(
        ending,
        Ending::Closed(close_code::INVALID_PAYLOAD, "a text frame was not valid UTF-8".into())
    );
    bystanders.assert_undisturbed().await;
}

#[tokio::test]
async fn names_with_direction_or_invisible_characters_are_refused() {
    let relay = relay_with_defaults().await;
    let (mut dash, welcome) = relay.dashboard("Teacher").await;
    let mut client = relay.client().await;
    let answer = client.join(&welcome.room, Role::Site, "Ana\u{202E}rehcaeT", None).await;
    let RelayFrame::Error { code: ErrorCode::Malformed, message, .. } = answer else {
        panic!("expected a refusal, got {answer:?}")
    };
    assert!(message.contains("U+202E"), "{message}");
    assert!(message.contains("type the name without it"), "{message}");
    // JSON escapes the character, as a hostile client might.
    client.send_text(r#"{"type":"create","v":1,"name":"T\u200beacher"}"#).await;
    assert!(client.expect_error(ErrorCode::Malformed).await.contains("U+200B"));
    // The same connection joins fine with a plain name, and nobody heard of the refused ones.
    client.join(&welcome.room, Role::Site, "Ana", None).await.expect_welcome();
    let seen = dash.expect_presence(PresenceEvent::Joined, 2).await;
    assert_eq!(seen.name, "Ana");
}

#[tokio::test]
async fn a_room_has_one_dashboard_and_it_can_resume_its_seat() {
    let relay = relay_with_defaults().await;
    let (dash, welcome) = relay.dashboard("Teacher").await;
    let (mut site, _) = relay.site(&welcome.room, "Ana").await;

    let mut intruder = relay.client().await;
    let answer = intruder.join(&welcome.room, Role::Dashboard, "Teacher", None).await;
    let RelayFrame::Error { code: ErrorCode::NotAllowed, message, .. } = answer else {
        panic!("expected NotAllowed, got {answer:?}")
    };
    assert!(message.contains("already has its dashboard"), "{message}");
    assert!(message.contains("join as a site"), "{message}");

    // The real dashboard reloads: its token gives it seat 1 back, with its role.
    drop(dash);
    site.expect_presence(PresenceEvent::Left, 1).await;
    let mut reloaded = relay.client().await;
    let back = reloaded
        .join(&welcome.room, Role::Dashboard, "Teacher", Some(&welcome.resume))
        .await
        .expect_welcome();
    assert_eq!(back.you, welcome.you);
    site.expect_presence(PresenceEvent::Rejoined, 1).await;
    reloaded.assert_works().await;
    // The refused one may still join as a site.
    let joined = intruder.join(&welcome.room, Role::Site, "Eve", None).await.expect_welcome();
    assert_eq!(joined.you.role, Role::Site);
}

#[tokio::test]
async fn a_locked_room_takes_no_newcomers_but_its_members_resume() {
    let relay = relay_with_defaults().await;
    let (mut dash, welcome) = relay.dashboard("Teacher").await;
    let (mut ana, ana_welcome) = relay.site(&welcome.room, "Ana").await;
    dash.expect_presence(PresenceEvent::Joined, 2).await;

    // Only the dashboard may lock.
    ana.send_frame(&ClientFrame::Lock { v: 1, locked: true }).await;
    assert!(ana.expect_error(ErrorCode::NotAllowed).await.contains("only room"));
    dash.send_frame(&ClientFrame::Lock { v: 1, locked: true }).await;
    dash.assert_works().await; // the lock was taken in order, before this echo

    let mut late = relay.client().await;
    let answer = late.join(&welcome.room, Role::Site, "Bo", None).await;
    let RelayFrame::Error { code: ErrorCode::NotAllowed, message, .. } = answer else {
        panic!("expected NotAllowed, got {answer:?}")
    };
    assert!(message.contains("is locked"), "{message}");

    // A member who drops comes back with its token.
    drop(ana);
    dash.expect_presence(PresenceEvent::Left, 2).await;
    let mut back = relay.client().await;
    let resumed = back
        .join(&welcome.room, Role::Site, "Ana", Some(&ana_welcome.resume))
        .await
        .expect_welcome();
    assert_eq!(resumed.you.id, 2);
    dash.expect_presence(PresenceEvent::Rejoined, 2).await;

    // Unlocked, the room takes newcomers again.
    dash.send_frame(&ClientFrame::Lock { v: 1, locked: false }).await;
    dash.assert_works().await;
    late.join(&welcome.room, Role::Site, "Bo", None).await.expect_welcome();
}
