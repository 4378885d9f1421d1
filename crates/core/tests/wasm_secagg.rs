//! SecureAgg inside a browser: the same simulator run as the native tests, compiled to
//! wasm32-unknown-unknown and executed in headless Chromium.
//!
//! `cargo test -p capelab-core --target wasm32-unknown-unknown --test wasm_secagg`
#![cfg(target_arch = "wasm32")]

use capelab_core::fixed::{FixedPoint, add_assign};
use capelab_core::rng::Seed;
use capelab_core::secagg::sim::{DropMode, DropPoint, Sim, SimConfig};
use capelab_core::secagg::{Encoding, SiteInput};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn a_full_round_with_one_dropout() {
    let fp = FixedPoint::new(32, 100.0).unwrap();
    let inputs: Vec<SiteInput> = (0..5)
        .map(|i| SiteInput::Real {
            values: (0..16).map(|j| (i as f64 - 2.0) * 1.5 + j as f64 / 4.0).collect(),
            format: fp,
        })
        .collect();
    // S = 5, t = 4: site 2 vanishes right after sharing its keys.
    let config = SimConfig::new(5, Encoding::Fixed(fp)).with_dropout(
        2,
        DropPoint::AfterShareKeys,
        DropMode::Disconnect,
    );
    let mut sim = Sim::new(config, inputs).unwrap();
    let report = sim.run();
    let agg = report.outcome.expect("finished").expect("a sum");

    let survivors = [0usize, 1, 3, 4];
    let mut expected = vec![0u64; 16];
    for &i in &survivors {
        add_assign(&mut expected, sim.site(i).ring_input());
    }
    assert_eq!(agg.sum, expected);
    assert_eq!(agg.survivors, survivors.iter().map(|&i| sim.site_id(i)).collect::<Vec<_>>());
    let decoded = agg.decoded.unwrap();
    for (j, d) in decoded.iter().enumerate() {
        let q: f64 = survivors.iter().map(|&i| sim.site(i).quantised_input().unwrap()[j]).sum();
        assert!((d - q).abs() < 1e-9, "{d} vs {q}");
    }
    for &i in &survivors {
        let r = report.sites[i].outcome.clone().unwrap().unwrap();
        assert_eq!(r.sum, expected);
    }
}

#[wasm_bindgen_test]
fn the_browser_supplies_os_entropy() {
    // Seed::Os goes through getrandom's wasm_js backend (crypto.getRandomValues).
    let a = capelab_core::secagg::Site::new(1, 9, SiteInput::Ring(vec![1]), Seed::Os.rng("a"));
    assert!(a.is_ok());
    let x: [u64; 2] = rand::RngExt::random(&mut Seed::Os.rng("x"));
    let y: [u64; 2] = rand::RngExt::random(&mut Seed::Os.rng("x"));
    assert_ne!(x, y);
}
