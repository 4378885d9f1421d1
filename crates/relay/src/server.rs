/*!
The HTTP side: routes, shared state, static files, and serving with a graceful shutdown.

`/ws` upgrades to a websocket handled by [`crate::connection`]; `/healthz` answers `ok`; every
other path is the built web app from `Config::static_dir`, with `index.html` for unknown paths
(the app reads `?room=CODE` itself). Without a built app, those paths answer with a short page
that says how to build it, so a relay started too early explains itself instead of a bare 404.
*/

use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State, WebSocketUpgrade};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower_http::services::{ServeDir, ServeFile};

use crate::config::{Config, ConfigError};
use crate::connection;
use crate::log::Log;
use crate::registry::{ConnId, Registry};

/// How long shutdown waits for websockets to finish their close handshakes.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(6);

/// Why the relay could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("the server stopped: {0}")]
    Io(#[from] std::io::Error),
}

/// State every request and connection shares.
pub(crate) struct Shared {
    pub config: Config,
    pub log: Log,
    registry: Mutex<Registry>,
    next_conn: AtomicU64,
    /// Number of live websocket connections.
    live: watch::Sender<usize>,
    /// Flips to `true` once, when the relay starts shutting down.
    shutdown: watch::Sender<bool>,
}

/// Counts a websocket connection as live until dropped.
pub(crate) struct LiveConnection {
    pub id: ConnId,
    shared: Arc<Shared>,
}

impl Drop for LiveConnection {
    fn drop(&mut self) {
        self.shared.live.send_modify(|n| *n -= 1);
    }
}

impl Shared {
    fn new(config: Config) -> Self {
        let log = Log::new(config.quiet);
        let registry = Registry::new(config.limits, config.resume_grace, log);
        Shared {
            config,
            log,
            registry: Mutex::new(registry),
            next_conn: AtomicU64::new(1),
            live: watch::Sender::new(0),
            shutdown: watch::Sender::new(false),
        }
    }

    pub fn registry(&self) -> MutexGuard<'_, Registry> {
        // Registry updates do not panic midway; if one ever did, keep serving the other rooms.
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn now(&self) -> Duration {
        self.config.clock.now()
    }

    pub fn open_connection(self: &Arc<Self>) -> LiveConnection {
        self.live.send_modify(|n| *n += 1);
        LiveConnection { id: self.next_conn.fetch_add(1, Ordering::Relaxed), shared: self.clone() }
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
        let mut live = self.live.subscribe();
        let _ = live.wait_for(|n| *n == 0).await;
    }
}

/// Serves until the process ends. Tests use this on a listener bound to port 0.
pub async fn serve(listener: TcpListener, config: Config) -> Result<(), ServeError> {
    serve_with_shutdown(listener, config, std::future::pending()).await
}

/// Serves until `signal` resolves, then closes every websocket with code 1001 and returns once
/// they are gone (or after a few seconds).
pub async fn serve_with_shutdown(
    listener: TcpListener,
    config: Config,
    signal: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    config.validate()?;
    let shared = Arc::new(Shared::new(config));
    let sweeper = tokio::spawn(sweep_expired(shared.clone()));
    let on_signal = {
        let shared = shared.clone();
        async move {
            signal.await;
            shared.begin_shutdown();
        }
    };
    let served =
        axum::serve(listener, router(shared.clone())).with_graceful_shutdown(on_signal).await;
    shared.begin_shutdown();
    let _ = tokio::time::timeout(SHUTDOWN_WAIT, shared.connections_closed()).await;
    sweeper.abort();
    Ok(served?)
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/ws", get(websocket))
        .route("/healthz", get(|| async { "ok" }))
        .fallback(static_files)
        .with_state(shared)
}

async fn websocket(State(shared): State<Arc<Shared>>, upgrade: WebSocketUpgrade) -> Response {
    // Above our own limit, so an oversized frame gets an answer; past this the socket closes.
    let cap = shared.config.limits.socket_message_cap();
    upgrade
        .max_message_size(cap)
        .max_frame_size(cap)
        .on_upgrade(move |socket| connection::run(socket, shared))
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
    let dir = &shared.config.static_dir;
    let index = dir.join("index.html");
    // Checked per request, so building the app while the relay runs just works.
    if !index.is_file() {
        return not_built(dir);
    }
    let mut files = ServeDir::new(dir).fallback(ServeFile::new(index));
    match files.try_call(request).await {
        Ok(response) => response.map(Body::new),
        Err(error) => {
            (StatusCode::INTERNAL_SERVER_ERROR, format!("could not read the app: {error}"))
                .into_response()
        }
    }
}

fn not_built(dir: &Path) -> Response {
    let dir = html_escape(&dir.display().to_string());
    let page = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>capelab relay: app not built</title></head><body>\n\
         <h1>The capelab app is not built yet</h1>\n\
         <p>This relay is running, but it serves the web app from <code>{dir}</code>, \
         which has no <code>index.html</code>.</p>\n\
         <p>Run <code>./scripts/demo</code> from the capelab checkout: it builds the app and \
         starts the relay. Or build the app into that directory and reload this page, or start \
         the relay with <code>--static-dir</code> pointing at a built app.</p>\n\
         </body></html>\n"
    );
    (StatusCode::SERVICE_UNAVAILABLE, [(header::CACHE_CONTROL, "no-store")], Html(page))
        .into_response()
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
