//! The run's sealed links: every member holds a [`LinkKeyPair`] and, per peer, the key of each
//! direction ([`capelab_core::link`]). A ciphertext is bound to the study, its purpose, step,
//! round and both ends (associated data), and its nonce is (purpose, step, round): each direction
//! seals at most one message per (purpose, step, round), so no (key, nonce) ever repeats.

use std::collections::BTreeMap;

use capelab_core::link::{LinkKeyPair, open, seal};
use capelab_core::rng::CapeRng;
use capelab_core::study::StudyId;
use capelab_core::wire::ParticipantId;

use super::StudyError;

/// What a sealed message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    Triples = 1,
    Round = 2,
    Opened = 3,
}

impl Purpose {
    fn name(self) -> &'static str {
        match self {
            Purpose::Triples => "dealer material",
            Purpose::Round => "MPC round message",
            Purpose::Opened => "share of G̃",
        }
    }
}

/// The nonce of a (purpose, step, round): unique per direction key.
pub fn nonce(purpose: Purpose, step: u32, round: u32) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[0] = purpose as u8;
    n[4..8].copy_from_slice(&step.to_le_bytes());
    n[8..].copy_from_slice(&round.to_le_bytes());
    n
}

/// The associated data: study, purpose, step, round, from, to.
pub fn aad(
    study: &StudyId,
    purpose: Purpose,
    step: u32,
    round: u32,
    from: ParticipantId,
    to: ParticipantId,
) -> Vec<u8> {
    let mut a = Vec::with_capacity(16 + 1 + 16);
    a.extend_from_slice(&study.0);
    a.push(purpose as u8);
    for v in [step, round, from, to] {
        a.extend_from_slice(&v.to_le_bytes());
    }
    a
}

/// One member's keys for one run.
pub struct Links {
    me: ParticipantId,
    study: StudyId,
    pair: LinkKeyPair,
    keys: BTreeMap<ParticipantId, ([u8; 32], [u8; 32])>,
}

impl Links {
    pub fn new(me: ParticipantId, study: StudyId, rng: &mut CapeRng) -> Self {
        Links { me, study, pair: LinkKeyPair::generate(rng), keys: BTreeMap::new() }
    }

    pub fn public(&self) -> [u8; 32] {
        self.pair.public()
    }

    pub fn has(&self, peer: ParticipantId) -> bool {
        self.keys.contains_key(&peer)
    }

    /// Derives both directions' keys with `peer` from its public key.
    pub fn add(&mut self, peer: ParticipantId, public: &[u8; 32]) -> Result<(), StudyError> {
        if self.keys.contains_key(&peer) {
            return Err(StudyError::Protocol(format!("participant {peer} sent a second link key")));
        }
        let ctx = self.study.0;
        let bad =
            || StudyError::Malformed(format!("participant {peer}'s link key is not a valid key"));
        let out = self.pair.link_key(public, &ctx, self.me, peer).ok_or_else(bad)?;
        let inn = self.pair.link_key(public, &ctx, peer, self.me).ok_or_else(bad)?;
        self.keys.insert(peer, (out, inn));
        Ok(())
    }

    pub fn seal(
        &self,
        to: ParticipantId,
        purpose: Purpose,
        step: u32,
        round: u32,
        plaintext: &[u8],
    ) -> Result<Vec<u8>, StudyError> {
        let (out, _) = self
            .keys
            .get(&to)
            .ok_or_else(|| StudyError::Protocol(format!("no link key of participant {to} yet")))?;
        Ok(seal(
            out,
            nonce(purpose, step, round),
            &aad(&self.study, purpose, step, round, self.me, to),
            plaintext,
        ))
    }

    pub fn open(
        &self,
        from: ParticipantId,
        purpose: Purpose,
        step: u32,
        round: u32,
        ciphertext: &[u8],
    ) -> Result<Vec<u8>, StudyError> {
        let (_, inn) = self.keys.get(&from).ok_or_else(|| {
            StudyError::Protocol(format!(
                "a sealed {} from participant {from} before its link key",
                purpose.name()
            ))
        })?;
        open(
            inn,
            nonce(purpose, step, round),
            &aad(&self.study, purpose, step, round, from, self.me),
            ciphertext,
        )
        .ok_or_else(|| {
            StudyError::Malformed(format!(
                "the sealed {} from participant {from} (step {step}, round {round}) does not open: \
                 tampered, replayed or under another key",
                purpose.name()
            ))
        })
    }
}
