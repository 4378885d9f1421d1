/*!
The relay's one connection to the NATS server, its events, and the tasks that serve it.

`no_echo`: the relay never needs its own messages back, and it makes "no responders" to a probe
mean "no *other* relay" (`host.rs`). The client reconnects on its own, forever; while it is away
the relay is *down*: seats that depend on the broker are closed with an `Error` frame naming it
(`Refusal::BrokerLost`), and creating a room or joining one hosted elsewhere is refused
(`Refusal::BrokerDown`) until it is back.
*/

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_nats::{Client, ConnectOptions, Event, Subscriber};
use futures_util::StreamExt as _;
use tokio::sync::{mpsc, watch};

use super::edge::Edge;
use super::host::Host;
use super::message::RelayId;
use super::subject;
use crate::config::Config;
use crate::error::Refusal;
use crate::limits::ENVELOPE_OVERHEAD_BYTES;
use crate::server::Shared;

/// Bytes a broker message adds to the frame it carries (its header line), at most.
pub const HEADER_BYTES: usize = 512;
/// How long the relay waits for the broker to answer at start and to a join or a probe.
const ANSWER_WAIT: Duration = Duration::from_secs(5);
/// After the broker comes back, how long "nobody hosts that room" may only mean "its relay has
/// not reconnected yet" (every relay retries at least every 2 s).
const SETTLE: Duration = Duration::from_secs(5);

/// Why a relay with `--broker` could not start.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error(
        "cannot reach the broker at {url} ({detail}): start it (Debian package nats-server: \
         nats-server -a 127.0.0.1 -p 4222), check the address, or leave --broker out to run \
         this relay alone"
    )]
    Unreachable { url: String, detail: String },
    #[error(
        "the broker at {url} takes messages of at most {max_payload} bytes, but this relay's \
         frames can take {need}: set max_payload to at least {need} in nats-server's \
         configuration file (nats-server -c FILE; 64MB at most), or start the relay with \
         --max-frame-bytes {fits} or less"
    )]
    PayloadTooSmall { url: String, max_payload: usize, need: usize, fits: usize },
    #[error("the broker at {url} refused a subscription ({detail}); check its permissions")]
    Subscribe { url: String, detail: String },
}

/// The broker, as one relay sees it.
pub struct Nats {
    /// The address as given to `--broker`, for messages.
    pub url: String,
    pub client: Client,
    /// This relay's name on the broker.
    pub relay: RelayId,
    up: watch::Sender<bool>,
    /// When the broker last came back after being away.
    back_at: Mutex<Option<Instant>>,
    pub(super) host: Host,
    pub(super) edge: Edge,
}

/// What `connect` hands to `start`: the subscriptions and events to serve.
pub struct Started {
    inbox: Subscriber,
    replies: Subscriber,
    events: mpsc::UnboundedReceiver<Event>,
}

impl Nats {
    /// Connects to the broker and subscribes to this relay's subjects.
    pub async fn connect(url: &str, config: &Config) -> Result<(Arc<Nats>, Started), BrokerError> {
        let mut bytes = [0u8; 8];
        rand::fill(&mut bytes);
        let relay: RelayId = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let (sender, events) = mpsc::unbounded_channel();
        let unreachable = |detail: String| BrokerError::Unreachable { url: url.to_owned(), detail };
        let client = ConnectOptions::new()
            .name(format!("capelab-relay {relay}"))
            .no_echo()
            .connection_timeout(ANSWER_WAIT)
            .request_timeout(Some(ANSWER_WAIT))
            .ping_interval(config.ping_interval)
            // Large, so a burst never makes the client drop messages (a slow consumer).
            .subscription_capacity(1 << 16)
            .max_reconnects(None)
            .reconnect_delay_callback(|attempt| Duration::from_millis(100 * attempt.min(20) as u64))
            .event_callback(move |event| {
                let sender = sender.clone();
                async move {
                    let _ = sender.send(event);
                }
            })
            .connect(url)
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        let max_payload = client.server_info().max_payload;
        let need = config.limits.max_frame_bytes + ENVELOPE_OVERHEAD_BYTES + HEADER_BYTES;
        if max_payload < need {
            return Err(BrokerError::PayloadTooSmall {
                url: url.to_owned(),
                max_payload,
                need,
                fits: max_payload.saturating_sub(ENVELOPE_OVERHEAD_BYTES + HEADER_BYTES),
            });
        }
        let subscribe_failed = |e: async_nats::SubscribeError| BrokerError::Subscribe {
            url: url.to_owned(),
            detail: e.to_string(),
        };
        let inbox = client.subscribe(subject::relay(&relay)).await.map_err(subscribe_failed)?;
        let replies =
            client.subscribe(subject::relay_replies(&relay)).await.map_err(subscribe_failed)?;
        client.flush().await.map_err(|e| unreachable(e.to_string()))?;
        let nats = Nats {
            url: url.to_owned(),
            client,
            relay,
            up: watch::Sender::new(true),
            back_at: Mutex::new(None),
            host: Host::default(),
            edge: Edge::default(),
        };
        Ok((Arc::new(nats), Started { inbox, replies, events }))
    }

    /// Serves the broker for `shared`'s relay until the process ends.
    pub(crate) fn start(self: &Arc<Self>, shared: &Arc<Shared>, started: Started) {
        let Started { inbox, replies, events } = started;
        tokio::spawn(super::edge::serve_inbox(self.clone(), shared.clone(), inbox, replies));
        tokio::spawn(watch_events(self.clone(), shared.clone(), events));
        tokio::spawn(heartbeat(self.clone(), shared.config.ping_interval));
    }

    /// `Ok` while the broker is connected, else the refusal that says it is not.
    pub fn check_up(&self) -> Result<(), Refusal> {
        if *self.up.borrow() { Ok(()) } else { Err(self.down()) }
    }

    /// The refusal for anything that needs the broker while it is away.
    pub fn down(&self) -> Refusal {
        Refusal::BrokerDown { url: self.url.clone() }
    }

    /// `Ok` unless the broker came back so recently that other relays may still be reconnecting
    /// (their rooms would look unknown, their codes free).
    pub fn check_settled(&self) -> Result<(), Refusal> {
        let back_at = *self.back_at.lock().unwrap_or_else(PoisonError::into_inner);
        match back_at {
            Some(at) if at.elapsed() < SETTLE => {
                Err(Refusal::BrokerSettling { url: self.url.clone() })
            }
            _ => Ok(()),
        }
    }

    /// At shutdown: the tabs of other relays seated in rooms hosted here are closed as this
    /// relay's own are (1001), through their relays.
    pub(crate) async fn close_hosted(&self) {
        self.host.close_all_for_shutdown().await;
    }

    /// Sends what is still queued for the broker, for at most a second.
    pub(crate) async fn flush(&self) {
        let _ = tokio::time::timeout(Duration::from_secs(1), self.client.flush()).await;
    }
}

/// Closes what depends on the broker when it goes away, and says when it is back.
async fn watch_events(
    nats: Arc<Nats>,
    shared: Arc<Shared>,
    mut events: mpsc::UnboundedReceiver<Event>,
) {
    while let Some(event) = events.recv().await {
        match event {
            // Only the first of a run of events changes anything (`send_replace` says so).
            Event::Disconnected if nats.up.send_replace(false) => {
                cut_off(&nats, &shared, "lost its broker");
            }
            Event::Connected if !nats.up.send_replace(true) => {
                *nats.back_at.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
                shared.log.line(format_args!("the broker at {} is back", nats.url));
            }
            // The client dropped messages for a subscription it could not keep up with: the
            // seats that may have missed some are closed, never left with a silent gap.
            Event::SlowConsumer(_) => cut_off(&nats, &shared, "fell behind its broker"),
            _ => {}
        }
    }
}

fn cut_off(nats: &Nats, shared: &Shared, what: &str) {
    let edges = nats.edge.cut_all(&nats.url);
    let hosted = nats.host.drop_all(shared, shared.now());
    shared.log.line(format_args!(
        "the relay {what} at {}: closed {edges} connection(s) seated through it and let go of \
         {hosted} seat(s) of other relays (resumable for {} s)",
        nats.url,
        shared.config.resume_grace.as_secs()
    ));
}

/// Every `every`, an `Alive` to each host and edge this relay works with, so that a relay that
/// vanished is noticed ("no responders") even in a room where nobody speaks.
async fn heartbeat(nats: Arc<Nats>, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    loop {
        ticks.tick().await;
        if nats.check_up().is_err() {
            continue;
        }
        nats.edge.heartbeat(&nats).await;
        nats.host.heartbeat(&nats).await;
    }
}

/// The next message of either subscription (both end only with the client).
pub(super) async fn next_of(a: &mut Subscriber, b: &mut Subscriber) -> Option<async_nats::Message> {
    tokio::select! {
        m = a.next() => m,
        m = b.next() => m,
    }
}
