//! A site's privacy ledger for JavaScript: the core's [`capelab_core::accountant::Ledger`] behind
//! a handle the page keeps and the site roles share ([`LedgerAccess`] for `Rc<RefCell<_>>`), so
//! the page saves what the roles recorded (`toJson`) and shows the budget.
//!
//! [`LedgerAccess`]: capelab_core::study::gate::LedgerAccess

use std::cell::RefCell;
use std::rc::Rc;

use capelab_core::accountant::{self as core, Budget};
use wasm_bindgen::prelude::*;

use crate::convert;

/// The ledger a site role records into; the page keeps the same one.
pub type Shared = Rc<RefCell<core::Ledger>>;

/// A site's releases against its budget. Every release of a study is recorded here before the
/// message carrying it is returned; a study the budget cannot afford is declined.
///
/// ```js
/// const ledger = new Ledger("Clinic North", 10, 1e-5);
/// localStorage.setItem("ledger", ledger.toJson());
/// const again = Ledger.fromJson(localStorage.getItem("ledger"));
/// ```
#[wasm_bindgen]
pub struct Ledger {
    inner: Shared,
}

#[wasm_bindgen]
impl Ledger {
    /// An empty ledger for site `site` with a budget of ε at δ.
    #[wasm_bindgen(constructor)]
    pub fn new(site: String, epsilon: f64, delta: f64) -> Result<Ledger, JsError> {
        let budget = Budget::new(epsilon, delta).map_err(error)?;
        let ledger = core::Ledger::new(site, budget).map_err(error)?;
        Ok(Ledger { inner: Rc::new(RefCell::new(ledger)) })
    }

    /// Reads an exported ledger, replaying and checking every release.
    #[wasm_bindgen(js_name = fromJson)]
    pub fn from_json(json: &str) -> Result<Ledger, JsError> {
        let ledger = core::Ledger::from_json(json).map_err(error)?;
        Ok(Ledger { inner: Rc::new(RefCell::new(ledger)) })
    }

    /// The ledger as JSON (its export format, the one `cape` and the app read).
    #[wasm_bindgen(js_name = toJson)]
    pub fn to_json(&self) -> String {
        self.inner.borrow().to_json()
    }

    /// The site's name.
    #[wasm_bindgen(getter)]
    pub fn site(&self) -> String {
        self.inner.borrow().site().to_owned()
    }

    #[wasm_bindgen(getter, unchecked_return_type = "Budget")]
    pub fn budget(&self) -> Result<JsValue, JsError> {
        convert::json(&self.inner.borrow().budget())
    }

    /// ε spent so far at the budget's δ (the tighter of PLD and RDP).
    #[wasm_bindgen(getter)]
    pub fn spent(&self) -> f64 {
        self.inner.borrow().spent()
    }

    /// ε left in the budget.
    #[wasm_bindgen(getter)]
    pub fn remaining(&self) -> f64 {
        self.inner.borrow().remaining()
    }

    /// The recorded releases, oldest first.
    #[wasm_bindgen(unchecked_return_type = "LedgerEntry[]")]
    pub fn entries(&self) -> Result<JsValue, JsError> {
        convert::json(&self.inner.borrow().entries())
    }

    /// Sets a new budget; refused (and nothing changed) below what is already spent.
    #[wasm_bindgen(js_name = setBudget)]
    pub fn set_budget(&self, epsilon: f64, delta: f64) -> Result<(), JsError> {
        let budget = Budget::new(epsilon, delta).map_err(error)?;
        self.inner.borrow_mut().set_budget(budget).map_err(error)
    }
}

impl Ledger {
    pub(crate) fn shared(&self) -> Shared {
        Rc::clone(&self.inner)
    }
}

fn error(e: core::LedgerError) -> JsError {
    JsError::new(&e.to_string())
}
