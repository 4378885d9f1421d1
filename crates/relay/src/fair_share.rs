/*!
One address's fair share of the relay's connections, so that one address cannot hold every
connection while others wait.

An address (an IPv4 address, or an IPv6 /64 as in [`crate::guesses`]) may hold at most
`RelayLimits::max_connections_per_address` connections at once: plain HTTP, mid-handshake and
websockets alike, counted from `accept` until the socket closes. Past that it is answered
`429 Too Many Requests` with a message that names the flag, and the connections it holds are
untouched. Everyone else still finds room: the cap minus one share.

**How the share is set.** By default a quarter of the connection cap ([`default_share`]): 128 of
the default 512, or 3 of the 14 that `ulimit -n 64` allows. A tab holds one websocket, and while
the app loads a few HTTP connections more (Chromium held 5 in all per tab while it loaded the
app and created a room, measured at the relay; the idle ones close 10 s after their last
request), so 128 lets a class of about 25 behind one school NAT load the app at the same moment,
and any number once loaded. A bigger
class behind one address starts the relay with a larger `--max-connections-per-address` (and
`--max-connections`), or runs it on the school's network where each device has its own address.

Behind a reverse proxy every connection comes from the proxy: the proxies named with
`--trusted-proxy` are exempt here, and the client address they forward counts instead, for its
websocket ([`crate::client_address`]).
*/

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::guesses::block_of;

/// The share of a cap of `max_connections` one address gets unless told otherwise.
pub fn default_share(max_connections: usize) -> usize {
    (max_connections / 4).max(1)
}

/// Connections open per address; an address with none has no entry, so the map never holds
/// more entries than there are open connections.
#[derive(Debug, Default)]
pub struct AddressShares {
    open: Mutex<HashMap<IpAddr, usize>>,
}

impl AddressShares {
    /// Counts one more connection of `address` if it holds fewer than `share`; otherwise returns
    /// how many it holds.
    pub fn try_take(&self, address: IpAddr, share: usize) -> Result<IpAddr, usize> {
        let block = block_of(address);
        let mut open = self.lock();
        let held = open.entry(block).or_insert(0);
        if *held >= share {
            let held = *held;
            if held == 0 {
                open.remove(&block);
            }
            return Err(held);
        }
        *held += 1;
        Ok(block)
    }

    /// One connection of `block` (as [`Self::try_take`] returned it) closed.
    pub fn release(&self, block: IpAddr) {
        let mut open = self.lock();
        if let Some(held) = open.get_mut(&block) {
            *held -= 1;
            if *held == 0 {
                open.remove(&block);
            }
        }
    }

    /// Connections `address` holds now.
    pub fn held(&self, address: IpAddr) -> usize {
        self.lock().get(&block_of(address)).copied().unwrap_or(0)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<IpAddr, usize>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_gets_its_share_and_others_are_untouched() {
        let shares = AddressShares::default();
        let a: IpAddr = [203, 0, 113, 7].into();
        let b: IpAddr = [198, 51, 100, 1].into();
        let taken: Vec<_> = (0..3).map(|_| shares.try_take(a, 3).unwrap()).collect();
        assert_eq!(shares.try_take(a, 3), Err(3));
        assert_eq!(shares.try_take(b, 3), Ok(b));
        shares.release(taken[0]);
        assert_eq!(shares.held(a), 2);
        assert!(shares.try_take(a, 3).is_ok());
        for block in [taken[1], taken[2], a, b] {
            shares.release(block);
        }
        assert!(shares.lock().is_empty(), "no entry outlives its connections");
    }

    #[test]
    fn an_ipv6_64_is_one_address_and_mapped_ipv4_is_ipv4() {
        let shares = AddressShares::default();
        shares.try_take("2001:db8:5:6::1".parse().unwrap(), 2).unwrap();
        shares.try_take("2001:db8:5:6:abcd::2".parse().unwrap(), 2).unwrap();
        assert_eq!(shares.try_take("2001:db8:5:6::3".parse().unwrap(), 2), Err(2));
        assert!(shares.try_take("2001:db8:5:7::1".parse().unwrap(), 2).is_ok());
        shares.try_take("::ffff:192.0.2.1".parse().unwrap(), 1).unwrap();
        assert_eq!(shares.try_take([192, 0, 2, 1].into(), 1), Err(1));
    }

    #[test]
    fn a_zero_share_refuses_without_leaving_an_entry() {
        let shares = AddressShares::default();
        assert_eq!(shares.try_take([192, 0, 2, 9].into(), 0), Err(0));
        assert!(shares.lock().is_empty());
    }

    #[test]
    fn the_default_share_is_a_quarter_of_the_cap() {
        assert_eq!(default_share(512), 128);
        assert_eq!(default_share(14), 3);
        assert_eq!(default_share(2), 1);
    }
}
