//! What EFPSN's agents send each other (spec efpsn-vertical-dpvi §A2), and the public plan of a
//! run that every agent must hold identically.

use capelab_paillier::{Ciphertext, PublicKey};
use serde::{Deserialize, Serialize};

use super::EfpsnError;
use super::basis::BasisSpec;
use super::graph::Graph;
use super::mask::NoiseLaw;
use super::optimizer::{Iterate, Phase2Settings};
use crate::codec;
use crate::study::StudyId;
use crate::wire::ParticipantId;

/// Envelope kinds, as the relay shows them.
pub mod kind {
    pub const KEY: &str = "efpsn/key";
    pub const NOISE: &str = "efpsn/noise";
    pub const ITERATE: &str = "efpsn/iterate";
}

/// The public parameters of Phase 1 that every agent must share, or masks stop cancelling
/// (spec §D pitfall 6). Sent with each public key and compared on receipt.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Phase1Setup {
    pub basis: BasisSpec,
    pub law: NoiseLaw,
}

impl Phase1Setup {
    /// Why `theirs` (announced by `who`) differs from ours, if it does.
    pub fn mismatch(&self, theirs: &Phase1Setup, who: &str) -> Option<EfpsnError> {
        let (a, b) = (self, theirs);
        let what = if a.basis.seed != b.basis.seed {
            format!("basis seed {} (this agent uses {})", b.basis.seed, a.basis.seed)
        } else if a.basis != b.basis {
            format!(
                "basis (K_deg, m, N_b) = ({}, {}, {}) (this agent uses ({}, {}, {}))",
                b.basis.max_degree,
                b.basis.variables,
                b.basis.size,
                a.basis.max_degree,
                a.basis.variables,
                a.basis.size
            )
        } else if a.law != b.law {
            format!(
                "noise γ = {}, p = {}, P_prec = {} (this agent uses γ = {}, p = {}, P_prec = {})",
                b.law.gamma,
                b.law.decay,
                b.law.precision,
                a.law.gamma,
                a.law.decay,
                a.law.precision
            )
        } else {
            return None;
        };
        Some(EfpsnError::Protocol(format!(
            "{who} announces a different {what}: refused before any noise was sent"
        )))
    }
}

/// Who is which agent, on which graph, with which settings: the dashboard announces it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub study: StudyId,
    pub graph: Graph,
    /// `agents[i]` is the participant that plays agent i of the graph.
    pub agents: Vec<ParticipantId>,
    pub setup: Phase1Setup,
    pub phase2: Phase2Settings,
    /// The perturbed entries of x, one per basis variable.
    pub variables: Vec<usize>,
}

impl Plan {
    pub fn check(&self) -> Result<(), EfpsnError> {
        if self.agents.len() != self.graph.len() {
            return Err(EfpsnError::Parameter(format!(
                "{} participants for a graph of {} agents",
                self.agents.len(),
                self.graph.len()
            )));
        }
        let mut ids = self.agents.clone();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != self.agents.len() {
            return Err(EfpsnError::Parameter("a participant plays two agents".into()));
        }
        if self.variables.len() != self.setup.basis.variables as usize {
            return Err(EfpsnError::Parameter(format!(
                "{} perturbed variables for a basis in m = {}",
                self.variables.len(),
                self.setup.basis.variables
            )));
        }
        // A graph that arrived over the wire is checked like one built here.
        let rebuilt = Graph::from_edges(self.graph.len(), &self.graph.edges())?;
        if rebuilt != self.graph {
            return Err(EfpsnError::Graph(
                "the neighbour lists are not symmetric and sorted".into(),
            ));
        }
        if let Some(&v) = self.variables.iter().find(|&&v| v >= usize::MAX / 2) {
            return Err(EfpsnError::Parameter(format!("perturbed variable index {v}")));
        }
        self.setup.law.check()?;
        self.phase2.check()
    }

    pub fn agent_of(&self, participant: ParticipantId) -> Option<usize> {
        self.agents.iter().position(|&p| p == participant)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EfpsnMessage {
    pub study: StudyId,
    pub body: Body,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Body {
    /// Phase 1, step 1: my public key, under the setup I use.
    Key { setup: Phase1Setup, public: PublicKey },
    /// Phase 1, step 2: Enc_{pk_j}(z_ijk) for k = 0..N_b − 1, fresh randomness each, and the
    /// fingerprint of the key used (so a mix-up is named, not decrypted into garbage).
    Noise { for_key: [u8; 16], ciphertexts: Vec<Ciphertext> },
    /// Phase 2: my iterate of `iteration`, in clear.
    Iterate { iteration: u32, iterate: Iterate },
}

/// The first 16 bytes of SHA-256 of a public key's modulus (decimal): names a key in messages.
pub fn key_fingerprint(key: &PublicKey) -> [u8; 16] {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(key.modulus_decimal().as_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&digest[..16]);
    out
}

impl EfpsnMessage {
    pub fn kind(&self) -> &'static str {
        match self.body {
            Body::Key { .. } => kind::KEY,
            Body::Noise { .. } => kind::NOISE,
            Body::Iterate { .. } => kind::ITERATE,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        codec::encode(self)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, EfpsnError> {
        codec::decode("EFPSN message", bytes).map_err(|e| EfpsnError::Protocol(e.to_string()))
    }
}
