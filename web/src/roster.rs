/*!
Who else is in the room, as this participant has seen it: every peer ever met, with its presence.

The relay announces arrivals and departures ([`TransportEvent`]); the roster remembers peers that
left, so a dashboard can show "Site 3 — left" instead of silently shrinking its list. Pure logic,
tested natively; the views render it.
*/

use capelab_core::transport::TransportEvent;
use capelab_core::wire::{Peer, Role};

/// A peer's presence as the relay last reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Presence {
    /// Connected to the relay now.
    Present,
    /// Its connection is gone. If it comes back with its resume token it keeps its id and turns
    /// present again.
    Left,
}

impl Presence {
    /// The stable token used in `data-presence` attributes and CSS classes.
    pub fn as_str(self) -> &'static str {
        match self {
            Presence::Present => "present",
            Presence::Left => "left",
        }
    }
}

/// One peer of the room.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub peer: Peer,
    pub presence: Presence,
}

/// Every other participant this one has seen in the room, ordered by id (= join order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Roster {
    members: Vec<Member>,
}

impl Roster {
    /// Updates the roster from one transport event; events that are not about presence are ignored.
    pub fn apply(&mut self, event: &TransportEvent) {
        match event {
            TransportEvent::Connected { you, peers, .. } => {
                // After a reconnect, whoever is not in the fresh list left while we were away.
                for member in &mut self.members {
                    if !peers.iter().any(|p| p.id == member.peer.id) {
                        member.presence = Presence::Left;
                    }
                }
                for peer in peers.iter().filter(|p| p.id != you.id) {
                    self.upsert(peer, Presence::Present);
                }
            }
            TransportEvent::PeerJoined(peer) | TransportEvent::PeerRejoined(peer) => {
                self.upsert(peer, Presence::Present)
            }
            TransportEvent::PeerLeft(peer) => self.upsert(peer, Presence::Left),
            TransportEvent::Message { .. }
            | TransportEvent::Disconnected { .. }
            | TransportEvent::Refused { .. } => {}
        }
    }

    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The members with role `role`, in id order.
    pub fn with_role(&self, role: Role) -> impl Iterator<Item = &Member> {
        self.members.iter().filter(move |m| m.peer.role == role)
    }

    /// How many members with role `role` are present.
    pub fn present_count(&self, role: Role) -> usize {
        self.with_role(role).filter(|m| m.presence == Presence::Present).count()
    }

    fn upsert(&mut self, peer: &Peer, presence: Presence) {
        match self.members.binary_search_by_key(&peer.id, |m| m.peer.id) {
            Ok(i) => {
                self.members[i].peer = peer.clone();
                self.members[i].presence = presence;
            }
            Err(i) => self.members.insert(i, Member { peer: peer.clone(), presence }),
        }
    }
}

/// The name to show for `peer`: its chosen name, or "Site 3" / "Dashboard" when it chose none.
pub fn display_name(peer: &Peer) -> String {
    let name = peer.name.trim();
    match (name.is_empty(), peer.role) {
        (false, _) => name.to_owned(),
        (true, Role::Site) => format!("Site {}", peer.id),
        (true, Role::Dashboard) => "Dashboard".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capelab_core::wire::ParticipantId;

    fn site(id: ParticipantId, name: &str) -> Peer {
        Peer { id, role: Role::Site, name: name.into() }
    }

    fn connected(you: Peer, peers: Vec<Peer>) -> TransportEvent {
        TransportEvent::Connected { room: "R".into(), you, peers }
    }

    fn presences(roster: &Roster) -> Vec<(ParticipantId, Presence)> {
        roster.members().iter().map(|m| (m.peer.id, m.presence)).collect()
    }

    #[test]
    fn joins_and_leaves_keep_id_order_and_remember_who_left() {
        let dash = Peer { id: 1, role: Role::Dashboard, name: "Teacher".into() };
        let mut roster = Roster::default();
        roster.apply(&connected(dash.clone(), vec![]));
        roster.apply(&TransportEvent::PeerJoined(site(3, "C")));
        roster.apply(&TransportEvent::PeerJoined(site(2, "B")));
        roster.apply(&TransportEvent::PeerJoined(site(4, "D")));
        roster.apply(&TransportEvent::PeerLeft(site(3, "C")));
        assert_eq!(
            presences(&roster),
            [(2, Presence::Present), (3, Presence::Left), (4, Presence::Present)]
        );
        assert_eq!(roster.present_count(Role::Site), 2);
        assert_eq!(roster.with_role(Role::Site).count(), 3);

        roster.apply(&TransportEvent::PeerRejoined(site(3, "C")));
        assert_eq!(presences(&roster)[1], (3, Presence::Present));
        assert_eq!(roster.present_count(Role::Site), 3);
    }

    #[test]
    fn a_fresh_welcome_marks_peers_that_vanished_meanwhile_as_left() {
        let me = site(2, "B");
        let dash = Peer { id: 1, role: Role::Dashboard, name: String::new() };
        let mut roster = Roster::default();
        roster.apply(&connected(me.clone(), vec![dash.clone(), site(3, "C")]));
        roster.apply(&TransportEvent::Disconnected { reason: "gone".into() });
        // Back again: site 3 went away while we were disconnected, site 4 arrived.
        roster.apply(&connected(me.clone(), vec![dash, site(4, "D"), me]));
        assert_eq!(
            presences(&roster),
            [(1, Presence::Present), (3, Presence::Left), (4, Presence::Present)]
        );
    }

    #[test]
    fn other_events_change_nothing() {
        let mut roster = Roster::default();
        roster.apply(&TransportEvent::PeerJoined(site(2, "B")));
        let before = roster.clone();
        roster.apply(&TransportEvent::Message { from: 2, kind: "k".into(), payload: vec![] });
        roster.apply(&TransportEvent::Refused {
            code: capelab_core::wire::ErrorCode::RateLimited,
            message: "slow".into(),
        });
        assert_eq!(roster, before);
    }

    #[test]
    fn blank_names_fall_back_to_the_role_and_id() {
        assert_eq!(display_name(&site(3, "  ")), "Site 3");
        assert_eq!(display_name(&site(3, " Ana ")), "Ana");
        assert_eq!(
            display_name(&Peer { id: 1, role: Role::Dashboard, name: String::new() }),
            "Dashboard"
        );
    }
}
