/*!
The page's own address: the `?room=CODE` invitation, the join link to share, and keeping the
address bar pointing at the current room so a reload lands on the same room's join page.
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

/// Shows `?room=CODE` (or nothing) in the address bar without reloading.
pub fn show_room_in_address_bar(code: Option<&str>) {
    let Some(history) = web_sys::window().and_then(|w| w.history().ok()) else { return };
    let url = match code {
        Some(code) => format!("/?room={}", js_sys::encode_uri_component(code)),
        None => "/".to_owned(),
    };
    // Only fails for cross-origin URLs, which this never builds.
    let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&url));
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
    use super::is_loopback_host;

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
