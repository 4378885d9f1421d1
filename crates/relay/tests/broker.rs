//! Several relays behind one real `nats-server` (`--broker`): a room spans them. Cross-relay
//! delivery and presence, the room's rules (one dashboard, the lock, unknown codes), order per
//! sender, a seat resumed on another relay and taken over from a third, and what clients see
//! when the broker goes away and comes back, or when the relay hosting their room vanishes or
//! shuts down; a relay that cannot use its broker does not start.

mod common;

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

use capelab_relay::{Clock, Config, close_code, serve};
use capelab_wire::{ErrorCode, PresenceEvent, RelayFrame, Role, To};
use common::broker::NatsServer;
use common::{Client, Ending, ExpectWelcome as _, HANG_GUARD, Relay, start};

/// A relay on the broker, on the system clock (its rate limits refill as in production).
async fn relay_on(nats: &NatsServer) -> Relay {
    let url = nats.url();
    start(move |config| {
        config.broker = Some(url);
        config.clock = Clock::system();
    })
    .await
}

async fn three_relays(nats: &NatsServer) -> (Relay, Relay, Relay) {
    (relay_on(nats).await, relay_on(nats).await, relay_on(nats).await)
}

/// Why a relay with these settings does not start.
async fn start_error(broker: String, max_frame_bytes: usize) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut config = Config { quiet: true, broker: Some(broker), ..Config::default() };
    config.limits.max_frame_bytes = max_frame_bytes;
    let ended = tokio::time::timeout(HANG_GUARD, serve(listener, config)).await;
    ended.expect("the relay gives up (hang guard)").expect_err("the relay refuses").to_string()
}

#[tokio::test]
async fn a_relay_that_cannot_use_its_broker_does_not_start_and_says_what_to_change() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let message = start_error(format!("nats://127.0.0.1:{closed}"), 1 << 20).await;
    assert!(message.starts_with(&format!("cannot reach the broker at nats://127.0.0.1:{closed}")));
    assert!(message.contains("nats-server -a 127.0.0.1 -p 4222"), "{message}");
    assert!(message.contains("leave --broker out"), "{message}");

    // NATS's default max_payload (1 MB) cannot carry the relay's default 16 MiB frames.
    let nats = NatsServer::start_with(1024 * 1024);
    let message = start_error(nats.url(), Config::default().limits.max_frame_bytes).await;
    assert!(message.contains("takes messages of at most 1048576 bytes"), "{message}");
    assert!(message.contains("set max_payload to at least"), "{message}");
    assert!(message.contains("--max-frame-bytes 1047040 or less"), "{message}");
    // Within it, the same relay starts.
    let relay = start({
        let url = nats.url();
        move |config| {
            config.broker = Some(url);
            config.limits.max_frame_bytes = 1047040;
        }
    })
    .await;
    relay.dashboard("fits").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_spans_three_relays_with_presence_routing_and_its_rules() {
    let nats = NatsServer::start();
    let (a, b, c) = three_relays(&nats).await;
    let (mut dash, welcome) = a.dashboard("Teacher").await;
    let room = welcome.room.clone();

    let (mut ana, ana_welcome) = b.site(&room, "Ana").await;
    assert_eq!(ana_welcome.you.id, 2);
    assert_eq!(ana_welcome.peers.iter().map(|p| p.id).collect::<Vec<_>>(), [1]);
    assert_eq!(ana_welcome.limits, welcome.limits);
    dash.expect_presence(PresenceEvent::Joined, 2).await;

    let (mut bo, bo_welcome) = c.site(&room, "Bo").await;
    assert_eq!(bo_welcome.you.id, 3);
    let mut peers: Vec<_> = bo_welcome.peers.iter().map(|p| (p.id, p.name.as_str())).collect();
    peers.sort();
    assert_eq!(peers, [(1, "Teacher"), (2, "Ana")]);
    dash.expect_presence(PresenceEvent::Joined, 3).await;
    ana.expect_presence(PresenceEvent::Joined, 3).await;

    // Every direction: C to A, A to all, B to C, and an echo through the host.
    bo.send(To::One(1), "hello", b"from C").await;
    let got = dash.expect_envelope().await;
    assert_eq!((got.from, got.to, got.room.as_str()), (3, To::One(1), room.as_str()));
    assert_eq!(got.payload_bytes().unwrap(), b"from C");
    dash.send(To::All, "start", b"\x00\xff").await;
    for site in [&mut ana, &mut bo] {
        let got = site.expect_envelope().await;
        assert_eq!((got.from, got.kind.as_str()), (1, "start"));
        assert_eq!(got.payload_bytes().unwrap(), b"\x00\xff");
    }
    ana.send(To::One(3), "peer", b"B to C").await;
    assert_eq!(bo.expect_envelope().await.payload_bytes().unwrap(), b"B to C");
    ana.assert_works().await;

    // Refusals decided by the host reach the sender on its own relay.
    ana.send(To::One(9), "nobody", b"").await;
    let message = ana.expect_error(ErrorCode::UnknownRecipient).await;
    assert!(message.contains("no participant 9"), "{message}");
    let mut second_dash = c.client().await;
    let answer = second_dash.join(&room, Role::Dashboard, "Impostor", None).await;
    assert!(matches!(answer, RelayFrame::Error { code: ErrorCode::NotAllowed, .. }), "{answer:?}");
    let mut nobody = b.client().await;
    let answer = nobody.join("ZZZZZZ", Role::Site, "Lost", None).await;
    match answer {
        RelayFrame::Error { code: ErrorCode::UnknownRoom, message, .. } => {
            assert!(message.contains("no room \"ZZZZZZ\""), "{message}")
        }
        other => panic!("expected unknown_room, got {other:?}"),
    }

    // The lock is the host's: a site on B cannot lock, the dashboard's lock holds on C.
    ana.send_frame(&capelab_wire::ClientFrame::Lock { v: 1, locked: true }).await;
    ana.expect_error(ErrorCode::NotAllowed).await;
    dash.send_frame(&capelab_wire::ClientFrame::Lock { v: 1, locked: true }).await;
    dash.assert_works().await; // the lock was applied before the echo
    let mut late = c.client().await;
    let answer = late.join(&room, Role::Site, "Late", None).await;
    match answer {
        RelayFrame::Error { code: ErrorCode::NotAllowed, message, .. } => {
            assert!(message.contains("is locked"), "{message}")
        }
        other => panic!("expected a locked room, got {other:?}"),
    }

    // Leaving on C is announced on A and B.
    bo.close().await;
    dash.expect_presence(PresenceEvent::Left, 3).await;
    ana.expect_presence(PresenceEvent::Left, 3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn order_per_sender_is_kept_across_relays() {
    const N: u32 = 300;
    let nats = NatsServer::start();
    let (a, b, c) = three_relays(&nats).await;
    let (mut dash, welcome) = a.dashboard("Teacher").await;
    let (mut ana, _) = b.site(&welcome.room, "Ana").await;
    dash.expect_presence(PresenceEvent::Joined, 2).await;
    let (bo, _) = c.site(&welcome.room, "Bo").await;
    dash.expect_presence(PresenceEvent::Joined, 3).await;
    ana.expect_presence(PresenceEvent::Joined, 3).await;

    // B and C send at once (A's dashboard too, locally), half to all, half to the dashboard.
    let send = |mut client: Client, to_one: To| async move {
        for k in 0..N {
            let to = if k % 2 == 0 { To::All } else { to_one };
            client.send(to, "seq", &k.to_le_bytes()).await;
        }
        client
    };
    let (ana_sent, bo_sent, dash_sent) = tokio::join!(
        tokio::spawn(send(ana, To::One(1))),
        tokio::spawn(send(bo, To::One(1))),
        tokio::spawn(send(dash, To::One(2))),
    );
    let (mut ana, mut bo, mut dash) = (ana_sent.unwrap(), bo_sent.unwrap(), dash_sent.unwrap());

    // Each receiver sees each sender's numbers in increasing order, none missing.
    async fn check(client: &mut Client, expected: &[(u32, u32)]) {
        let mut next: std::collections::BTreeMap<u32, u32> =
            expected.iter().map(|&(from, _)| (from, 0)).collect();
        let total: u32 = expected.iter().map(|&(_, n)| n).sum();
        for _ in 0..total {
            let got = client.expect_envelope().await;
            let k = u32::from_le_bytes(got.payload_bytes().unwrap().try_into().unwrap());
            let want = next.get_mut(&got.from).expect("a sender we expect");
            assert!(k >= *want, "from #{}: {k} after {}", got.from, *want);
            // Skips are only the messages addressed to somebody else.
            *want = k + 1;
        }
    }
    check(&mut dash, &[(2, N), (3, N)]).await;
    check(&mut ana, &[(3, N / 2), (1, N)]).await;
    check(&mut bo, &[(2, N / 2), (1, N / 2)]).await;
    for client in [&mut dash, &mut ana, &mut bo] {
        client.assert_works().await; // and nothing else was queued for it
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seat_resumes_on_another_relay_and_a_third_takes_it_over() {
    let nats = NatsServer::start();
    let (a, b, c) = three_relays(&nats).await;
    let (mut dash, welcome) = a.dashboard("Teacher").await;
    let (ana, ana_welcome) = b.site(&welcome.room, "Ana").await;
    dash.expect_presence(PresenceEvent::Joined, 2).await;
    ana.close().await;
    dash.expect_presence(PresenceEvent::Left, 2).await;

    // Back through C with the token: the same id, name and role.
    let mut again = c.client().await;
    let back =
        again.join(&welcome.room, Role::Site, "", Some(&ana_welcome.resume)).await.expect_welcome();
    assert_eq!(back.you, ana_welcome.you);
    assert_eq!(back.resume, ana_welcome.resume);
    assert_eq!(dash.expect_presence(PresenceEvent::Rejoined, 2).await.name, "Ana");
    dash.send(To::One(2), "welcome back", b"").await;
    assert_eq!(again.expect_envelope().await.kind, "welcome back");

    // The same token on A (the host itself) takes the identity from C's connection: 4001.
    let mut third = a.client().await;
    third.join(&welcome.room, Role::Site, "", Some(&ana_welcome.resume)).await.expect_welcome();
    let (_, ending) = again.until_end().await;
    assert!(
        matches!(&ending, Ending::Closed(code, _) if *code == close_code::SUPERSEDED),
        "{ending:?}"
    );
    dash.expect_presence(PresenceEvent::Left, 2).await;
    dash.expect_presence(PresenceEvent::Rejoined, 2).await;
    third.assert_works().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn room_codes_are_unique_across_relays_and_every_relay_finds_every_room() {
    let nats = NatsServer::start();
    let (a, b, c) = three_relays(&nats).await;
    let relays = [&a, &b, &c];
    let mut rooms = std::collections::BTreeSet::new();
    let mut dashboards = Vec::new();
    for round in 0..10 {
        for relay in relays {
            let (client, welcome) = relay.dashboard(&format!("D{round}")).await;
            assert!(rooms.insert(welcome.room.clone()), "code {} given twice", welcome.room);
            dashboards.push((client, welcome.room));
        }
    }
    // Each room is found from the next relay round.
    for (i, (_, room)) in dashboards.iter().enumerate() {
        let (_, welcome) = relays[(i + 1) % 3].site(room, "visitor").await;
        assert_eq!(welcome.you.id, 2);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_broker_tells_the_clients_and_their_seats_come_back_after_it() {
    let mut nats = NatsServer::start();
    let (a, b) = (relay_on(&nats).await, relay_on(&nats).await);
    let (mut dash, welcome) = a.dashboard("Teacher").await;
    let (mut ana, ana_welcome) = b.site(&welcome.room, "Ana").await;
    dash.expect_presence(PresenceEvent::Joined, 2).await;
    dash.send(To::One(2), "before", b"").await;
    assert_eq!(ana.expect_envelope().await.kind, "before");

    nats.kill();
    // Ana is told, by an error frame naming the broker, then a close she can retry after.
    let (frames, ending) = ana.until_end().await;
    let told = frames.iter().any(|frame| {
        matches!(frame, RelayFrame::Error { message, .. }
            if message.starts_with(&format!("the relay lost its broker at {}", nats.url())))
    });
    assert!(told, "no error frame naming the broker: {frames:?}");
    assert!(
        matches!(&ending, Ending::Closed(code, _) if *code == close_code::TRY_AGAIN_LATER),
        "{ending:?}"
    );
    // The host lets go of her seat (resumable) and says so; its own room still works.
    dash.expect_presence(PresenceEvent::Left, 2).await;
    dash.assert_works().await;

    // While the broker is away, B refuses what needs it, naming it, as "try again later".
    let mut retry = b.client().await;
    let answer = retry.join(&welcome.room, Role::Site, "", Some(&ana_welcome.resume)).await;
    match answer {
        RelayFrame::Error { code: ErrorCode::RateLimited, message, .. } => {
            assert!(message.contains(&nats.url()), "{message}")
        }
        other => panic!("expected a refusal naming the broker, got {other:?}"),
    }
    let mut creator = b.client().await;
    creator.send_frame(&capelab_wire::ClientFrame::Create { v: 1, name: "x".into() }).await;
    assert!(creator.expect_error(ErrorCode::RateLimited).await.contains("lost its broker"));

    // Once it is back, Ana takes her seat back through B, as the app's retries would.
    nats.restart();
    let deadline = std::time::Instant::now() + HANG_GUARD;
    let back = loop {
        let mut client = b.client().await;
        match client.join(&welcome.room, Role::Site, "", Some(&ana_welcome.resume)).await {
            RelayFrame::Welcome { you, .. } => break (client, you),
            RelayFrame::Error { code: ErrorCode::RateLimited, .. } => {
                assert!(std::time::Instant::now() < deadline, "the broker never came back");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            other => panic!("expected a Welcome or a retry, got {other:?}"),
        }
    };
    let (mut ana, you) = back;
    assert_eq!(you, ana_welcome.you);
    dash.expect_presence(PresenceEvent::Rejoined, 2).await;
    dash.send(To::One(2), "after", b"").await;
    assert_eq!(ana.expect_envelope().await.kind, "after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_relay_hosting_a_room_vanishes_its_visitors_are_told() {
    let nats = NatsServer::start();
    // B's heartbeat every second covers a message sent before the broker noticed the death.
    let b = start({
        let url = nats.url();
        move |config| {
            config.broker = Some(url);
            config.ping_interval = std::time::Duration::from_secs(1);
        }
    })
    .await;
    // The host is a real process, killed without warning.
    let mut host = Command::new(env!("CARGO_BIN_EXE_capelab-relay"))
        .args(["--port", "0", "--quiet", "--ping-secs", "1", "--broker", &nats.url()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the relay binary starts");
    let stdout = host.stdout.take().unwrap();
    let (port, _stdout) = tokio::task::spawn_blocking(move || {
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        while stdout.read_line(&mut line).unwrap() > 0 {
            if let Some(rest) = line.trim_end().strip_prefix("LISTENING http://127.0.0.1:") {
                return (rest.trim_end_matches('/').parse::<u16>().unwrap(), stdout);
            }
            line.clear();
        }
        panic!("the host relay printed no LISTENING line")
    })
    .await
    .unwrap();
    let mut dash = Client::connect(&format!("ws://127.0.0.1:{port}/ws")).await;
    let room = dash.create("Teacher").await.room;
    let (mut ana, _) = b.site(&room, "Ana").await;
    dash.expect_presence(PresenceEvent::Joined, 2).await;

    host.kill().unwrap();
    host.wait().unwrap();
    // Ana's next message or B's heartbeat hears "no responders": she is told the room ended.
    ana.send(To::One(1), "anyone?", b"").await;
    let (frames, ending) = ana.until_end().await;
    let told = frames.iter().any(|frame| {
        matches!(frame, RelayFrame::Error { code: ErrorCode::UnknownRoom, message, .. }
            if message.contains(&format!("room {room} is hosted by another relay")))
    });
    assert!(told, "{frames:?}");
    assert!(
        matches!(&ending, Ending::Closed(code, _) if *code == close_code::GOING_AWAY),
        "{ending:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosting_relay_that_shuts_down_closes_its_visitors_on_other_relays_too() {
    let nats = NatsServer::start();
    let b = relay_on(&nats).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let config = Config { quiet: true, broker: Some(nats.url()), ..Config::default() };
    let host = tokio::spawn(capelab_relay::serve_with_shutdown(listener, config, async move {
        let _ = stopped.await;
    }));
    let mut dash = Client::connect(&format!("ws://{addr}/ws")).await;
    let room = dash.create("Teacher").await.room;
    let (mut ana, _) = b.site(&room, "Ana").await;
    dash.expect_presence(PresenceEvent::Joined, 2).await;

    stop.send(()).unwrap();
    // Ana, on B, gets the host's own shutdown close, as the host's local tabs do.
    for client in [&mut dash, &mut ana] {
        let (_, ending) = client.until_end().await;
        assert!(
            matches!(&ending, Ending::Closed(code, reason)
                if *code == close_code::GOING_AWAY && reason.contains("shutting down")),
            "{ending:?}"
        );
    }
    host.await.unwrap().unwrap();
}
