/*!
Finding the address other machines on the classroom network can reach this relay at.

Connecting a UDP socket sends nothing; it only makes the OS choose the outgoing interface for that
destination, whose address `local_addr` then reports. The destination is in TEST-NET-1
(192.0.2.0/24, RFC 5737), which is never routed, so no traffic and no lookups happen.
*/

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};

/// The primary interface's address, if the machine has a non-loopback route.
pub fn lan_address() -> Option<IpAddr> {
    let socket = UdpSocket::bind(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))).ok()?;
    socket.connect(SocketAddr::from((Ipv4Addr::new(192, 0, 2, 1), 9))).ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_unspecified() && !ip.is_loopback()).then_some(ip)
}

/// What to tell a teacher when [`lan_address`] finds nothing.
pub const HOW_TO_FIND_IT: &str = "could not work out this machine's LAN address; find it with \
    `ip -4 addr` (Linux), `ipconfig getifaddr en0` (macOS) or `ipconfig` (Windows)";
