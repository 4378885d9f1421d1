/*!
How a relay is set up: [`Config`], its defaults, and the checks run before serving.

`main.rs` fills a `Config` from flags; tests build one directly (small limits, a
[`crate::ManualClock`]) and hand it to [`crate::serve`].
*/

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use capelab_tls::ServerTls;

use crate::clock::Clock;
use crate::limits::{ENVELOPE_OVERHEAD_BYTES, RelayLimits};

/// The smallest `max_frame_bytes` that still fits a `Join` with a full-length name and token.
pub const MIN_FRAME_BYTES: usize = 512;
/// The smallest outbound queue, so a `Welcome` listing a full room always fits.
pub const MIN_QUEUE_BYTES: usize = 64 * 1024;

/// Everything a relay needs to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// The built web app, served at `/`; `index.html` answers unknown paths.
    pub static_dir: PathBuf,
    pub limits: RelayLimits,
    /// How long a dropped participant can come back with its resume token.
    pub resume_grace: Duration,
    /// How often the relay pings each connection; one silent for three intervals is dropped.
    pub ping_interval: Duration,
    /// How long an HTTP connection may take to send a request's headers, and may sit idle
    /// before its first request or between two; a websocket is past this once upgraded.
    pub handshake_timeout: Duration,
    /// How long shutdown waits for connections to finish before returning anyway.
    pub shutdown_wait: Duration,
    /// No activity log on stderr.
    pub quiet: bool,
    /// Time for rate limits and the grace period.
    pub clock: Clock,
    /// `nats://HOST:PORT` of a NATS server shared with other relays serving the same rooms
    /// (`--broker`); `None` runs alone, as the only relay of its rooms.
    pub broker: Option<String>,
    /// Serve `https`/`wss` with this certificate (`--tls-cert`, `--tls-key`); `None`: plain
    /// `http`/`ws`, e.g. behind a reverse proxy that terminates TLS.
    pub tls: Option<ServerTls>,
    /// Reverse proxies whose `X-Forwarded-For` names the client (`--trusted-proxy`).
    pub trusted_proxies: Vec<IpAddr>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            static_dir: PathBuf::from("dist"),
            limits: RelayLimits::default(),
            resume_grace: Duration::from_secs(120),
            ping_interval: Duration::from_secs(15),
            handshake_timeout: Duration::from_secs(10),
            shutdown_wait: Duration::from_secs(6),
            quiet: false,
            clock: Clock::system(),
            broker: None,
            tls: None,
            trusted_proxies: Vec::new(),
        }
    }
}

/// A setting the relay cannot run with; the message names the flag and a value that works.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("--rate must be at least 1 message per second (got 0)")]
    ZeroRate,
    #[error("--burst must be at least 1 message (got 0)")]
    ZeroBurst,
    #[error("--max-participants must be at least 1 (got 0)")]
    NoParticipants,
    #[error("--max-frame-bytes {got} is too small for a join frame: use at least {min}")]
    FrameTooSmall { got: usize, min: usize },
    #[error(
        "--max-queue-bytes {got} cannot hold one full-size message: use at least {min} \
         (--max-frame-bytes plus {ENVELOPE_OVERHEAD_BYTES}, and never below {MIN_QUEUE_BYTES})"
    )]
    QueueTooSmall { got: usize, min: usize },
    #[error("--ping-secs must be at least 1 (got 0)")]
    ZeroPing,
    #[error("--max-connections must be at least 1 (got 0)")]
    NoConnections,
    #[error("--max-connections-per-address must be at least 1 (got 0)")]
    NoConnectionsPerAddress,
    #[error("--byte-rate and --room-byte-rate must be at least 1 byte per second (got 0)")]
    ZeroByteRate,
    #[error(
        "--byte-burst {got} cannot hold one full-size frame: use at least {min} (--max-frame-bytes)"
    )]
    ByteBurstTooSmall { got: u64, min: u64 },
    #[error("--room-byte-burst {got} is below --byte-burst: use at least {min}")]
    RoomBurstTooSmall { got: u64, min: u64 },
    #[error("--max-total-queue-bytes {got} is below --max-queue-bytes: use at least {min}")]
    TotalQueueTooSmall { got: usize, min: usize },
    #[error(
        "--broker {got:?} is not a NATS address: use nats://HOST:PORT (e.g. nats://127.0.0.1:4222), \
         or leave --broker out to run this relay alone"
    )]
    BadBroker { got: String },
}

impl Config {
    /// Checks the settings before anything is served.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let limits = &self.limits;
        if limits.messages_per_second == 0 {
            return Err(ConfigError::ZeroRate);
        }
        if limits.burst == 0 {
            return Err(ConfigError::ZeroBurst);
        }
        if limits.max_participants == 0 {
            return Err(ConfigError::NoParticipants);
        }
        if limits.max_frame_bytes < MIN_FRAME_BYTES {
            return Err(ConfigError::FrameTooSmall {
                got: limits.max_frame_bytes,
                min: MIN_FRAME_BYTES,
            });
        }
        let min_queue =
            limits.max_frame_bytes.saturating_add(ENVELOPE_OVERHEAD_BYTES).max(MIN_QUEUE_BYTES);
        if limits.max_queue_bytes < min_queue {
            return Err(ConfigError::QueueTooSmall { got: limits.max_queue_bytes, min: min_queue });
        }
        if self.ping_interval.is_zero() {
            return Err(ConfigError::ZeroPing);
        }
        if limits.max_connections == 0 {
            return Err(ConfigError::NoConnections);
        }
        if limits.max_connections_per_address == 0 {
            return Err(ConfigError::NoConnectionsPerAddress);
        }
        if limits.bytes_per_second == 0 || limits.room_bytes_per_second == 0 {
            return Err(ConfigError::ZeroByteRate);
        }
        let frame = limits.max_frame_bytes as u64;
        if u64::from(limits.byte_burst) < frame {
            return Err(ConfigError::ByteBurstTooSmall {
                got: limits.byte_burst.into(),
                min: frame,
            });
        }
        if limits.room_byte_burst < limits.byte_burst {
            return Err(ConfigError::RoomBurstTooSmall {
                got: limits.room_byte_burst.into(),
                min: limits.byte_burst.into(),
            });
        }
        if limits.max_total_queue_bytes < limits.max_queue_bytes {
            return Err(ConfigError::TotalQueueTooSmall {
                got: limits.max_total_queue_bytes,
                min: limits.max_queue_bytes,
            });
        }
        if let Some(url) = &self.broker
            && !crate::broker::is_nats_url(url)
        {
            return Err(ConfigError::BadBroker { got: url.clone() });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        assert_eq!(Config::default().validate(), Ok(()));
    }

    #[test]
    fn bad_settings_name_the_flag_and_a_working_value() {
        let mut config = Config::default();
        config.limits.max_queue_bytes = 1000;
        let error = config.validate().unwrap_err();
        let min = 16 * 1024 * 1024 + ENVELOPE_OVERHEAD_BYTES;
        assert_eq!(error, ConfigError::QueueTooSmall { got: 1000, min });
        assert!(error.to_string().contains(&format!("use at least {min}")));

        let mut config = Config::default();
        config.limits.messages_per_second = 0;
        assert_eq!(config.validate(), Err(ConfigError::ZeroRate));
        let mut config = Config::default();
        config.limits.max_frame_bytes = 100;
        assert!(config.validate().unwrap_err().to_string().starts_with("--max-frame-bytes 100"));

        let config = Config { broker: Some("redis://x:6379".into()), ..Config::default() };
        assert!(config.validate().unwrap_err().to_string().contains("use nats://HOST:PORT"));
        let config = Config { broker: Some("nats://127.0.0.1:4222".into()), ..Config::default() };
        assert_eq!(config.validate(), Ok(()));
    }
}
