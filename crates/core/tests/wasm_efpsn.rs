//! EFPSN in the browser: real Paillier keys, Phase 1 and Phase 2 of a small run, compiled to
//! wasm32 and run in headless Chromium, and the same natively.
//!
//! `cargo test -p capelab-core --test wasm_efpsn` (native) and
//! `cargo test -p capelab-core --target wasm32-unknown-unknown --test wasm_efpsn` (Chromium).
//!
//! Key generation draws different primes on the two targets (crypto-primes, 32- vs 64-bit limbs),
//! so no digest is shared: each build checks the properties that must hold on any target — the
//! masks cancel exactly, the run reaches the same x* as the noise-free run, and a ciphertext made
//! under a key decrypts to its value.

use capelab_core::efpsn::basis::BasisSpec;
use capelab_core::efpsn::graph::{Graph, Topology};
use capelab_core::efpsn::mask::NoiseLaw;
use capelab_core::efpsn::messages::Phase1Setup;
use capelab_core::efpsn::optimizer::{Optimizer, Phase2Settings};
use capelab_core::efpsn::problem::Problem;
use capelab_core::efpsn::sim::{EfpsnSim, Method, RunConfig};
use capelab_core::rng::derive;
use capelab_paillier::{KeySize, Keypair};

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::*;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test_configure!(run_in_browser);

fn check() {
    let k = Keypair::generate(KeySize::Demo1024, &mut derive(1, "wasm/key"));
    let c = k.public.encrypt_i64(-31_415_926, &mut derive(2, "wasm/enc"));
    assert_eq!(k.secret.decrypt_i64(&c).unwrap(), -31_415_926);

    let problem = Problem::least_squares(3, 40, 10, 1e-2, 3).unwrap();
    let run = |method| {
        let config = RunConfig {
            method,
            graph: Graph::build(Topology::Ring, 3, 0).unwrap(),
            setup: Phase1Setup {
                basis: BasisSpec { max_degree: 1, variables: 10, size: 10, seed: 4 },
                law: NoiseLaw { gamma: 1e3, decay: 1.0, precision: 6 },
            },
            phase2: Phase2Settings {
                optimizer: Optimizer::Tracking,
                iterations: 1500,
                step: 0.5,
                decay: 0.0,
                batch: None,
            },
            variables: (0..10).collect(),
            key_size: KeySize::Demo1024,
            record_every: 1500,
            seed: 5,
        };
        let mut sim = EfpsnSim::new(&problem, &config, None).unwrap();
        sim.run_phase1().unwrap();
        sim.run_phase2(|_| {}).unwrap();
        sim.report(&problem)
    };
    let efpsn = run(Method::Efpsn);
    assert_eq!(efpsn.zero_sum_residual, Some(vec![0; 10]));
    assert!(efpsn.largest_mask_coefficient > 1.0);
    let free = run(Method::NoiseFree);
    assert!(efpsn.last().deviation < 1e-6, "EFPSN ‖x̄ − x*‖ = {}", efpsn.last().deviation);
    assert!(free.last().deviation < 1e-6, "noise-free ‖x̄ − x*‖ = {}", free.last().deviation);
}

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn native_efpsn_run_cancels_its_masks() {
    check();
}

#[cfg(target_arch = "wasm32")]
#[wasm_bindgen_test]
fn browser_efpsn_run_cancels_its_masks() {
    check();
}
