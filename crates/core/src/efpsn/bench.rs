//! The workloads of `cape bench paillier`, shared by the native and the browser runners so they
//! time the same thing: Paillier-2048 operations and EFPSN's Phase 1 on a ring.

use capelab_paillier::{KeySize, Keypair};

use super::EfpsnError;
use super::basis::BasisSpec;
use super::graph::{Graph, Topology};
use super::mask::NoiseLaw;
use super::messages::Phase1Setup;
use super::optimizer::{Optimizer, Phase2Settings};
use super::problem::Problem;
use super::sim::{EfpsnSim, Method, Phase1Traffic, RunConfig};

/// Phase 1 of `agents` agents on a ring with N_b = 10 mask coefficients (k = 0..9), with the
/// given 2048-bit keys (one per agent; generation is timed separately).
pub fn phase1_on_a_ring(keys: Vec<Keypair>, seed: u64) -> Result<Phase1Traffic, EfpsnError> {
    let agents = keys.len();
    let problem = Problem::least_squares(agents, 10, 10, 1e-3, seed)?;
    let config = RunConfig {
        method: Method::Efpsn,
        graph: Graph::build(Topology::Ring, agents, seed)?,
        setup: Phase1Setup {
            basis: BasisSpec { max_degree: 1, variables: 10, size: 10, seed },
            law: NoiseLaw { gamma: 1e3, decay: 1.0, precision: 6 },
        },
        phase2: Phase2Settings {
            optimizer: Optimizer::Tracking,
            iterations: 1,
            step: 0.1,
            decay: 0.0,
            batch: None,
        },
        variables: (0..10).collect(),
        key_size: KeySize::Standard2048,
        record_every: 1,
        seed,
    };
    EfpsnSim::new(&problem, &config, Some(keys))?.run_phase1()
}
