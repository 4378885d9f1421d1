/*!
Scale-out: several relays serving the same rooms through an existing NATS server (`--broker`).

Without `--broker` a relay is [`Broker::Alone`]: every room it knows is its own, as always. With
it, every room still lives in exactly one relay's [`crate::registry::Registry`], the relay that
created it (its *host*), so ids, presence, resume tokens, the one dashboard and the lock keep
their one authority and the registry's logic is the same code. A participant may connect to any
relay (its *edge*); the edge passes its frames to the room's host and the host's answers back,
through the broker:

```text
 tab ── ws ── edge relay ── capelab.room.CODE ──▶ host relay (the room's Registry)
 tab ◀─ ws ── edge relay ◀── capelab.relay.EDGE ── the host's outbox for that tab (a forwarder)
```

- On the host a remote participant is an ordinary [`crate::registry::Conn`] whose outbox a
  forwarder drains into the broker (`host.rs`), so routing, presence, `Welcome`, takeover (4001)
  and "fell behind" (1008) are the registry's and the outbox's, unchanged.
- Order per sender: an edge publishes a connection's frames in order on one broker connection
  and one subject; the host applies a room's operations one at a time in arrival order; each
  recipient's frames leave through one outbox and one forwarder. NATS keeps the order of one
  publisher on one subject, so every hop keeps the sender's order.
- Room codes stay unique across relays: before opening a room the host subscribes to its subject
  and asks it (`Probe`); the broker connection has `no_echo`, so "no responders" means no other
  relay has it. Two relays claiming one code at once both see each other and both draw again.
- Nothing is dropped unnoticed: operations carry a reply subject that hears NATS's "no
  responders" when the other side is gone (`gone.CODE`: the host; `lost.EDGE`: the edge), which
  closes the affected seats with a reason; the same heartbeat (`Alive`) catches quiet rooms. If
  the broker itself goes away, every seat that depends on it is closed with an `Error` frame
  naming the broker, and the hosts keep the identities resumable for the grace period.

`message.rs` is the format between relays, `subject.rs` the subject names, `nats.rs` the
connection and its events, `host.rs` the hosting side, `edge.rs` the edge side.
*/

mod edge;
mod host;
pub mod message;
mod nats;
mod subject;

use std::sync::Arc;
use std::time::Duration;

use crate::error::Refusal;
use crate::registry::{Conn, JoinRequest, Seat};
use crate::server::Shared;

pub use nats::{BrokerError, Nats};

/// Where the rooms this relay does not host are found.
pub(crate) enum Broker {
    /// The only relay: every room is here (the default).
    Alone,
    /// Any relay on this NATS server may host a room.
    Nats(Arc<Nats>),
}

/// Whether `url` is a NATS server address the relay can use.
pub fn is_nats_url(url: &str) -> bool {
    url.strip_prefix("nats://")
        .is_some_and(|rest| !rest.is_empty() && !rest.contains(char::is_whitespace))
}

/// Opens a new room here with `conn` as its dashboard; with a broker its code is claimed first.
pub(crate) async fn create(
    shared: &Arc<Shared>,
    conn: &Conn,
    name: &str,
    now: Duration,
) -> Result<Seat, Refusal> {
    match &shared.broker {
        Broker::Alone => Ok(shared.registry().create(conn, name, now)),
        Broker::Nats(nats) => host::create(nats, shared, conn, name, now).await,
    }
}

/// Seats `conn` in a room hosted here, or through the broker in one hosted elsewhere (then the
/// broker to talk to comes back with the seat).
pub(crate) async fn join(
    shared: &Arc<Shared>,
    conn: &Conn,
    request: JoinRequest<'_>,
    now: Duration,
) -> Result<(Seat, Option<Arc<Nats>>), Refusal> {
    let nats = match &shared.broker {
        Broker::Nats(nats) if !host::hosts(shared, request.room) => nats,
        _ => return shared.registry().join(conn, request, now).map(|seat| (seat, None)),
    };
    let seat = edge::join(nats, conn, request).await?;
    Ok((seat, Some(nats.clone())))
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_nats_addresses_are_accepted() {
        assert!(super::is_nats_url("nats://127.0.0.1:4222"));
        assert!(super::is_nats_url("nats://broker.example:4222"));
        assert!(!super::is_nats_url("nats://"));
        assert!(!super::is_nats_url("127.0.0.1:4222"));
        assert!(!super::is_nats_url("redis://127.0.0.1:6379"));
    }
}
