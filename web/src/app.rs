//! The app: which screen this tab shows, and the moves between screens.

use capelab_core::wire::Role;
use leptos::prelude::*;

use crate::routes::dashboard::Dashboard;
use crate::routes::landing::Landing;
use crate::routes::site::Site;
use crate::transport::Hello;
use crate::{page_url, room_code, saved_seat};

/// What this tab is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Screen {
    /// Choosing: create a room, or join one (`invited_room` comes from a `?room=CODE` link).
    Landing { invited_room: Option<String> },
    /// In a room, entered as `Hello` says: the dashboard if it creates the room or joins as one,
    /// a site otherwise.
    Room(Hello),
}

#[component]
pub fn App() -> impl IntoView {
    let screen = RwSignal::new(first_screen());
    let go = Callback::new(move |next: Screen| {
        let room_in_url = match &next {
            Screen::Landing { invited_room } => invited_room.clone(),
            Screen::Room(Hello::Join { room, .. }) => Some(room.clone()),
            // The code is not known before the relay's welcome; the session shows it then.
            Screen::Room(Hello::Create { .. }) => None,
        };
        page_url::show_room_in_address_bar(room_in_url.as_deref());
        screen.set(next);
    });
    let leave = Callback::new(move |()| {
        saved_seat::clear();
        go.run(Screen::Landing { invited_room: None });
    });
    move || match screen.get() {
        Screen::Landing { invited_room } => view! { <Landing invited_room go /> }.into_any(),
        Screen::Room(hello) => match hello {
            Hello::Create { .. } | Hello::Join { role: Role::Dashboard, .. } => {
                view! { <Dashboard hello leave /> }.into_any()
            }
            Hello::Join { ref room, role: Role::Site, .. } => {
                let room = room.clone();
                view! { <Site room hello leave /> }.into_any()
            }
        },
    }
}

/// A reloaded tab goes back to the seat it held in the room named in its address; any other tab
/// starts on the landing page (with the join form if the address names a room).
fn first_screen() -> Screen {
    let invited_room = page_url::invited_room();
    let invited_code = invited_room.as_deref().and_then(|code| room_code::normalize(code).ok());
    match saved_seat::load() {
        Some(seat) if invited_code.as_deref() == Some(seat.room.as_str()) => {
            Screen::Room(seat.into_hello())
        }
        _ => Screen::Landing { invited_room },
    }
}
