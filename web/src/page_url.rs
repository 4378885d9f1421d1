/*!
The page's own address: the `?room=CODE` invitation, the join link to share, keeping the
address bar pointing at the current room so a reload lands on the same room's join page, and the
dashboard's `?present` flag (the presenter view), which survives both.
*/

use wasm_bindgen::JsValue;

/// The room named by `?room=CODE` in the page's address, if any.
pub fn invited_room() -> Option<String> {
    let search = web_sys::window()?.location().search().ok()?;
    let params = web_sys::UrlSearchParams::new_with_str(&search).ok()?;
    params.get("room").filter(|code| !code.trim().is_empty())
}

/// The link that opens this app straight on `code`'s join page.
pub fn join_link(code: &str) -> String {
    let origin = web_sys::window().and_then(|w| w.location().origin().ok()).unwrap_or_default();
    format!("{origin}/?room={}", js_sys::encode_uri_component(code))
}

/// Shows `?room=CODE` (or nothing) in the address bar without reloading; a `present` flag there
/// stays.
pub fn show_room_in_address_bar(code: Option<&str>) {
    replace_address(code.map(str::to_owned), presenting());
}

/// Whether the address asks for the dashboard's presenter view (`?present`).
pub fn presenting() -> bool {
    search_params().is_some_and(|p| p.has("present"))
}

/// Adds or removes the `present` flag in the address bar, keeping the room.
pub fn show_presenting(on: bool) {
    let room = search_params().and_then(|p| p.get("room"));
    replace_address(room, on);
}

fn search_params() -> Option<web_sys::UrlSearchParams> {
    let search = web_sys::window()?.location().search().ok()?;
    web_sys::UrlSearchParams::new_with_str(&search).ok()
}

fn replace_address(room: Option<String>, present: bool) {
    let Some(history) = web_sys::window().and_then(|w| w.history().ok()) else { return };
    let url = address(room.as_deref(), present);
    // Only fails for cross-origin URLs, which this never builds.
    let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&url));
}

/// The app's address for a room (if any) and the presenter flag.
fn address(room: Option<&str>, present: bool) -> String {
    let mut query = Vec::new();
    if let Some(code) = room {
        query.push(format!("room={}", encode(code)));
    }
    if present {
        query.push("present".to_owned());
    }
    if query.is_empty() { "/".to_owned() } else { format!("/?{}", query.join("&")) }
}

#[cfg(target_arch = "wasm32")]
fn encode(code: &str) -> String {
    js_sys::encode_uri_component(code).into()
}

/// Room codes are letters and digits; natively (in tests) nothing else needs escaping.
#[cfg(not(target_arch = "wasm32"))]
fn encode(code: &str) -> String {
    code.to_owned()
}

/// Whether the page was opened as `localhost` / `127.x` / `[::1]`: a join link built from such an
/// address works only on this machine.
pub fn page_is_on_loopback() -> bool {
    let host = web_sys::window().and_then(|w| w.location().hostname().ok()).unwrap_or_default();
    is_loopback_host(&host)
}

fn is_loopback_host(host: &str) -> bool {
    host == "localhost" || host.starts_with("127.") || host == "[::1]" || host == "::1"
}

#[cfg(test)]
mod tests {
    use super::{address, is_loopback_host};

    #[test]
    fn the_address_keeps_the_room_and_the_presenter_flag() {
        assert_eq!(address(None, false), "/");
        assert_eq!(address(Some("K7QX2M"), false), "/?room=K7QX2M");
        assert_eq!(address(None, true), "/?present");
        assert_eq!(address(Some("K7QX2M"), true), "/?room=K7QX2M&present");
    }

    #[test]
    fn loopback_hosts_are_recognised() {
        for host in ["localhost", "127.0.0.1", "127.1.2.3", "[::1]"] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in ["192.168.1.20", "capelab.example", "10.0.0.127"] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}
