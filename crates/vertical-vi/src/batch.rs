//! The boundary between a party's plaintext work and the MPC (spec B3 steps 2–3): what each party
//! computes locally for one batch, and the reference (f64) form of what the MPC computes from it.
//!
//! # The per-example vector is in ζ (the unconstrained parameters)
//!
//! The paper clips per-example gradients in θ-space. We clip them in ζ-space (`params.rs`): the
//! layout of each g_n is the ζ layout, `[GY (K − 1), GR^1 (K × e_1), …, GR^P (K × e_P)]`, with
//! * GY_nk = r_nk − π_k for k < K − 1: ∂/∂y_k log Σ_k π_k F_nk under π = softmax(y, 0), where
//!   r_nk = π_k·mat_nk/den_n is the responsibility (Σ_k r_nk = 1), so |GY_nk| ≤ 1 and
//!   ‖GY_n‖² ≤ 2. The θ-space GP_nk = mat_nk/den_n it replaces is ≥ 1/π_k for the records a
//!   component explains, unbounded as π_k → 0;
//! * GR^p_nk = r_nk·dlog^p_nk with dlog = ∇_ζ log F_p (`model/local.rs`): a Categorical's part
//!   has squared norm ≤ 2·r_nk², so ≤ 2 summed over k.
//!
//! (A simplex of two, whose one free coordinate is bounded by 1, contributes ≤ 1 instead of 2.)
//! So the part of g_n outside the Beta blocks has norm ≤ [`norm_bound_without_betas`], √(2(1 + J))
//! at most for J Categoricals, for every record: a public, data-independent bound from which C can
//! be chosen. The unclipped sum is exactly J_Tᵀ of the θ-space sum (the chain rule, tested); only
//! what the clip sees changes. The aggregator therefore needs no pullback for the likelihood part.

use crate::schema::{FeatureKind, Schema};
use serde::{Deserialize, Serialize};

/// The supremum of ‖g_n‖ over every record and θ, restricted to the π block and the Categorical
/// blocks (the Beta blocks are unbounded): √(Σ over those simplices of (1 if it has 2 entries,
/// else 2)), the π simplex having K entries. Public: it depends on the schema and K only.
pub fn norm_bound_without_betas(schema: &Schema, components: usize) -> f64 {
    let simplex = |len: usize| match len {
        0 | 1 => 0.0,
        2 => 1.0,
        _ => 2.0,
    };
    let cats: f64 = schema
        .parties
        .iter()
        .flat_map(|p| &p.features)
        .map(|f| match &f.kind {
            FeatureKind::Categorical { labels } => simplex(labels.len()),
            FeatureKind::Beta { .. } => 0.0,
        })
        .sum();
    (simplex(components) + cats).sqrt()
}

/// What party p computes locally, in plaintext, for the n ∈ batch and k = 1..K (spec B3 step 2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartyLocal {
    /// B, the batch size.
    pub batch: usize,
    /// K, the mixture components.
    pub components: usize,
    /// e_p, this party's **unconstrained** parameters per component (2 per Beta, L − 1 per
    /// Categorical; `Model::party_zeta_width`).
    pub width: usize,
    /// mat^p_nk = exp(ℓ^p_nk + c^p_n), renormalised (spec B3, Alg. 4), row-major B × K.
    pub mat: Vec<f64>,
    /// dlog^p_nk = ∇_{ζ_k^p} log F_p(x_n^p), row-major B × K × e_p.
    pub dlog: Vec<f64>,
}

/// The clipped batch sum Σ_n g_n / max(1, ‖g_n‖₂ / C) in plain f64, without noise: the reference
/// that the `fixed` and `mpc` modes must reproduce. The layout of each g_n is
/// `[GY (K − 1), GR^1 (K × e_1), …, GR^P (K × e_P)]` (the ζ layout), with GY_nk = r_nk − π_k,
/// GR^p_nk = r_nk · dlog^p_nk, r_nk = π_k · mat_nk / den_n, mat_nk = Π_p mat^p_nk and
/// den_n = Σ_k π_k mat_nk. An example whose den is 0 contributes nothing (spec B3: "den = 0
/// yields 0"; in f64 that needs every mat_nk to underflow).
pub fn clipped_sum_plain(pi: &[f64], parties: &[PartyLocal], clip: f64) -> Vec<f64> {
    let k = pi.len();
    let batch = parties.first().map_or(0, |p| p.batch);
    let head = k.saturating_sub(1);
    let len = head + k * parties.iter().map(|p| p.width).sum::<usize>();
    let mut sum = vec![0.0; len];
    let mut g = vec![0.0; len];
    let mut r = vec![0.0; k];
    for n in 0..batch {
        let mat: Vec<f64> =
            (0..k).map(|c| parties.iter().map(|p| p.mat[n * k + c]).product()).collect();
        let den: f64 = pi.iter().zip(&mat).map(|(p, m)| p * m).sum();
        if den <= 0.0 {
            continue;
        }
        for c in 0..k {
            r[c] = pi[c] * (mat[c] / den);
        }
        for c in 0..head {
            g[c] = r[c] - pi[c];
        }
        let mut at = head;
        for p in parties {
            for c in 0..k {
                for j in 0..p.width {
                    g[at + c * p.width + j] = r[c] * p.dlog[(n * k + c) * p.width + j];
                }
            }
            at += k * p.width;
        }
        let norm = g.iter().map(|v| v * v).sum::<f64>().sqrt();
        let scale = 1.0 / (norm / clip).max(1.0);
        for (s, v) in sum.iter_mut().zip(&g) {
            *s += v * scale;
        }
    }
    sum
}
