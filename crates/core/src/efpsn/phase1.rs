//! Phase 1 (spec efpsn-vertical-dpvi §A2, Alg. 1) for one agent i, by graph index:
//! 1. send its public key to every neighbour;
//! 2. for each neighbour j whose key arrives: draw z_ijk for k = 0..N_b − 1 and send them
//!    encrypted under pk_j, each ciphertext with fresh randomness (the paper reuses one r per
//!    agent, which leaks differences of plaintexts: spec §D pitfall 1);
//! 3. once every neighbour's noise is in: multiply the ciphertexts and decrypt once, which gives
//!    D_ik = Σ_j z_jik (i could decrypt each alone and so learns every z_jik: pitfall 11);
//! 4. η̄_ik·10^{P_prec} = Σ_j z_ijk − D_ik, exactly zero-sum ([`Mask`]).
//!
//! The paper encrypts each z_ijk alone. capelab packs as many as fit into one plaintext
//! ([`Packing`]: 2048-bit keys hold 31 slots of 2^52 with headroom for the sum over every agent of
//! the graph), so N_b = 10 costs one encryption per neighbour and one decryption in all, and the
//! 651 coefficients of an all-parameter mask 21 of each. A packed plaintext is one Paillier
//! plaintext: IND-CPA covers it whole, so packing changes nothing of what a ciphertext hides.
//!
//! No self-messages (pitfall 4). Every ciphertext is checked to lie in Z*_{n²} of this agent's
//! key before it is used, and a neighbour announcing another setup is refused before any noise
//! is sent to it.

use std::collections::BTreeMap;

use capelab_paillier::{Ciphertext, Keypair, Packing, PublicKey};

use super::EfpsnError;
use super::mask::{MAX_NOISE_INTEGER, Mask};
use super::messages::{Body, Phase1Setup, key_fingerprint};
use crate::rng::CapeRng;

/// What Phase 1 has done so far, for progress displays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phase1Progress {
    pub keys_received: usize,
    pub noise_sent: usize,
    pub noise_received: usize,
    pub neighbours: usize,
    pub done: bool,
}

pub struct Phase1 {
    me: usize,
    neighbours: Vec<usize>,
    setup: Phase1Setup,
    keypair: Keypair,
    packing: Packing,
    rng: CapeRng,
    keys: BTreeMap<usize, PublicKey>,
    sent: BTreeMap<usize, Vec<i64>>,
    received: BTreeMap<usize, Vec<Ciphertext>>,
    mask: Option<Mask>,
}

impl Phase1 {
    /// Agent `me` with its neighbours (graph indices) and a freshly generated key pair, on a
    /// graph of `agents` agents (the most summands a packed slot must hold).
    pub fn new(
        me: usize,
        neighbours: Vec<usize>,
        agents: usize,
        setup: Phase1Setup,
        keypair: Keypair,
        rng: CapeRng,
    ) -> Result<Self, EfpsnError> {
        let packing = Packing::new(MAX_NOISE_INTEGER as u64, agents as u32, keypair.public.bits())
            .map_err(|e| EfpsnError::Parameter(format!("packing the noise: {e}")))?;
        Ok(Phase1 {
            me,
            neighbours,
            setup,
            keypair,
            packing,
            rng,
            keys: BTreeMap::new(),
            sent: BTreeMap::new(),
            received: BTreeMap::new(),
            mask: None,
        })
    }

    /// Ciphertexts per neighbour: ⌈N_b / slots⌉.
    pub fn ciphertexts_per_neighbour(&self) -> usize {
        (self.setup.basis.size as usize).div_ceil(self.packing.slots())
    }

    /// Step 1: the key message for every neighbour.
    pub fn start(&self) -> Vec<(usize, Body)> {
        self.neighbours
            .iter()
            .map(|&j| (j, Body::Key { setup: self.setup, public: self.keypair.public.clone() }))
            .collect()
    }

    pub fn mask(&self) -> Option<&Mask> {
        self.mask.as_ref()
    }

    pub fn progress(&self) -> Phase1Progress {
        Phase1Progress {
            keys_received: self.keys.len(),
            noise_sent: self.sent.len(),
            noise_received: self.received.len(),
            neighbours: self.neighbours.len(),
            done: self.mask.is_some(),
        }
    }

    /// A Phase-1 message from neighbour `from`; returns what to send (to graph indices).
    pub fn handle(&mut self, from: usize, body: Body) -> Result<Vec<(usize, Body)>, EfpsnError> {
        if !self.neighbours.contains(&from) {
            return Err(EfpsnError::Protocol(format!(
                "agent {from} is not a neighbour of agent {} on this graph",
                self.me
            )));
        }
        let n_b = self.setup.basis.size as usize;
        match body {
            Body::Key { setup, public } => {
                if let Some(err) = self.setup.mismatch(&setup, &format!("agent {from}")) {
                    return Err(err);
                }
                if self.keys.contains_key(&from) {
                    return Err(EfpsnError::Protocol(format!(
                        "agent {from} sent a second public key"
                    )));
                }
                let own_bits = self.keypair.public.bits();
                if public.bits() != own_bits {
                    return Err(EfpsnError::Protocol(format!(
                        "agent {from}'s public key has {} bits; this run uses {own_bits}-bit keys",
                        public.bits()
                    )));
                }
                let z = self.setup.law.draw_integers(n_b, &mut self.rng);
                let mut ciphertexts = Vec::with_capacity(self.ciphertexts_per_neighbour());
                for chunk in z.chunks(self.packing.slots()) {
                    let c = public.encrypt_packed(chunk, &self.packing, &mut self.rng).map_err(
                        |e| {
                            EfpsnError::Protocol(format!(
                                "encrypting the noise for agent {from}: {e}"
                            ))
                        },
                    )?;
                    ciphertexts.push(c);
                }
                let for_key = key_fingerprint(&public);
                self.keys.insert(from, public);
                self.sent.insert(from, z);
                let out = vec![(from, Body::Noise { for_key, ciphertexts })];
                self.try_finish()?;
                Ok(out)
            }
            Body::Noise { for_key, ciphertexts } => {
                if self.received.contains_key(&from) {
                    return Err(EfpsnError::Protocol(format!("agent {from} sent its noise twice")));
                }
                if for_key != key_fingerprint(&self.keypair.public) {
                    return Err(EfpsnError::Protocol(format!(
                        "agent {from} encrypted its noise under another public key than this agent's"
                    )));
                }
                let want = self.ciphertexts_per_neighbour();
                if ciphertexts.len() != want {
                    return Err(EfpsnError::Protocol(format!(
                        "agent {from} sent {} ciphertexts; N_b = {n_b} packed {} per ciphertext needs {want}",
                        ciphertexts.len(),
                        self.packing.slots()
                    )));
                }
                for (k, c) in ciphertexts.iter().enumerate() {
                    self.keypair.public.check(c).map_err(|e| {
                        EfpsnError::Protocol(format!("agent {from}'s ciphertext {k} refused: {e}"))
                    })?;
                }
                self.received.insert(from, ciphertexts);
                self.try_finish()?;
                Ok(Vec::new())
            }
            Body::Iterate { .. } => Err(EfpsnError::Protocol(format!(
                "agent {from} sent a Phase-2 iterate during Phase 1"
            ))),
        }
    }

    /// Steps 3–4 once every neighbour's key and noise are in.
    fn try_finish(&mut self) -> Result<(), EfpsnError> {
        let all = self.neighbours.len();
        if self.mask.is_some() || self.sent.len() < all || self.received.len() < all {
            return Ok(());
        }
        let n_b = self.setup.basis.size as usize;
        let public = &self.keypair.public;
        let mut sums = Vec::with_capacity(n_b);
        for c in 0..self.ciphertexts_per_neighbour() {
            let product = public.sum(self.received.values().map(|cts| &cts[c]));
            let values =
                self.keypair.secret.decrypt_packed(&product, &self.packing, all as u32).map_err(
                    |e| {
                        EfpsnError::Protocol(format!(
                            "the received noise (ciphertext {c}) does not decrypt: {e}"
                        ))
                    },
                )?;
            let wanted = (n_b - sums.len()).min(self.packing.slots());
            sums.extend(values.into_iter().take(wanted));
        }
        let sent: Vec<Vec<i64>> = self.sent.values().cloned().collect();
        self.mask = Some(Mask::from_exchange(&sent, &sums, self.setup.law.precision)?);
        Ok(())
    }
}
