/*!
Room-code guessing: joins naming a room that does not exist are limited per connection and per
address, so that finding a live room by trying codes takes years, not an hour.

A wrong code costs a token from the connection's bucket and from its address's bucket. While
either is empty, every `Join` from that connection is refused (right code or not, so the answer
says nothing about the code). A fresh connection per burst does not help: the address bucket is
shared by all its connections. An IPv6 address counts by its /64, the block one customer usually
gets. A connection refused [`CUT_OFF_AFTER`] times is closed. The relay remembers at most
[`MAX_TRACKED`] addresses that have tries outstanding; past that, new addresses get no tries until
some refill (it fails closed rather than forget who was guessing).

The figures: 31⁶ = 887 503 681 codes; an address gets [`ADDRESS_BURST`] tries at once, then one
per [`REFILL_PERIOD`]. Against one live room that is on average 887 503 681 / 2 × 2 s ≈ 28 years
from one address.
*/

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use crate::limits::TokenBucket;

/// Wrong codes a connection may try at once.
pub const CONNECTION_BURST: u32 = 5;
/// Wrong codes one address may try at once, over all its connections (a classroom behind one
/// NAT mistypes a few codes without being held up).
pub const ADDRESS_BURST: u32 = 20;
/// After a burst, one more wrong code per this period, per connection and per address.
pub const REFILL_PERIOD: Duration = Duration::from_secs(2);
/// Refused joins after which a connection is closed as a guesser.
pub const CUT_OFF_AFTER: u32 = 20;
/// Addresses remembered before idle ones (full buckets) are forgotten.
pub const MAX_TRACKED: usize = 10_000;

/// Wrong-code buckets of every address that tried one recently.
#[derive(Debug, Default)]
pub struct AddressGuesses {
    by_address: Mutex<HashMap<IpAddr, TokenBucket>>,
}

impl AddressGuesses {
    /// Whether `address` may try a code now.
    pub fn may_try(&self, address: IpAddr, now: Duration) -> bool {
        let address = block_of(address);
        let mut map = self.lock();
        match map.get_mut(&address) {
            Some(bucket) => bucket.has(now, 1),
            None => {
                if map.len() >= MAX_TRACKED {
                    map.retain(|_, bucket| !bucket.is_full(now));
                }
                map.len() < MAX_TRACKED
            }
        }
    }

    /// `address` named a room that does not exist.
    pub fn record_wrong(&self, address: IpAddr, now: Duration) {
        let address = block_of(address);
        let mut map = self.lock();
        if map.len() >= MAX_TRACKED {
            map.retain(|_, bucket| !bucket.is_full(now));
        }
        if map.len() >= MAX_TRACKED && !map.contains_key(&address) {
            return; // `may_try` refuses it until there is room
        }
        let bucket = map.entry(address).or_insert_with(|| bucket(ADDRESS_BURST, now));
        bucket.try_take(now);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, TokenBucket>> {
        self.by_address.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What counts as one address: an IPv4 address, or an IPv6 address's /64.
pub fn block_of(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        },
    }
}

/// A connection's own wrong-code bucket.
pub fn connection_bucket(now: Duration) -> TokenBucket {
    bucket(CONNECTION_BURST, now)
}

fn bucket(burst: u32, now: Duration) -> TokenBucket {
    TokenBucket::with_period(1, REFILL_PERIOD, burst, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_gets_its_burst_then_one_try_per_period() {
        let guesses = AddressGuesses::default();
        let home: IpAddr = [10, 0, 0, 1].into();
        let other: IpAddr = [10, 0, 0, 2].into();
        let t0 = Duration::from_secs(100);
        for _ in 0..ADDRESS_BURST {
            assert!(guesses.may_try(home, t0));
            guesses.record_wrong(home, t0);
        }
        assert!(!guesses.may_try(home, t0));
        assert!(guesses.may_try(other, t0), "other addresses are not affected");
        assert!(!guesses.may_try(home, t0 + REFILL_PERIOD - Duration::from_millis(1)));
        assert!(guesses.may_try(home, t0 + REFILL_PERIOD));
    }

    #[test]
    fn an_ipv6_block_of_64_counts_as_one_address() {
        let guesses = AddressGuesses::default();
        let t0 = Duration::ZERO;
        for n in 0..ADDRESS_BURST {
            let address: IpAddr = format!("2001:db8:1:2::{:x}", n + 1).parse().unwrap();
            guesses.record_wrong(address, t0);
        }
        assert!(!guesses.may_try("2001:db8:1:2:ffff::9".parse().unwrap(), t0));
        assert!(guesses.may_try("2001:db8:1:3::1".parse().unwrap(), t0));
    }

    #[test]
    fn past_the_tracking_bound_new_addresses_wait_instead_of_being_forgotten() {
        let guesses = AddressGuesses::default();
        let t0 = Duration::ZERO;
        for n in 0..MAX_TRACKED as u32 {
            guesses.record_wrong(IpAddr::V4(((10u32 << 24) + n).into()), t0);
        }
        let newcomer: IpAddr = [192, 0, 2, 1].into();
        assert!(!guesses.may_try(newcomer, t0));
        // Once the others' tries have refilled, they are forgotten and there is room again.
        let later = t0 + REFILL_PERIOD * ADDRESS_BURST;
        assert!(guesses.may_try(newcomer, later));
    }
}
