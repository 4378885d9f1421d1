/*!
One participant's session with the relay, as a sans-IO state machine.

[`Link`] decides which frame to send when a socket opens, what each relay frame means as
[`TransportEvent`]s, whether a dropped socket is retried and after how long, and whether an
outgoing `Send` is acceptable. It owns no socket and reads no clock: `transport.rs` opens sockets,
runs timers and feeds it what happened, so every rule here is tested natively.

Rules (wire format: `capelab_core::wire`):
- The first socket sends the caller's [`Hello`] (`Create` or `Join`). After a `Welcome`, every later
  socket sends `Join` with the `resume` token, so the relay gives back the same id.
- A socket closed by the relay with code 4001 (another connection resumed our identity) is not
  retried: two tabs would otherwise take the identity from each other forever.
- A dropped socket is retried after 0.5 s, 1 s, 2 s, 4 s, then every 8 s ([`retry_delay_ms`]), until a
  `Welcome` resets the count.
- An `Error` frame before `Welcome` means the room cannot be entered (unknown room, room full,
  version mismatch, …): the link fails for good instead of hammering the relay. Only
  `rate_limited` is retried. After `Welcome`, an `Error` refuses one of our frames and the link stays
  up. A resume refused as `unknown_room` (the relay restarted: rooms live only in its memory) fails
  saying the room is gone and that the page keeps its results and ledger.
- A frame this build cannot read means the relay and the app disagree on the wire version; the
  link fails and tells the user to reload (the relay serves the app, so a reload fetches the match).
*/

use std::collections::BTreeSet;

use capelab_core::transport::{TransportError, TransportEvent};
use capelab_core::wire::{
    ClientFrame, ErrorCode, Limits, ParticipantId, Peer, RelayFrame, Role, To, WIRE_VERSION,
    encode_payload,
};

/// Close code of a socket that broke without a close handshake (also: never opened).
pub const CLOSE_ABNORMAL: u16 = 1006;
/// Close code the relay uses when another connection resumed this identity.
pub const CLOSE_SUPERSEDED: u16 = 4001;

/// How a participant enters a room the first time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hello {
    /// Create a new room and become its dashboard.
    Create { name: String },
    /// Join an existing room by its code; with `resume`, as the identity that token names (a
    /// reloaded tab). The relay treats an unknown or expired token as a new participant.
    Join { room: String, role: Role, name: String, resume: Option<String> },
}

/// The connection as the user should see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkStatus {
    /// The first socket is opening, or waiting for `Welcome`.
    Connecting,
    /// In the room.
    Connected,
    /// The socket dropped (or never opened); retry number `attempt` is waiting or under way.
    Reconnecting { attempt: u32, retry_in_ms: u32 },
    /// Given up for good: the relay refused us, or we left. `reason` is for the user.
    Failed { reason: String },
}

/// Who we are in the room, learnt from `Welcome`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub room: String,
    pub you: Peer,
    pub resume: String,
    pub limits: Limits,
}

/// What the driver must do after feeding the link an input.
#[derive(Debug, Default, PartialEq)]
pub struct Step {
    /// Events for the transport's queue, in order.
    pub events: Vec<TransportEvent>,
    /// Send this text frame on the current socket.
    pub send: Option<String>,
    /// Close the current socket. The link has already counted it as closed: the driver must not
    /// report this socket's close event.
    pub close: bool,
    /// Open a new socket after this many milliseconds.
    pub retry_in_ms: Option<u32>,
    /// Something the user cannot act on but a developer wants in the console.
    pub warning: Option<String>,
}

/// The delay before retry number `attempt` (1-based): 0.5 s doubling to a cap of 8 s.
pub fn retry_delay_ms(attempt: u32) -> u32 {
    const FIRST_MS: u32 = 500;
    const CAP_MS: u32 = 8_000;
    let doublings = attempt.saturating_sub(1).min(5);
    (FIRST_MS << doublings).min(CAP_MS)
}

/// One participant's session with the relay. See the module docs for the rules.
#[derive(Debug)]
pub struct Link {
    hello: Hello,
    identity: Option<Identity>,
    /// The current socket has been welcomed: `Send` is allowed.
    welcomed: bool,
    /// Failed retries since the last `Welcome`.
    attempt: u32,
    status: LinkStatus,
    /// Ids of the other participants currently connected, for `To::One` checks.
    present: BTreeSet<ParticipantId>,
}

impl Link {
    pub fn new(hello: Hello) -> Self {
        Link {
            hello,
            identity: None,
            welcomed: false,
            attempt: 0,
            status: LinkStatus::Connecting,
            present: BTreeSet::new(),
        }
    }

    pub fn status(&self) -> &LinkStatus {
        &self.status
    }

    /// Who we are in the room, once welcomed (kept across reconnects).
    pub fn identity(&self) -> Option<&Identity> {
        self.identity.as_ref()
    }

    /// A socket opened: say who we are.
    pub fn on_open(&mut self) -> Step {
        let frame = match (&self.identity, &self.hello) {
            (Some(id), _) => ClientFrame::Join {
                v: WIRE_VERSION,
                room: id.room.clone(),
                role: id.you.role,
                name: id.you.name.clone(),
                resume: Some(id.resume.clone()),
            },
            (None, Hello::Create { name }) => {
                ClientFrame::Create { v: WIRE_VERSION, name: name.clone() }
            }
            (None, Hello::Join { room, role, name, resume }) => ClientFrame::Join {
                v: WIRE_VERSION,
                room: room.clone(),
                role: *role,
                name: name.clone(),
                resume: resume.clone(),
            },
        };
        Step { send: Some(to_json(&frame)), ..Step::default() }
    }

    /// A text frame arrived from the relay.
    pub fn on_text(&mut self, text: &str) -> Step {
        if matches!(self.status, LinkStatus::Failed { .. }) {
            return Step::default();
        }
        let frame = match serde_json::from_str::<RelayFrame>(text) {
            Ok(frame) => frame,
            Err(err) => {
                return self.fail(
                    "The relay speaks a different version of capelab. Reload the page.".into(),
                    Some(format!("unreadable relay frame ({err}): {}", preview(text))),
                );
            }
        };
        let v = frame_version(&frame);
        if v != WIRE_VERSION {
            return self.fail(
                format!(
                    "The relay speaks wire version {v}, this page speaks {WIRE_VERSION}. Reload the page."
                ),
                None,
            );
        }
        match frame {
            RelayFrame::Welcome { room, you, resume, peers, limits, .. } => {
                self.welcomed = true;
                self.attempt = 0;
                self.status = LinkStatus::Connected;
                self.present = peers.iter().map(|p| p.id).filter(|&id| id != you.id).collect();
                let peers: Vec<Peer> = peers.into_iter().filter(|p| p.id != you.id).collect();
                self.identity =
                    Some(Identity { room: room.clone(), you: you.clone(), resume, limits });
                Step {
                    events: vec![TransportEvent::Connected { room, you, peers }],
                    ..Step::default()
                }
            }
            RelayFrame::Presence { event, peer, .. } => {
                let me = self.identity.as_ref().map(|id| id.you.id);
                if !self.welcomed || Some(peer.id) == me {
                    return Step::default();
                }
                use capelab_core::wire::PresenceEvent as P;
                let event = match event {
                    P::Joined => {
                        self.present.insert(peer.id);
                        TransportEvent::PeerJoined(peer)
                    }
                    P::Rejoined => {
                        self.present.insert(peer.id);
                        TransportEvent::PeerRejoined(peer)
                    }
                    P::Left => {
                        self.present.remove(&peer.id);
                        TransportEvent::PeerLeft(peer)
                    }
                };
                Step { events: vec![event], ..Step::default() }
            }
            RelayFrame::Envelope(envelope) => match envelope.payload_bytes() {
                Ok(payload) => Step {
                    events: vec![TransportEvent::Message {
                        from: envelope.from,
                        kind: envelope.kind,
                        payload,
                    }],
                    ..Step::default()
                },
                // The relay never checks payloads; a peer sent garbage. Drop it, say so.
                Err(err) => Step {
                    warning: Some(format!(
                        "dropped a {:?} message from participant {}: payload is not base64 ({err})",
                        envelope.kind, envelope.from
                    )),
                    ..Step::default()
                },
            },
            RelayFrame::Error { code, message, .. } => {
                let refused = TransportEvent::Refused { code, message: message.clone() };
                if self.welcomed {
                    return Step { events: vec![refused], ..Step::default() };
                }
                if code == ErrorCode::RateLimited {
                    // Entering too fast: let the socket go and retry on the normal schedule.
                    let mut step = self.on_close(CLOSE_ABNORMAL, &message);
                    step.events.insert(0, refused);
                    step.close = true;
                    return step;
                }
                let reason = match (&self.identity, code) {
                    // We were in this room before: the relay restarted (rooms live only in its
                    // memory), or the room closed while we were away.
                    (Some(id), ErrorCode::UnknownRoom) => room_gone(&id.room),
                    _ => message,
                };
                let mut step = self.fail(reason, None);
                step.events.insert(0, refused);
                step
            }
        }
    }

    /// The socket closed with websocket close `code` (1006 when it never opened or just broke).
    /// `reason` is for the user, e.g. "connection closed (code 1006)".
    pub fn on_close(&mut self, code: u16, reason: &str) -> Step {
        if matches!(self.status, LinkStatus::Failed { .. }) {
            return Step::default();
        }
        if code == CLOSE_SUPERSEDED {
            // Another tab holds our resume token; reconnecting would take it back and start a tug
            // of war between the two.
            return self.fail(
                "This identity was taken over by another tab or window. Leave and join again \
                 to continue here."
                    .into(),
                None,
            );
        }
        let mut events = Vec::new();
        if self.welcomed {
            events.push(TransportEvent::Disconnected { reason: reason.to_owned() });
        }
        self.welcomed = false;
        self.present.clear();
        self.attempt += 1;
        let retry_in_ms = retry_delay_ms(self.attempt);
        self.status = LinkStatus::Reconnecting { attempt: self.attempt, retry_in_ms };
        Step { events, retry_in_ms: Some(retry_in_ms), ..Step::default() }
    }

    /// The user left the room: stop for good.
    pub fn leave(&mut self) -> Step {
        let mut step = self.fail("You left the room.".into(), None);
        step.events.clear();
        step
    }

    /// Builds the `Send` frame for `payload`, or says why it would be refused.
    pub fn prepare_send(
        &self,
        to: To,
        kind: &str,
        payload: &[u8],
    ) -> Result<String, TransportError> {
        let identity = self.identity.as_ref().filter(|_| self.welcomed);
        let Some(identity) = identity else {
            return Err(TransportError::NotConnected);
        };
        // Naming ourselves is allowed: the relay echoes it back.
        if let To::One(id) = to
            && id != identity.you.id
            && !self.present.contains(&id)
        {
            return Err(TransportError::UnknownRecipient(id));
        }
        let frame = ClientFrame::Send {
            v: WIRE_VERSION,
            to,
            kind: kind.to_owned(),
            payload: encode_payload(payload),
        };
        let text = to_json(&frame);
        let limit = identity.limits.max_frame_bytes;
        if text.len() > limit {
            return Err(TransportError::Oversized { size: text.len(), limit });
        }
        Ok(text)
    }

    fn fail(&mut self, reason: String, warning: Option<String>) -> Step {
        let was_welcomed = self.welcomed;
        self.welcomed = false;
        self.present.clear();
        self.status = LinkStatus::Failed { reason: reason.clone() };
        let events =
            if was_welcomed { vec![TransportEvent::Disconnected { reason }] } else { Vec::new() };
        Step { events, close: true, warning, ..Step::default() }
    }
}

/// Why a resume into a room we had been in failed: the room is gone, and what is left to do.
fn room_gone(room: &str) -> String {
    format!(
        "Room {room} is gone from the relay: it restarted, or the room closed while this page was \
         away. The study that was running cannot go on. Everything on this page stays: the \
         results so far and this tab's privacy ledger; export what you need, then open or join a \
         new room."
    )
}

fn frame_version(frame: &RelayFrame) -> u32 {
    match frame {
        RelayFrame::Welcome { v, .. }
        | RelayFrame::Presence { v, .. }
        | RelayFrame::Error { v, .. } => *v,
        RelayFrame::Envelope(envelope) => envelope.v,
    }
}

fn to_json(frame: &ClientFrame) -> String {
    // Serializing these plain structs cannot fail: no maps with non-string keys, no custom impls.
    serde_json::to_string(frame).unwrap_or_default()
}

fn preview(text: &str) -> String {
    text.chars().take(120).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use capelab_core::wire::{PresenceEvent, RelayFrame};

    const LIMITS: Limits =
        Limits { max_frame_bytes: 300, max_participants: 10, max_messages_per_second: 50 };

    fn peer(id: ParticipantId, role: Role, name: &str) -> Peer {
        Peer { id, role, name: name.into() }
    }

    fn welcome(you: Peer, peers: Vec<Peer>) -> String {
        serde_json::to_string(&RelayFrame::Welcome {
            v: WIRE_VERSION,
            room: "K7QX2M".into(),
            you,
            resume: "token-1".into(),
            peers,
            limits: LIMITS,
        })
        .unwrap()
    }

    fn presence(event: PresenceEvent, peer: Peer) -> String {
        serde_json::to_string(&RelayFrame::Presence { v: WIRE_VERSION, event, peer }).unwrap()
    }

    fn error(code: ErrorCode, message: &str) -> String {
        serde_json::to_string(&RelayFrame::Error { v: WIRE_VERSION, code, message: message.into() })
            .unwrap()
    }

    fn sent(step: &Step) -> ClientFrame {
        serde_json::from_str(step.send.as_deref().expect("a frame to send")).unwrap()
    }

    fn joined_site() -> Link {
        let mut link = Link::new(Hello::Join {
            room: "K7QX2M".into(),
            role: Role::Site,
            name: "Ana".into(),
            resume: None,
        });
        link.on_open();
        link.on_text(&welcome(
            peer(2, Role::Site, "Ana"),
            vec![peer(1, Role::Dashboard, "Teacher"), peer(2, Role::Site, "Ana")],
        ));
        link
    }

    #[test]
    fn backoff_doubles_from_half_a_second_to_eight() {
        let delays: Vec<u32> = (1..=8).map(retry_delay_ms).collect();
        assert_eq!(delays, [500, 1_000, 2_000, 4_000, 8_000, 8_000, 8_000, 8_000]);
        assert_eq!(retry_delay_ms(u32::MAX), 8_000);
    }

    #[test]
    fn first_socket_sends_the_hello() {
        let mut link = Link::new(Hello::Create { name: "Teacher".into() });
        assert_eq!(sent(&link.on_open()), ClientFrame::Create { v: 1, name: "Teacher".into() });
        assert_eq!(link.status(), &LinkStatus::Connecting);
    }

    #[test]
    fn a_reloaded_tab_presents_its_saved_token_on_the_first_socket() {
        let mut link = Link::new(Hello::Join {
            room: "K7QX2M".into(),
            role: Role::Dashboard,
            name: "Teacher".into(),
            resume: Some("saved".into()),
        });
        assert_eq!(
            sent(&link.on_open()),
            ClientFrame::Join {
                v: 1,
                room: "K7QX2M".into(),
                role: Role::Dashboard,
                name: "Teacher".into(),
                resume: Some("saved".into()),
            }
        );
    }

    #[test]
    fn welcome_connects_and_lists_only_the_others() {
        let mut link = Link::new(Hello::Join {
            room: "K7QX2M".into(),
            role: Role::Site,
            name: "Ana".into(),
            resume: None,
        });
        link.on_open();
        let me = peer(2, Role::Site, "Ana");
        let dash = peer(1, Role::Dashboard, "Teacher");
        let step = link.on_text(&welcome(me.clone(), vec![dash.clone(), me.clone()]));
        assert_eq!(
            step.events,
            vec![TransportEvent::Connected { room: "K7QX2M".into(), you: me, peers: vec![dash] }]
        );
        assert_eq!(link.status(), &LinkStatus::Connected);
        assert_eq!(link.identity().unwrap().resume, "token-1");
    }

    #[test]
    fn a_resume_into_a_room_the_relay_forgot_fails_saying_the_room_is_gone() {
        let mut link = joined_site();
        link.on_close(1006, "closed (1006)");
        link.on_open();
        let step = link.on_text(&error(ErrorCode::UnknownRoom, "there is no room \"K7QX2M\""));
        assert!(step.close);
        assert_eq!(step.retry_in_ms, None, "no hammering a relay that forgot the room");
        let LinkStatus::Failed { reason } = link.status() else { panic!("{:?}", link.status()) };
        assert!(reason.starts_with("Room K7QX2M is gone from the relay: it restarted"), "{reason}");
        assert!(
            reason.ends_with(
                "this tab's privacy ledger; export what you need, then open or join a new room."
            ),
            "{reason}"
        );

        // A first join with a mistyped code keeps the relay's own words.
        let mut fresh = Link::new(Hello::Join {
            room: "K7QX2N".into(),
            role: Role::Site,
            name: "Ana".into(),
            resume: None,
        });
        fresh.on_open();
        fresh.on_text(&error(ErrorCode::UnknownRoom, "there is no room \"K7QX2N\""));
        assert_eq!(
            fresh.status(),
            &LinkStatus::Failed { reason: "there is no room \"K7QX2N\"".into() }
        );
    }

    #[test]
    fn a_drop_retries_with_backoff_and_resumes_the_same_identity() {
        let mut link = joined_site();
        let step = link.on_close(1006, "closed (1006)");
        assert_eq!(
            step.events,
            vec![TransportEvent::Disconnected { reason: "closed (1006)".into() }]
        );
        assert_eq!(step.retry_in_ms, Some(500));
        assert_eq!(link.status(), &LinkStatus::Reconnecting { attempt: 1, retry_in_ms: 500 });

        // The retry fails before it opens: no second Disconnected, a longer wait.
        let step = link.on_close(1006, "closed (1006)");
        assert!(step.events.is_empty());
        assert_eq!(step.retry_in_ms, Some(1_000));
        assert_eq!(link.status(), &LinkStatus::Reconnecting { attempt: 2, retry_in_ms: 1_000 });

        assert_eq!(
            sent(&link.on_open()),
            ClientFrame::Join {
                v: 1,
                room: "K7QX2M".into(),
                role: Role::Site,
                name: "Ana".into(),
                resume: Some("token-1".into()),
            }
        );
        link.on_text(&welcome(peer(2, Role::Site, "Ana"), vec![]));
        assert_eq!(link.status(), &LinkStatus::Connected);
        // A later drop starts the schedule from the beginning again.
        assert_eq!(link.on_close(1006, "x").retry_in_ms, Some(500));
    }

    #[test]
    fn a_first_connection_that_never_opens_is_retried_without_a_disconnect_event() {
        let mut link = Link::new(Hello::Create { name: String::new() });
        let step = link.on_close(1006, "closed (1006)");
        assert!(step.events.is_empty());
        assert_eq!(step.retry_in_ms, Some(500));
        // Still no identity: the retry repeats the original hello.
        assert_eq!(sent(&link.on_open()), ClientFrame::Create { v: 1, name: String::new() });
    }

    #[test]
    fn an_error_before_welcome_fails_for_good_and_reports_the_message() {
        let mut link = Link::new(Hello::Join {
            room: "NOPE".into(),
            role: Role::Site,
            name: String::new(),
            resume: None,
        });
        link.on_open();
        let step = link.on_text(&error(ErrorCode::UnknownRoom, "no room NOPE"));
        assert_eq!(
            step.events,
            vec![TransportEvent::Refused {
                code: ErrorCode::UnknownRoom,
                message: "no room NOPE".into()
            }]
        );
        assert!(step.close);
        assert_eq!(link.status(), &LinkStatus::Failed { reason: "no room NOPE".into() });
        assert_eq!(
            link.on_close(1000, "closed (1000)"),
            Step::default(),
            "a failed link stays down"
        );
    }

    #[test]
    fn rate_limited_before_welcome_is_retried() {
        let mut link = Link::new(Hello::Create { name: String::new() });
        link.on_open();
        let step = link.on_text(&error(ErrorCode::RateLimited, "slow down"));
        assert!(step.close);
        assert_eq!(step.retry_in_ms, Some(500));
        assert_eq!(link.status(), &LinkStatus::Reconnecting { attempt: 1, retry_in_ms: 500 });
    }

    #[test]
    fn an_error_after_welcome_refuses_one_frame_and_keeps_the_link() {
        let mut link = joined_site();
        let step = link.on_text(&error(ErrorCode::RateLimited, "slow down"));
        assert!(!step.close);
        assert_eq!(step.events.len(), 1);
        assert_eq!(link.status(), &LinkStatus::Connected);
    }

    #[test]
    fn presence_tracks_recipients_and_ignores_our_own_id() {
        let mut link = joined_site();
        let bob = peer(3, Role::Site, "Bob");
        let step = link.on_text(&presence(PresenceEvent::Joined, bob.clone()));
        assert_eq!(step.events, vec![TransportEvent::PeerJoined(bob.clone())]);
        assert!(link.prepare_send(To::One(3), "k", b"x").is_ok());

        link.on_text(&presence(PresenceEvent::Left, bob.clone()));
        assert_eq!(
            link.prepare_send(To::One(3), "k", b"x"),
            Err(TransportError::UnknownRecipient(3))
        );
        let step = link.on_text(&presence(PresenceEvent::Rejoined, bob.clone()));
        assert_eq!(step.events, vec![TransportEvent::PeerRejoined(bob)]);

        let step = link.on_text(&presence(PresenceEvent::Left, peer(2, Role::Site, "Ana")));
        assert!(step.events.is_empty(), "news about ourselves is not a peer event");
    }

    #[test]
    fn send_needs_a_welcomed_socket_and_respects_the_frame_limit() {
        let fresh = Link::new(Hello::Create { name: String::new() });
        assert_eq!(fresh.prepare_send(To::All, "k", b""), Err(TransportError::NotConnected));

        let mut link = joined_site();
        let text = link.prepare_send(To::One(1), "demo/ping", &[1, 2, 3]).unwrap();
        assert_eq!(
            serde_json::from_str::<ClientFrame>(&text).unwrap(),
            ClientFrame::Send {
                v: 1,
                to: To::One(1),
                kind: "demo/ping".into(),
                payload: "AQID".into()
            }
        );
        let big = vec![0u8; 400];
        let size = link.prepare_send(To::All, "k", &big).unwrap_err();
        assert!(
            matches!(size, TransportError::Oversized { size, limit: 300 } if size > 400 * 4 / 3)
        );

        link.on_close(1006, "closed");
        assert_eq!(link.prepare_send(To::All, "k", b""), Err(TransportError::NotConnected));
    }

    #[test]
    fn sending_to_ourselves_is_an_echo_not_an_unknown_recipient() {
        let link = joined_site();
        assert!(link.prepare_send(To::One(2), "ping", b"").is_ok());
        assert_eq!(
            link.prepare_send(To::One(9), "ping", b""),
            Err(TransportError::UnknownRecipient(9))
        );
    }

    #[test]
    fn a_superseded_identity_is_not_taken_back() {
        let mut link = joined_site();
        let step =
            link.on_close(CLOSE_SUPERSEDED, "this identity was resumed by another connection");
        assert_eq!(step.retry_in_ms, None);
        assert!(matches!(step.events[..], [TransportEvent::Disconnected { .. }]));
        assert!(
            matches!(link.status(), LinkStatus::Failed { reason } if reason.contains("another tab"))
        );
    }

    #[test]
    fn envelopes_become_messages_and_bad_payloads_are_dropped() {
        let mut link = joined_site();
        let envelope = |payload: &str| {
            serde_json::to_string(&RelayFrame::Envelope(capelab_core::wire::Envelope {
                v: 1,
                room: "K7QX2M".into(),
                from: 1,
                to: To::All,
                kind: "demo/ping".into(),
                payload: payload.into(),
            }))
            .unwrap()
        };
        assert_eq!(
            link.on_text(&envelope("AQID")).events,
            vec![TransportEvent::Message {
                from: 1,
                kind: "demo/ping".into(),
                payload: vec![1, 2, 3]
            }]
        );
        let step = link.on_text(&envelope("not base64!"));
        assert!(step.events.is_empty());
        assert!(step.warning.unwrap().contains("participant 1"));
    }

    #[test]
    fn unreadable_or_other_version_frames_fail_the_link_with_a_reload_hint() {
        let mut link = joined_site();
        let step = link.on_text(r#"{"type":"welcome_v2"}"#);
        assert!(step.close);
        assert!(matches!(step.events[..], [TransportEvent::Disconnected { .. }]));
        assert!(
            matches!(link.status(), LinkStatus::Failed { reason } if reason.contains("Reload"))
        );

        let mut link = joined_site();
        let other = error(ErrorCode::Malformed, "x").replace(r#""v":1"#, r#""v":2"#);
        link.on_text(&other);
        assert!(
            matches!(link.status(), LinkStatus::Failed { reason } if reason.contains("version 2"))
        );
    }

    #[test]
    fn leaving_stops_retries() {
        let mut link = joined_site();
        let step = link.leave();
        assert!(step.close);
        assert!(step.events.is_empty());
        assert_eq!(link.on_close(1000, "closed (1000)"), Step::default());
    }
}
