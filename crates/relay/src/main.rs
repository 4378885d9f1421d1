//! `capelab-relay`: flags, binding and the start-up lines, and `capelab-relay self-signed`.
//! Everything else is in the library.

use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use capelab_relay::descriptors::{self, Descriptors};
use capelab_relay::fair_share::default_share;
use capelab_relay::{Config, RelayLimits, ServerTls, lan, lan_address, serve_when_ready};
use capelab_tls::SelfSigned;
use clap::{Parser, Subcommand};

/// Routes envelopes between the browser tabs of a capelab room and serves the web app.
#[derive(Debug, Parser)]
#[command(name = "capelab-relay", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: Args,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Makes a self-signed certificate for a relay on a LAN (cert.pem and key.pem in --out) and
    /// prints its fingerprints, to compare with what browsers show before accepting it.
    SelfSigned {
        /// Directory to write cert.pem and key.pem into (created; existing files are kept).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Names and addresses the relay is reached at, comma-separated
        /// [default: localhost, 127.0.0.1, ::1 and this machine's LAN address].
        #[arg(long, value_name = "NAME,IP...", value_delimiter = ',')]
        host: Vec<String>,
    },
}

#[derive(Debug, clap::Args)]
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

    /// Open connections before new ones get "503: all connections are in use" [default: 512,
    /// or fewer if the file-descriptor limit (ulimit -n) allows fewer].
    #[arg(long)]
    max_connections: Option<usize>,

    /// Open connections one address may hold before its next gets "429: over your share"
    /// [default: a quarter of --max-connections]. A class behind one NAT: about 5 per student.
    #[arg(long)]
    max_connections_per_address: Option<usize>,

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

    /// Serve https and wss with this certificate (PEM: the server's certificate first, then any
    /// intermediates). Needs --tls-key. `capelab-relay self-signed` makes one for a LAN.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,

    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,

    /// A reverse proxy in front of the relay (repeatable): its X-Forwarded-For names the client
    /// whose share and room-code tries count, instead of the proxy's own address.
    #[arg(long = "trusted-proxy", value_name = "ADDR")]
    trusted_proxies: Vec<IpAddr>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::SelfSigned { out, host }) = &cli.command {
        return self_signed(out, host);
    }
    let args = cli.serve;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => match ServerTls::from_pem_files(cert, key) {
            Ok(tls) => Some(tls),
            Err(error) => {
                eprintln!("capelab-relay: {error}");
                return ExitCode::from(2);
            }
        },
        _ => None,
    };
    let descriptors = descriptors::raise_soft_limit();
    let max_connections = match connection_cap(args.max_connections, descriptors) {
        Ok(cap) => cap,
        Err(error) => {
            eprintln!("capelab-relay: {error}");
            return ExitCode::from(2);
        }
    };
    let max_connections_per_address =
        args.max_connections_per_address.unwrap_or_else(|| default_share(max_connections));
    let config = Config {
        static_dir: args.static_dir.clone(),
        limits: RelayLimits {
            max_frame_bytes: args.max_frame_bytes,
            max_participants: args.max_participants,
            messages_per_second: args.rate,
            burst: args.burst,
            max_queue_bytes: args.max_queue_bytes,
            max_total_queue_bytes: args.max_total_queue_bytes,
            max_connections,
            max_connections_per_address,
            max_refusing: descriptors::refusing_budget(descriptors.limit),
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
        tls,
        trusted_proxies: args.trusted_proxies.clone(),
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
    let limits = config.limits;
    let fingerprint = config.tls.as_ref().map(|tls| tls.fingerprints.sha256.clone());
    let ready = || print_start(&args, port, &limits, descriptors, fingerprint.as_deref());
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

/// The cap: `--max-connections` if the descriptor limit allows it, otherwise the default or what
/// the limit allows, whichever is smaller.
fn connection_cap(asked: Option<usize>, descriptors: Descriptors) -> Result<usize, String> {
    let limit = descriptors.limit;
    let budget = descriptors::connection_budget(limit);
    let needed = |n: usize| {
        descriptors::RESERVED
            + descriptors::refusing_budget(limit) as u64
            + descriptors::PER_CONNECTION * n as u64
    };
    match asked {
        Some(n) if n > budget => Err(format!(
            "--max-connections {n} needs {} file descriptors, but this process may open {limit} \
             (ulimit -n): raise the limit (ulimit -n {0}, or LimitNOFILE={0} in a systemd unit), \
             or ask for at most --max-connections {budget}",
            needed(n)
        )),
        Some(n) => Ok(n),
        None if budget == 0 => Err(format!(
            "this process may open only {limit} file descriptors (ulimit -n), and the relay keeps \
             {} for itself: raise the limit, e.g. ulimit -n 1024",
            needed(0)
        )),
        None => Ok(RelayLimits::default().max_connections.min(budget)),
    }
}

/// `capelab-relay self-signed`: writes the certificate and says how to use it.
fn self_signed(out: &Path, hosts: &[String]) -> ExitCode {
    let hosts = if hosts.is_empty() {
        let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
        hosts.extend(lan_address().map(|ip| ip.to_string()));
        hosts
    } else {
        hosts.to_vec()
    };
    let made = match SelfSigned::generate(&hosts) {
        Ok(made) => made,
        Err(error) => {
            eprintln!("capelab-relay: {error} (--host takes names and IP addresses: {hosts:?})");
            return ExitCode::from(2);
        }
    };
    let (cert, key) = match made.write_to(out) {
        Ok(paths) => paths,
        Err(error) => {
            eprintln!("capelab-relay: {error}");
            return ExitCode::FAILURE;
        }
    };
    let (cert, key) = (cert.display(), key.display());
    println!(
        "wrote {cert} and {key} (the key readable by you alone), valid {} days for {}",
        SelfSigned::VALID_DAYS,
        made.hosts.join(", ")
    );
    println!("fingerprint (SHA-256): {}", made.fingerprints.sha256);
    println!("public key (SPKI SHA-256, base64): {}", made.fingerprints.spki_sha256);
    println!("start the relay with: capelab-relay --bind-all --tls-cert {cert} --tls-key {key}");
    println!(
        "browsers will say nobody vouches for this certificate: check that the fingerprint they \
         show is the one above, then accept it. Native clients trust it with --ca {cert}."
    );
    ExitCode::SUCCESS
}

fn print_start(
    args: &Args,
    port: u16,
    limits: &RelayLimits,
    descriptors: Descriptors,
    fingerprint: Option<&str>,
) {
    let scheme = if fingerprint.is_some() { "https" } else { "http" };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "capelab relay: open {scheme}://127.0.0.1:{port}/ (Ctrl-C to stop)");
    if let Some(fingerprint) = fingerprint {
        let _ = writeln!(out, "tls: certificate fingerprint (SHA-256) {fingerprint}");
    }
    let raised = match descriptors.raised_from {
        Some(soft) => format!(", raised from {soft}"),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "connections: at most {} at once, {} from one address (file descriptors: {}{raised})",
        limits.max_connections, limits.max_connections_per_address, descriptors.limit
    );
    if args.bind_all {
        match lan_address() {
            Some(ip) => {
                let _ =
                    writeln!(out, "classroom: others on this network open {scheme}://{ip}:{port}/");
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
    let _ = writeln!(out, "LISTENING {scheme}://127.0.0.1:{port}/");
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
