//! The registry driven directly: no sockets, a plain `Duration` for time.

use capelab_wire::ErrorCode;

use super::*;

const GRACE: Duration = Duration::from_secs(120);
const T0: Duration = Duration::ZERO;

struct Tab {
    conn: Conn,
    seat: Option<Seat>,
}

impl Tab {
    fn new(id: ConnId) -> Self {
        Tab { conn: Conn { id, outbox: Outbox::new(1 << 20) }, seat: None }
    }

    fn frames(&self) -> Vec<RelayFrame> {
        std::iter::from_fn(|| self.conn.outbox.pop())
            .map(|text| serde_json::from_str(text.as_str()).unwrap())
            .collect()
    }

    /// The raw texts queued for this tab.
    fn drain(&self) -> Vec<String> {
        std::iter::from_fn(|| self.conn.outbox.pop()).map(|text| text.to_string()).collect()
    }

    fn welcome(&self) -> (Peer, String, Vec<Peer>) {
        match self.frames().as_slice() {
            [RelayFrame::Welcome { you, resume, peers, .. }] => {
                (you.clone(), resume.clone(), peers.clone())
            }
            other => panic!("expected one Welcome, got {other:?}"),
        }
    }

    fn seat(&self) -> &Seat {
        self.seat.as_ref().expect("seated")
    }
}

fn registry(max_participants: usize) -> Registry {
    let limits = RelayLimits { max_participants, ..RelayLimits::default() };
    Registry::new(limits, GRACE, Log::new(true))
}

fn join<'a>(room: &'a str, name: &'a str, resume: Option<&'a str>) -> JoinRequest<'a> {
    JoinRequest { room, role: Role::Site, name, resume }
}

fn presence(event: PresenceEvent, id: ParticipantId, role: Role, name: &str) -> RelayFrame {
    RelayFrame::Presence { v: 1, event, peer: Peer { id, role, name: name.into() } }
}

/// A dashboard in a new room plus `sites` joined sites, all inboxes drained.
fn room_with(registry: &mut Registry, first_conn: ConnId, sites: usize) -> Vec<Tab> {
    let mut dash = Tab::new(first_conn);
    dash.seat = Some(registry.create(&dash.conn, "Teacher", Duration::ZERO));
    let code = dash.seat().room.to_string();
    let mut tabs = vec![dash];
    for i in 0..sites {
        let mut tab = Tab::new(first_conn + 1 + i as ConnId);
        let name = format!("site{i}");
        tab.seat =
            Some(registry.join(&tab.conn, join(&code, &name, None), Duration::ZERO).unwrap());
        tabs.push(tab);
    }
    tabs.iter().for_each(|t| drop(t.frames()));
    tabs
}

#[test]
fn create_then_join_assigns_ids_and_announces() {
    let mut registry = registry(64);
    let mut dash = Tab::new(1);
    dash.seat = Some(registry.create(&dash.conn, "  Teacher ", Duration::ZERO));
    let (you, token, peers) = dash.welcome();
    assert_eq!(you, Peer { id: 1, role: Role::Dashboard, name: "Teacher".into() });
    assert!(peers.is_empty());
    assert_eq!(token.len(), 32);

    let code = dash.seat().room.as_str().to_ascii_lowercase();
    let site = Tab::new(2);
    let seat = registry.join(&site.conn, join(&code, "", None), Duration::ZERO).unwrap();
    assert_eq!(seat, Seat { room: dash.seat().room.clone(), id: 2 });
    let (you, other_token, peers) = site.welcome();
    assert_eq!(you, Peer { id: 2, role: Role::Site, name: "site 2".into() });
    assert_ne!(other_token, token);
    assert_eq!(peers, vec![Peer { id: 1, role: Role::Dashboard, name: "Teacher".into() }]);
    assert_eq!(dash.frames(), vec![presence(PresenceEvent::Joined, 2, Role::Site, "site 2")]);
    assert!(site.frames().is_empty(), "no presence about oneself");
}

#[test]
fn routing_to_all_skips_the_sender_and_to_one_reaches_only_it() {
    let mut registry = registry(64);
    let tabs = room_with(&mut registry, 1, 2);
    let text: Utf8Bytes = "broadcast".into();
    registry.route(&tabs[1].conn, tabs[1].seat(), To::All, text, T0).unwrap();
    let got: Vec<Vec<String>> = tabs.iter().map(Tab::drain).collect();
    assert_eq!(got, [vec!["broadcast".to_owned()], vec![], vec!["broadcast".to_owned()]]);

    registry.route(&tabs[0].conn, tabs[0].seat(), To::One(3), "direct".into(), T0).unwrap();
    assert_eq!(tabs[2].conn.outbox.pop().as_deref(), Some("direct"));
    assert_eq!(tabs[0].conn.outbox.pop(), None);
    assert_eq!(tabs[1].conn.outbox.pop(), None);

    // Naming oneself is an echo.
    registry.route(&tabs[1].conn, tabs[1].seat(), To::One(2), "echo".into(), T0).unwrap();
    assert_eq!(tabs[1].conn.outbox.pop().as_deref(), Some("echo"));
}

#[test]
fn rooms_are_isolated() {
    let mut registry = registry(64);
    let a = room_with(&mut registry, 1, 1);
    let b = room_with(&mut registry, 100, 1);
    assert_ne!(a[0].seat().room, b[0].seat().room);
    registry.route(&b[1].conn, b[1].seat(), To::All, "b-traffic".into(), T0).unwrap();
    registry.route(&b[1].conn, b[1].seat(), To::One(1), "b-direct".into(), T0).unwrap();
    registry.disconnect(b[1].conn.id, b[1].seat(), Duration::ZERO);
    assert!(a.iter().all(|t| t.drain().is_empty()));
    let seen_by_b = b[0].drain();
    assert_eq!(seen_by_b[..2], ["b-traffic", "b-direct"]);
    assert_eq!(seen_by_b.len(), 3, "and the Left presence");
}

#[test]
fn unknown_and_away_recipients_are_refused() {
    let mut registry = registry(64);
    let tabs = room_with(&mut registry, 1, 1);
    let err = registry.route(&tabs[0].conn, tabs[0].seat(), To::One(9), "x".into(), T0);
    assert_eq!(err.unwrap_err().code(), ErrorCode::UnknownRecipient);
    registry.disconnect(tabs[1].conn.id, tabs[1].seat(), Duration::ZERO);
    let err = registry.route(&tabs[0].conn, tabs[0].seat(), To::One(2), "x".into(), T0);
    assert!(matches!(err, Err(Refusal::RecipientAway { id: 2, .. })), "{err:?}");
}

#[test]
fn unknown_rooms_and_full_rooms_are_refused() {
    let mut registry = registry(2);
    let tabs = room_with(&mut registry, 1, 1);
    let code = tabs[0].seat().room.to_string();
    let late = Tab::new(9);
    let full = registry.join(&late.conn, join(&code, "late", None), Duration::ZERO);
    assert_eq!(full, Err(Refusal::RoomFull { room: code.clone(), max: 2 }));
    let typo = registry.join(&late.conn, join("ZZZZZZZZZ", "x", None), Duration::ZERO);
    assert_eq!(typo, Err(Refusal::UnknownRoom { room: "ZZZZZZZZZ".into() }));
    assert!(late.frames().is_empty());
    assert!(tabs.iter().all(|t| t.frames().is_empty()), "a refused join is not announced");
}

#[test]
fn a_dropped_participant_resumes_with_its_id_within_the_grace_period() {
    let mut registry = registry(2);
    let tabs = room_with(&mut registry, 1, 0);
    let code = tabs[0].seat().room.to_string();
    let site = Tab::new(2);
    registry.join(&site.conn, join(&code, "Ana", None), Duration::ZERO).unwrap();
    let (_, token, _) = site.welcome();
    drop(tabs[0].frames());

    let t = Duration::from_secs(10);
    registry.disconnect(site.conn.id, &Seat { room: tabs[0].seat().room.clone(), id: 2 }, t);
    assert_eq!(tabs[0].frames(), vec![presence(PresenceEvent::Left, 2, Role::Site, "Ana")]);

    // The away participant still holds its seat: the room (max 2) is full.
    let other = Tab::new(3);
    let full = registry.join(&other.conn, join(&code, "Bo", None), t);
    assert!(matches!(full, Err(Refusal::RoomFull { .. })));

    let back = Tab::new(4);
    let later = t + GRACE - Duration::from_millis(1);
    let seat = registry.join(&back.conn, join(&code, "ignored", Some(&token)), later).unwrap();
    assert_eq!(seat.id, 2);
    let (you, same_token, peers) = back.welcome();
    assert_eq!(you, Peer { id: 2, role: Role::Site, name: "Ana".into() });
    assert_eq!(same_token, token);
    assert_eq!(peers.len(), 1);
    assert_eq!(tabs[0].frames(), vec![presence(PresenceEvent::Rejoined, 2, Role::Site, "Ana")]);

    // The old connection's late disconnect does not unseat the new one.
    registry.disconnect(site.conn.id, &seat, later);
    assert!(tabs[0].frames().is_empty());
}

#[test]
fn after_the_grace_period_a_token_is_a_new_join_and_empty_rooms_close() {
    let mut registry = registry(64);
    let tabs = room_with(&mut registry, 1, 1);
    let code = tabs[0].seat().room.clone();
    let token = {
        let fresh = Tab::new(50);
        registry.join(&fresh.conn, join(code.as_str(), "C", None), Duration::ZERO).unwrap();
        fresh.welcome().1
    };
    // Everyone drops.
    registry.disconnect(1, tabs[0].seat(), Duration::ZERO);
    registry.disconnect(2, tabs[1].seat(), Duration::ZERO);
    registry.disconnect(50, &Seat { room: code.clone(), id: 3 }, Duration::ZERO);
    assert!(registry.has_room(&code), "resumable identities keep the room");

    // Within the grace period a stale token from elsewhere is just a new join…
    let stranger = Tab::new(60);
    let seat = registry
        .join(&stranger.conn, join(code.as_str(), "D", Some("00ff")), Duration::from_secs(1))
        .unwrap();
    assert_eq!(seat.id, 4);
    registry.disconnect(60, &seat, Duration::from_secs(1));

    // …and once it is over, the room is gone.
    registry.expire(Duration::from_secs(1) + GRACE);
    assert!(!registry.has_room(&code));
    assert_eq!(registry.room_count(), 0);
    let late = Tab::new(70);
    let gone = registry.join(&late.conn, join(code.as_str(), "C", Some(&token)), GRACE * 2);
    assert!(matches!(gone, Err(Refusal::UnknownRoom { .. })));
}

#[test]
fn ids_are_never_reused() {
    let mut registry = registry(64);
    let tabs = room_with(&mut registry, 1, 2);
    let code = tabs[0].seat().room.clone();
    registry.disconnect(3, tabs[2].seat(), Duration::ZERO);
    registry.expire(GRACE);
    let next = Tab::new(9);
    let seat = registry.join(&next.conn, join(code.as_str(), "n", None), GRACE).unwrap();
    assert_eq!(seat.id, 4);
}

#[test]
fn resuming_a_connected_identity_takes_it_over() {
    let mut registry = registry(64);
    let dash = Tab::new(1);
    let dash_seat = registry.create(&dash.conn, "T", Duration::ZERO);
    let old = Tab::new(2);
    let code = dash_seat.room.to_string();
    let seat = registry.join(&old.conn, join(&code, "Ana", None), Duration::ZERO).unwrap();
    let (_, token, _) = old.welcome();
    drop(dash.frames());

    let new = Tab::new(3);
    let again = registry.join(&new.conn, join(&code, "Ana", Some(&token)), Duration::ZERO);
    assert_eq!(again.as_ref(), Ok(&seat));
    assert_eq!(old.conn.outbox.close_reason(), Some(CloseReason::superseded()));
    assert_eq!(
        dash.frames(),
        vec![
            presence(PresenceEvent::Left, 2, Role::Site, "Ana"),
            presence(PresenceEvent::Rejoined, 2, Role::Site, "Ana"),
        ]
    );
    // The old connection can no longer speak for the identity; the new one can.
    let stale = registry.route(&old.conn, &seat, To::All, "x".into(), T0);
    assert_eq!(stale, Err(Refusal::Superseded));
    registry.route(&new.conn, &seat, To::One(1), "y".into(), T0).unwrap();
    assert_eq!(dash.conn.outbox.pop().as_deref(), Some("y"));
}

#[test]
fn a_slow_receiver_is_closed_without_disturbing_the_sender() {
    let mut registry = registry(64);
    let tabs = room_with(&mut registry, 1, 0);
    let code = tabs[0].seat().room.to_string();
    let slow = Conn { id: 9, outbox: Outbox::new(1000) };
    let seat = registry.join(&slow, join(&code, "slow", None), Duration::ZERO).unwrap();
    let chunk: Utf8Bytes = "z".repeat(300).into();
    for _ in 0..10 {
        registry.route(&tabs[0].conn, tabs[0].seat(), To::One(seat.id), chunk.clone(), T0).unwrap();
    }
    let reason = slow.outbox.close_reason().expect("the slow connection is being closed");
    assert_eq!(reason.code, crate::outbox::close_code::POLICY);
    assert!(tabs[0].conn.outbox.close_reason().is_none());
}

#[test]
fn a_second_dashboard_is_refused_but_the_first_resumes_its_seat() {
    let mut registry = registry(64);
    let tabs = room_with(&mut registry, 1, 1);
    let code = tabs[0].seat().room.to_string();
    let intruder = Tab::new(9);
    let request = JoinRequest { room: &code, role: Role::Dashboard, name: "Eve", resume: None };
    let refused = registry.join(&intruder.conn, request, Duration::ZERO);
    assert_eq!(refused, Err(Refusal::DashboardTaken { room: code.clone() }));
    assert_eq!(refused.unwrap_err().code(), ErrorCode::NotAllowed);
    assert!(tabs[1].frames().is_empty(), "nobody heard of the refused dashboard");

    // The creator's own tab, reloaded, presents its token and gets seat 1 back.
    let token = {
        let fresh = Tab::new(20);
        let dash = registry.create(&fresh.conn, "T2", Duration::ZERO);
        let (_, token, _) = fresh.welcome();
        registry.disconnect(20, &dash, Duration::ZERO);
        (dash, token)
    };
    let (seat, token) = token;
    let reloaded = Tab::new(21);
    let request = JoinRequest {
        room: seat.room.as_str(),
        role: Role::Dashboard,
        name: "T2",
        resume: Some(&token),
    };
    assert_eq!(registry.join(&reloaded.conn, request, Duration::from_secs(1)), Ok(seat));
}

#[test]
fn thousands_of_lingering_rooms_cost_routing_and_joining_nothing() {
    let mut registry = registry(1_000);
    for n in 0..5_000 {
        let tab = Tab::new(1_000 + n);
        let seat = registry.create(&tab.conn, "idle", Duration::ZERO);
        registry.disconnect(tab.conn.id, &seat, Duration::ZERO);
    }
    assert_eq!(registry.room_count(), 5_000);
    let busy = room_with(&mut registry, 1, 2);
    let code = busy[0].seat().room.to_string();
    for step in 1..=200u64 {
        let now = Duration::from_millis(step * 100);
        let tab = Tab::new(100_000 + step);
        let seat = registry.join(&tab.conn, join(&code, "n", None), now).unwrap();
        registry.route(&busy[1].conn, busy[1].seat(), To::All, "x".into(), T0).unwrap();
        registry.disconnect(tab.conn.id, &seat, now);
        registry.expire(now);
    }
    // 20 s in, nothing is due: expiry looked at no identity at all.
    assert_eq!(registry.expiry_work(), 0);
    assert_eq!(registry.room_count(), 5_001);
    // Once the grace period is over it looks at exactly the identities that expire.
    registry.expire(GRACE);
    assert_eq!(registry.expiry_work(), 5_000);
    assert_eq!(registry.room_count(), 1);
}
