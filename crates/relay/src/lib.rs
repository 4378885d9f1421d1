/*!
capelab's relay: routes envelopes between the tabs of a room and serves the web app.

Each browser tab is a participant in a room. The relay speaks the JSON wire format of
[`capelab_wire`]: it assigns ids, announces presence, forwards `Send` frames as
`Envelope`s with the sender's id filled in by the relay, and refuses bad frames with an `Error`
to the sender alone. **It never decodes or logs a payload**: protocol traffic is end-to-end
opaque base64, and routing reads only `room`, `from` and `to`.

Code map:
- [`server`]: the accept loop (connection cap, header timeout), routes (`/ws`, `/healthz`, the
  static app), shared state, [`serve`] and a bounded shutdown; [`tls`]: each connection's TLS
  handshake when the relay serves `https`/`wss` (certificates through `capelab-tls`).
- [`descriptors`]: the connection cap from `RLIMIT_NOFILE`; [`fair_share`]: one address's share
  of the connections; [`client_address`]: the client behind a `--trusted-proxy`.
- [`security_headers`]: the Content-Security-Policy and the other headers on every answer.
- [`static_files`]: the built app, brotli/gzip precompressed at build time, content-hashed files
  cached for good and `index.html` revalidated.
- [`connection`]: one websocket's reader and writer tasks.
- [`registry`]: rooms, seats, resume and routing, with no sockets or clock, unit-tested directly;
  [`expiry`]: the deadline index that makes expiry cost only what expires.
- [`outbox`]: each connection's bounded outbound queue and the close codes.
- [`limits`]: every bound, the token buckets (messages and bytes), name and kind checks;
  [`guesses`]: the wrong-room-code limits per connection and per address.
- [`frame`]: JSON in and out, with the version check; [`error`]: refusals and their messages.
- [`room_code`], [`resume`]: room codes and resume tokens; [`clock`]: the relay's time.
- [`config`]: [`Config`]; [`lan`]: the classroom LAN address; [`log`]: the activity log.
- [`broker`]: several relays serving the same rooms through a NATS server (`--broker`).

`main.rs` only parses flags, binds, prints the addresses and waits for Ctrl-C or SIGTERM.
*/

pub mod broker;
pub mod client_address;
pub mod clock;
pub mod config;
pub mod connection;
pub mod descriptors;
pub mod error;
pub mod expiry;
pub mod fair_share;
pub mod frame;
pub mod guesses;
pub mod lan;
pub mod limits;
pub mod log;
pub mod outbox;
pub mod registry;
pub mod resume;
pub mod room_code;
pub mod security_headers;
pub mod server;
pub mod static_files;
pub mod tls;

pub use capelab_tls::ServerTls;
pub use clock::{Clock, ManualClock};
pub use config::{Config, ConfigError};
pub use lan::lan_address;
pub use limits::RelayLimits;
pub use outbox::close_code;
pub use server::{ServeError, serve, serve_when_ready, serve_with_shutdown};
