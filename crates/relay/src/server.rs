/*!
The HTTP side: routes, shared state, static files, and serving with a graceful shutdown.

The accept loop is ours, not `axum::serve`, so that every connection is bounded: at most
`max_connections` at once (past that, a 503 that says so; the cap follows the descriptor limit,
[`crate::descriptors`]), at most `max_connections_per_address` from one address (past that, a
429: [`crate::fair_share`]), the TLS handshake when the relay serves TLS ([`crate::tls`]) and
then the headers within `Config::handshake_timeout` (which also drops idle connections that
never upgrade), and a shutdown that waits at most `Config::shutdown_wait`.

`/ws` upgrades to a websocket handled by [`crate::connection`]; `/healthz` answers `ok`; every
other path is the built web app from `Config::static_dir` ([`crate::static_files`]: precompressed
copies, cache headers, `index.html` for unknown paths, and a page that says how to build the app
when there is none). Every answer carries the security headers of [`crate::security_headers`].
*/

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use axum::routing::get;
use axum::{Extension, Router};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::timeout;

use crate::broker::{Broker, BrokerError, Nats};
use crate::client_address::{canonical, client_address};
use crate::config::{Config, ConfigError};
use crate::connection;
use crate::fair_share::AddressShares;
use crate::guesses::AddressGuesses;
use crate::log::Log;
use crate::outbox::QueueBudget;
use crate::registry::{ConnId, Registry};
use crate::tls::{self, Accepted, plain_response, write_and_close};
use crate::{security_headers, static_files};

/// How long a "busy" answer may take (its TLS handshake included) before the socket is dropped.
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
    /// The same, per address.
    shares: AddressShares,
    /// Connections being told "busy" or "over your share" right now.
    refusing: AtomicUsize,
    /// Flips to `true` once, when the relay starts shutting down.
    shutdown: watch::Sender<bool>,
    /// Where rooms hosted by other relays are reached, if anywhere.
    pub broker: Broker,
}

/// Counts one TCP connection as open until dropped, and against its address's share; a
/// websocket takes it over on upgrade.
pub(crate) struct OpenConnection {
    shared: Arc<Shared>,
    /// The address (block) whose share it counts against; `None` for a trusted proxy's
    /// connection until its websocket names the client.
    address: Option<IpAddr>,
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        if let Some(block) = self.address {
            self.shared.shares.release(block);
        }
        self.shared.open.send_modify(|n| *n -= 1);
    }
}

/// Why a connection is turned away at `accept`.
#[derive(Clone, Copy, Debug)]
enum Refusal {
    /// `max_connections` are open.
    Busy,
    /// Its address holds `held` connections, its whole share.
    OverShare { held: usize },
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
            shares: AddressShares::default(),
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

    /// Counts a new TCP connection from `peer`, unless the relay already has `max_connections`
    /// or `peer`'s address its share of them. A trusted proxy's connections count only in the
    /// total: their clients' shares are taken when they ask for a websocket.
    fn try_open(self: &Arc<Self>, peer: IpAddr) -> Result<OpenConnection, Refusal> {
        let max = self.config.limits.max_connections;
        let admitted = self.open.send_if_modified(|n| {
            let room = *n < max;
            if room {
                *n += 1;
            }
            room
        });
        if !admitted {
            return Err(Refusal::Busy);
        }
        // From here on, dropping `open` undoes the count.
        let mut open = OpenConnection { shared: self.clone(), address: None };
        if !self.config.trusted_proxies.contains(&canonical(peer)) {
            let share = self.config.limits.max_connections_per_address;
            open.address = Some(self.shares.try_take(peer, share).map_err(|held| {
                self.log.line(format_args!(
                    "refused a connection from {peer}: it holds {held}, its share \
                     (--max-connections-per-address {share})"
                ));
                Refusal::OverShare { held }
            })?);
        }
        Ok(open)
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
        match shared.try_open(peer.ip()) {
            Ok(open) => {
                tokio::spawn(serve_connection(stream, peer, app.clone(), shared.clone(), open));
            }
            Err(refusal) => refuse(stream, &shared, refusal),
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

/// One accepted connection: its TLS handshake if the relay serves TLS, then HTTP.
async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    shared: Arc<Shared>,
    open: OpenConnection,
) {
    match &shared.config.tls {
        None => serve_http(stream, peer, app, shared, open).await,
        Some(config) => {
            let wait = shared.config.handshake_timeout;
            if let Accepted::Tls(stream) = tls::accept(stream, config, wait).await {
                serve_http(*stream, peer, app, shared, open).await;
            }
        }
    }
}

/// One HTTP/1.1 connection: requests until it closes, times out or is upgraded to a websocket.
async fn serve_http<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    stream: S,
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

/// Answers a connection the relay will not serve (503 over the cap, 429 over its address's
/// share) with a message that says why and which flag changes it, then closes it; over TLS after
/// the handshake, so the browser can show the answer. At most `max_refusing` are answered at
/// once (each holds a descriptor meanwhile); past that, new ones are closed without a word.
fn refuse(stream: TcpStream, shared: &Arc<Shared>, refusal: Refusal) {
    let max_refusing = shared.config.limits.max_refusing;
    if shared.refusing.fetch_add(1, Ordering::SeqCst) >= max_refusing {
        shared.refusing.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let limits = shared.config.limits;
    let (status, body) = match refusal {
        Refusal::Busy => (
            "503 Service Unavailable",
            format!(
                "capelab relay: all {} connections are in use. Try again in a moment, or start \
                 the relay with a larger --max-connections.\n",
                limits.max_connections
            ),
        ),
        Refusal::OverShare { held } => (
            "429 Too Many Requests",
            format!(
                "capelab relay: your address already has {held} connections open, its share of \
                 this relay's {} (--max-connections-per-address {}). Close a tab or try again \
                 in a moment. A class behind one address needs a relay started with a larger \
                 --max-connections-per-address.\n",
                limits.max_connections, limits.max_connections_per_address
            ),
        ),
    };
    let response = plain_response(status, &body, &["retry-after: 5".to_owned()]);
    let shared = shared.clone();
    tokio::spawn(async move {
        let _ = timeout(REFUSAL_WAIT, async {
            match &shared.config.tls {
                None => {
                    let mut stream = stream;
                    write_and_close(&mut stream, &response).await
                }
                Some(config) => match tls::accept(stream, config, REFUSAL_WAIT).await {
                    Accepted::Tls(mut stream) => write_and_close(&mut *stream, &response).await,
                    Accepted::PlainHttp | Accepted::Failed => Ok(()),
                },
            }
        })
        .await;
        shared.refusing.fetch_sub(1, Ordering::SeqCst);
    });
}

fn router(shared: Arc<Shared>) -> Router {
    let tls = shared.config.tls.is_some();
    Router::new()
        .route("/ws", get(websocket))
        .route("/healthz", get(|| async { "ok" }))
        .fallback(static_files)
        .with_state(shared)
        .layer(axum::middleware::map_response(move |mut response: Response| async move {
            security_headers::add(response.headers_mut(), tls);
            response
        }))
}

async fn websocket(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Extension(slot): Extension<Slot>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    let limits = shared.config.limits;
    let client = client_address(peer.ip(), &headers, &shared.config.trusted_proxies);
    // Through a trusted proxy: the client's share is taken now, for the websocket's life.
    let proxied = shared.config.trusted_proxies.contains(&canonical(peer.ip()));
    let block = if proxied {
        match shared.shares.try_take(client, limits.max_connections_per_address) {
            Ok(block) => Some(block),
            Err(held) => {
                let body = format!(
                    "capelab relay: your address already has {held} websockets open, its share \
                     (--max-connections-per-address {}). Close a tab or try again in a moment.\n",
                    limits.max_connections_per_address
                );
                return (StatusCode::TOO_MANY_REQUESTS, [(header::RETRY_AFTER, "5")], body)
                    .into_response();
            }
        }
    } else {
        None
    };
    let mut open = slot.take();
    match (open.as_mut(), block) {
        (Some(open), Some(block)) => open.address = Some(block),
        (None, Some(block)) => shared.shares.release(block),
        (_, None) => {}
    }
    // Above our own limit, so an oversized frame gets an answer; past this the socket closes.
    let cap = limits.socket_message_cap();
    upgrade
        .max_message_size(cap)
        .max_frame_size(cap)
        .on_upgrade(move |socket| connection::run(socket, shared, client, open))
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
