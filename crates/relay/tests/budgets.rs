//! Byte budgets and room-code guessing: a member flooding its room is slowed and then cut off,
//! never its victims; a guesser gets a handful of tries, then one every two seconds per address.

mod common;

use capelab_relay::close_code;
use capelab_relay::guesses::{ADDRESS_BURST, CONNECTION_BURST, CUT_OFF_AFTER, REFILL_PERIOD};
use capelab_wire::{ErrorCode, PresenceEvent, RelayFrame, Role, To};
use common::{Client, Ending, ExpectWelcome as _, start};
use futures_util::FutureExt as _;
use tokio_tungstenite::tungstenite::Message;

fn now_or_never<F: std::future::Future>(future: F) -> Option<F::Output> {
    future.now_or_never()
}

/// A participant that reads everything, keeps the envelopes of `from` in order, and counts the
/// rest (the flood) without keeping it.
async fn collect_from(client: &mut Client, from: u32, want: usize) -> Vec<String> {
    let mut kinds = Vec::new();
    while kinds.len() < want {
        match client.recv().await {
            RelayFrame::Envelope(e) if e.from == from => kinds.push(e.kind),
            RelayFrame::Envelope(_) | RelayFrame::Presence { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    kinds
}

#[tokio::test]
async fn a_member_flooding_its_room_is_cut_off_and_the_others_get_every_message() {
    // The default budgets, on a clock that never moves: no refill, so the outcome is exact.
    let relay = start(|_| {}).await;
    let (mut dash, welcome) = relay.dashboard("Teacher").await;
    let (mut site, _) = relay.site(&welcome.room, "Ana").await;
    let mut flooder = Client::connect_unlimited(&relay.ws_url()).await;
    flooder.join(&welcome.room, Role::Site, "Flood", None).await.expect_welcome();
    dash.expect_presence(PresenceEvent::Joined, 2).await;

    // 1 MiB frames (786 432 bytes of payload in base64), as fast as the flooder can send them.
    let flood = tokio::spawn(async move {
        let payload = vec![0xAB; 786_432];
        let mut sent = 0u32;
        let mut refused = 0u32;
        loop {
            assert!(sent < 1_000, "the flooder was never cut off (hang guard)");
            let frame = capelab_wire::ClientFrame::Send {
                v: 1,
                to: To::All,
                kind: "flood".into(),
                payload: capelab_wire::encode_payload(&payload),
            };
            if !flooder.try_send_text(serde_json::to_string(&frame).unwrap()).await {
                break;
            }
            sent += 1;
            // Drain what came back without waiting: refusals, presence, and at last the close.
            while let Some(next) = now_or_never(flooder.next_raw()) {
                match next {
                    Some(Message::Text(text)) if text.contains("bytes per second") => refused += 1,
                    Some(Message::Close(Some(close))) => {
                        return (
                            refused,
                            Ending::Closed(close.code.into(), close.reason.to_string()),
                        );
                    }
                    Some(_) => {}
                    None => return (refused, Ending::Dropped),
                }
            }
        }
        let (frames, ending) = flooder.until_end().await;
        let late_refusals = frames
            .iter()
            .filter(|f| matches!(f, RelayFrame::Error { code: ErrorCode::RateLimited, .. }))
            .count() as u32;
        (refused + late_refusals, ending)
    });

    // Meanwhile the dashboard and Ana exchange 200 numbered messages each way.
    for n in 0..200 {
        dash.send(To::One(2), &format!("d/{n}"), b"to Ana").await;
        site.send(To::One(1), &format!("a/{n}"), b"to the dashboard").await;
    }
    let at_ana = collect_from(&mut site, 1, 200).await;
    let at_dash = collect_from(&mut dash, 2, 200).await;
    assert_eq!(at_ana, (0..200).map(|n| format!("d/{n}")).collect::<Vec<_>>());
    assert_eq!(at_dash, (0..200).map(|n| format!("a/{n}")).collect::<Vec<_>>());

    let (refused, ending) = flood.await.unwrap();
    let Ending::Closed(code, reason) = ending else { panic!("no close frame: {ending:?}") };
    assert_eq!(code, close_code::POLICY);
    assert!(reason.starts_with("cut off"), "{reason}");
    assert!(refused > 0, "slowed (refused) before being cut off");
    // Both others are still connected and hear that the flooder left.
    for client in [&mut dash, &mut site] {
        loop {
            match client.recv().await {
                RelayFrame::Presence { event: PresenceEvent::Left, peer, .. } if peer.id == 3 => {
                    break;
                }
                RelayFrame::Envelope(e) if e.from == 3 => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        client.assert_works().await;
    }
}

#[tokio::test]
async fn wrong_room_codes_are_limited_per_connection_and_per_address() {
    let relay = start(|_| {}).await;
    let (_dash, welcome) = relay.dashboard("Teacher").await;
    let wrong = if welcome.room == "ZZZZZZ" { "YYYYYY" } else { "ZZZZZZ" };

    let mut guesser = relay.client().await;
    for _ in 0..CONNECTION_BURST {
        let answer = guesser.join(wrong, Role::Site, "g", None).await;
        assert!(matches!(answer, RelayFrame::Error { code: ErrorCode::UnknownRoom, .. }));
    }
    // Out of tries on this connection: even the right code is refused, so it tells nothing.
    let answer = guesser.join(&welcome.room, Role::Site, "g", None).await;
    let RelayFrame::Error { code: ErrorCode::RateLimited, message, .. } = answer else {
        panic!("expected a refusal, got {answer:?}")
    };
    assert!(message.contains("from this connection"), "{message}");
    assert!(message.contains("wait 2 s"), "{message}");

    // A fresh connection per burst does not help once the address has used its tries.
    let mut used = CONNECTION_BURST;
    while used < ADDRESS_BURST {
        let mut fresh = relay.client().await;
        for _ in 0..CONNECTION_BURST.min(ADDRESS_BURST - used) {
            let answer = fresh.join(wrong, Role::Site, "g", None).await;
            assert!(matches!(answer, RelayFrame::Error { code: ErrorCode::UnknownRoom, .. }));
            used += 1;
        }
    }
    let mut fresh = relay.client().await;
    let answer = fresh.join(&welcome.room, Role::Site, "g", None).await;
    let RelayFrame::Error { code: ErrorCode::RateLimited, message, .. } = answer else {
        panic!("expected a refusal, got {answer:?}")
    };
    assert!(message.contains("from this address"), "{message}");

    // One more try per period, for the address and the connection alike.
    relay.clock.advance(REFILL_PERIOD);
    fresh.join(&welcome.room, Role::Site, "g", None).await.expect_welcome();

    // A connection that keeps trying while refused is closed: it was refused once above, its
    // next try is allowed (the period refilled one), and the 20th refusal closes it.
    let answer = guesser.join(wrong, Role::Site, "g", None).await;
    assert!(matches!(answer, RelayFrame::Error { code: ErrorCode::UnknownRoom, .. }));
    for _ in 2..CUT_OFF_AFTER {
        let answer = guesser.join(wrong, Role::Site, "g", None).await;
        assert!(matches!(answer, RelayFrame::Error { code: ErrorCode::RateLimited, .. }));
    }
    let last = capelab_wire::ClientFrame::Join {
        v: 1,
        room: wrong.into(),
        role: Role::Site,
        name: "g".into(),
        resume: None,
    };
    guesser.send_frame(&last).await;
    let (_, ending) = guesser.until_end().await;
    let Ending::Closed(code, reason) = ending else { panic!("no close frame: {ending:?}") };
    assert_eq!(code, close_code::POLICY);
    assert!(reason.contains("wrong room codes"), "{reason}");
}
