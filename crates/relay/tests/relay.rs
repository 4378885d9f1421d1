//! The relay end to end: a real server on a real socket, driven by websocket clients.
//!
//! After each error case the offending connection must still work and a room of bystanders must
//! have received nothing but its own traffic.

mod common;

use std::time::Duration;

use capelab_relay::{Config, close_code, serve_with_shutdown};
use capelab_wire::{ErrorCode, PresenceEvent, RelayFrame, Role, To, WIRE_VERSION};
use common::{Bystanders, Ending, ExpectWelcome as _, Relay, TempDir, start};

async fn relay() -> Relay {
    start(|_| {}).await
}

#[tokio::test]
async fn malformed_frames_are_refused_and_the_connection_stays_usable() {
    let relay = relay().await;
    let mut bystanders = Bystanders::new(&relay).await;
    let mut client = relay.client().await;

    client.send_text("hello relay").await;
    let message = client.expect_error(ErrorCode::Malformed).await;
    assert!(message.contains("not JSON"), "{message}");
    client.send_text(r#"{"type":"dance","v":1}"#).await;
    let message = client.expect_error(ErrorCode::Malformed).await;
    assert!(message.contains("not a capelab frame"), "{message}");
    client.assert_works().await;

    // Also once seated, and for a kind over the limit.
    client.send_text(r#"{"type":"send","v":1,"to":"all"}"#).await;
    client.expect_error(ErrorCode::Malformed).await;
    client.send(To::All, &"k".repeat(65), b"x").await;
    let message = client.expect_error(ErrorCode::Malformed).await;
    assert!(message.contains("65 characters"), "{message}");
    client.assert_works().await;
    bystanders.assert_undisturbed().await;
}

#[tokio::test]
async fn binary_frames_are_refused_and_the_connection_stays_usable() {
    let relay = relay().await;
    let mut bystanders = Bystanders::new(&relay).await;
    let mut client = relay.client().await;
    client.send_binary(vec![0, 1, 2, 3]).await;
    let message = client.expect_error(ErrorCode::Malformed).await;
    assert!(message.contains("binary"), "{message}");
    client.assert_works().await;
    client.send_binary(b"{\"type\":\"create\",\"v\":1,\"name\":\"x\"}".to_vec()).await;
    client.expect_error(ErrorCode::Malformed).await;
    client.assert_works().await;
    bystanders.assert_undisturbed().await;
}

#[tokio::test]
async fn oversized_frames_are_answered_and_only_past_the_hard_cap_close_the_socket() {
    let relay = start(|config| config.limits.max_frame_bytes = 1024).await;
    let mut bystanders = Bystanders::new(&relay).await;
    let (mut client, welcome) = relay.dashboard("big sender").await;
    assert_eq!(welcome.limits.max_frame_bytes, 1024);
    let (mut peer, _) = relay.site(&welcome.room, "peer").await;
    client.expect_presence(PresenceEvent::Joined, 2).await;

    client.send(To::All, "big", &[7u8; 1500]).await;
    let message = client.expect_error(ErrorCode::Oversized).await;
    assert!(message.contains("over this relay's limit of 1024 bytes"), "{message}");
    client.assert_works().await;
    // The refused frame reached nobody: the peer's next frame is the next real message.
    client.send(To::All, "small", b"ok").await;
    assert_eq!(peer.expect_envelope().await.kind, "small");
    bystanders.assert_undisturbed().await;

    // Past the websocket's own cap (2 × 1024 + 64 KiB) the relay closes with 1009.
    client.send_text("x".repeat(80 * 1024)).await;
    let (frames, ending) = client.until_end().await;
    assert!(frames.is_empty(), "{frames:?}");
    // The close frame is written before the socket is dropped; on Linux it arrives even though
    // the rest of the message was never read.
    let Ending::Closed(code, reason) = ending else { panic!("no close frame: {ending:?}") };
    assert_eq!(code, close_code::TOO_BIG);
    assert!(reason.contains("hard cap of 67584 bytes"), "{reason}");
    peer.expect_presence(PresenceEvent::Left, 1).await;
    peer.assert_works().await;
    bystanders.assert_undisturbed().await;
}

#[tokio::test]
async fn a_frame_of_exactly_the_default_limit_is_relayed_and_one_byte_more_is_not() {
    let relay = relay().await;
    let limit = Config::default().limits.max_frame_bytes;
    let mut dash = common::Client::connect_unlimited(&relay.ws_url()).await;
    let welcome = dash.create("Teacher").await;
    assert_eq!(welcome.limits.max_frame_bytes, 16 * 1024 * 1024);
    let mut site = common::Client::connect_unlimited(&relay.ws_url()).await;
    site.join(&welcome.room, Role::Site, "Ana", None).await.expect_welcome();
    dash.expect_presence(PresenceEvent::Joined, 2).await;

    const HEAD: &str = r#"{"type":"send","v":1,"to":{"one":1},"kind":"big","payload":""#;
    let frame_of = |len: usize| format!("{HEAD}{}\"}}", "A".repeat(len - HEAD.len() - 2));
    let exact = frame_of(limit);
    assert_eq!(exact.len(), limit);
    site.send_text(frame_of(limit + 1)).await;
    let message = site.expect_error(ErrorCode::Oversized).await;
    assert!(message.contains(&format!("{} bytes", limit + 1)), "{message}");
    site.send_text(exact).await;
    let envelope = dash.expect_envelope().await;
    assert_eq!((envelope.from, envelope.kind.as_str()), (2, "big"));
    assert_eq!(envelope.payload.len(), limit - HEAD.len() - 2);
    assert!(envelope.payload.bytes().all(|b| b == b'A'));
    site.assert_works().await;
}

#[tokio::test]
async fn unknown_rooms_are_refused_and_codes_ignore_case() {
    let relay = relay().await;
    let mut bystanders = Bystanders::new(&relay).await;
    let mut client = relay.client().await;
    let answer = client.join("ZZZZZZ", Role::Site, "lost", None).await;
    let RelayFrame::Error { code: ErrorCode::UnknownRoom, message, .. } = answer else {
        panic!("expected UnknownRoom, got {answer:?}")
    };
    assert!(message.contains("\"ZZZZZZ\""), "{message}");
    let answer = client.join("not a code at all", Role::Site, "lost", None).await;
    assert!(matches!(answer, RelayFrame::Error { code: ErrorCode::UnknownRoom, .. }));

    // Still usable: joining the bystanders' room typed in lower case works.
    let typed = format!(" {} ", bystanders.room.to_lowercase());
    let welcome = client.join(&typed, Role::Site, "found", None).await.expect_welcome();
    assert_eq!((welcome.room.as_str(), welcome.you.id), (bystanders.room.as_str(), 3));
    bystanders.a.expect_presence(PresenceEvent::Joined, 3).await;
    bystanders.b.expect_presence(PresenceEvent::Joined, 3).await;
    client.assert_works().await;
    bystanders.assert_undisturbed().await;
}

#[tokio::test]
async fn another_wire_version_is_refused_with_a_way_out() {
    let relay = relay().await;
    let mut bystanders = Bystanders::new(&relay).await;
    let mut client = relay.client().await;
    client.send_text(r#"{"type":"create","v":2,"name":"from the future"}"#).await;
    let message = client.expect_error(ErrorCode::VersionMismatch).await;
    assert!(message.starts_with("this relay speaks wire v1, the frame says v2"), "{message}");
    assert!(message.contains("reload the page"), "{message}");
    // A future frame shape is still reported as a version problem, not as garbage.
    client.send_text(r#"{"type":"hello","v":3,"caps":[]}"#).await;
    client.expect_error(ErrorCode::VersionMismatch).await;
    client.assert_works().await;
    client.send_text(r#"{"type":"send","v":9,"to":"all","kind":"k","payload":""}"#).await;
    client.expect_error(ErrorCode::VersionMismatch).await;
    client.assert_works().await;
    bystanders.assert_undisturbed().await;
}

#[tokio::test]
async fn rooms_are_isolated_including_broadcasts_and_presence() {
    let relay = relay().await;
    let mut room_a = Bystanders::new(&relay).await;
    let (mut b1, welcome_b) = relay.dashboard("B1").await;
    let (mut b2, _) = relay.site(&welcome_b.room, "B2").await;
    b1.expect_presence(PresenceEvent::Joined, 2).await;
    assert_ne!(room_a.room, welcome_b.room);

    // Room B's ids overlap room A's: To::One(2) in B must reach B's #2 only.
    b1.send(To::All, "b/broadcast", b"1").await;
    b1.send(To::One(2), "b/direct", b"2").await;
    assert_eq!(b2.expect_envelope().await.kind, "b/broadcast");
    assert_eq!(b2.expect_envelope().await.kind, "b/direct");
    // Presence in B: a join and a leave.
    let (b3, _) = relay.site(&welcome_b.room, "B3").await;
    b1.expect_presence(PresenceEvent::Joined, 3).await;
    b2.expect_presence(PresenceEvent::Joined, 3).await;
    b3.close().await;
    b1.expect_presence(PresenceEvent::Left, 3).await;
    b2.expect_presence(PresenceEvent::Left, 3).await;

    // Room A saw none of it, and A's traffic does not reach B either.
    room_a.assert_undisturbed().await;
    b2.send(To::One(1), "b/after", b"3").await;
    let got = b1.expect_envelope().await;
    assert_eq!((got.kind.as_str(), got.room.as_str()), ("b/after", welcome_b.room.as_str()));
}

#[tokio::test]
async fn the_rate_limit_drops_frames_then_recovers_when_the_bucket_refills() {
    // 10 per second with a burst of 4; the relay's clock only moves when the test moves it.
    let relay = start(|config| {
        config.limits.messages_per_second = 10;
        config.limits.burst = 4;
    })
    .await;
    let mut bystanders = Bystanders::new(&relay).await;
    let (mut sender, welcome) = relay.dashboard("fast").await; // token 1
    assert_eq!(welcome.limits.max_messages_per_second, 10);
    let (mut peer, _) = relay.site(&welcome.room, "peer").await;
    sender.expect_presence(PresenceEvent::Joined, 2).await;

    for n in 2..=4 {
        sender.send(To::All, &format!("m{n}"), b"").await; // tokens 2, 3, 4
    }
    sender.send(To::All, "m5", b"").await; // the bucket is empty
    let message = sender.expect_error(ErrorCode::RateLimited).await;
    assert!(message.contains("10 messages per second"), "{message}");

    relay.clock.advance(Duration::from_millis(99));
    sender.send(To::All, "m6", b"").await;
    sender.expect_error(ErrorCode::RateLimited).await;
    relay.clock.advance(Duration::from_millis(1)); // 100 ms: one token
    sender.send(To::All, "m7", b"").await;
    relay.clock.advance(Duration::from_secs(1));
    sender.assert_works().await;

    // The peer got everything that was accepted, in order, and nothing that was dropped.
    for kind in ["m2", "m3", "m4", "m7"] {
        assert_eq!(peer.expect_envelope().await.kind, kind);
    }
    peer.assert_works().await;
    bystanders.assert_undisturbed().await;
}

#[tokio::test]
async fn presence_announces_joins_and_leaves_to_everyone_else() {
    let relay = relay().await;
    let (mut dash, welcome) = relay.dashboard("Teacher").await;
    assert_eq!(welcome.you.role, Role::Dashboard);
    assert!(welcome.peers.is_empty());
    assert_eq!(welcome.resume.len(), 32);

    let (mut ana, ana_welcome) = relay.site(&welcome.room, "  Ana  ").await;
    assert_eq!((ana_welcome.you.id, ana_welcome.you.name.as_str()), (2, "Ana"));
    assert_eq!(ana_welcome.peers, vec![welcome.you.clone()]);
    let seen = dash.expect_presence(PresenceEvent::Joined, 2).await;
    assert_eq!((seen.role, seen.name.as_str()), (Role::Site, "Ana"));

    let (bo, bo_welcome) = relay.site(&welcome.room, "Bo").await;
    assert_eq!(bo_welcome.you.id, 3);
    let ids: Vec<u32> = bo_welcome.peers.iter().map(|p| p.id).collect();
    assert_eq!(ids, [1, 2]);
    dash.expect_presence(PresenceEvent::Joined, 3).await;
    ana.expect_presence(PresenceEvent::Joined, 3).await;

    // A clean close and an abrupt drop (no close frame) are both announced.
    bo.close().await;
    dash.expect_presence(PresenceEvent::Left, 3).await;
    ana.expect_presence(PresenceEvent::Left, 3).await;
    drop(ana);
    let left = dash.expect_presence(PresenceEvent::Left, 2).await;
    assert_eq!(left.name, "Ana");
    dash.assert_works().await;
}

#[tokio::test]
async fn a_resume_token_brings_back_the_same_id_and_a_stale_one_is_a_new_join() {
    let relay = relay().await; // grace period: the default 120 s, on the manual clock
    let (mut dash, welcome) = relay.dashboard("Teacher").await;
    let (ana, ana_welcome) = relay.site(&welcome.room, "Ana").await;
    dash.expect_presence(PresenceEvent::Joined, 2).await;
    drop(ana);
    dash.expect_presence(PresenceEvent::Left, 2).await;

    // Within the grace period: same id, role and name; the others see `Rejoined`.
    relay.clock.advance(Duration::from_secs(119));
    let mut back = relay.client().await;
    let answer = back.join(&welcome.room, Role::Site, "Ana again", Some(&ana_welcome.resume)).await;
    let resumed = answer.expect_welcome();
    assert_eq!(resumed.you, ana_welcome.you);
    assert_eq!(resumed.resume, ana_welcome.resume);
    assert_eq!(resumed.peers, vec![welcome.you.clone()]);
    dash.expect_presence(PresenceEvent::Rejoined, 2).await;
    dash.send(To::One(2), "to/ana", b"hi").await;
    assert_eq!(back.expect_envelope().await.kind, "to/ana");

    // The token again while that connection is alive: the new one takes over (code 4001).
    let mut twin = relay.client().await;
    let taken = twin.join(&welcome.room, Role::Site, "Ana", Some(&ana_welcome.resume)).await;
    assert_eq!(taken.expect_welcome().you.id, 2);
    let (_, ending) = back.until_end().await;
    assert!(matches!(ending, Ending::Closed(4001, _) | Ending::Dropped), "{ending:?}");
    dash.expect_presence(PresenceEvent::Left, 2).await;
    dash.expect_presence(PresenceEvent::Rejoined, 2).await;
    twin.assert_works().await;

    // An unknown token is ignored: the join counts as a new participant.
    let mut stranger = relay.client().await;
    let fresh = stranger
        .join(&welcome.room, Role::Site, "Cy", Some("00000000000000000000000000000000"))
        .await
        .expect_welcome();
    assert_eq!(fresh.you.id, 3);
    assert_ne!(fresh.resume, ana_welcome.resume);
    dash.expect_presence(PresenceEvent::Joined, 3).await;

    // After the grace period, a token is stale: a new id, announced as `Joined`.
    drop(twin);
    dash.expect_presence(PresenceEvent::Left, 2).await;
    relay.clock.advance(Duration::from_secs(120));
    let mut late = relay.client().await;
    let answer = late.join(&welcome.room, Role::Site, "Ana", Some(&ana_welcome.resume)).await;
    assert_eq!(answer.expect_welcome().you.id, 4);
    dash.expect_presence(PresenceEvent::Joined, 4).await;
    late.assert_works().await;
    dash.assert_works().await;
}

#[tokio::test]
async fn a_connection_that_stops_answering_pings_is_dropped_and_announced() {
    let relay = start(|config| config.ping_interval = Duration::from_millis(250)).await;
    let (mut dash, welcome) = relay.dashboard("Teacher").await;
    let (asleep, _) = relay.site(&welcome.room, "asleep").await;
    dash.expect_presence(PresenceEvent::Joined, 2).await;
    // `asleep` is never read again, so its library never answers the relay's pings (the
    // dashboard's does, while it waits); after three silent intervals the relay gives up on it.
    dash.expect_presence(PresenceEvent::Left, 2).await;
    dash.assert_works().await;
    drop(asleep);
}

#[tokio::test]
async fn a_room_ends_when_nobody_can_come_back() {
    let relay = relay().await;
    let (dash, welcome) = relay.dashboard("Teacher").await;
    dash.close().await;
    relay.clock.advance(Duration::from_secs(119));
    // Still resumable, so the room still exists for a new participant too.
    let (site, _) = relay.site(&welcome.room, "Ana").await;
    site.close().await;
    relay.clock.advance(Duration::from_secs(120));
    let mut late = relay.client().await;
    let answer = late.join(&welcome.room, Role::Site, "late", Some(&welcome.resume)).await;
    assert!(matches!(answer, RelayFrame::Error { code: ErrorCode::UnknownRoom, .. }), "{answer:?}");
    late.assert_works().await;
}

#[tokio::test]
async fn unknown_recipients_are_refused() {
    let relay = relay().await;
    let mut bystanders = Bystanders::new(&relay).await;
    let (mut dash, welcome) = relay.dashboard("Teacher").await;
    dash.send(To::One(2), "nobody", b"x").await;
    let message = dash.expect_error(ErrorCode::UnknownRecipient).await;
    assert!(message.contains("no participant 2"), "{message}");
    // A participant who dropped is refused too, while it may still come back.
    let (site, _) = relay.site(&welcome.room, "Ana").await;
    dash.expect_presence(PresenceEvent::Joined, 2).await;
    drop(site);
    dash.expect_presence(PresenceEvent::Left, 2).await;
    dash.send(To::One(2), "away", b"x").await;
    let message = dash.expect_error(ErrorCode::UnknownRecipient).await;
    assert!(message.contains("disconnected"), "{message}");
    dash.assert_works().await;
    bystanders.assert_undisturbed().await;
}

#[tokio::test]
async fn a_full_room_refuses_more_participants() {
    let relay = start(|config| config.limits.max_participants = 2).await;
    let mut bystanders = Bystanders::new(&relay).await;
    let (mut dash, welcome) = relay.dashboard("Teacher").await;
    assert_eq!(welcome.limits.max_participants, 2);
    let (_site, _) = relay.site(&welcome.room, "Ana").await;
    dash.expect_presence(PresenceEvent::Joined, 2).await;
    let mut third = relay.client().await;
    let answer = third.join(&welcome.room, Role::Site, "Bo", None).await;
    let RelayFrame::Error { code: ErrorCode::RoomFull, message, .. } = answer else {
        panic!("expected RoomFull, got {answer:?}")
    };
    assert!(message.contains("full (2 participants)"), "{message}");
    // The refused participant can still start a room of its own.
    third.assert_works().await;
    dash.assert_works().await;
    bystanders.assert_undisturbed().await;
}

#[tokio::test]
async fn send_before_joining_and_joining_twice_are_refused() {
    let relay = relay().await;
    let mut bystanders = Bystanders::new(&relay).await;
    let mut client = relay.client().await;
    client.send(To::All, "early", b"x").await;
    let message = client.expect_error(ErrorCode::NotInRoom).await;
    assert!(message.contains("\"create\" or \"join\" first"), "{message}");
    client.assert_works().await; // creates a room

    let answer = client.join(&bystanders.room, Role::Site, "again", None).await;
    let RelayFrame::Error { code: ErrorCode::AlreadyInRoom, message, .. } = answer else {
        panic!("expected AlreadyInRoom, got {answer:?}")
    };
    assert!(message.contains("already participant 1 in room"), "{message}");
    client.send_text(format!(r#"{{"type":"create","v":{WIRE_VERSION},"name":"x"}}"#)).await;
    let message = client.expect_error(ErrorCode::AlreadyInRoom).await;
    assert!(message.contains("already participant 1"), "{message}");
    client.assert_works().await;
    bystanders.assert_undisturbed().await;
}

#[tokio::test]
async fn a_reader_that_falls_behind_is_closed_without_gaps_and_others_carry_on() {
    let relay = start(|config| {
        config.limits.max_frame_bytes = 64 * 1024;
        config.limits.max_queue_bytes = 1024 * 1024; // holds a whole batch of 16 chunks
        config.limits.messages_per_second = 1_000_000;
        config.limits.burst = 1_000_000;
    })
    .await;
    let mut bystanders = Bystanders::new(&relay).await;
    let (mut sender, welcome) = relay.dashboard("sender").await;
    let (mut slow, _) = relay.site(&welcome.room, "never reads").await;
    let (mut fast, _) = relay.site(&welcome.room, "reads").await;
    sender.expect_presence(PresenceEvent::Joined, 2).await;
    sender.expect_presence(PresenceEvent::Joined, 3).await;
    slow.expect_presence(PresenceEvent::Joined, 3).await;

    // Stream numbered 40 KB chunks to #2 until the relay gives up on it. The kernel's socket
    // buffers absorb a few MB first; the guard only bounds a broken relay.
    let chunk = vec![0u8; 40 * 1024]; // 54 KB of base64
    let mut sent = 0u32;
    let mut fast_saw_left = false;
    loop {
        assert!(sent < 5_000, "the slow reader was never closed (hang guard)");
        sender.send(To::One(2), &format!("seq/{sent}"), &chunk).await;
        sent += 1;
        if !sent.is_multiple_of(16) {
            continue;
        }
        // Every 16 chunks, the fast reader gets a tick: the relay keeps serving it meanwhile.
        sender.send(To::One(3), "tick", b"").await;
        loop {
            match fast.recv().await {
                RelayFrame::Envelope(e) if e.kind == "tick" => break,
                RelayFrame::Presence { event: PresenceEvent::Left, peer, .. } if peer.id == 2 => {
                    fast_saw_left = true;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        // And the sender hears about #2 leaving once the relay closes it.
        sender.send(To::One(1), "self", b"").await;
        match sender.recv().await {
            RelayFrame::Envelope(e) if e.kind == "self" => {}
            RelayFrame::Presence { event: PresenceEvent::Left, peer, .. } if peer.id == 2 => {
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    if !fast_saw_left {
        fast.expect_presence(PresenceEvent::Left, 2).await;
    }

    // The slow reader got an unbroken prefix of the stream, then (normally) the reason.
    let (frames, ending) = slow.until_end().await;
    for (n, frame) in frames.iter().enumerate() {
        let RelayFrame::Envelope(envelope) = frame else { panic!("unexpected {frame:?}") };
        assert_eq!(envelope.kind, format!("seq/{n}"));
    }
    assert!((frames.len() as u32) < sent);
    if let Ending::Closed(code, reason) = ending {
        assert_eq!(code, close_code::POLICY);
        assert!(reason.starts_with("fell behind"), "{reason}");
    }
    fast.assert_works().await;
    bystanders.assert_undisturbed().await;
}

#[tokio::test]
async fn static_files_are_served_with_index_html_for_unknown_paths() {
    let dist = TempDir::new("dist");
    dist.write("index.html", "<!doctype html><p>capelab app</p>");
    dist.write("assets/app.js", "console.log('capelab')");
    let dir = dist.path().to_owned();
    let relay = start(move |config| config.static_dir = dir).await;

    let root = relay.get("/").await;
    assert_eq!(root.status, 200);
    assert!(root.body.contains("capelab app"));
    let script = relay.get("/assets/app.js").await;
    assert_eq!(script.status, 200);
    assert!(script.head.to_ascii_lowercase().contains("javascript"), "{}", script.head);
    assert_eq!(script.body, "console.log('capelab')");
    let deep = relay.get("/join/somewhere?room=K7QX2M").await;
    assert_eq!(deep.status, 200);
    assert!(deep.body.contains("capelab app"));
    let health = relay.get("/healthz").await;
    assert_eq!((health.status, health.body.as_str()), (200, "ok"));
    // Websockets still work next to the files.
    relay.client().await.assert_works().await;
}

#[tokio::test]
async fn without_a_built_app_the_root_says_how_to_build_it() {
    let relay = relay().await; // its static dir does not exist
    let root = relay.get("/").await;
    assert_eq!(root.status, 503);
    assert!(root.body.contains("not built"), "{}", root.body);
    assert!(root.body.contains("./scripts/demo"), "{}", root.body);
    assert_eq!(relay.get("/anything?room=K7QX2M").await.status, 503);
    let health = relay.get("/healthz").await;
    assert_eq!((health.status, health.body.as_str()), (200, "ok"));
}

#[tokio::test]
async fn shutdown_closes_websockets_with_going_away_and_returns() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let config = Config { quiet: true, ..Config::default() };
    let server = tokio::spawn(serve_with_shutdown(listener, config, async move {
        let _ = stopped.await;
    }));
    let mut seated = common::Client::connect(&format!("ws://{addr}/ws")).await;
    seated.create("Teacher").await;
    let mut idle = common::Client::connect(&format!("ws://{addr}/ws")).await;
    idle.send_text("not json").await;
    idle.expect_error(ErrorCode::Malformed).await;

    stop.send(()).unwrap();
    for client in [&mut seated, &mut idle] {
        let (_, ending) = client.until_end().await;
        let Ending::Closed(code, reason) = ending else { panic!("no close frame: {ending:?}") };
        assert_eq!(code, close_code::GOING_AWAY);
        assert!(reason.contains("shutting down"), "{reason}");
    }
    tokio::time::timeout(common::HANG_GUARD, server)
        .await
        .expect("serve returns after shutdown (hang guard)")
        .unwrap()
        .unwrap();
}
