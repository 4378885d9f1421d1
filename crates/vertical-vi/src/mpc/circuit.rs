//! The gradient circuit of spec B3 step 3 for one batch, and its two runners.
//!
//! Inputs: party p secret-shares its own mat^p (B×K) and dlog^p (B×K×e_p, already ∇_ζ, see
//! `batch.rs`) ([`PartyLocal`]); π and C are public. Under MPC: mat_nk = Π_p mat^p_nk;
//! den_n = Σ_k π_k mat_nk; inv_n = 1/den_n; GP_nk = mat_nk·inv_n; r_nk = π_k·GP_nk;
//! GY_nk = r_nk − π_k (k < K − 1: the π block in ζ, a local subtraction of a public constant);
//! GR^p_nk = r_nk·dlog^p_nk; g_n = [GY_n, GR^1_n, …, GR^P_n] (the ζ layout);
//! u_n = ‖g_n‖²/C²; the factor min(1, C/‖g_n‖) = 1 + [u_n ≥ 1]·(u_n^{−1/2} − 1) (spec D11: the
//! joint vector); G̃ = Σ_n factor_n·g_n + Σ_p ζ^p. Only G̃ is opened (spec D12).
//!
//! The π block in ζ costs no round: r_nk was already computed (as π_k·GP_nk, for GR), and GY is a
//! gather and a public constant added to it. The θ-space GP_nk (≥ 1/π_k where a component
//! explains the record) could not simply be pulled back by the aggregator after opening: the
//! clip acts per example, on the vector the circuit builds, so the bounded r_nk − π_k must be in
//! that vector.
//!
//! Valid ranges (outside them the MPC computes garbage silently; `fixed` reports
//! [`MpcError::Overflow`] where it can): den_n ∈ [`GradientConfig::recip_range`]; every product
//! below 2^22 in magnitude (e.g. mat_nk and mat^p·dlog-sized values); ‖g_n‖² < 2^22 and
//! ‖g_n‖/C < 2^{m+1} with m = [`GradientConfig::rsqrt_levels`].

use capelab_core::rng::Seed;
use rand_core::Rng;

use crate::batch::PartyLocal;
use crate::mpc::MpcError;
use crate::mpc::fixed::run_fixed;
use crate::mpc::noise::party_variance;
use crate::mpc::program::{Builder, Program};
use crate::mpc::ring::{FRAC_BITS, decode, encode, encode_all};
use crate::mpc::run::{RunReport, run_in_process};

/// The clip's comparison [u ≥ 1] reads u at f − CMP_SHIFT = 20 fractional bits (a 44-bit
/// comparison instead of 56).
const CMP_SHIFT: u32 = 12;

/// The public sizes of one batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    pub batch: usize,
    pub components: usize,
    /// e_p per party (the width of its dlog).
    pub widths: Vec<usize>,
}

impl Shape {
    /// The shape of these parties' local results, checked for agreement.
    pub fn of(parties: &[PartyLocal]) -> Result<Self, MpcError> {
        let first =
            parties.first().ok_or_else(|| MpcError::BadInput { what: "no parties".into() })?;
        for (i, p) in parties.iter().enumerate() {
            if p.batch != first.batch || p.components != first.components {
                return Err(MpcError::BadInput {
                    what: format!("party {i} has a different batch or K"),
                });
            }
            if p.mat.len() != p.batch * p.components
                || p.dlog.len() != p.batch * p.components * p.width
            {
                return Err(MpcError::BadInput {
                    what: format!("party {i}'s mat or dlog has the wrong length"),
                });
            }
        }
        Ok(Self {
            batch: first.batch,
            components: first.components,
            widths: parties.iter().map(|p| p.width).collect(),
        })
    }

    /// D = (K − 1) + K·Σ_p e_p, the ζ length.
    pub fn dim(&self) -> usize {
        self.components.saturating_sub(1) + self.components * self.widths.iter().sum::<usize>()
    }
}

/// The public parameters of the circuit.
#[derive(Clone, Debug, PartialEq)]
pub struct GradientConfig {
    /// π (length K).
    pub pi: Vec<f64>,
    /// C, the clip bound.
    pub clip: f64,
    /// σ, the noise multiplier (0 = no noise: tests only).
    pub sigma: f64,
    /// The range [lo, hi] of den over which the reciprocal is accurate.
    pub recip_range: (f64, f64),
    /// m: the inverse square root is accurate for ‖g‖/C < 2^{m+1}.
    pub rsqrt_levels: usize,
}

impl GradientConfig {
    /// Defaults: den ∈ [2^{−10}, 2^8], ‖g‖/C < 2^11.
    pub fn new(pi: Vec<f64>, clip: f64, sigma: f64) -> Self {
        Self { pi, clip, sigma, recip_range: (2f64.powi(-10), 2f64.powi(8)), rsqrt_levels: 10 }
    }
}

/// Builds the circuit for `shape` (spec B3 step 3).
pub fn gradient_program(shape: &Shape, cfg: &GradientConfig) -> Result<Program, MpcError> {
    let (b, k, widths) = (shape.batch, shape.components, &shape.widths);
    let parties = widths.len();
    if cfg.pi.len() != k {
        return Err(MpcError::BadInput {
            what: format!("π has {} entries, K = {k}", cfg.pi.len()),
        });
    }
    if !(cfg.clip.is_finite() && cfg.clip > 0.0 && cfg.sigma.is_finite() && cfg.sigma >= 0.0) {
        return Err(MpcError::BadInput { what: "C must be positive and σ non-negative".into() });
    }
    let (lo, hi) = cfg.recip_range;
    if !(lo > 0.0 && lo < hi && hi < 2f64.powi(20)) {
        return Err(MpcError::BadInput { what: format!("reciprocal range [{lo}, {hi}]") });
    }
    let m = cfg.rsqrt_levels;
    if !(1..=20).contains(&m) {
        return Err(MpcError::BadInput { what: format!("rsqrt levels {m} outside 1..=20") });
    }
    let d = shape.dim();
    let pi_enc = encode_all(&cfg.pi)?;
    let pi_tiled: Vec<u128> = (0..b).flat_map(|_| pi_enc.iter().copied()).collect();

    let mut bl = Builder::new(parties);
    let inputs: Vec<(usize, usize)> =
        (0..parties).map(|p| (bl.input(p, b * k), bl.input(p, b * k * widths[p]))).collect();
    // mat_nk = Π_p mat^p_nk
    let mut mat = inputs[0].0;
    for inp in &inputs[1..] {
        mat = bl.fmul(mat, inp.0);
    }
    // den_n = Σ_k π_k mat_nk (public π: local products, one truncation of the sum)
    let pm = bl.mul_const(mat, pi_tiled.clone());
    let den = bl.sum_groups(pm, k);
    let den = bl.trunc(den);
    let inv = bl.recip(den, lo, hi);
    let inv_rep = bl.gather(inv, (0..b * k).map(|i| (i / k) as u32).collect());
    let gp = bl.fmul(mat, inv_rep);
    let pgp = bl.mul_const(gp, pi_tiled);
    let pgp = bl.trunc(pgp);
    // GR^p_nkj = (π_k GP_nk) · dlog^p_nkj, all parties in one product layer; r = π_k GP_nk is
    // opened once per (n, k), not once per j (a broadcast triple)
    let dlogs: Vec<usize> = inputs.iter().map(|i| i.1).collect();
    let dlog = bl.concat(&dlogs);
    let rep: Vec<u32> =
        widths.iter().flat_map(|&w| (0..b * k * w).map(move |i| (i / w) as u32)).collect();
    let gr = bl.mul_gather(pgp, dlog, rep);
    let gr = bl.trunc(gr);
    let gr = bl.split(gr, &dlogs);
    // GY_nk = r_nk − π_k for k < K − 1
    let head = k - 1;
    let gy = bl.gather(pgp, (0..b * head).map(|i| ((i / head) * k + i % head) as u32).collect());
    let minus_pi: Vec<u128> =
        (0..b).flat_map(|_| pi_enc[..head].iter().map(|v| v.wrapping_neg())).collect();
    let gy = bl.add_const(gy, minus_pi);
    // g_n = [GY_n, GR^1_n, …] row-major B × D
    let mut parts = vec![gy];
    parts.extend(&gr);
    let all = bl.concat(&parts);
    let mut idx = Vec::with_capacity(b * d);
    for n in 0..b {
        idx.extend((0..head).map(|c| (n * head + c) as u32));
        let mut off = b * head;
        for &w in widths {
            idx.extend((0..k * w).map(|c| (off + n * k * w + c) as u32));
            off += b * k * w;
        }
    }
    let g = bl.gather(all, idx);
    // g is opened once, masked: E = g − A (uniform A from the dealer). ‖g_n‖² and, below,
    // Σ_n f_n g_n are computed from E and shares of A (spec D12: E reveals nothing of g).
    let (e, a, sq) = bl.mask_open(g, d);
    // u = ‖g‖²/C², hu = u/2, and u at 20 fractional bits for the comparisons
    let s = bl.trunc(sq);
    let ss = bl.concat(&[s, s]);
    let c2 = 1.0 / (cfg.clip * cfg.clip);
    let scale: Vec<u128> = [encode(0.5 * c2)?, encode(c2 / (1u64 << CMP_SHIFT) as f64)?]
        .iter()
        .flat_map(|&v| std::iter::repeat_n(v, b))
        .collect();
    let uu = bl.mul_const(ss, scale);
    let uu = bl.trunc(uu);
    let (hu, u20) = (bl.slice(uu, 0, b), bl.slice(uu, b, b));
    // t_nj = [u_n ≥ 4^j], j = 0..=m. t_n0 (the clip is active) is compared at 2^−20: the MPC's
    // truncation may add one unit, so t_0 can differ from fixed mode's for u ∈ [1 − 2^−20, 1),
    // where the factor below differs from 1 by at most 2^−21. t_nj for j ≥ 1 only pick the
    // inverse square root's start, so they compare u at 2^−2 (26-bit instead of 44-bit
    // comparisons): one unit too many moves the start by a factor 2 only for u ∈ [4^j − 1/4,
    // 4^j), where |1 − u y₀²| ≤ 0.625 and the 5 iterations still reach 10^−8.
    let cmp_frac = FRAC_BITS - CMP_SHIFT;
    // u20·2^14 / 2^32 = u·4
    let u4 = bl.mul_const(u20, vec![1u128 << (CMP_SHIFT + 2)]);
    let u4 = bl.trunc(u4);
    let u4_rep = bl.gather(u4, (0..b * m).map(|i| (i / m) as u32).collect());
    let pow: Vec<u128> = std::iter::repeat_n(1u128 << cmp_frac, b)
        .chain((0..b).flat_map(|_| (1..=m).map(|j| (1u128 << (2 * j)) << 2)))
        .collect();
    let pow = bl.constant(pow);
    let both = bl.concat(&[u20, u4_rep]);
    let x = bl.sub(both, pow);
    let top = 2 * (m as u32 + 1) + 2;
    let widths: Vec<u32> =
        std::iter::repeat_n(cmp_frac + top, b).chain(std::iter::repeat_n(2 + top, b * m)).collect();
    let t = bl.geq_zero_mixed(x, widths);
    // element-major, m + 1 per example, as rsqrt wants
    let t = bl.gather(
        t,
        (0..b)
            .flat_map(|n| {
                std::iter::once(n as u32).chain((0..m).map(move |j| (b + n * m + j) as u32))
            })
            .collect(),
    );
    let y = bl.rsqrt(hu, t, m);
    // factor = 1 + t_0·(y − 1) = min(1, C/‖g‖)
    let t0 = bl.gather(t, (0..b).map(|n| (n * (m + 1)) as u32).collect());
    let ym1 = bl.add_const(y, vec![encode(1.0)?.wrapping_neg()]);
    let f = bl.mul(t0, ym1);
    let f = bl.add_const(f, vec![encode(1.0)?]);
    // Σ_n f_n g_n: one opening of f − b (B values), then the D sums truncated
    let gs = bl.mat_vec(f, e, a);
    let mut sum = bl.trunc(gs);
    if cfg.sigma > 0.0 {
        sum = bl.add_noise(sum, party_variance(cfg.clip, cfg.sigma, parties));
    }
    bl.open(sum);
    Ok(bl.finish())
}

/// Party p's inputs: encoded mat^p and dlog^p (ζ-space, `batch.rs`).
pub fn party_inputs(local: &PartyLocal) -> Result<Vec<Vec<u128>>, MpcError> {
    Ok(vec![encode_all(&local.mat)?, encode_all(&local.dlog)?])
}

/// G̃ by the MPC (all parties and the dealer in this process), decoded, with the run's report.
pub fn mpc_clipped_sum(
    parties: &[PartyLocal],
    cfg: &GradientConfig,
    seed: Seed,
) -> Result<(Vec<f64>, RunReport), MpcError> {
    let prog = gradient_program(&Shape::of(parties)?, cfg)?;
    let inputs = parties.iter().map(party_inputs).collect::<Result<Vec<_>, _>>()?;
    let report = run_in_process(&prog, inputs, seed, false)?;
    Ok((report.output.iter().map(|&v| decode(v)).collect(), report))
}

/// G̃ by the plaintext fixed-point simulation of the same circuit.
pub fn fixed_clipped_sum(
    parties: &[PartyLocal],
    cfg: &GradientConfig,
    rng: &mut impl Rng,
) -> Result<Vec<f64>, MpcError> {
    let prog = gradient_program(&Shape::of(parties)?, cfg)?;
    let inputs = parties.iter().map(party_inputs).collect::<Result<Vec<_>, _>>()?;
    Ok(run_fixed(&prog, inputs, rng)?.iter().map(|&v| decode(v)).collect())
}
