/*!
The privacy gate between a site role and the messages that carry its releases.

A site role never owns persistence: it reaches the site's [`Ledger`] through [`LedgerAccess`],
which the driver provides when it builds the role (an owned `Ledger`, a `&mut Ledger`, or a
`Rc<RefCell<Ledger>>` / `Arc<Mutex<Ledger>>` it shares with the UI and saves after each call). The
role checks the ledger before it sends anything ([`preview`]) and records its releases in the
same call that builds the message carrying them ([`spend`]): there is no path from data to an
outgoing release that does not pass through a successful `try_spend`.

Several releases that leave together (CAPE's â_s and the conventional message) are recorded all
or nothing: they are tried on a copy of the ledger, and the copy replaces the ledger only if every
one fits.
*/

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use crate::accountant::ledger::LedgerEntry;
use crate::accountant::{Ledger, LedgerError, Release};

/// Where a site role finds its ledger. Implemented for an owned [`Ledger`], for `&mut` of any
/// implementor, and for the two shared handles a driver may keep next to the role.
pub trait LedgerAccess {
    fn with_ledger<R>(&mut self, f: impl FnOnce(&mut Ledger) -> R) -> R;
}

impl LedgerAccess for Ledger {
    fn with_ledger<R>(&mut self, f: impl FnOnce(&mut Ledger) -> R) -> R {
        f(self)
    }
}

impl<L: LedgerAccess> LedgerAccess for &mut L {
    fn with_ledger<R>(&mut self, f: impl FnOnce(&mut Ledger) -> R) -> R {
        (**self).with_ledger(f)
    }
}

impl LedgerAccess for Rc<RefCell<Ledger>> {
    fn with_ledger<R>(&mut self, f: impl FnOnce(&mut Ledger) -> R) -> R {
        f(&mut self.borrow_mut())
    }
}

impl LedgerAccess for Arc<Mutex<Ledger>> {
    fn with_ledger<R>(&mut self, f: impl FnOnce(&mut Ledger) -> R) -> R {
        // A poisoned lock only means another thread panicked mid-call; the ledger itself changes
        // atomically (spend replaces it whole), so it is still consistent.
        let mut guard = self.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut guard)
    }
}

/// The ledger's rule is that release times never go backwards. A driver clock may restart (a
/// browser's `performance.now()` after a reload), so a release is stamped no earlier than the
/// ledger's last entry.
pub fn release_time(ledger: &Ledger, now_ms: u64) -> u64 {
    ledger.entries().last().map_or(now_ms, |last| now_ms.max(last.time_ms))
}

/// What the ledger's total would be after `releases`, or the ledger's refusal of the first one
/// that does not fit. The ledger is not changed.
pub fn preview(ledger: &Ledger, releases: &[Release]) -> Result<f64, LedgerError> {
    let mut trial = ledger.clone();
    for release in releases {
        trial.try_spend(release.clone())?;
    }
    Ok(trial.spent())
}

/// Records `releases`, all or nothing: on `Err` the ledger is exactly as before and the caller
/// must not send the releases.
pub fn spend(ledger: &mut Ledger, releases: Vec<Release>) -> Result<Vec<LedgerEntry>, LedgerError> {
    let mut trial = ledger.clone();
    let mut entries = Vec::with_capacity(releases.len());
    for release in releases {
        entries.push(trial.try_spend(release)?.clone());
    }
    *ledger = trial;
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accountant::{Budget, Event};

    fn release(label: &str, z: f64, time_ms: u64) -> Release {
        Release::new("s", Event::gaussian(label, z, 1).unwrap(), time_ms)
    }

    #[test]
    fn spend_is_all_or_nothing() {
        let roomy = Ledger::new("site", Budget::new(100.0, 1e-5).unwrap()).unwrap();
        let one = preview(&roomy, &[release("a", 6.0, 0)]).unwrap();
        let two = preview(&roomy, &[release("a", 6.0, 0), release("b", 6.0, 0)]).unwrap();
        assert!(one > 0.0 && two > one, "{one} {two}");
        assert!(roomy.entries().is_empty(), "a preview records nothing");
        // a budget between the two: the pair is refused at its second release
        let mut ledger =
            Ledger::new("site", Budget::new((one + two) / 2.0, 1e-5).unwrap()).unwrap();
        let refused = spend(&mut ledger, vec![release("a", 6.0, 0), release("b", 6.0, 0)]);
        assert!(
            matches!(refused, Err(LedgerError::InsufficientBudget { ref label, .. }) if &**label == "b"),
            "{refused:?}"
        );
        assert!(ledger.entries().is_empty(), "the first release was not recorded either");
        assert_eq!(spend(&mut ledger, vec![release("a", 6.0, 5)]).unwrap().len(), 1);
        assert_eq!(ledger.entries().len(), 1);
        assert!((ledger.spent() - one).abs() < 1e-12);
    }

    #[test]
    fn shared_handles_reach_the_same_ledger() {
        let ledger = Ledger::new("site", Budget::new(10.0, 1e-5).unwrap()).unwrap();
        let mut shared = Rc::new(RefCell::new(ledger.clone()));
        let view = Rc::clone(&shared);
        shared.with_ledger(|l| spend(l, vec![release("a", 6.0, 3)])).unwrap();
        assert_eq!(view.borrow().entries().len(), 1);
        // through `&mut` of an implementor, as a role generic over L would hold it
        fn spend_through<L: LedgerAccess>(mut access: L) {
            access.with_ledger(|l| spend(l, vec![release("a", 6.0, 3)])).unwrap();
        }
        let mut arc = Arc::new(Mutex::new(ledger));
        spend_through(&mut arc);
        assert_eq!(arc.lock().unwrap().entries().len(), 1);
        // a clock that restarted is clamped to the last entry
        assert_eq!(view.borrow().entries()[0].time_ms, 3);
        assert_eq!(release_time(&view.borrow(), 1), 3);
        assert_eq!(release_time(&view.borrow(), 9), 9);
    }
}
