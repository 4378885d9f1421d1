/*!
Where a site's privacy ledger and data seed live between visits: the browser's `localStorage`,
keyed by the site's name.

Keying by name (not by tab or room) is what lets a ledger survive reloads and new rooms: the same
site, under the same name, keeps spending from the same budget. Two tabs on one computer with
different names keep separate ledgers; two tabs with the same name share one (the UI says so).

A stored ledger is read with [`Ledger::from_json`], which replays and checks every release. If it
cannot be read, it is not overwritten silently: the text is moved to a `.unreadable` key, the site
starts a fresh ledger, and the note says where the old text went.
*/

use capelab_core::accountant::{Budget, Ledger};
use gloo::storage::{LocalStorage, Storage};

/// The budget a new ledger starts with: room for a lesson's worth of studies at ε ≈ 0.5.
pub const DEFAULT_BUDGET: Budget = Budget { epsilon: 10.0, delta: 1e-5 };

pub fn ledger_key(site: &str) -> String {
    format!("capelab.ledger.v1.{site}")
}

pub fn seed_key(site: &str) -> String {
    format!("capelab.data-seed.v1.{site}")
}

/// A ledger as found in storage.
pub struct Loaded {
    pub ledger: Ledger,
    /// Something the user should know (e.g. the stored copy was unreadable).
    pub note: Option<String>,
}

/// The ledger of site `name`: the stored one, or a fresh one with [`DEFAULT_BUDGET`].
pub fn load_ledger(name: &str) -> Loaded {
    let key = ledger_key(name);
    let storage = LocalStorage::raw();
    let fresh = || Ledger::new(name, DEFAULT_BUDGET).expect("the default budget is valid");
    let text = match storage.get_item(&key) {
        Ok(Some(text)) => text,
        _ => return Loaded { ledger: fresh(), note: None },
    };
    match read_stored(name, &text) {
        Ok(ledger) => Loaded { ledger, note: None },
        Err(reason) => {
            let aside = format!("{key}.unreadable");
            let _ = storage.set_item(&aside, &text);
            let _ = storage.remove_item(&key);
            Loaded {
                ledger: fresh(),
                note: Some(format!(
                    "The ledger stored for “{name}” could not be read ({reason}); a new one was \
                     started. The old text is kept under the key “{aside}”."
                )),
            }
        }
    }
}

/// A stored ledger text, checked to belong to `name`.
pub fn read_stored(name: &str, text: &str) -> Result<Ledger, String> {
    let ledger = Ledger::from_json(text).map_err(|e| e.to_string())?;
    if ledger.site() != name {
        return Err(format!("it belongs to site “{}”", ledger.site()));
    }
    Ok(ledger)
}

/// Saves the ledger under its site's name. Returns why it could not be saved, if it could not.
pub fn save_ledger(ledger: &Ledger) -> Result<(), String> {
    LocalStorage::raw()
        .set_item(&ledger_key(ledger.site()), &ledger.to_json())
        .map_err(|_| "the browser refused to store it (storage full or disabled)".to_owned())
}

/// The data seed stored for site `name`, if any.
pub fn load_seed(name: &str) -> Option<u64> {
    LocalStorage::raw().get_item(&seed_key(name)).ok().flatten()?.trim().parse().ok()
}

pub fn save_seed(name: &str, seed: u64) {
    // Only a convenience (the same values after a reload): nothing to do if storage refuses.
    let _ = LocalStorage::raw().set_item(&seed_key(name), &seed.to_string());
}

/// Whether site `name`'s user allows non-private comparison runs (off unless they said so).
pub fn load_consent(name: &str) -> bool {
    LocalStorage::raw().get_item(&consent_key(name)).ok().flatten().as_deref() == Some("yes")
}

/// Keeps the user's answer for the next visit; a refusal to store only means asking again.
pub fn save_consent(name: &str, allows: bool) {
    let _ = LocalStorage::raw().set_item(&consent_key(name), if allows { "yes" } else { "no" });
}

pub fn consent_key(site: &str) -> String {
    format!("capelab.comparison-consent.v1.{site}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_the_site() {
        assert_eq!(ledger_key("Clinic North"), "capelab.ledger.v1.Clinic North");
        assert_eq!(seed_key("site 4"), "capelab.data-seed.v1.site 4");
        assert!(Budget::new(DEFAULT_BUDGET.epsilon, DEFAULT_BUDGET.delta).is_ok());
    }

    #[test]
    fn a_stored_ledger_must_be_this_sites() {
        let ledger = Ledger::new("A", DEFAULT_BUDGET).unwrap();
        let text = ledger.to_json();
        assert_eq!(read_stored("A", &text).unwrap(), ledger);
        assert_eq!(read_stored("B", &text).unwrap_err(), "it belongs to site “A”");
        assert!(read_stored("A", "{").unwrap_err().contains("malformed"));
    }
}
