/*!
capelab's browser app: each tab is a *site* or the *dashboard* (the aggregator) of a room.

Map: `app.rs` picks the screen; `routes/` holds the screens (landing, dashboard, site);
`components/` small views (`components/charts/` the SVG charts); `session.rs` turns transport
events into signals; `transport.rs` is the only file that touches the relay's websocket; `frame/`
is the shared study frame (the dashboard's and a site's drivers, the only place protocol roles run;
forms, the picker, the ledger panels); `studies/` holds one folder per study (its form, run, view
model, panels, worker role and presenter centrepiece; `studies/registry.rs` lists them);
`worker/` the Web Worker plumbing; `crash.rs` the panic hook; `ledger_report.rs` is the sites'
budget message, `ledger_store.rs` keeps ledgers in `localStorage`, `local_data.rs` reads and
generates a site's values, `download.rs` moves files in and out; `saved_seat.rs` and `page_url.rs`
keep a tab's seat across reloads, and `dashboard_archive.rs` the dashboard's studies; `roster.rs`,
`room_code.rs` and `transport/link.rs` are pure logic, tested natively.
Components render signals and never run protocol steps: protocols live in `capelab_core`.
*/

mod app;
mod components;
mod crash;
mod dashboard_archive;
mod download;
mod fetch;
mod frame;
mod ledger_report;
mod ledger_store;
mod local_data;
mod numbers;
mod page_url;
mod room_code;
mod roster;
mod routes;
mod saved_seat;
mod session;
mod studies;
mod transport;
mod worker;

fn main() {
    // The same module runs in a site's Web Worker (worker/), where there is no page to mount.
    if web_sys::window().is_none() {
        return;
    }
    crash::install();
    leptos::mount::mount_to_body(app::App);
}
