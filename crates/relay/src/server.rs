/*!
The HTTP side: routes, shared state, static files, and serving with a graceful shutdown.

The accept loop is ours, not `axum::serve`, so that every connection is bounded: at most
`max_connections` at once (past that, a 503 that says so), headers within
`Config::handshake_timeout` (which also drops idle connections that never upgrade), and a
shutdown that waits at most `Config::shutdown_wait`.

`/ws` upgrades to a websocket handled by [`crate::connection`]; `/healthz` answers `ok`; every
other path is the built web app from `Config::static_dir` ([`crate::static_files`]: precompressed
copies, cache headers, `index.html` for unknown paths, and a page that says how to build the app
when there is none).
*/

use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State, WebSocketUpgrade};
use axum::response::Response;
use axum::routing::get;
use axum::{Extension, Router};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::timeout;

use crate::broker::{Broker, BrokerError, Nats};
use crate::config::{Config, ConfigError};
use crate::connection;
use crate::guesses::AddressGuesses;
use crate::log::Log;
use crate::outbox::QueueBudget;
use crate::registry::{ConnId, Registry};
use crate::static_files;

/// Connections being told "busy" at once; past this, new ones are closed without a word.
const MAX_REFUSING: usize = 64;
/// How long a "busy" answer may take to write.
const REFUSAL_WAIT: Duration = Duration::from_secs(2);

/// Why the relay could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("the server stopped: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Broker(#[from] BrokerError),
}

/// State every request and connection shares.
pub(crate) struct Shared {
    pub config: Config,
    pub log: Log,
    registry: Mutex<Registry>,
    /// Bytes queued for all connections together.
    pub queues: QueueBudget,
    /// Wrong room codes per address.
    pub guesses: AddressGuesses,
    next_conn: AtomicU64,
    /// Open TCP connections: plain HTTP, mid-handshake and websockets alike.
    open: watch::Sender<usize>,
    refusing: AtomicUsize,
    /// Flips to `true` once, when the relay starts shutting down.
    shutdown: watch::Sender<bool>,
    /// Where rooms hosted by other relays are reached, if anywhere.
    pub broker: Broker,
}

/// Counts one TCP connection as open until dropped; a websocket takes it over on upgrade.
pub(crate) struct OpenConnection {
    shared: Arc<Shared>,
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.shared.open.send_modify(|n| *n -= 1);
    }
}

/// Where an HTTP connection keeps its [`OpenConnection`] for a websocket upgrade to take.
#[derive(Clone)]
struct Slot(Arc<Mutex<Option<OpenConnection>>>);

impl Slot {
    fn take(&self) -> Option<OpenConnection> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

impl Shared {
    fn new(config: Config, broker: Broker) -> Self {
        let log = Log::new(config.quiet);
        let registry = Registry::new(config.limits, config.resume_grace, log.clone());
        Shared {
            queues: QueueBudget::new(config.limits.max_total_queue_bytes),
            config,
            log,
            registry: Mutex::new(registry),
            guesses: AddressGuesses::default(),
            next_conn: AtomicU64::new(1),
            open: watch::Sender::new(0),
            refusing: AtomicUsize::new(0),
            shutdown: watch::Sender::new(false),
            broker,
        }
    }

    pub fn registry(&self) -> MutexGuard<'_, Registry> {
        // Registry updates do not panic midway; if one ever did, keep serving the other rooms.
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn now(&self) -> Duration {
        self.config.clock.now()
    }

    pub fn next_conn_id(&self) -> ConnId {
        self.next_conn.fetch_add(1, Ordering::Relaxed)
    }

    /// Counts a new TCP connection, unless the relay already has `max_connections`.
    fn try_open(self: &Arc<Self>) -> Option<OpenConnection> {
        let max = self.config.limits.max_connections;
        let admitted = self.open.send_if_modified(|n| {
            let room = *n < max;
            if room {
                *n += 1;
            }
            room
        });
        admitted.then(|| OpenConnection { shared: self.clone() })
    }

    /// Resolves once shutdown has begun (at once if it already has).
    pub async fn shutting_down(&self) {
        let mut flag = self.shutdown.subscribe();
        let _ = flag.wait_for(|down| *down).await;
    }

    fn begin_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    async fn connections_closed(&self) {
        let mut open = self.open.subscribe();
        let _ = open.wait_for(|n| *n == 0).await;
    }
}

/// Serves until the process ends. Tests use this on a listener bound to port 0.
pub async fn serve(listener: TcpListener, config: Config) -> Result<(), ServeError> {
    serve_with_shutdown(listener, config, std::future::pending()).await
}

/// Serves until `signal` resolves, then closes every websocket with code 1001 and every idle
/// HTTP connection, and returns once they are gone or after `Config::shutdown_wait`, whichever
/// comes first: a client that never finishes its request cannot hold the relay up.
pub async fn serve_with_shutdown(
    listener: TcpListener,
    config: Config,
    signal: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    serve_when_ready(listener, config, signal, || {}).await
}

/// [`serve_with_shutdown`], calling `ready` once the relay is set up (its broker, if any,
/// connected) and about to accept: `main.rs` prints its address only then.
pub async fn serve_when_ready(
    listener: TcpListener,
    config: Config,
    signal: impl Future<Output = ()> + Send + 'static,
    ready: impl FnOnce(),
) -> Result<(), ServeError> {
    config.validate()?;
    let shared = match config.broker.clone() {
        None => Arc::new(Shared::new(config, Broker::Alone)),
        Some(url) => {
            let (nats, started) = Nats::connect(&url, &config).await?;
            let shared = Arc::new(Shared::new(config, Broker::Nats(nats.clone())));
            nats.start(&shared, started);
            shared
        }
    };
    let sweeper = tokio::spawn(sweep_expired(shared.clone()));
    ready();
    let app = router(shared.clone());
    let mut signal = pin!(signal);
    loop {
        let (stream, peer) = tokio::select! {
            biased;
            () = &mut signal => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    shared.log.line(format_args!("cannot accept a connection: {error}"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        // Frames are small and each is written whole: send them now, not after the peer's
        // delayed ACK (Nagle's algorithm held small envelopes for up to 40 ms).
        let _ = stream.set_nodelay(true);
        match shared.try_open() {
            Some(open) => {
                tokio::spawn(serve_http(stream, peer, app.clone(), shared.clone(), open));
            }
            None => refuse_busy(stream, &shared),
        }
    }
    shared.begin_shutdown();
    if let Broker::Nats(nats) = &shared.broker {
        nats.close_hosted().await;
    }
    let _ = timeout(shared.config.shutdown_wait, shared.connections_closed()).await;
    if let Broker::Nats(nats) = &shared.broker {
        // The `Left`s of this relay's own connections in rooms hosted elsewhere.
        nats.flush().await;
    }
    sweeper.abort();
    Ok(())
}

/// One HTTP/1.1 connection: requests until it closes, times out or is upgraded to a websocket.
async fn serve_http(
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    shared: Arc<Shared>,
    open: OpenConnection,
) {
    let slot = Slot(Arc::new(Mutex::new(Some(open))));
    let app = app.layer(Extension(ConnectInfo(peer))).layer(Extension(slot.clone()));
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The header timeout also runs while a connection waits for its first or next request.
    builder.timer(TokioTimer::new()).header_read_timeout(shared.config.handshake_timeout);
    let connection = builder
        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(app))
        .with_upgrades();
    let mut connection = pin!(connection);
    let mut shutting_down = pin!(shared.shutting_down());
    let mut asked_to_stop = false;
    loop {
        tokio::select! {
            _ = connection.as_mut() => break,
            () = &mut shutting_down, if !asked_to_stop => {
                asked_to_stop = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
    drop(slot.take());
}

/// Answers a connection over `max_connections` with a 503 that says so, then closes it.
fn refuse_busy(mut stream: TcpStream, shared: &Arc<Shared>) {
    if shared.refusing.fetch_add(1, Ordering::SeqCst) >= MAX_REFUSING {
        shared.refusing.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let max = shared.config.limits.max_connections;
    let shared = shared.clone();
    tokio::spawn(async move {
        let body = format!(
            "capelab relay: all {max} connections are in use. Try again in a moment, or start \
             the relay with a larger --max-connections.\n"
        );
        let response = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n\
             content-length: {}\r\nretry-after: 5\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = timeout(REFUSAL_WAIT, async {
            stream.write_all(response.as_bytes()).await?;
            stream.shutdown().await?;
            // Read what the client sent, so closing does not reset the answer away.
            let mut sink = [0u8; 1024];
            while stream.read(&mut sink).await? > 0 {}
            Ok::<_, std::io::Error>(())
        })
        .await;
        shared.refusing.fetch_sub(1, Ordering::SeqCst);
    });
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/ws", get(websocket))
        .route("/healthz", get(|| async { "ok" }))
        .fallback(static_files)
        .with_state(shared)
}

async fn websocket(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Extension(slot): Extension<Slot>,
    upgrade: WebSocketUpgrade,
) -> Response {
    // Above our own limit, so an oversized frame gets an answer; past this the socket closes.
    let cap = shared.config.limits.socket_message_cap();
    let open = slot.take();
    upgrade
        .max_message_size(cap)
        .max_frame_size(cap)
        .on_upgrade(move |socket| connection::run(socket, shared, peer.ip(), open))
}

/// Forgets identities whose grace period ran out even in rooms nobody touches any more.
async fn sweep_expired(shared: Arc<Shared>) {
    let every =
        (shared.config.resume_grace / 4).clamp(Duration::from_secs(1), Duration::from_secs(30));
    let mut ticks = tokio::time::interval(every);
    loop {
        ticks.tick().await;
        let now = shared.now();
        shared.registry().expire(now);
    }
}

async fn static_files(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    static_files::serve(&shared.config.static_dir, request).await
}
