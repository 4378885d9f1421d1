//! A seeded fuzz test over real websockets: 10⁵ hostile frames from eight connections at a relay
//! with two rooms of honest observers. Afterwards the relay is alive and still relays, and no
//! observer ever received a malformed frame or one that was not from a real participant.
//!
//! Each fuzzer's frames come from its own seed (SplitMix64), so the sequence of frames is the
//! same on every run; how they interleave across connections is up to the scheduler, which the
//! checks do not depend on.

mod common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capelab_relay::limits::{MAX_KIND_CHARS, MAX_NAME_CHARS};
use capelab_wire::{ClientFrame, PresenceEvent, RelayFrame, Role, To, encode_payload};
use common::{Client, ExpectWelcome as _, Relay, start};
use futures_util::{SinkExt as _, StreamExt as _};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};

const FUZZERS: u64 = 8;
const FRAMES_PER_FUZZER: u64 = 12_500;
const MAX_FRAME: usize = 4096;
const SEED: u64 = 0x00C0_FFEE;

/// SplitMix64: small, seeded, and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
    /// Up to `max` random bytes.
    fn some_bytes(&mut self, max: u64) -> Vec<u8> {
        let len = self.below(max) as usize;
        self.bytes(len)
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len() as u64) as usize]
    }
}

const ODD: &[&str] = &[
    "\u{202E}",
    "\u{200B}",
    "\u{2066}",
    "\u{FEFF}",
    "\\u0000",
    "\\ud800",
    "\\udfff",
    "é",
    "李",
    "🏴\u{E0067}",
    "\u{0301}\u{0301}",
    "\\\"",
    "\\n",
    "\u{7F}",
    "\u{10FFFF}",
];
const KINDS: &[&str] = &["send", "join", "create", "dance", "", "SEND", "envelope", "welcome"];

/// What every fuzzer knows: the rooms and the resume tokens of room B's observers (foreign
/// tokens for a join to room A, the fuzzers' only use of them).
#[derive(Clone)]
struct Known {
    room_a: String,
    room_b: String,
    b_tokens: Vec<String>,
}

/// One hostile frame. About one in 300 breaks the connection (a protocol violation, or a frame
/// past the socket's hard cap), so that the others are read by a relay still listening.
fn hostile(rng: &mut Rng, known: &Known) -> Message {
    let text = |s: String| Message::Text(s.into());
    let room = if rng.below(2) == 0 { &known.room_a } else { &known.room_b };
    if rng.below(300) == 0 {
        return fatal(rng);
    }
    match rng.below(15) {
        0 => text(String::from_utf8_lossy(&rng.some_bytes(200)).into_owned()),
        1 => {
            let valid = format!(
                r#"{{"type":"send","v":1,"to":"all","kind":"k","payload":"{}"}}"#,
                encode_payload(&rng.bytes(30))
            );
            let cut = rng.below(valid.len() as u64) as usize;
            text(valid[..cut].to_owned())
        }
        2 => {
            let depth = 1 + rng.below(2000) as usize;
            let (open, close) = if rng.below(2) == 0 { ("[", "]") } else { (r#"{"a":"#, "}") };
            let tail = if rng.below(2) == 0 { close.repeat(depth) } else { String::new() };
            text(format!("{}1{tail}", open.repeat(depth)))
        }
        3 => text(
            rng.pick(&[
                r#"{"type":"send","v":"1","to":"all","kind":"k","payload":""}"#,
                r#"{"type":"send","v":1,"to":5,"kind":"k","payload":""}"#,
                r#"{"type":"send","v":1,"to":{"one":"2"},"kind":7,"payload":[]}"#,
                r#"{"type":"join","v":1,"room":123,"role":"admin","name":null}"#,
                r#"{"type":["send"],"v":1}"#,
                r#"[{"type":"create","v":1,"name":"x"}]"#,
                r#"{"type":"create","v":1,"name":{"first":"x"}}"#,
                r#"{"type":"lock","v":1,"locked":true}"#,
                r#"{"type":"lock","v":1,"locked":"no"}"#,
                "null",
                "true",
                r#""a string""#,
            ])
            .to_owned(),
        ),
        4 => text(format!(
            r#"{{"type":"send","v":{},"to":{{"one":{}}},"kind":"k","payload":""}}"#,
            rng.pick(&["1e400", "-1", "4294967297", "1.5", "99999999999999999999999"]),
            rng.pick(&["1e400", "-1", "4294967296", "0.5", "18446744073709551616", "1"]),
        )),
        5 => text(format!(
            r#"{{"type":"{}","v":1,"room":"{room}{}","role":"site","name":"{}","to":"all","kind":"{}","payload":""}}"#,
            rng.pick(&["join", "create", "send"]),
            rng.pick(ODD),
            rng.pick(ODD).repeat(1 + rng.below(50) as usize),
            rng.pick(ODD).repeat(1 + rng.below(80) as usize),
        )),
        6 => Message::Binary(rng.some_bytes(5000).into()),
        7 => text(String::new()),
        8 => {
            // At the limit, or just over it.
            let len = match rng.below(2) {
                0 => MAX_FRAME,
                _ => MAX_FRAME + 1 + rng.below(8) as usize,
            };
            text(sized(len))
        }
        9 => text(format!(
            r#"{{"type":"{}","v":1,"to":"all","kind":"{}","payload":"QQ=="}}"#,
            rng.pick(KINDS),
            "k".repeat(rng.below(2 * MAX_KIND_CHARS as u64) as usize),
        )),
        10 => text(format!(
            r#"{{"type":"send","v":1,"to":{{"one":{}}},"kind":"direct","payload":"QQ=="}}"#,
            rng.below(300)
        )),
        11 => text(format!(
            r#"{{"type":"send","v":1,"room":"{room}","from":{},"to":"all","kind":"forged","payload":"QQ=="}}"#,
            rng.below(4)
        )),
        12 => {
            let token = if rng.below(2) == 0 {
                known.b_tokens[rng.below(known.b_tokens.len() as u64) as usize].clone()
            } else {
                format!("{:032x}", u128::from(rng.next()) << 64 | u128::from(rng.next()))
            };
            text(format!(
                r#"{{"type":"join","v":1,"room":"{}","role":"{}","name":"x","resume":"{token}"}}"#,
                known.room_a,
                rng.pick(&["site", "dashboard"]),
            ))
        }
        // Good traffic, so that hostile frames mingle with real envelopes.
        _ => {
            let to = if rng.below(2) == 0 { "\"all\"".to_owned() } else { r#"{"one":1}"#.into() };
            text(format!(
                r#"{{"type":"send","v":1,"to":{to},"kind":"good","payload":"{}"}}"#,
                encode_payload(&rng.some_bytes(100))
            ))
        }
    }
}

/// A frame the relay cannot read past: it closes the connection (1002, 1007 or 1009).
fn fatal(rng: &mut Rng) -> Message {
    Message::Frame(match rng.below(4) {
        0 => Frame::message(rng.bytes(4), OpCode::Data(Data::Reserved(3)), true),
        1 => Frame::message(vec![b'{', 0xC3, 0x28], OpCode::Data(Data::Text), true),
        2 => Frame::message(rng.bytes(4), OpCode::Data(Data::Continue), true),
        _ => Frame::message(sized(3 * MAX_FRAME + 70 * 1024), OpCode::Data(Data::Text), true),
    })
}

/// A `send` frame of exactly `len` bytes.
fn sized(len: usize) -> String {
    let head = r#"{"type":"send","v":1,"to":"all","kind":"size","payload":""#;
    format!("{head}{}\"}}", "A".repeat(len.saturating_sub(head.len() + 2)))
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(relay: &Relay) -> Ws {
    let config = WebSocketConfig::default()
        .max_message_size(Some(usize::MAX))
        .max_frame_size(Some(usize::MAX));
    tokio_tungstenite::connect_async_with_config(relay.ws_url(), Some(config), false)
        .await
        .expect("websocket connects")
        .0
}

/// Sends `FRAMES_PER_FUZZER` hostile frames, reconnecting (and joining a room again) whenever
/// the relay closes the connection. Returns how many frames went out.
async fn fuzz(relay: Arc<Relay>, known: Known, seed: u64) -> u64 {
    let mut rng = Rng(seed);
    let mut sent = 0;
    while sent < FRAMES_PER_FUZZER {
        let (mut sink, mut stream) = connect(&relay).await.split();
        // Seated in one of the rooms, or left unseated, by seed.
        let join = match rng.below(3) {
            0 => Some(&known.room_a),
            1 => Some(&known.room_b),
            _ => None,
        };
        if let Some(room) = join {
            let frame = ClientFrame::Join {
                v: 1,
                room: room.clone(),
                role: Role::Site,
                name: format!("fuzz {seed}"),
                resume: None,
            };
            let _ = sink.send(Message::Text(serde_json::to_string(&frame).unwrap().into())).await;
        }
        // Drain the replies, so that the relay never closes us for leaving refusals unread.
        let closed = Arc::new(Mutex::new(false));
        let drain = {
            let closed = closed.clone();
            tokio::spawn(async move {
                while let Some(Ok(message)) = stream.next().await {
                    if matches!(message, Message::Close(_)) {
                        break;
                    }
                }
                *closed.lock().unwrap() = true;
            })
        };
        while sent < FRAMES_PER_FUZZER && !*closed.lock().unwrap() {
            let message = hostile(&mut rng, &known);
            sent += 1;
            if sink.send(message).await.is_err() {
                break;
            }
            if sent % 500 == 0 {
                // Room-code tries come back (one per 2 s); the frames themselves stay the same.
                relay.clock.advance(Duration::from_secs(20));
            }
        }
        let _ = sink.close().await;
        drain.abort();
    }
    sent
}

/// What an honest observer saw while the fuzzers ran.
#[derive(Debug, Default)]
struct Seen {
    envelopes: u64,
    presences: u64,
    /// Every problem, described; must stay empty.
    problems: Vec<String>,
}

/// Reads everything `client` receives and checks it: well-formed, from this room, from a
/// participant that really is in it and is not an observer (observers send nothing meanwhile).
/// Once told to stop, it waits until every fuzzer has left its room, then sends itself a marker
/// and reads up to it, so nothing is left in flight.
async fn observe(
    mut client: Client,
    room: String,
    observers: BTreeSet<u32>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> (Client, Seen) {
    let mut seen = Seen::default();
    let mut members: BTreeSet<u32> = observers.clone();
    let mut present = BTreeSet::new();
    let me = client.me.clone().unwrap().id;
    let mut stopping = false;
    let mut marker_sent = false;
    loop {
        if stopping && present.is_empty() && !marker_sent {
            client.send(To::One(me), "marker/end", b"").await;
            marker_sent = true;
        }
        let message = tokio::select! {
            _ = stop.wait_for(|s| *s), if !stopping => {
                stopping = true;
                continue;
            }
            message = client.next_raw() => message,
        };
        let Some(message) = message else {
            seen.problems.push("the observer's connection ended".into());
            return (client, seen);
        };
        let text = match message {
            Message::Text(text) => text,
            Message::Ping(_) | Message::Pong(_) => continue,
            other => {
                seen.problems.push(format!("not a text frame: {other:?}"));
                continue;
            }
        };
        let frame = match serde_json::from_str::<RelayFrame>(&text) {
            Ok(frame) => frame,
            Err(error) => {
                seen.problems.push(format!("malformed frame {text:?}: {error}"));
                continue;
            }
        };
        match frame {
            RelayFrame::Presence { event, peer, .. } => {
                seen.presences += 1;
                let name_ok = peer.name.chars().count() <= MAX_NAME_CHARS
                    && !peer.name.chars().any(char::is_control)
                    && !peer.name.contains(['\u{202E}', '\u{200B}', '\u{2066}', '\u{FEFF}']);
                if !name_ok || peer.role != Role::Site || observers.contains(&peer.id) {
                    seen.problems.push(format!("odd presence {event:?} {peer:?}"));
                }
                if event == PresenceEvent::Left {
                    present.remove(&peer.id);
                } else {
                    members.insert(peer.id);
                    present.insert(peer.id);
                }
            }
            RelayFrame::Envelope(envelope) if envelope.from == me => {
                if envelope.kind == "marker/end" && marker_sent {
                    return (client, seen);
                }
                seen.problems.push(format!("an envelope in my name {envelope:?}"));
            }
            RelayFrame::Envelope(envelope) => {
                seen.envelopes += 1;
                let addressed = envelope.to == To::All || envelope.to == To::One(me);
                if envelope.room != room
                    || !members.contains(&envelope.from)
                    || observers.contains(&envelope.from)
                    || !addressed
                    || envelope.kind.chars().count() > MAX_KIND_CHARS
                {
                    seen.problems.push(format!("forged or misrouted envelope {envelope:?}"));
                }
            }
            other => seen.problems.push(format!("unexpected frame {other:?}")),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_hostile_frames_reach_no_one_and_the_relay_carries_on() {
    let relay = Arc::new(
        start(|config| {
            config.limits.max_frame_bytes = MAX_FRAME;
            config.limits.max_queue_bytes = 1 << 20;
            config.limits.max_participants = 100_000;
            config.limits.messages_per_second = 1_000_000;
            config.limits.burst = 1_000_000;
            config.limits.bytes_per_second = u32::MAX;
            config.limits.byte_burst = u32::MAX;
            config.limits.room_bytes_per_second = u32::MAX;
            config.limits.room_byte_burst = u32::MAX;
        })
        .await,
    );
    let (a1, wa) = relay.dashboard("observer A1").await;
    let (a2, _) = relay.site(&wa.room, "observer A2").await;
    let (b1, wb) = relay.dashboard("observer B1").await;
    let (b2, wb2) = relay.site(&wb.room, "observer B2").await;
    let known = Known {
        room_a: wa.room.clone(),
        room_b: wb.room.clone(),
        b_tokens: vec![wb.resume.clone(), wb2.resume.clone()],
    };

    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut observers = Vec::new();
    for (client, room) in [(a1, &wa.room), (a2, &wa.room), (b1, &wb.room), (b2, &wb.room)] {
        let ids = BTreeSet::from([1, 2]);
        let mut client = client;
        // A1 still has A2's join queued; it is an observer, not a fuzzer.
        if client.me.as_ref().unwrap().id == 1 {
            client.expect_presence(PresenceEvent::Joined, 2).await;
        }
        observers.push(tokio::spawn(observe(client, room.clone(), ids, stopped.clone())));
    }

    let fuzzers: Vec<_> =
        (0..FUZZERS).map(|n| tokio::spawn(fuzz(relay.clone(), known.clone(), SEED + n))).collect();
    let mut total = 0;
    for fuzzer in fuzzers {
        total += fuzzer.await.unwrap();
    }
    assert!(total >= 100_000, "{total} frames");

    // Still alive, and still relaying good traffic in both rooms.
    assert_eq!(relay.get("/healthz").await.body, "ok");
    stop.send(true).unwrap();
    let mut clients = Vec::new();
    for observer in observers {
        let (client, seen) = observer.await.unwrap();
        assert!(seen.problems.is_empty(), "{} problems, first: {:?}", seen.problems.len(), {
            seen.problems.first()
        });
        assert!(seen.envelopes > 0 && seen.presences > 0, "{seen:?}");
        eprintln!(
            "observer saw {} envelopes and {} presence events",
            seen.envelopes, seen.presences
        );
        clients.push(client);
    }
    for client in &mut clients {
        client.assert_works().await;
    }
    let fresh = relay.client().await;
    let mut fresh = fresh;
    fresh.join(&wa.room, Role::Site, "after the storm", None).await.expect_welcome();
    fresh.assert_works().await;
}
