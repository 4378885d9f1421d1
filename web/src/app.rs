//! The app: which screen this tab shows, and the moves between screens.

use leptos::prelude::*;

use crate::page_url;
use crate::routes::dashboard::Dashboard;
use crate::routes::landing::Landing;
use crate::routes::site::Site;

/// What this tab is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Screen {
    /// Choosing: create a room, or join one (`invited_room` comes from a `?room=CODE` link).
    Landing { invited_room: Option<String> },
    /// The dashboard of a room this tab creates.
    Dashboard { name: String },
    /// A site in room `room`.
    Site { room: String, name: String },
}

#[component]
pub fn App() -> impl IntoView {
    let screen = RwSignal::new(Screen::Landing { invited_room: page_url::invited_room() });
    let go = Callback::new(move |next: Screen| {
        let room_in_url = match &next {
            Screen::Site { room, .. } => Some(room.as_str()),
            Screen::Landing { invited_room } => invited_room.as_deref(),
            Screen::Dashboard { .. } => None,
        };
        page_url::show_room_in_address_bar(room_in_url);
        screen.set(next);
    });
    let leave = Callback::new(move |()| go.run(Screen::Landing { invited_room: None }));
    move || match screen.get() {
        Screen::Landing { invited_room } => view! { <Landing invited_room go /> }.into_any(),
        Screen::Dashboard { name } => view! { <Dashboard name leave /> }.into_any(),
        Screen::Site { room, name } => view! { <Site room name leave /> }.into_any(),
    }
}
