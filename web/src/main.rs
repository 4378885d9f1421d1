/*!
capelab's browser app: each tab is a *site* or the *dashboard* (the aggregator) of a room.

Map: `app.rs` picks the screen; `routes/` holds the screens (landing, dashboard, site);
`components/` small views; `session.rs` turns transport events into signals; `transport.rs` is the
only file that touches the relay's websocket; `saved_seat.rs` and `page_url.rs` keep a tab's seat
across reloads; `roster.rs`, `room_code.rs` and `transport/link.rs` are pure logic, tested natively.
Components render signals and never run protocol steps: protocols live in `capelab_core`.
*/

mod app;
mod components;
mod page_url;
mod room_code;
mod roster;
mod routes;
mod saved_seat;
mod session;
mod transport;

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
}
