/*!
Which address a request comes from, behind a reverse proxy too.

A relay behind nginx or Caddy sees every connection come from the proxy. Proxies named with
`--trusted-proxy` say who their client is in `X-Forwarded-For`; each proxy appends the address it
received the connection from, so the last entry is the one a trusted proxy wrote and the only
one a client cannot forge (earlier entries are whatever the client sent). From anyone else the
header is ignored.

That address is what the websocket's per-address limits count: its fair share
([`crate::fair_share`]) and wrong room codes ([`crate::guesses`]).
*/

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderMap;

/// The client's address: the last `X-Forwarded-For` entry when `peer` is a trusted proxy and
/// the entry is an address, otherwise `peer`.
pub fn client_address(peer: IpAddr, headers: &HeaderMap, trusted_proxies: &[IpAddr]) -> IpAddr {
    if !trusted_proxies.contains(&canonical(peer)) {
        return peer;
    }
    let last = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .next_back();
    last.and_then(parse_entry).unwrap_or(peer)
}

/// `peer` as a trusted proxy is written: an IPv4 peer on an IPv6 socket as IPv4.
pub fn canonical(peer: IpAddr) -> IpAddr {
    match peer {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(peer, IpAddr::V4),
        v4 => v4,
    }
}

/// An address as proxies write it: `192.0.2.1`, `2001:db8::1`, `[2001:db8::1]:443`,
/// `192.0.2.1:5000`.
fn parse_entry(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim();
    entry.parse::<IpAddr>().ok().or_else(|| entry.parse::<SocketAddr>().ok().map(|s| s.ip()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with(values: &[&'static str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append("x-forwarded-for", HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn only_a_trusted_proxy_is_believed_and_only_its_own_entry() {
        let proxy: IpAddr = [127, 0, 0, 1].into();
        let trusted = [proxy];
        let client: IpAddr = [203, 0, 113, 9].into();
        // The client forged the first entry; the proxy appended the real one.
        let headers = with(&["10.0.0.1, 203.0.113.9"]);
        assert_eq!(client_address(proxy, &headers, &trusted), client);
        assert_eq!(client_address(proxy, &with(&["10.0.0.1", "203.0.113.9"]), &trusted), client);
        // Not a trusted proxy: the header is anyone's to write.
        let stranger: IpAddr = [198, 51, 100, 4].into();
        assert_eq!(client_address(stranger, &headers, &trusted), stranger);
        assert_eq!(client_address(stranger, &headers, &[]), stranger);
        // A trusted proxy that says nothing usable: its own address counts.
        assert_eq!(client_address(proxy, &HeaderMap::new(), &trusted), proxy);
        assert_eq!(client_address(proxy, &with(&["unknown"]), &trusted), proxy);
    }

    #[test]
    fn entries_parse_as_proxies_write_them() {
        assert_eq!(parse_entry(" 192.0.2.1 "), Some([192, 0, 2, 1].into()));
        assert_eq!(parse_entry("192.0.2.1:5000"), Some([192, 0, 2, 1].into()));
        assert_eq!(parse_entry("[2001:db8::1]:443"), Some("2001:db8::1".parse().unwrap()));
        assert_eq!(parse_entry("2001:db8::1"), Some("2001:db8::1".parse().unwrap()));
        assert_eq!(parse_entry("_hidden"), None);
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        assert_eq!(canonical(mapped), IpAddr::from([127, 0, 0, 1]));
    }
}
