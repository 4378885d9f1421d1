//! Party p's plaintext step (spec B3 step 2): from the public θ, its own [`PartyBlock`] and the
//! batch indices, the renormalised densities `mat` and the log-density gradients `dlog`.
//!
//! # dlog is in ζ, not θ
//!
//! `dlog` is ∇ log F_p with respect to party p's **unconstrained** parameters ζ^p_k (width e_p,
//! `params.rs`), not θ: the chain rule through T is per block, public, and the party knows θ, so it
//! applies it locally. This changes what the clip sees, not the unclipped gradient (tested):
//! * a Categorical (softmax, last logit pinned at 0): ∂ log ω_x/∂ζ_j = 1[x = j] − ω_j, j < L − 1,
//!   in [−1, 1] with squared norm ≤ 2, where the θ-gradient 1[x = c]/ω_c is unbounded for a rare
//!   label and made the clip down-weight exactly the rare-label records (a clip-weighted, biased
//!   stationary ω);
//! * a Beta, a = e^{ζ_a}: a·∂_a log F = a(ln x − ψ(a) + ψ(a+b)), likewise b. For a → 0,
//!   −a·ψ(a) → 1, so it stays O(1) at the clamp bounds (ln x ≥ −13.8) where the θ-gradient
//!   −ψ(a) ≈ 1/a is unbounded (10⁴ at a = 10⁻⁴). It is not bounded for large a: within a
//!   component it is a·(ln x − E ln x), of typical size √(ab/(a+b)) (the Fisher scale), and up to
//!   13.8·a for a record far in a peaked component's tail. Nothing more is done about it: the
//!   within-block direction is the θ-gradient's (a positive diagonal rescaling), so the clip
//!   weights records of one Beta in the same order as before; only its weight against the other
//!   blocks changes, and records in the far tail of every component are outliers the clip is meant
//!   to bound. (The MPC's range condition ‖g‖ < 2^11, `circuit.rs`, applies to it as it did to
//!   −ψ(a) before.)
//!
//! # The renormalisation shift (spec B3 Alg. 4, D3)
//!
//! Party p shifts every ℓ^p_n· by c_n^p = t − max_k ℓ^p_nk, so that max_k mat^p_nk = e^t exactly.
//! This is the paper's upward shift (c = max(0, t − max ℓ)) **plus a cap from above**: without
//! the cap a peaked Beta (large a, b) has log F_p ≫ 0 and den overflows both the Newton–Raphson
//! range and the fixed-point integer bits. The shift multiplies mat_n· and den_n by the same
//! C_n = Π_p e^{c_n^p}, so it cancels in GP and GR (tested).
//!
//! t = ln([`DEN_TARGET`]) / P with DEN_TARGET = 256. Then, whatever θ and x:
//! * **den_n ≤ e^{Pt} = 256** (Σ_k π_k = 1 and each mat^p ≤ e^t): below the NR range's top, 631,
//!   with a factor 2.5 to spare;
//! * **den_n ≥ 256·π_k̂** when the parties' best components agree on k̂ (always when P = 1):
//!   ≥ 0.0018 whenever π_k̂ ≥ 7·10⁻⁶. Putting the cap at the top of the range leaves the most room
//!   below (11.9 nats).
//!
//! When the parties' best components differ, den_n can still fall below 0.0018 (spec D3: per-party
//! renormalisation cannot see the other parties). The MPC's reciprocal is then inaccurate for that
//! example only; its contribution stays clipped to C, so privacy is unaffected.
//! In fixed point with 32 fractional bits each mat^p ≤ e^t ≤ 16 needs few integer bits.

use super::params::Model;
use crate::batch::PartyLocal;
use crate::schema::{Cell, FeatureKind, PartyBlock};
use capelab_core::special::ln_gamma;
use statrs::function::gamma::digamma;

/// The cap on den_n that fixes the shift target t = ln(DEN_TARGET)/P.
pub const DEN_TARGET: f64 = 256.0;

/// The shift target t for P parties: each party's largest mat^p_n· is e^t.
pub fn shift_target(parties: usize) -> f64 {
    DEN_TARGET.ln() / parties.max(1) as f64
}

/// Per-component constants of one party's densities at θ, computed once per step (digamma and
/// ln Γ depend on θ only, not on x).
#[derive(Clone, Debug)]
pub struct PartyDensity {
    components: usize,
    width: usize,
    /// e_p: the width of dlog per component.
    zeta_width: usize,
    /// per (k, feature): the pieces needed for ℓ and dlog
    terms: Vec<Term>,
    features: usize,
}

#[derive(Clone, Debug)]
enum Term {
    /// Beta(a, b): ln B(a, b), ψ(a+b) − ψ(a), ψ(a+b) − ψ(b).
    Beta { a: f64, b: f64, ln_beta: f64, da: f64, db: f64 },
    /// Categorical: ω, log ω and 1/ω (length L).
    Categorical { omega: Vec<f64>, ln_omega: Vec<f64>, inv_omega: Vec<f64> },
}

impl PartyDensity {
    /// Precompute party p's per-component constants at θ (θ layout of [`Model`]).
    pub fn new(model: &Model, p: usize, theta: &[f64]) -> Self {
        let k = model.components;
        let party = &model.schema.parties[p];
        let width = party.parameters();
        let base = model.party_theta_offset(p);
        let mut terms = Vec::with_capacity(k * party.features.len());
        for c in 0..k {
            let mut at = base + c * width;
            for f in &party.features {
                match &f.kind {
                    FeatureKind::Beta { .. } => {
                        let (a, b) = (theta[at], theta[at + 1]);
                        let ab = digamma(a + b);
                        terms.push(Term::Beta {
                            a,
                            b,
                            ln_beta: ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b),
                            da: ab - digamma(a),
                            db: ab - digamma(b),
                        });
                        at += 2;
                    }
                    FeatureKind::Categorical { labels } => {
                        let w = &theta[at..at + labels.len()];
                        terms.push(Term::Categorical {
                            omega: w.to_vec(),
                            ln_omega: w.iter().map(|v| v.ln()).collect(),
                            // an underflowed ω (mat = 0 there) must not make 0·∞ = NaN
                            inv_omega: w.iter().map(|v| 1.0 / v.max(f64::MIN_POSITIVE)).collect(),
                        });
                        at += labels.len();
                    }
                }
            }
        }
        PartyDensity {
            components: k,
            width,
            zeta_width: model.party_zeta_width(p),
            terms,
            features: party.features.len(),
        }
    }

    /// ℓ_k = log F_p(row | ρ_k^p) for k = 1..K, on the unit scale (Beta densities of the rescaled
    /// value in (0, 1)).
    pub fn log_density(&self, row: &[Cell], out: &mut [f64]) {
        for (c, o) in out.iter_mut().enumerate().take(self.components) {
            let mut l = 0.0;
            for (j, cell) in row.iter().enumerate() {
                l += match (&self.terms[c * self.features + j], *cell) {
                    (Term::Beta { a, b, ln_beta, .. }, Cell::Unit(x)) => {
                        (a - 1.0) * x.ln() + (b - 1.0) * (1.0 - x).ln() - ln_beta
                    }
                    (Term::Categorical { ln_omega, .. }, Cell::Category(i)) => ln_omega[i as usize],
                    _ => panic!("cell {j} does not match its feature kind"),
                };
            }
            *o = l;
        }
    }

    /// e_p, the width of [`Self::grad_log_density`] per component.
    pub fn zeta_width(&self) -> usize {
        self.zeta_width
    }

    /// dlog_k = ∇_{ζ_k^p} log F_p(row) (length e_p each, K × e_p, the ζ layout of `params.rs`):
    /// for a Beta (a(log x − ψ(a) + ψ(a+b)), b(log(1−x) − ψ(b) + ψ(a+b))); for a Categorical
    /// 1[x=j] − ω_j for j < L − 1.
    pub fn grad_log_density(&self, row: &[Cell], out: &mut [f64]) {
        for c in 0..self.components {
            let mut at = c * self.zeta_width;
            for (j, cell) in row.iter().enumerate() {
                match (&self.terms[c * self.features + j], *cell) {
                    (Term::Beta { a, b, da, db, .. }, Cell::Unit(x)) => {
                        out[at] = a * (x.ln() + da);
                        out[at + 1] = b * ((1.0 - x).ln() + db);
                        at += 2;
                    }
                    (Term::Categorical { omega, .. }, Cell::Category(i)) => {
                        let i = i as usize;
                        let free = omega.len() - 1;
                        for (l, o) in out[at..at + free].iter_mut().enumerate() {
                            *o = if l == i { 1.0 - omega[l] } else { -omega[l] };
                        }
                        at += free;
                    }
                    _ => panic!("cell {j} does not match its feature kind"),
                }
            }
        }
    }

    /// The θ-space gradient ∇_{ρ_k^p} log F_p(row) (length d_p each, K × d_p), simplex
    /// coordinates treated as free: for a Beta (log x − ψ(a) + ψ(a+b), log(1−x) − ψ(b) + ψ(a+b));
    /// for a Categorical 1[x = c]/ω_c. Not what the parties send (they send
    /// [`Self::grad_log_density`]); kept as the reference the ζ form is tested against.
    pub fn grad_log_density_theta(&self, row: &[Cell], out: &mut [f64]) {
        for c in 0..self.components {
            let mut at = c * self.width;
            for (j, cell) in row.iter().enumerate() {
                match (&self.terms[c * self.features + j], *cell) {
                    (Term::Beta { da, db, .. }, Cell::Unit(x)) => {
                        out[at] = x.ln() + da;
                        out[at + 1] = (1.0 - x).ln() + db;
                        at += 2;
                    }
                    (Term::Categorical { inv_omega, .. }, Cell::Category(i)) => {
                        let i = i as usize;
                        for (l, o) in out[at..at + inv_omega.len()].iter_mut().enumerate() {
                            *o = if l == i { inv_omega[l] } else { 0.0 };
                        }
                        at += inv_omega.len();
                    }
                    _ => panic!("cell {j} does not match its feature kind"),
                }
            }
        }
    }
}

/// Party p's local step for the rows `batch` (spec B3 step 2) with the shift target of
/// [`shift_target`]`(P)`.
pub fn party_local(
    model: &Model,
    p: usize,
    theta: &[f64],
    block: &PartyBlock,
    batch: &[usize],
) -> PartyLocal {
    party_local_with_target(model, p, theta, block, batch, shift_target(model.schema.parties.len()))
}

/// [`party_local`] with an explicit shift target t (tests use it to show the shift cancels).
pub fn party_local_with_target(
    model: &Model,
    p: usize,
    theta: &[f64],
    block: &PartyBlock,
    batch: &[usize],
    t: f64,
) -> PartyLocal {
    let density = PartyDensity::new(model, p, theta);
    let k = model.components;
    let width = density.zeta_width;
    let mut mat = vec![0.0; batch.len() * k];
    let mut dlog = vec![0.0; batch.len() * k * width];
    let mut ell = vec![0.0; k];
    for (i, &n) in batch.iter().enumerate() {
        let row = block.row(n);
        density.log_density(row, &mut ell);
        let top = ell.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v));
        // all −∞ (impossible for finite θ): mat = 0, den = 0, the example contributes nothing
        let shift = if top.is_finite() { t - top } else { 0.0 };
        for (m, l) in mat[i * k..(i + 1) * k].iter_mut().zip(&ell) {
            *m = (l + shift).exp();
        }
        density.grad_log_density(row, &mut dlog[i * k * width..(i + 1) * k * width]);
    }
    PartyLocal { batch: batch.len(), components: k, width, mat, dlog }
}

/// All parties' local steps for one batch.
pub fn all_parties_local(
    model: &Model,
    theta: &[f64],
    blocks: &[PartyBlock],
    batch: &[usize],
) -> Vec<PartyLocal> {
    (0..blocks.len()).map(|p| party_local(model, p, theta, &blocks[p], batch)).collect()
}
