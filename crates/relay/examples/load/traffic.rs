/*!
The load generator's traffic: real websocket clients speaking the relay's wire protocol
(`capelab_wire`: `Create`, `Join` with the room's code, `Send` to one or to all), and the
three scenarios of issue 16 §2. Shared by the `load` example (the benchmark, against a release
relay process) and by `tests/load.rs` (the short version in the test command), which includes
this file with `#[path]`.

Every small envelope carries its sender's sequence number `k`, the time it was sent (µs since the
run started, on this process's monotonic clock: every client lives in this one process) and the
phase it was sent in. Which members a sender's message `k` goes to is a pure function of `k`
([`target_of`]): even `k` to all, odd `k` to one member, round robin. So each receiver knows
exactly which of a sender's numbers it must see, and at the end (every sender's last frame is a
`load/done` to all, with its count) counts what was lost, duplicated (a number seen twice) or
reordered (a number below one already seen), per sender.

Each sender keeps under the relay's message rate: a fixed pace per sender (`rate`), started at a
staggered offset so the senders do not tick together.
*/

#![allow(dead_code)] // the example and the test each use part of it

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use capelab_wire::{
    ClientFrame, ErrorCode, Limits, ParticipantId, PresenceEvent, RelayFrame, Role, To,
    WIRE_VERSION, decode_payload, encode_payload,
};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt as _, StreamExt as _};
use serde::Serialize;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{MissedTickBehavior, timeout};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;
pub type Res<T> = Result<T, String>;

/// How long a client waits for something that must come (a `Welcome`, the last frames after the
/// senders stop) before counting it as missing. Not a timing target.
pub const GUARD: Duration = Duration::from_secs(20);

const KIND_SMALL: &str = "load/small";
const KIND_DONE: &str = "load/done";
const KIND_BULK: &str = "load/bulk";
const KIND_ECHO: &str = "load/echo";

/// Phases a small envelope can be sent in; latencies are kept per phase.
pub const PHASE_WARMUP: u8 = 0;
pub const PHASE_MEASURE: u8 = 1;
/// The never-reading scenario: one member has stopped reading.
pub const PHASE_STUCK: u8 = 2;
/// The never-reading scenario: the stuck member has been dropped by the relay.
pub const PHASE_AFTER_DROP: u8 = 3;
const PHASES: usize = 4;

/// Resolves once the run's stop flag is set (the guard it reads is not held across awaits).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// A client connected to `url`, with Nagle off (as a browser's websocket) and no message cap.
pub async fn connect(url: &str) -> Res<Ws> {
    let config = WebSocketConfig::default()
        .max_message_size(Some(usize::MAX))
        .max_frame_size(Some(usize::MAX));
    let (ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), true)
        .await
        .map_err(|e| format!("cannot connect to {url}: {e}"))?;
    Ok(ws)
}

fn frame_text(frame: &ClientFrame) -> Message {
    Message::Text(serde_json::to_string(frame).expect("client frames serialise").into())
}

/// One member of a room, seated, with what its `Welcome` said.
pub struct Seated {
    pub ws: Ws,
    pub id: ParticipantId,
    pub room: String,
    pub resume: String,
    pub limits: Limits,
}

/// What a `Welcome` says, without the socket.
struct WelcomeInfo {
    id: ParticipantId,
    room: String,
    resume: String,
    limits: Limits,
}

async fn read_welcome(ws: &mut Ws) -> Res<WelcomeInfo> {
    let text = timeout(GUARD, async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(text))) => return Ok(text),
                Some(Ok(Message::Close(frame))) => return Err(format!("closed: {frame:?}")),
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e.to_string()),
                None => return Err("the connection ended".into()),
            }
        }
    })
    .await
    .map_err(|_| "no Welcome in time".to_string())??;
    match serde_json::from_str::<RelayFrame>(&text) {
        Ok(RelayFrame::Welcome { room, you, resume, limits, .. }) => {
            Ok(WelcomeInfo { id: you.id, room, resume, limits })
        }
        _ => Err(format!("expected a Welcome, got {text}")),
    }
}

/// Creates a room as its dashboard.
pub async fn create(url: &str, name: &str) -> Res<Seated> {
    let mut ws = connect(url).await?;
    ws.send(frame_text(&ClientFrame::Create { v: WIRE_VERSION, name: name.into() }))
        .await
        .map_err(|e| e.to_string())?;
    let w = read_welcome(&mut ws).await?;
    Ok(Seated { ws, id: w.id, room: w.room, resume: w.resume, limits: w.limits })
}

/// Joins `room` (its code) as a site, or takes an identity back with its resume token.
pub async fn join(url: &str, room: &str, name: &str, resume: Option<&str>) -> Res<Seated> {
    let mut ws = connect(url).await?;
    let frame = ClientFrame::Join {
        v: WIRE_VERSION,
        room: room.into(),
        role: Role::Site,
        name: name.into(),
        resume: resume.map(str::to_owned),
    };
    ws.send(frame_text(&frame)).await.map_err(|e| e.to_string())?;
    let w = read_welcome(&mut ws).await?;
    Ok(Seated { ws, id: w.id, room: w.room, resume: w.resume, limits: w.limits })
}

/// A room of `members` (a dashboard and sites), seated one after the other so ids are 1..=members.
pub async fn seat_room(url: &str, members: usize, label: &str) -> Res<Vec<Seated>> {
    seat_room_across(&[url.to_owned()], members, label, 0).await
}

/// [`seat_room`] with the members spread over several relays behind one broker, round robin
/// from `urls[first % urls.len()]` (the room's creator, its host).
pub async fn seat_room_across(
    urls: &[String],
    members: usize,
    label: &str,
    first: usize,
) -> Res<Vec<Seated>> {
    let url = |i: usize| urls[(first + i) % urls.len()].as_str();
    let creator = create(url(0), &format!("{label} 1")).await?;
    let room = creator.room.clone();
    let mut seated = vec![creator];
    for i in 2..=members {
        let member = join(url(i - 1), &room, &format!("{label} {i}"), None).await?;
        if member.id as usize != i {
            return Err(format!("expected id {i} in room {room}, got {}", member.id));
        }
        seated.push(member);
    }
    Ok(seated)
}

/// The payload of a small envelope: `k`, the send time (µs), the phase, then padding.
fn small_payload(k: u64, sent_us: u64, phase: u8, size: usize) -> String {
    let mut bytes = vec![0u8; size.max(17)];
    bytes[..8].copy_from_slice(&k.to_le_bytes());
    bytes[8..16].copy_from_slice(&sent_us.to_le_bytes());
    bytes[16] = phase;
    encode_payload(&bytes)
}

fn read_small(payload: &str) -> Option<(u64, u64, u8)> {
    let bytes = decode_payload(payload).ok()?;
    if bytes.len() < 17 {
        return None;
    }
    let k = u64::from_le_bytes(bytes[..8].try_into().ok()?);
    let sent = u64::from_le_bytes(bytes[8..16].try_into().ok()?);
    Some((k, sent, bytes[16]))
}

/// Where a sender's message `k` goes: even `k` to everyone else, odd `k` to one of `targets`
/// (the tracked members other than the sender), round robin.
pub fn target_of(k: u64, targets: &[ParticipantId]) -> To {
    if k.is_multiple_of(2) || targets.is_empty() {
        To::All
    } else {
        To::One(targets[((k / 2) % targets.len() as u64) as usize])
    }
}

/// How many of a sender's first `total` messages `receiver` must get, with that sender's
/// `targets`.
pub fn expected_for(total: u64, targets: &[ParticipantId], receiver: ParticipantId) -> u64 {
    (0..total)
        .filter(|&k| match target_of(k, targets) {
            To::All => true,
            To::One(id) => id == receiver,
        })
        .count() as u64
}

/// What one receiver saw of one sender's small envelopes.
#[derive(Default)]
struct Stream {
    seen: Vec<u64>,
    max: Option<u64>,
    distinct: u64,
    duplicated: u64,
    reordered: u64,
    /// The sender's count, from its `load/done`.
    done: Option<u64>,
}

impl Stream {
    fn record(&mut self, k: u64) {
        let (word, bit) = ((k / 64) as usize, k % 64);
        if self.seen.len() <= word {
            self.seen.resize(word + 1, 0);
        }
        if self.seen[word] & (1 << bit) != 0 {
            self.duplicated += 1;
            return;
        }
        self.seen[word] |= 1 << bit;
        self.distinct += 1;
        if self.max.is_some_and(|max| k < max) {
            self.reordered += 1;
        }
        self.max = Some(self.max.map_or(k, |max| max.max(k)));
    }
}

/// The latencies one receiver measured, per phase, in µs.
#[derive(Default)]
struct Latencies([Vec<u32>; PHASES]);

/// Percentiles of a set of latencies.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Percentiles {
    pub count: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

impl Percentiles {
    pub fn of(mut micros: Vec<u32>) -> Self {
        if micros.is_empty() {
            return Percentiles::default();
        }
        micros.sort_unstable();
        let at = |q: f64| {
            let index = ((micros.len() as f64 * q).ceil() as usize).clamp(1, micros.len()) - 1;
            f64::from(micros[index]) / 1000.0
        };
        Percentiles {
            count: micros.len(),
            p50_ms: at(0.50),
            p99_ms: at(0.99),
            p999_ms: at(0.999),
            max_ms: f64::from(*micros.last().unwrap()) / 1000.0,
        }
    }
}

/// State every client of a run shares.
struct Run {
    start: Instant,
    /// The phase new small envelopes are sent in.
    phase: AtomicU8,
    /// Senders stop (and send their `load/done`) once this is set.
    stop: watch::Sender<bool>,
    /// A tracked member the relay dropped: its id, so senders stop addressing it.
    gone: Vec<AtomicBool>,
}

impl Run {
    fn new(members: usize) -> Arc<Self> {
        Arc::new(Run {
            start: Instant::now(),
            phase: AtomicU8::new(PHASE_WARMUP),
            stop: watch::Sender::new(false),
            gone: (0..=members).map(|_| AtomicBool::new(false)).collect(),
        })
    }

    fn micros(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }
}

/// How the members of a room behave.
#[derive(Clone, Debug)]
pub struct RoomPlan {
    pub members: usize,
    /// Small envelopes per second per sender.
    pub rate: f64,
    /// Bytes of each small envelope's payload before base64 (at least 17).
    pub payload_bytes: usize,
    /// The never-reading member (its id), if any: it sends no small envelopes and is not a
    /// tracked receiver, and the others also send it bulk frames.
    pub stuck: Option<ParticipantId>,
    /// Bulk frames to the stuck member: payload bytes before base64, and frames per second per
    /// sender.
    pub bulk_bytes: usize,
    pub bulk_rate: f64,
}

/// What a sending half did, and its sink to close.
struct Tally {
    sent: u64,
    sent_in: [u64; PHASES],
    bulk_sent: u64,
    sink: SplitSink<Ws, Message>,
}

/// What one tracked member ended with.
struct MemberOutcome {
    id: ParticipantId,
    sent: u64,
    sent_in: [u64; PHASES],
    bulk_sent: u64,
    streams: BTreeMap<ParticipantId, Stream>,
    latencies: Latencies,
    delivered_in: [u64; PHASES],
    presence: u64,
    refusals: BTreeMap<String, u64>,
    /// Refusals for addressing the stuck member after the relay dropped it (expected).
    refused_to_gone: u64,
    misrouted: u64,
    ended: Option<String>,
    complete: bool,
}

/// What the never-reading member saw, once it read again.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StuckEnding {
    /// The close code and reason the relay sent it, if it got that far.
    pub close_code: Option<u16>,
    pub close_reason: Option<String>,
    /// Frames still buffered in the kernel when it read again.
    pub frames_drained: u64,
    pub bytes_drained: u64,
}

/// A room of members running traffic until told to stop.
struct RoomRun {
    members: Vec<JoinHandle<MemberOutcome>>,
    stuck: Option<(JoinHandle<StuckEnding>, watch::Sender<bool>)>,
}

fn spawn_room(run: &Arc<Run>, plan: &RoomPlan, seated: Vec<Seated>) -> RoomRun {
    let tracked: Vec<ParticipantId> =
        seated.iter().map(|s| s.id).filter(|&id| Some(id) != plan.stuck).collect();
    let mut members = Vec::new();
    let mut stuck = None;
    let n = tracked.len().max(1);
    for (index, member) in seated.into_iter().enumerate() {
        let (sink, stream) = member.ws.split();
        if Some(member.id) == plan.stuck {
            let (reading, read_again) = watch::channel(true);
            let handle =
                tokio::spawn(stuck_member(run.clone(), member.id, sink, stream, read_again));
            stuck = Some((handle, reading));
            continue;
        }
        let targets: Vec<ParticipantId> =
            tracked.iter().copied().filter(|&id| id != member.id).collect();
        // Staggered start: sender i begins i/n of a period late.
        let offset = Duration::from_secs_f64(index as f64 / n as f64 / plan.rate.max(1e-9));
        let sender = tokio::spawn(send_small(run.clone(), plan.clone(), targets, sink, offset));
        let senders: BTreeMap<ParticipantId, Vec<ParticipantId>> = tracked
            .iter()
            .map(|&s| (s, tracked.iter().copied().filter(|&id| id != s).collect()))
            .collect();
        members.push(tokio::spawn(receive(
            run.clone(),
            plan.clone(),
            member.id,
            senders,
            stream,
            sender,
        )));
    }
    RoomRun { members, stuck }
}

/// A tracked member's sending half: small envelopes at the plan's pace (and bulk frames to the
/// stuck member while it is connected), then `load/done`. Returns (small sent, bulk sent).
async fn send_small(
    run: Arc<Run>,
    plan: RoomPlan,
    targets: Vec<ParticipantId>,
    mut sink: SplitSink<Ws, Message>,
    offset: Duration,
) -> Tally {
    let period = Duration::from_secs_f64(1.0 / plan.rate);
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + offset, period);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let bulk_payload = plan.stuck.map(|_| encode_payload(&vec![0x5A; plan.bulk_bytes]));
    let mut bulk = plan.stuck.filter(|_| plan.bulk_rate > 0.0).map(|_| {
        let every = Duration::from_secs_f64(1.0 / plan.bulk_rate);
        let mut t = tokio::time::interval_at(tokio::time::Instant::now() + offset, every);
        t.set_missed_tick_behavior(MissedTickBehavior::Delay);
        t
    });
    let mut stop = run.stop.subscribe();
    let (mut k, mut bulk_sent, mut sent_in) = (0u64, 0u64, [0u64; PHASES]);
    loop {
        tokio::select! {
            biased;
            _ = stopped(&mut stop) => break,
            _ = ticks.tick() => {
                let phase = run.phase.load(Ordering::Relaxed);
                let payload = small_payload(k, run.micros(), phase, plan.payload_bytes);
                let frame = ClientFrame::Send {
                    v: WIRE_VERSION,
                    to: target_of(k, &targets),
                    kind: KIND_SMALL.into(),
                    payload,
                };
                if sink.send(frame_text(&frame)).await.is_err() {
                    break;
                }
                k += 1;
                sent_in[usize::from(phase).min(PHASES - 1)] += 1;
            }
            _ = async { bulk.as_mut().unwrap().tick().await }, if bulk.is_some() => {
                let to = plan.stuck.unwrap();
                if run.gone[to as usize].load(Ordering::Relaxed) {
                    bulk = None;
                    continue;
                }
                let frame = ClientFrame::Send {
                    v: WIRE_VERSION,
                    to: To::One(to),
                    kind: KIND_BULK.into(),
                    payload: bulk_payload.clone().unwrap(),
                };
                if sink.send(frame_text(&frame)).await.is_err() {
                    break;
                }
                bulk_sent += 1;
            }
        }
    }
    let done = ClientFrame::Send {
        v: WIRE_VERSION,
        to: To::All,
        kind: KIND_DONE.into(),
        payload: encode_payload(&k.to_le_bytes()),
    };
    let _ = sink.send(frame_text(&done)).await;
    Tally { sent: k, sent_in, bulk_sent, sink }
}

/// A tracked member's reading half, until every other tracked sender's `load/done` arrived.
async fn receive(
    run: Arc<Run>,
    plan: RoomPlan,
    me: ParticipantId,
    senders: BTreeMap<ParticipantId, Vec<ParticipantId>>,
    mut stream: SplitStream<Ws>,
    sender: JoinHandle<Tally>,
) -> MemberOutcome {
    let mut out = MemberOutcome {
        id: me,
        sent: 0,
        sent_in: [0; PHASES],
        bulk_sent: 0,
        streams: senders.keys().filter(|&&s| s != me).map(|&s| (s, Stream::default())).collect(),
        latencies: Latencies::default(),
        delivered_in: [0; PHASES],
        presence: 0,
        refusals: BTreeMap::new(),
        refused_to_gone: 0,
        misrouted: 0,
        ended: None,
        complete: false,
    };
    let mut stop = run.stop.subscribe();
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        if out.streams.values().all(|s| s.done.is_some()) {
            out.complete = true;
            break;
        }
        let next = tokio::select! {
            next = stream.next() => next,
            _ = stopped(&mut stop), if deadline.is_none() => {
                deadline = Some(tokio::time::Instant::now() + GUARD);
                continue;
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(tokio::time::Instant::now)), if deadline.is_some() => break,
        };
        let text = match next {
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(Message::Close(frame))) => {
                out.ended = Some(match frame {
                    Some(f) => format!("closed by the relay ({}: {})", u16::from(f.code), f.reason),
                    None => "closed without a reason".into(),
                });
                break;
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => {
                out.ended = Some(format!("socket error: {e}"));
                break;
            }
            None => {
                out.ended = Some("the connection ended".into());
                break;
            }
        };
        let now = run.micros();
        match serde_json::from_str::<RelayFrame>(&text) {
            Ok(RelayFrame::Envelope(envelope)) => match envelope.kind.as_str() {
                KIND_SMALL => {
                    let Some((k, sent, phase)) = read_small(&envelope.payload) else {
                        out.misrouted += 1;
                        continue;
                    };
                    let Some(targets) = senders.get(&envelope.from) else {
                        out.misrouted += 1;
                        continue;
                    };
                    if let To::One(id) = target_of(k, targets)
                        && id != me
                    {
                        out.misrouted += 1;
                    }
                    if let Some(s) = out.streams.get_mut(&envelope.from) {
                        s.record(k);
                    }
                    let phase = usize::from(phase).min(PHASES - 1);
                    out.delivered_in[phase] += 1;
                    let latency = now.saturating_sub(sent).min(u64::from(u32::MAX)) as u32;
                    out.latencies.0[phase].push(latency);
                }
                KIND_DONE => {
                    let total = decode_payload(&envelope.payload)
                        .ok()
                        .and_then(|b| b.try_into().ok())
                        .map(u64::from_le_bytes);
                    if let (Some(s), Some(total)) = (out.streams.get_mut(&envelope.from), total) {
                        s.done = Some(total);
                    }
                }
                _ => out.misrouted += 1,
            },
            Ok(RelayFrame::Presence { event, peer, .. }) => {
                out.presence += 1;
                if event == PresenceEvent::Left && Some(peer.id) == plan.stuck {
                    run.gone[peer.id as usize].store(true, Ordering::Relaxed);
                }
            }
            Ok(RelayFrame::Error { code, message, .. }) => {
                if code == ErrorCode::UnknownRecipient
                    && plan.stuck.is_some_and(|id| run.gone[id as usize].load(Ordering::Relaxed))
                {
                    out.refused_to_gone += 1;
                } else {
                    *out.refusals.entry(format!("{code:?}: {message}")).or_default() += 1;
                }
            }
            Ok(RelayFrame::Welcome { .. }) | Err(_) => out.misrouted += 1,
        }
    }
    if let Ok(Tally { sent, sent_in, bulk_sent, mut sink }) = sender.await {
        out.sent = sent;
        out.sent_in = sent_in;
        out.bulk_sent = bulk_sent;
        let _ = sink.close().await;
    }
    out
}

/// The never-reading member: stops reading when told, keeps sending a tiny echo to itself every
/// 2 s (a live but unreading client: the relay must not wait for it to be silent), and reads
/// again once told, to see the relay's close frame.
async fn stuck_member(
    run: Arc<Run>,
    me: ParticipantId,
    mut sink: SplitSink<Ws, Message>,
    mut stream: SplitStream<Ws>,
    mut reading: watch::Receiver<bool>,
) -> StuckEnding {
    let mut ending = StuckEnding::default();
    let mut heartbeat = tokio::time::interval(Duration::from_secs(2));
    let mut stop = run.stop.subscribe();
    let echo = frame_text(&ClientFrame::Send {
        v: WIRE_VERSION,
        to: To::One(me),
        kind: KIND_ECHO.into(),
        payload: String::new(),
    });
    let mut paused_once = false;
    loop {
        let is_reading = *reading.borrow();
        tokio::select! {
            _ = stopped(&mut stop) => break,
            changed = reading.changed() => {
                if changed.is_err() { break; }
                if !*reading.borrow() { paused_once = true; }
            }
            _ = heartbeat.tick() => {
                // Fails once the relay has closed the socket; the reading side will tell why.
                let _ = timeout(Duration::from_millis(500), sink.send(echo.clone())).await;
            }
            next = stream.next(), if is_reading => match next {
                Some(Ok(Message::Text(text))) => {
                    if paused_once {
                        ending.frames_drained += 1;
                        ending.bytes_drained += text.len() as u64;
                    }
                }
                Some(Ok(Message::Close(frame))) => {
                    if let Some(f) = frame {
                        ending.close_code = Some(u16::from(f.code));
                        ending.close_reason = Some(f.reason.to_string());
                    }
                    break;
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break,
            },
        }
    }
    ending
}

/// How a scenario's tracked members did, all together.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Correctness {
    /// Small envelopes sent by tracked senders.
    pub sent: u64,
    /// Small envelopes received by tracked receivers (all phases).
    pub delivered: u64,
    /// Expected at a receiver but never seen.
    pub lost: u64,
    pub duplicated: u64,
    pub reordered: u64,
    /// Received by a member it was not addressed to, or not a load envelope.
    pub misrouted: u64,
    /// Tracked members whose connection ended before the run did, with why.
    pub dropped: Vec<String>,
    /// Refusals from the relay (rate limits and the like), by message; must be empty.
    pub refusals: BTreeMap<String, u64>,
    /// Receivers that did not hear every sender's `load/done` in time.
    pub incomplete: u64,
    /// Per sender (room, id): lost, duplicated and reordered at its receivers, only where any
    /// is non-zero.
    pub per_sender_faults: Vec<SenderFaults>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SenderFaults {
    pub room: usize,
    pub sender: ParticipantId,
    pub lost: u64,
    pub duplicated: u64,
    pub reordered: u64,
}

impl Correctness {
    pub fn clean(&self) -> bool {
        self.lost == 0
            && self.duplicated == 0
            && self.reordered == 0
            && self.misrouted == 0
            && self.dropped.is_empty()
            && self.refusals.is_empty()
            && self.incomplete == 0
    }
}

/// Everything a set of rooms measured.
struct Collected {
    correctness: Correctness,
    latencies: [Vec<u32>; PHASES],
    delivered_in: [u64; PHASES],
    sent_in: [u64; PHASES],
    presence: u64,
    refused_to_gone: u64,
    bulk_sent: u64,
}

fn collect(rooms: Vec<Vec<MemberOutcome>>) -> Collected {
    let mut c = Correctness::default();
    let mut latencies: [Vec<u32>; PHASES] = Default::default();
    let mut delivered_in = [0; PHASES];
    let mut sent_in = [0; PHASES];
    let (mut presence, mut refused_to_gone, mut bulk_sent) = (0, 0, 0);
    for (room_index, outcomes) in rooms.into_iter().enumerate() {
        let tracked: Vec<ParticipantId> = outcomes.iter().map(|o| o.id).collect();
        let totals: BTreeMap<ParticipantId, u64> =
            outcomes.iter().map(|o| (o.id, o.sent)).collect();
        let mut faults: BTreeMap<ParticipantId, (u64, u64, u64)> = BTreeMap::new();
        for o in outcomes {
            c.sent += o.sent;
            bulk_sent += o.bulk_sent;
            c.misrouted += o.misrouted;
            presence += o.presence;
            refused_to_gone += o.refused_to_gone;
            for (message, n) in o.refusals {
                *c.refusals.entry(message).or_default() += n;
            }
            if let Some(why) = &o.ended {
                c.dropped.push(format!("room {room_index} #{}: {why}", o.id));
            }
            if !o.complete {
                c.incomplete += 1;
            }
            for (phase, lat) in o.latencies.0.into_iter().enumerate() {
                latencies[phase].extend(lat);
                delivered_in[phase] += o.delivered_in[phase];
                sent_in[phase] += o.sent_in[phase];
            }
            for (sender, stream) in &o.streams {
                c.delivered += stream.distinct + stream.duplicated;
                let targets: Vec<ParticipantId> =
                    tracked.iter().copied().filter(|&id| id != *sender).collect();
                // What the sender says it sent; its `done` if the receiver heard it.
                let total = stream.done.unwrap_or(totals[sender]);
                let expected = expected_for(total, &targets, o.id);
                let lost = expected.saturating_sub(stream.distinct);
                let entry = faults.entry(*sender).or_default();
                entry.0 += lost;
                entry.1 += stream.duplicated;
                entry.2 += stream.reordered;
            }
        }
        for (sender, (lost, duplicated, reordered)) in faults {
            c.lost += lost;
            c.duplicated += duplicated;
            c.reordered += reordered;
            if lost + duplicated + reordered > 0 {
                c.per_sender_faults.push(SenderFaults {
                    room: room_index,
                    sender,
                    lost,
                    duplicated,
                    reordered,
                });
            }
        }
    }
    Collected {
        correctness: c,
        latencies,
        delivered_in,
        sent_in,
        presence,
        refused_to_gone,
        bulk_sent,
    }
}

/// The throughput scenario's settings.
#[derive(Clone, Debug)]
pub struct ExchangeOptions {
    pub rooms: usize,
    pub members: usize,
    pub rate: f64,
    pub payload_bytes: usize,
    pub warmup: Duration,
    pub duration: Duration,
}

#[derive(Clone, Debug, Serialize)]
pub struct ExchangeReport {
    /// Relays the members were spread over (behind one broker when more than one).
    pub relays: usize,
    pub rooms: usize,
    pub members_per_room: usize,
    pub clients: usize,
    pub rate_per_sender: f64,
    pub payload_bytes: usize,
    /// Half the messages go to all (members − 1 deliveries), half to one member.
    pub pattern: &'static str,
    pub warmup_secs: f64,
    pub measured_secs: f64,
    /// Small envelopes sent per second by all senders during the measured window.
    pub sent_per_second: f64,
    /// Envelopes delivered per second (counted at the receivers) during the measured window.
    pub delivered_per_second: f64,
    pub latency: Percentiles,
    pub correctness: Correctness,
    pub limits_announced: Limits,
}

/// Seats `rooms` rooms of `members` and runs small envelopes among them.
pub async fn exchange(url: &str, options: &ExchangeOptions) -> Res<ExchangeReport> {
    exchange_across(&[url.to_owned()], options).await
}

/// [`exchange`] with each room's members spread over `urls` (relays behind one broker), each
/// room hosted by the next relay in turn.
pub async fn exchange_across(urls: &[String], options: &ExchangeOptions) -> Res<ExchangeReport> {
    let plan = RoomPlan {
        members: options.members,
        rate: options.rate,
        payload_bytes: options.payload_bytes,
        stuck: None,
        bulk_bytes: 0,
        bulk_rate: 0.0,
    };
    let mut seated_rooms = Vec::new();
    for r in 0..options.rooms {
        seated_rooms.push(seat_room_across(urls, options.members, &format!("load r{r}"), r).await?);
    }
    let limits = seated_rooms[0][0].limits;
    let run = Run::new(options.members);
    let runs: Vec<RoomRun> =
        seated_rooms.into_iter().map(|seated| spawn_room(&run, &plan, seated)).collect();
    tokio::time::sleep(options.warmup).await;
    run.phase.store(PHASE_MEASURE, Ordering::Relaxed);
    let measure_start = Instant::now();
    tokio::time::sleep(options.duration).await;
    run.phase.store(PHASE_WARMUP, Ordering::Relaxed);
    let measured = measure_start.elapsed();
    run.stop.send_replace(true);
    let mut rooms = Vec::new();
    for room in runs {
        let mut outcomes = Vec::new();
        for member in room.members {
            outcomes.push(member.await.map_err(|e| e.to_string())?);
        }
        rooms.push(outcomes);
    }
    let collected = collect(rooms);
    let secs = measured.as_secs_f64();
    let [_, measure, _, _] = collected.latencies;
    Ok(ExchangeReport {
        relays: urls.len(),
        rooms: options.rooms,
        members_per_room: options.members,
        clients: options.rooms * options.members,
        rate_per_sender: options.rate,
        payload_bytes: options.payload_bytes,
        pattern: "even k to all, odd k to one member (round robin)",
        warmup_secs: options.warmup.as_secs_f64(),
        measured_secs: secs,
        sent_per_second: collected.sent_in[usize::from(PHASE_MEASURE)] as f64 / secs,
        delivered_per_second: collected.delivered_in[usize::from(PHASE_MEASURE)] as f64 / secs,
        latency: Percentiles::of(measure),
        correctness: collected.correctness,
        limits_announced: limits,
    })
}

/// The never-reading scenario's settings.
#[derive(Clone, Debug)]
pub struct StuckOptions {
    pub members: usize,
    pub rate: f64,
    pub payload_bytes: usize,
    pub bulk_bytes: usize,
    pub bulk_rate: f64,
    /// How long everyone reads (the baseline), and how long traffic goes on after the drop.
    pub baseline: Duration,
    pub after_drop: Duration,
    /// Give up waiting for the drop after this long.
    pub give_up: Duration,
}

#[derive(Clone, Debug, Serialize)]
pub struct StuckReport {
    pub members: usize,
    pub stuck_id: ParticipantId,
    pub rate_per_sender: f64,
    pub bulk_bytes: usize,
    pub bulk_rate_per_sender: f64,
    pub bulk_frames_sent: u64,
    /// The others' small envelopes while everyone reads, while one member does not read, and
    /// after the relay dropped it.
    pub latency_all_reading: Percentiles,
    pub latency_one_stuck: Percentiles,
    pub latency_after_drop: Percentiles,
    /// Seconds from the moment it stopped reading until the others saw it leave.
    pub secs_until_dropped: Option<f64>,
    pub ending: StuckEnding,
    /// Refusals for addressing it after it was dropped (expected, not errors).
    pub refused_after_drop: u64,
    pub correctness: Correctness,
    /// When the phases began and ended (s since the generator started), to read RSS samples.
    pub stuck_from: f64,
    pub stuck_until: f64,
}

/// One room whose last member stops reading while the others keep sending to it.
pub async fn never_reading(url: &str, options: &StuckOptions, epoch: Instant) -> Res<StuckReport> {
    let stuck_id = options.members as ParticipantId;
    let plan = RoomPlan {
        members: options.members,
        rate: options.rate,
        payload_bytes: options.payload_bytes,
        stuck: Some(stuck_id),
        bulk_bytes: options.bulk_bytes,
        bulk_rate: options.bulk_rate,
    };
    let seated = seat_room(url, options.members, "stuck").await?;
    let run = Run::new(options.members);
    let room = spawn_room(&run, &plan, seated);
    let (stuck_task, reading) = room.stuck.expect("the plan has a stuck member");
    tokio::time::sleep(Duration::from_secs(1)).await;
    run.phase.store(PHASE_MEASURE, Ordering::Relaxed);
    tokio::time::sleep(options.baseline).await;

    run.phase.store(PHASE_STUCK, Ordering::Relaxed);
    reading.send_replace(false);
    let paused = Instant::now();
    let stuck_from = epoch.elapsed().as_secs_f64();
    let gone = async {
        while !run.gone[stuck_id as usize].load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let dropped = timeout(options.give_up, gone).await.is_ok();
    let secs_until_dropped = dropped.then(|| paused.elapsed().as_secs_f64());
    let stuck_until = epoch.elapsed().as_secs_f64();
    run.phase.store(PHASE_AFTER_DROP, Ordering::Relaxed);
    reading.send_replace(true);
    tokio::time::sleep(options.after_drop).await;
    run.phase.store(PHASE_WARMUP, Ordering::Relaxed);
    run.stop.send_replace(true);

    let mut outcomes = Vec::new();
    for member in room.members {
        outcomes.push(member.await.map_err(|e| e.to_string())?);
    }
    let ending = timeout(GUARD, stuck_task)
        .await
        .map_err(|_| "the stuck member never finished".to_string())?
        .map_err(|e| e.to_string())?;
    let collected = collect(vec![outcomes]);
    let [_, all_reading, one_stuck, after_drop] = collected.latencies;
    Ok(StuckReport {
        members: options.members,
        stuck_id,
        rate_per_sender: options.rate,
        bulk_bytes: options.bulk_bytes,
        bulk_rate_per_sender: options.bulk_rate,
        bulk_frames_sent: collected.bulk_sent,
        latency_all_reading: Percentiles::of(all_reading),
        latency_one_stuck: Percentiles::of(one_stuck),
        latency_after_drop: Percentiles::of(after_drop),
        secs_until_dropped,
        ending,
        refused_after_drop: collected.refused_to_gone,
        correctness: collected.correctness,
        stuck_from,
        stuck_until,
    })
}

/// The soak scenario's settings.
#[derive(Clone, Debug)]
pub struct SoakOptions {
    pub clients: usize,
    pub room_size: usize,
    pub duration: Duration,
    /// Each client echoes a small envelope to itself this often (an application ping).
    pub echo_every: Duration,
    /// Each room has one more member that drops and resumes its seat this often (presence).
    pub churn_every: Duration,
}

#[derive(Clone, Debug, Serialize)]
pub struct SoakReport {
    pub clients: usize,
    pub rooms: usize,
    pub room_size: usize,
    /// Extra members (one per room) that leave and resume with their token, for presence.
    pub churners: usize,
    pub secs: f64,
    pub connect_secs: f64,
    /// Clients the relay dropped or whose connection failed, with why; must be empty.
    pub dropped: Vec<String>,
    pub echoes_sent: u64,
    pub echoes_lost: u64,
    pub echo_rtt: Percentiles,
    /// `Left`/`Rejoined` the stable clients heard about the churners.
    pub presence_events: u64,
    pub churn_cycles: u64,
    /// A stable client heard a `Left` about another stable client (must be 0).
    pub stable_left_events: u64,
    pub refusals: BTreeMap<String, u64>,
    /// When the steady part began and ended (s since the generator started), to read RSS.
    pub steady_from: f64,
    pub steady_until: f64,
}

struct SoakClient {
    dropped: Option<String>,
    echoes_sent: u64,
    echoes_back: u64,
    rtts: Vec<u32>,
    presence: u64,
    stable_left: u64,
    refusals: BTreeMap<String, u64>,
}

async fn soak_client(
    run: Arc<Run>,
    mut member: Seated,
    churner: ParticipantId,
    echo_every: Duration,
    offset: Duration,
) -> SoakClient {
    let mut out = SoakClient {
        dropped: None,
        echoes_sent: 0,
        echoes_back: 0,
        rtts: Vec::new(),
        presence: 0,
        stable_left: 0,
        refusals: BTreeMap::new(),
    };
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + offset, echo_every);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut stop = run.stop.subscribe();
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        if deadline.is_some() && out.echoes_back == out.echoes_sent {
            break;
        }
        tokio::select! {
            _ = stopped(&mut stop), if deadline.is_none() => {
                deadline = Some(tokio::time::Instant::now() + GUARD);
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(tokio::time::Instant::now)), if deadline.is_some() => break,
            _ = ticks.tick(), if deadline.is_none() => {
                let frame = ClientFrame::Send {
                    v: WIRE_VERSION,
                    to: To::One(member.id),
                    kind: KIND_ECHO.into(),
                    payload: encode_payload(&run.micros().to_le_bytes()),
                };
                if let Err(e) = member.ws.send(frame_text(&frame)).await {
                    out.dropped = Some(format!("#{} in {}: send failed: {e}", member.id, member.room));
                    break;
                }
                out.echoes_sent += 1;
            }
            next = member.ws.next() => {
                let text = match next {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(frame))) => {
                        out.dropped = Some(format!("#{} in {}: closed by the relay: {frame:?}", member.id, member.room));
                        break;
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(e)) => {
                        out.dropped = Some(format!("#{} in {}: {e}", member.id, member.room));
                        break;
                    }
                    None => {
                        out.dropped = Some(format!("#{} in {}: the connection ended", member.id, member.room));
                        break;
                    }
                };
                match serde_json::from_str::<RelayFrame>(&text) {
                    Ok(RelayFrame::Envelope(e)) if e.kind == KIND_ECHO && e.from == member.id => {
                        let sent = decode_payload(&e.payload)
                            .ok()
                            .and_then(|b| b.try_into().ok())
                            .map(u64::from_le_bytes)
                            .unwrap_or(0);
                        out.echoes_back += 1;
                        out.rtts.push(run.micros().saturating_sub(sent).min(u64::from(u32::MAX)) as u32);
                    }
                    // After the stop, the others closing is no drop.
                    Ok(RelayFrame::Presence { .. }) if *stop.borrow() => {}
                    Ok(RelayFrame::Presence { event, peer, .. }) => {
                        if peer.id == churner {
                            out.presence += 1;
                        } else if event == PresenceEvent::Left {
                            out.stable_left += 1;
                        }
                    }
                    Ok(RelayFrame::Error { code, message, .. }) => {
                        *out.refusals.entry(format!("{code:?}: {message}")).or_default() += 1;
                    }
                    _ => {}
                }
            }
        }
    }
    let _ = timeout(Duration::from_secs(2), member.ws.close(None)).await;
    out
}

/// A member that drops its connection and takes its seat back with its resume token, every
/// `every`, until told to stop. Returns the cycles done, or why it could not go on.
async fn churn(
    run: Arc<Run>,
    url: String,
    mut member: Seated,
    every: Duration,
    offset: Duration,
) -> (u64, Option<String>) {
    let mut stop = run.stop.subscribe();
    let mut cycles = 0;
    tokio::time::sleep(offset).await;
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        tokio::select! {
            _ = stopped(&mut stop) => break,
            _ = ticks.tick() => {
                let _ = timeout(Duration::from_secs(2), member.ws.close(None)).await;
                // Drain to the relay's close reply, so it has announced `Left`.
                let _ = timeout(Duration::from_secs(2), async { while let Some(Ok(_)) = member.ws.next().await {} }).await;
                let back = join(&url, &member.room, "churner", Some(&member.resume)).await;
                match back {
                    Ok(back) if back.id == member.id => {
                        member = back;
                        cycles += 1;
                    }
                    Ok(back) => return (cycles, Some(format!("resumed as #{} instead of #{}", back.id, member.id))),
                    Err(e) => return (cycles, Some(format!("could not resume: {e}"))),
                }
            }
            // Keep reading so the relay's queue for it stays empty and its pings are answered.
            next = member.ws.next() => {
                if matches!(next, None | Some(Err(_)) | Some(Ok(Message::Close(_)))) {
                    return (cycles, Some("the churner was dropped".into()));
                }
            }
        }
    }
    let _ = timeout(Duration::from_secs(2), member.ws.close(None)).await;
    (cycles, None)
}

/// `clients` stable clients in rooms of `room_size` (plus one churner per room), connected for
/// `duration`, echoing to themselves.
pub async fn soak(url: &str, options: &SoakOptions, epoch: Instant) -> Res<SoakReport> {
    let connecting = Instant::now();
    let run = Run::new(options.room_size + 1);
    let room_size = options.room_size.max(1);
    let rooms = options.clients.div_ceil(room_size);
    let mut clients = Vec::new();
    let mut churners = Vec::new();
    let mut placed = 0;
    for r in 0..rooms {
        let size = room_size.min(options.clients - placed);
        placed += size;
        // The stable members, then the churner (the last id in the room).
        let mut seated = seat_room(url, size + 1, &format!("soak r{r}")).await?;
        let churner = seated.pop().expect("a churner");
        let churner_id = churner.id;
        let n = seated.len();
        for (i, member) in seated.into_iter().enumerate() {
            let offset = options.echo_every.mul_f64((r * n + i) as f64 / options.clients as f64);
            clients.push(tokio::spawn(soak_client(
                run.clone(),
                member,
                churner_id,
                options.echo_every,
                offset,
            )));
        }
        let offset = options.churn_every.mul_f64(r as f64 / rooms as f64);
        churners.push(tokio::spawn(churn(
            run.clone(),
            url.to_owned(),
            churner,
            options.churn_every,
            offset,
        )));
    }
    let connect_secs = connecting.elapsed().as_secs_f64();
    let steady_from = epoch.elapsed().as_secs_f64();
    let steady = Instant::now();
    tokio::time::sleep(options.duration).await;
    let steady_until = epoch.elapsed().as_secs_f64();
    let secs = steady.elapsed().as_secs_f64();
    run.stop.send_replace(true);

    let mut report = SoakReport {
        clients: options.clients,
        rooms,
        room_size,
        churners: rooms,
        secs,
        connect_secs,
        dropped: Vec::new(),
        echoes_sent: 0,
        echoes_lost: 0,
        echo_rtt: Percentiles::default(),
        presence_events: 0,
        churn_cycles: 0,
        stable_left_events: 0,
        refusals: BTreeMap::new(),
        steady_from,
        steady_until,
    };
    let mut rtts = Vec::new();
    for client in clients {
        let c = client.await.map_err(|e| e.to_string())?;
        if let Some(why) = c.dropped {
            report.dropped.push(why);
        }
        report.echoes_sent += c.echoes_sent;
        report.echoes_lost += c.echoes_sent.saturating_sub(c.echoes_back);
        report.presence_events += c.presence;
        report.stable_left_events += c.stable_left;
        for (m, n) in c.refusals {
            *report.refusals.entry(m).or_default() += n;
        }
        rtts.extend(c.rtts);
    }
    for churner in churners {
        let (cycles, trouble) = churner.await.map_err(|e| e.to_string())?;
        report.churn_cycles += cycles;
        if let Some(why) = trouble {
            report.dropped.push(format!("churner: {why}"));
        }
    }
    report.echo_rtt = Percentiles::of(rtts);
    Ok(report)
}
