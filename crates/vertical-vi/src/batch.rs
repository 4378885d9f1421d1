//! The boundary between a party's plaintext work and the MPC (spec B3 steps 2–3): what each party
//! computes locally for one batch, and the reference (f64) form of what the MPC computes from it.

use serde::{Deserialize, Serialize};

/// What party p computes locally, in plaintext, for the n ∈ batch and k = 1..K (spec B3 step 2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartyLocal {
    /// B, the batch size.
    pub batch: usize,
    /// K, the mixture components.
    pub components: usize,
    /// d_p, this party's parameters per component.
    pub width: usize,
    /// mat^p_nk = exp(ℓ^p_nk + c^p_n), renormalised (spec B3, Alg. 4), row-major B × K.
    pub mat: Vec<f64>,
    /// dlog^p_nk = ∇_{ρ_k^p} log F_p(x_n^p), row-major B × K × d_p.
    pub dlog: Vec<f64>,
}

/// The clipped batch sum Σ_n g_n / max(1, ‖g_n‖₂ / C) in plain f64, without noise: the reference
/// that the `fixed` and `mpc` modes must reproduce. The layout of each g_n is
/// `[GP (K), GR^1 (K × d_1), …, GR^P (K × d_P)]`, with GP_nk = mat_nk / den_n,
/// GR^p_nk = π_k · GP_nk · dlog^p_nk, mat_nk = Π_p mat^p_nk and den_n = Σ_k π_k mat_nk.
/// An example whose den is 0 contributes nothing (spec B3: "den = 0 yields 0").
pub fn clipped_sum_plain(pi: &[f64], parties: &[PartyLocal], clip: f64) -> Vec<f64> {
    let k = pi.len();
    let batch = parties.first().map_or(0, |p| p.batch);
    let len = k * (1 + parties.iter().map(|p| p.width).sum::<usize>());
    let mut sum = vec![0.0; len];
    let mut g = vec![0.0; len];
    for n in 0..batch {
        let mat: Vec<f64> =
            (0..k).map(|c| parties.iter().map(|p| p.mat[n * k + c]).product()).collect();
        let den: f64 = pi.iter().zip(&mat).map(|(p, m)| p * m).sum();
        if den <= 0.0 {
            continue;
        }
        let mut at = 0;
        for c in 0..k {
            g[at + c] = mat[c] / den;
        }
        at += k;
        for p in parties {
            for c in 0..k {
                let r = pi[c] * g[c];
                for j in 0..p.width {
                    g[at + c * p.width + j] = r * p.dlog[(n * k + c) * p.width + j];
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
