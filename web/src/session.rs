/*!
A room session for the views: the transport's events, drained into signals.

[`RoomState::start`] opens a [`WsTransport`] whose `wake` notifies a [`Trigger`]; one effect tracks
that trigger and drains every waiting event into the signals the views render (connection status,
own identity, roster, relay refusals). The session lives as long as the component that started it:
its owner's cleanup drops the transport, which closes the socket.

On every `Welcome` the seat is saved for this tab and the address bar shows `?room=CODE`, so a
reload walks back into the room as the same participant (`saved_seat.rs`).

A protocol driver attaches here, next to the roster ([`RoomState::attach`]): it sees every event
after the roster has, and sends through [`RoomState::transport`]. The private-mean study's drivers
(`frame/dashboard.rs`, `frame/site.rs`) are the ones the app has.
*/

use std::rc::Rc;

use capelab_core::transport::{Transport, TransportEvent};
use capelab_core::wire::Peer;
use leptos::prelude::*;

use crate::page_url;
use crate::roster::Roster;
use crate::saved_seat::{self, SavedSeat};
use crate::transport::{Hello, LinkStatus, WsTransport, relay_url};

/// Older refusal messages are dropped: the user needs the recent ones, not a log.
const MAX_REFUSALS_SHOWN: usize = 5;

/// Everything a room view renders, as signals. `Copy`: pass it to any component.
#[derive(Clone, Copy)]
pub struct RoomState {
    pub status: RwSignal<LinkStatus>,
    /// The room code, once the relay welcomed us.
    pub room: RwSignal<Option<String>>,
    /// Our own identity in the room, once welcomed.
    pub me: RwSignal<Option<Peer>>,
    pub roster: RwSignal<Roster>,
    /// Messages of frames the relay refused, newest last, for the user to read.
    pub refusals: RwSignal<Vec<String>>,
    /// What other participants told the whole room about themselves (a tab that hit an internal
    /// error, [`crate::crash`]), newest last.
    pub notices: RwSignal<Vec<String>>,
    transport: StoredValue<Option<WsTransport>, LocalStorage>,
    hook: StoredValue<Option<EventHook>, LocalStorage>,
}

/// A protocol driver's view of the room: every transport event, after the roster has seen it.
/// Called outside any reactive tracking.
pub type EventHook = Rc<dyn Fn(&TransportEvent)>;

impl RoomState {
    /// Connects to the page's relay and enters a room as `hello` says. Call it inside a component:
    /// the session ends when that component is unmounted.
    pub fn start(hello: Hello) -> Self {
        let status = RwSignal::new(LinkStatus::Connecting);
        let state = RoomState {
            status,
            room: RwSignal::new(None),
            me: RwSignal::new(None),
            roster: RwSignal::new(Roster::default()),
            refusals: RwSignal::new(Vec::new()),
            notices: RwSignal::new(Vec::new()),
            transport: StoredValue::new_local(None),
            hook: StoredValue::new_local(None),
        };
        let Some(url) = relay_url() else {
            status.set(LinkStatus::Failed {
                reason: "This page has no location to connect to.".into(),
            });
            return state;
        };
        let wake = Trigger::new();
        let transport = WsTransport::connect(url, hello, move || wake.notify());
        crate::crash::watch(transport.downgrade());
        state.transport.set_value(Some(transport));
        Effect::new(move || {
            wake.track();
            state.pump();
        });
        state
    }

    /// Hands every later transport event to `hook` (one driver per room view; a second call
    /// replaces the first).
    pub fn attach(&self, hook: impl Fn(&TransportEvent) + 'static) {
        self.hook.set_value(Some(Rc::new(hook)));
    }

    /// The room's transport, for a driver to send through (`None` if the page has no relay to
    /// connect to).
    pub fn transport(&self) -> Option<WsTransport> {
        self.transport.with_value(|t| t.clone())
    }

    /// Leaves the room for good (closes the socket; no reconnect).
    pub fn leave(&self) {
        self.transport.with_value(|t| {
            if let Some(t) = t {
                t.leave();
            }
        });
        self.pump();
    }

    /// Moves every waiting transport event into the signals.
    fn pump(&self) {
        let Some(mut transport) = self.transport.with_value(|t| t.clone()) else { return };
        let hook = self.hook.with_value(|h| h.clone());
        while let Some(event) = transport.poll_event() {
            self.roster.update(|r| r.apply(&event));
            if let Some(hook) = &hook {
                untrack(|| hook(&event));
            }
            match event {
                TransportEvent::Connected { room, you, .. } => {
                    if let Some(identity) = transport.identity() {
                        saved_seat::save(&SavedSeat {
                            room: identity.room,
                            role: identity.you.role,
                            name: identity.you.name,
                            resume: identity.resume,
                        });
                    }
                    page_url::show_room_in_address_bar(Some(&room));
                    self.room.set(Some(room));
                    self.me.set(Some(you));
                }
                // A refusal before `Welcome` ends the link; its reason is the status, shown once.
                TransportEvent::Refused { .. } if transport.status() != LinkStatus::Connected => {}
                TransportEvent::Refused { message, .. } => {
                    self.refusals.update(|r| {
                        r.push(message);
                        let excess = r.len().saturating_sub(MAX_REFUSALS_SHOWN);
                        r.drain(..excess);
                    });
                }
                TransportEvent::Message { from, kind, payload }
                    if kind == crate::crash::NOTICE_KIND =>
                {
                    let who = self.roster.with_untracked(|r| {
                        r.members()
                            .iter()
                            .find(|m| m.peer.id == from)
                            .map(|m| crate::roster::display_name(&m.peer))
                    });
                    let who = who.unwrap_or_else(|| format!("Participant {from}"));
                    self.notices.update(|n| {
                        n.push(crate::crash::notice_sentence(&who, &payload));
                        let excess = n.len().saturating_sub(MAX_REFUSALS_SHOWN);
                        n.drain(..excess);
                    });
                }
                // Protocol traffic is the attached driver's (see the module docs).
                TransportEvent::Message { .. }
                | TransportEvent::PeerJoined(_)
                | TransportEvent::PeerRejoined(_)
                | TransportEvent::PeerLeft(_)
                | TransportEvent::Disconnected { .. } => {}
            }
        }
        let status = transport.status();
        if self.status.get_untracked() != status {
            self.status.set(status);
        }
    }
}
