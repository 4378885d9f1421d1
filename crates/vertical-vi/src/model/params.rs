//! The parameters θ of the mixture (spec B2), their unconstrained form ζ, the bijection θ = T(ζ)
//! with its log|det J_T|, and the priors.
//!
//! # θ layout
//!
//! `θ = [π (K), ρ^1 (K × d_1), …, ρ^P (K × d_P)]`: party p's block starts at
//! [`Model::party_theta_offset`]` = K + K·Σ_{q<p} d_q`; inside it, component k's parameters start
//! at `k·d_p`, and the features follow the party's schema in order: a Beta feature takes 2 slots
//! `(a, b)`, a Categorical with L labels takes L slots `ω[0..L]`.
//!
//! # ζ layout (the layout of the clipped sum, `batch.rs`)
//!
//! `ζ = [y_π (K − 1), ζ^1 (K × e_1), …, ζ^P (K × e_P)]` with e_p = Σ_j (2 for a Beta, L − 1 for a
//! Categorical): the same order as θ, each simplex losing its last coordinate. Party p's block
//! starts at [`Model::party_zeta_offset`]; inside it, component k's parameters start at `k·e_p`.
//! The per-example gradients are computed, clipped and summed directly in this layout: each party
//! applies the (public, per-block) chain rule through T to its own ∇_θ log F_p, and the MPC forms
//! the π block from the responsibilities (`batch.rs`).
//!
//! # The transform T
//!
//! * Simplices (π and each ω): **softmax with the last logit pinned at 0** (the additive
//!   log-ratio inverse), π_i = e^{y_i} / (1 + Σ_{j<L} e^{y_j}). Chosen over stick-breaking because
//!   it is a bijection R^{L−1} → open simplex (so the density of ζ is proper, unlike an
//!   over-parameterised softmax), its log|det J| is simply Σ_{i=1}^{L} log π_i with gradient
//!   1 − L·π_j, and its chain rule ∂π_i/∂y_j = π_i(δ_ij − π_j) is O(L) and treats the L labels
//!   symmetrically (stick-breaking is order-dependent). With the Dir(1) prior the ζ-density is
//!   Π π_i, a logistic-normal-like bump that a Gaussian q fits well.
//! * Positives (Beta a, b): **exp**, log|det J| = ζ. exp rather than softplus: the Gamma(1,1) prior
//!   then gives the ζ-density exp(ζ − e^ζ), log-concave, and the chain rule is a product.
//!
//! The spec's eq. 8 omits log|det J_T|; we add it (spec B2, D7).

use crate::schema::{FeatureKind, Schema};
use capelab_core::special::ln_gamma;
use serde::{Deserialize, Serialize};

/// One constrained block of θ and where it lives in θ and ζ.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Segment {
    /// A simplex of `len` coordinates at θ[theta..theta+len], from ζ[zeta..zeta+len−1].
    Simplex { theta: usize, zeta: usize, len: usize },
    /// One positive coordinate θ[theta] = exp(ζ[zeta]).
    Positive { theta: usize, zeta: usize },
}

/// The mixture model's shape: the public schema and K. All maps between θ and ζ live here.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub schema: Schema,
    pub components: usize,
    segments: Vec<Segment>,
    /// ζ indices in the canonical order (π, then by component, global feature, slot): random draws
    /// are made in this order so that splitting the columns differently draws the same numbers.
    canonical: Vec<usize>,
}

impl Model {
    /// The model for `schema` with K = `components` ≥ 1 mixture components.
    pub fn new(schema: Schema, components: usize) -> Self {
        assert!(components >= 1, "K ≥ 1");
        let k = components;
        let mut segments = vec![Segment::Simplex { theta: 0, zeta: 0, len: k }];
        // key (component, global feature, slot) for each ζ index of the parties' blocks
        let mut keys: Vec<(usize, usize, usize, usize)> =
            (0..k - 1).map(|i| (0, 0, 0, i)).collect();
        let (mut theta, mut zeta) = (k, k - 1);
        let mut global = 0;
        for party in &schema.parties {
            for c in 0..k {
                for (j, f) in party.features.iter().enumerate() {
                    match &f.kind {
                        FeatureKind::Beta { .. } => {
                            for slot in 0..2 {
                                segments.push(Segment::Positive { theta, zeta });
                                keys.push((1, c, global + j, slot));
                                theta += 1;
                                zeta += 1;
                            }
                        }
                        FeatureKind::Categorical { labels } => {
                            let len = labels.len();
                            assert!(len >= 1, "a Categorical needs a label");
                            segments.push(Segment::Simplex { theta, zeta, len });
                            for slot in 0..len - 1 {
                                keys.push((1, c, global + j, slot));
                            }
                            theta += len;
                            zeta += len - 1;
                        }
                    }
                }
            }
            global += party.features.len();
        }
        debug_assert_eq!(theta, schema.gradient_len(k));
        let mut canonical: Vec<usize> = (0..zeta).collect();
        canonical.sort_by_key(|&i| keys[i]);
        Model { schema, components, segments, canonical }
    }

    /// |θ| = D = K(1 + Σ_p d_p).
    pub fn theta_len(&self) -> usize {
        self.schema.gradient_len(self.components)
    }

    /// |ζ| = (K − 1) + K·Σ_p e_p.
    pub fn zeta_len(&self) -> usize {
        self.canonical.len()
    }

    /// d_p, party p's θ-parameters per component.
    pub fn party_width(&self, p: usize) -> usize {
        self.schema.parties[p].parameters()
    }

    /// Where party p's θ block (K × d_p) starts.
    pub fn party_theta_offset(&self, p: usize) -> usize {
        self.components * (1 + (0..p).map(|q| self.party_width(q)).sum::<usize>())
    }

    /// e_p, party p's ζ-parameters per component (2 per Beta, L − 1 per Categorical): the width of
    /// its `dlog` ([`crate::batch::PartyLocal`]).
    pub fn party_zeta_width(&self, p: usize) -> usize {
        self.schema.parties[p].zeta_parameters()
    }

    /// Where party p's ζ block (K × e_p) starts.
    pub fn party_zeta_offset(&self, p: usize) -> usize {
        self.components - 1
            + self.components * (0..p).map(|q| self.party_zeta_width(q)).sum::<usize>()
    }

    /// The constrained blocks, in θ order.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// ζ indices in the canonical order, independent of how columns are split among parties.
    pub fn canonical_order(&self) -> &[usize] {
        &self.canonical
    }

    /// θ = T(ζ).
    pub fn transform(&self, zeta: &[f64]) -> Vec<f64> {
        assert_eq!(zeta.len(), self.zeta_len());
        let mut theta = vec![0.0; self.theta_len()];
        for s in &self.segments {
            match *s {
                Segment::Positive { theta: t, zeta: z } => theta[t] = zeta[z].exp(),
                Segment::Simplex { theta: t, zeta: z, len } => {
                    let y = &zeta[z..z + len - 1];
                    let m = y.iter().fold(0.0f64, |m, &v| m.max(v));
                    let mut total = (-m).exp();
                    for (i, &v) in y.iter().enumerate() {
                        let e = (v - m).exp();
                        theta[t + i] = e;
                        total += e;
                    }
                    theta[t + len - 1] = (-m).exp();
                    for v in &mut theta[t..t + len] {
                        *v /= total;
                    }
                }
            }
        }
        theta
    }

    /// log|det J_T(ζ)|: Σ log π_i per simplex (computed from ζ, without underflow), ζ per positive.
    pub fn log_det_jacobian(&self, zeta: &[f64]) -> f64 {
        let mut sum = 0.0;
        for s in &self.segments {
            match *s {
                Segment::Positive { zeta: z, .. } => sum += zeta[z],
                Segment::Simplex { zeta: z, len, .. } => {
                    let y = &zeta[z..z + len - 1];
                    let m = y.iter().fold(0.0f64, |m, &v| m.max(v));
                    let lse = m + ((-m).exp() + y.iter().map(|v| (v - m).exp()).sum::<f64>()).ln();
                    sum += y.iter().sum::<f64>() - len as f64 * lse;
                }
            }
        }
        sum
    }

    /// ∇_ζ log|det J_T|: 1 − L·π_j on a simplex's free coordinates, 1 on a positive.
    pub fn grad_log_det_jacobian(&self, theta: &[f64]) -> Vec<f64> {
        let mut g = vec![0.0; self.zeta_len()];
        for s in &self.segments {
            match *s {
                Segment::Positive { zeta: z, .. } => g[z] = 1.0,
                Segment::Simplex { theta: t, zeta: z, len } => {
                    for j in 0..len - 1 {
                        g[z + j] = 1.0 - len as f64 * theta[t + j];
                    }
                }
            }
        }
        g
    }

    /// log p(θ): Dir(1) on each simplex (log Γ(L), a constant), Gamma(1,1) on each positive (−θ).
    pub fn log_prior(&self, theta: &[f64]) -> f64 {
        self.segments
            .iter()
            .map(|s| match *s {
                Segment::Positive { theta: t, .. } => -theta[t],
                Segment::Simplex { len, .. } => ln_gamma(len as f64),
            })
            .sum()
    }

    /// ∇_θ log p(θ): 0 on simplices (Dir(1) is flat), −1 on positives (Gamma(1,1)).
    pub fn grad_log_prior_theta(&self) -> Vec<f64> {
        let mut g = vec![0.0; self.theta_len()];
        for s in &self.segments {
            if let Segment::Positive { theta: t, .. } = *s {
                g[t] = -1.0;
            }
        }
        g
    }

    /// The chain rule through T: given ∇_θ f at θ = T(ζ) (simplex coordinates treated as free),
    /// return ∇_ζ (f ∘ T). The aggregator uses it for the prior only; the likelihood's per-example
    /// gradients are formed in ζ directly (`batch.rs`, `local.rs`), which is the same map block by
    /// block:
    /// π_j(g_j − Σ_i π_i g_i) on a simplex's free coordinates, θ·g on a positive.
    pub fn pullback(&self, theta: &[f64], grad_theta: &[f64]) -> Vec<f64> {
        assert_eq!(grad_theta.len(), self.theta_len());
        let mut g = vec![0.0; self.zeta_len()];
        for s in &self.segments {
            match *s {
                Segment::Positive { theta: t, zeta: z } => g[z] = theta[t] * grad_theta[t],
                Segment::Simplex { theta: t, zeta: z, len } => {
                    let pi = &theta[t..t + len];
                    let gt = &grad_theta[t..t + len];
                    let mean: f64 = pi.iter().zip(gt).map(|(p, v)| p * v).sum();
                    for j in 0..len - 1 {
                        g[z + j] = pi[j] * (gt[j] - mean);
                    }
                }
            }
        }
        g
    }

    /// The inverse of T (for initialising at, or comparing with, a known θ): log-ratios to the
    /// last coordinate on simplices, log on positives.
    pub fn inverse_transform(&self, theta: &[f64]) -> Vec<f64> {
        let mut zeta = vec![0.0; self.zeta_len()];
        for s in &self.segments {
            match *s {
                Segment::Positive { theta: t, zeta: z } => zeta[z] = theta[t].ln(),
                Segment::Simplex { theta: t, zeta: z, len } => {
                    let last = theta[t + len - 1].ln();
                    for j in 0..len - 1 {
                        zeta[z + j] = theta[t + j].ln() - last;
                    }
                }
            }
        }
        zeta
    }
}
