//! The gradient circuit of spec B3 step 3 for one batch, and its two runners.
//!
//! Inputs: party p secret-shares its own mat^p (B×K) and ℓ^p (B×K, ℓ^p_nk = Σ_j (dlog^p_nkj)²),
//! and keeps dlog^p (B×K×e_p, already ∇_ζ, see `batch.rs`) to itself ([`PartyLocal`]); π and C
//! are public. Under MPC: mat_nk = Π_p mat^p_nk; den_n = Σ_k π_k mat_nk; inv_n = 1/den_n;
//! GP_nk = mat_nk·inv_n; r_nk = π_k·GP_nk; GY_nk = r_nk − π_k (k < K − 1: the π block in ζ);
//! GR^p_nkj = r_nk·dlog^p_nkj; g_n = [GY_n, GR^1_n, …, GR^P_n] (the ζ layout). The clip needs
//! only ‖g_n‖² = Σ_{k<K−1} GY_nk² + Σ_k r_nk²·Σ_p ℓ^p_nk (spec D11: the norm of the joint vector),
//! so g_n itself is never formed: with u_n = ‖g_n‖²/C² and
//! f_n = min(1, C/‖g_n‖) = 1 + [u_n ≥ 1]·(u_n^{−1/2} − 1), the clipped sum is
//! G̃ = [Σ_n f_n GY_n, Σ_n w_n ⊗ dlog^1_n, …] + Σ_p ζ^p with w_nk = f_n·r_nk, the GR blocks by
//! [`crate::mpc::program::Op::OwnedMatVec`] (each dlog^p travels once, masked, from its owner).
//! Only G̃ is opened (spec D12).
//!
//! The θ-space GP_nk (≥ 1/π_k where a component explains the record) could not simply be pulled
//! back by the aggregator after opening: the clip acts per example, on the vector the circuit
//! builds, so the bounded r_nk − π_k must be in that vector.
//!
//! Valid ranges (outside them the MPC computes garbage silently; `fixed` reports
//! [`MpcError::Overflow`] where it can): den_n ∈ [`GradientConfig::recip_range`]; every product
//! below 2^22 in magnitude (e.g. mat_nk, r_nk²·ℓ_nk and the batch sums); ‖g_n‖² < 2^22 and
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
    let pi_enc = encode_all(&cfg.pi)?;
    let pi_tiled: Vec<u128> = (0..b).flat_map(|_| pi_enc.iter().copied()).collect();

    let mut bl = Builder::new(parties);
    let inputs: Vec<(usize, usize, usize)> = (0..parties)
        .map(|p| (bl.input(p, b * k), bl.input(p, b * k), bl.private(p, b * k * widths[p])))
        .collect();
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
    let r = bl.mul_const(gp, pi_tiled);
    let r = bl.trunc(r);
    // GY_nk = r_nk − π_k for k < K − 1
    let head = k - 1;
    let gy = bl.gather(r, (0..b * head).map(|i| ((i / head) * k + i % head) as u32).collect());
    let minus_pi: Vec<u128> =
        (0..b).flat_map(|_| pi_enc[..head].iter().map(|v| v.wrapping_neg())).collect();
    let gy = bl.add_const(gy, minus_pi);
    // ‖g_n‖² = Σ_k GY_nk² + Σ_k r_nk²·ℓ_nk, ℓ = Σ_p ℓ^p
    let mut ell = inputs[0].1;
    for inp in &inputs[1..] {
        ell = bl.add(ell, inp.1);
    }
    let sq = bl.fmul_many(&[(gy, gy), (r, r)]);
    let r2l = bl.fmul(sq[1], ell);
    let gy2 = bl.sum_groups(sq[0], head);
    let r2l = bl.sum_groups(r2l, k);
    let s = bl.add(gy2, r2l);
    // u = ‖g‖²/C², hu = u/2, and u at 20 fractional bits for the comparisons
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
    // Σ_n f_n g_n: the GR blocks as Σ_n w_nk·dlog^p_nkj with w_nk = f_n·r_nk; the GY block as
    // Σ_n w_nk − π_k·Σ_n f_n; all at 2^{2f}, then truncated together
    let f_rep = bl.gather(f, (0..b * k).map(|i| (i / k) as u32).collect());
    let w = bl.fmul(f_rep, r);
    let dlogs: Vec<(usize, usize)> = inputs.iter().enumerate().map(|(p, i)| (p, i.2)).collect();
    let gr = bl.owned_mat_vec(w, k, &dlogs);
    let cw = bl.column_sum(w, k);
    let cw = bl.slice(cw, 0, head);
    let cw = bl.mul_const(cw, vec![1u128 << FRAC_BITS]);
    let fsum = bl.sum_groups(f, b);
    let fsum = bl.gather(fsum, vec![0; head]);
    let pf = bl.mul_const(fsum, pi_enc[..head].to_vec());
    let gy_sum = bl.sub(cw, pf);
    let mut parts = vec![gy_sum];
    parts.extend(gr);
    let gs = bl.concat(&parts);
    let mut sum = bl.trunc(gs);
    if cfg.sigma > 0.0 {
        sum = bl.add_noise(sum, party_variance(cfg.clip, cfg.sigma, parties));
    }
    bl.open(sum);
    Ok(bl.finish())
}

/// Party p's inputs: encoded mat^p and ℓ^p (shared) and dlog^p (ζ-space, `batch.rs`; kept).
pub fn party_inputs(local: &PartyLocal) -> Result<Vec<Vec<u128>>, MpcError> {
    let ell: Vec<f64> = if local.width == 0 {
        vec![0.0; local.mat.len()]
    } else {
        local.dlog.chunks(local.width).map(|d| d.iter().map(|x| x * x).sum()).collect()
    };
    Ok(vec![encode_all(&local.mat)?, encode_all(&ell)?, encode_all(&local.dlog)?])
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
