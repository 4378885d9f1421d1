//! `capelab-relay`: flags, binding and the start-up lines. Everything else is in the library.

use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use capelab_relay::{Config, RelayLimits, lan, lan_address, serve_when_ready};
use clap::Parser;

/// Routes envelopes between the browser tabs of a capelab room and serves the web app.
#[derive(Debug, Parser)]
#[command(name = "capelab-relay", version)]
struct Args {
    /// Port to listen on; 0 picks a free one (see the LISTENING line).
    #[arg(long, default_value_t = 8080)]
    port: u16,

    /// Listen on all interfaces (0.0.0.0) so other machines on the classroom network can join.
    #[arg(long)]
    bind_all: bool,

    /// The built web app to serve at `/`.
    #[arg(long, default_value = "dist")]
    static_dir: PathBuf,

    /// Largest frame a client may send, in bytes.
    #[arg(long, default_value_t = RelayLimits::default().max_frame_bytes)]
    max_frame_bytes: usize,

    /// Most participants in one room (including those who may still resume).
    #[arg(long, default_value_t = RelayLimits::default().max_participants)]
    max_participants: usize,

    /// Sustained messages per second per connection.
    #[arg(long, default_value_t = RelayLimits::default().messages_per_second)]
    rate: u32,

    /// Messages a connection may send at once before the rate applies (token bucket size).
    #[arg(long, default_value_t = RelayLimits::default().burst)]
    burst: u32,

    /// Bytes queued for one slow connection before the relay closes it.
    #[arg(long, default_value_t = RelayLimits::default().max_queue_bytes)]
    max_queue_bytes: usize,

    /// Bytes queued for all connections together before the relay closes the next one to pass it.
    #[arg(long, default_value_t = RelayLimits::default().max_total_queue_bytes)]
    max_total_queue_bytes: usize,

    /// Open connections before new ones get "503: all connections are in use".
    #[arg(long, default_value_t = RelayLimits::default().max_connections)]
    max_connections: usize,

    /// Sustained bytes per second one connection may send.
    #[arg(long, default_value_t = RelayLimits::default().bytes_per_second)]
    byte_rate: u32,

    /// Bytes one connection may send at once; refused bytes past this much again cut it off.
    #[arg(long, default_value_t = RelayLimits::default().byte_burst)]
    byte_burst: u32,

    /// Sustained bytes per second into one room from all its members.
    #[arg(long, default_value_t = RelayLimits::default().room_bytes_per_second)]
    room_byte_rate: u32,

    /// Bytes one room may take at once.
    #[arg(long, default_value_t = RelayLimits::default().room_byte_burst)]
    room_byte_burst: u32,

    /// Seconds an HTTP connection may take to send its request headers (or sit idle before one).
    #[arg(long, default_value_t = 10)]
    handshake_secs: u64,

    /// Seconds a dropped participant can come back with the same id.
    #[arg(long, default_value_t = 120)]
    resume_grace_secs: u64,

    /// Seconds between keep-alive pings; a connection silent for three of them is dropped.
    #[arg(long, default_value_t = 15)]
    ping_secs: u64,

    /// No activity log on stderr.
    #[arg(long)]
    quiet: bool,

    /// Serve the same rooms as every other relay started with this NATS server
    /// (nats://HOST:PORT): a room's participants may then connect to any of them. Without it the
    /// relay runs alone.
    #[arg(long, value_name = "nats://HOST:PORT")]
    broker: Option<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let config = Config {
        static_dir: args.static_dir.clone(),
        limits: RelayLimits {
            max_frame_bytes: args.max_frame_bytes,
            max_participants: args.max_participants,
            messages_per_second: args.rate,
            burst: args.burst,
            max_queue_bytes: args.max_queue_bytes,
            max_total_queue_bytes: args.max_total_queue_bytes,
            max_connections: args.max_connections,
            bytes_per_second: args.byte_rate,
            byte_burst: args.byte_burst,
            room_bytes_per_second: args.room_byte_rate,
            room_byte_burst: args.room_byte_burst,
        },
        handshake_timeout: Duration::from_secs(args.handshake_secs.max(1)),
        resume_grace: Duration::from_secs(args.resume_grace_secs),
        ping_interval: Duration::from_secs(args.ping_secs),
        quiet: args.quiet,
        broker: args.broker.clone(),
        ..Config::default()
    };
    if let Err(error) = config.validate() {
        eprintln!("capelab-relay: {error}");
        return ExitCode::from(2);
    }

    let host = if args.bind_all { Ipv4Addr::UNSPECIFIED } else { Ipv4Addr::LOCALHOST };
    let listener = match tokio::net::TcpListener::bind(SocketAddr::from((host, args.port))).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!(
                "capelab-relay: cannot listen on {host}:{}: {error}. Pick another port with \
                 --port, or --port 0 for any free one.",
                args.port
            );
            return ExitCode::FAILURE;
        }
    };
    let port = match listener.local_addr() {
        Ok(addr) => addr.port(),
        Err(error) => {
            eprintln!("capelab-relay: cannot read the bound address: {error}");
            return ExitCode::FAILURE;
        }
    };

    // Printed once serving (with --broker, once connected to it): scripts wait for LISTENING.
    let ready = || print_start(&args, port);
    match serve_when_ready(listener, config, shutdown_signal(), ready).await {
        Ok(()) => {
            if !args.quiet {
                say_without_blocking("capelab-relay: stopped");
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("capelab-relay: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Writes a last line to stderr, but exits anyway if nobody reads stderr (a full pipe blocks).
fn say_without_blocking(line: &'static str) {
    let (done, wait) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        eprintln!("{line}");
        let _ = done.send(());
    });
    let _ = wait.recv_timeout(Duration::from_secs(1));
}

fn print_start(args: &Args, port: u16) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "capelab relay: open http://127.0.0.1:{port}/ (Ctrl-C to stop)");
    if args.bind_all {
        match lan_address() {
            Some(ip) => {
                let _ = writeln!(out, "classroom: others on this network open http://{ip}:{port}/");
            }
            None => {
                let _ = writeln!(out, "classroom: {}", lan::HOW_TO_FIND_IT);
            }
        }
    }
    if !args.static_dir.join("index.html").is_file() {
        let _ = writeln!(
            out,
            "note: {} has no index.html yet, so / explains how to build the app (./scripts/demo)",
            args.static_dir.display()
        );
    }
    if let Some(url) = &args.broker {
        let _ = writeln!(out, "broker: {url} (rooms are shared with the other relays on it)");
    }
    // Scripts and tests wait for exactly this line.
    let _ = writeln!(out, "LISTENING http://127.0.0.1:{port}/");
    let _ = out.flush();
}

/// Resolves on Ctrl-C, or on SIGTERM where there is one.
async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            // Without a Ctrl-C handler, only SIGTERM (or killing the process) stops the relay.
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut sigterm) => {
                sigterm.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = terminate => {}
    }
}
