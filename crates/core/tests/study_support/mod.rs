//! Data and ledgers shared by the private-mean study tests.
#![allow(dead_code)]

use capelab_core::accountant::{Budget, Ledger};

/// Site `site`'s N_s rows of d values in [0, 1]: fixed, different per site, row and column.
pub fn rows(site: usize, n: usize, d: usize) -> Vec<Vec<f64>> {
    (0..n)
        .map(|i| (0..d).map(|j| ((site * 37 + i * 11 + j * 5) % 101) as f64 / 100.0).collect())
        .collect()
}

/// A fresh ledger for site number `site` with budget ε at δ = 1e-5.
pub fn ledger(site: usize, epsilon: f64) -> Ledger {
    Ledger::new(format!("site {site}"), Budget::new(epsilon, 1e-5).unwrap()).unwrap()
}
