//! The room's participants with their presence, as a list.

use capelab_core::wire::Role;
use leptos::prelude::*;

use crate::roster::{Member, Roster, display_name};

/// Lists the roster's members (only those with `role`, if given) in join order. Each item has
/// `data-testid={item_testid}`, `data-peer-id`, `data-role` and `data-presence` (`present`/`left`).
#[component]
pub fn PresenceList(
    roster: RwSignal<Roster>,
    #[prop(optional)] role: Option<Role>,
    item_testid: &'static str,
    empty_text: &'static str,
) -> impl IntoView {
    let members = move || {
        roster.with(|r| {
            r.members()
                .iter()
                .filter(|m| role.is_none_or(|role| m.peer.role == role))
                .cloned()
                .collect::<Vec<_>>()
        })
    };
    view! {
        <Show when=move || !members().is_empty() fallback=move || view! { <p class="muted">{empty_text}</p> }>
            <ul class="peer-list">
                <For
                    each=members
                    // Rows re-render when presence or name changes.
                    key=|m: &Member| (m.peer.id, m.presence, m.peer.name.clone())
                    let(member)
                >
                    <PeerRow member item_testid />
                </For>
            </ul>
        </Show>
    }
}

#[component]
fn PeerRow(member: Member, item_testid: &'static str) -> impl IntoView {
    let presence = member.presence.as_str();
    let role = member.peer.role.to_string();
    let role_label = role.clone();
    view! {
        <li
            class=format!("peer peer-{presence}")
            data-testid=item_testid
            data-peer-id=member.peer.id
            data-role=role
            data-presence=presence
        >
            <span class="peer-id">"#" {member.peer.id}</span>
            <span class="peer-name">{display_name(&member.peer)}</span>
            <span class="peer-role">{role_label}</span>
            <span class="pill">{presence}</span>
        </li>
    }
}
