/*!
Per-player privacy of a DPVI-VPD run (spec B4, B5, D5, D6), computed with capelab-core's
accountant (RDP with Balle et al.'s conversion, and PLD), never a second one.

One step opens G̃ = Σ_{n∈batch} g_n* + ζ with ‖g_n*‖₂ ≤ C and ζ of total variance (Cσ)² per
coordinate. Each viewer sees the same G̃ but knows a different part of ζ and of the batches, so it
gets its own Gaussian event: an effective noise multiplier z, a sampling rate Q and a number of
compositions.

| viewer | noise by | z | Q, compositions |
|---|---|---|---|
| outside analyst | TTP | σ/k | q = B/N over T (Poisson); Q = 1 over E for shuffled epochs |
| outside analyst | P parties | σ/k (N_{Z/P}, see below) | as above |
| a party | TTP | σ/k | Q = 1 (it sees the batch indices): T, or E for shuffled epochs |
| a party | P parties | σ·√((P−1)/P)/k | Q = 1: T or E |
| c colluding parties | P parties | σ·√((P−c)/P)/k | Q = 1: T or E |
| c colluding parties | TTP | σ/k | Q = 1: T or E |

with k = 1 for **add/remove** adjacency (the record's clipped gradient is present or absent:
sensitivity C) and k = 2 for **replace-one** (VP-adjacency, spec B5: the joint clipped gradient of
one record is replaced by another's, ‖g* − g′*‖ ≤ 2C; one party's unchanged slice does not make it
smaller, because g_n mixes every party's columns through den_n). E = ⌈T·B/N⌉ is the largest number
of batches one record can be in when each epoch is a shuffle into disjoint batches (spec B5, last
row: O(δ, 1, E, ·)).

**Sampling.** Only Poisson sampling (each record independently with rate q) has the
amplification that capelab-core's `PoissonSampledGaussian` accounts, and only for add/remove
neighbours. Runs that draw fixed batches of B without replacement ([`Sampling::FixedBatch`]) are
accounted as Poisson with q = B/N, as the paper's ε = 1 does (spec D5); this is the common
practice, not a proof. [`guarantee`] refuses replace-one with Q < 1 (capelab-core's events have no
such mechanism, and there is no PLD for it); [`replace_one_fixed_batches`] gives the analyst's ε
under the paper's own setting, replace-one neighbours and fixed batches drawn without replacement,
by the RDP bound of Wang, Balle & Kasiviswanathan (capelab-core's `without_replacement`, equal to
dp-accounting's). For the B7 run that is **5.19**, not spec B4's 2.126: 2.126 passes z = σ, the
multiplier over sensitivity C, but replacing one record moves a sum of vectors clipped to C by up
to 2C, so z = σ/2. A party or colluders see the batch indices, so
subsampling hides nothing from them: Q = 1 (spec B5, D6). With Poisson or fixed batches a record may
be in any of the T steps, so T compositions is the only data-independent count.

**N_{Z/P}: the sum of the parties' discrete Gaussians.** Each party adds N_Z(0, (2^f·C·σ)²/P) in
fixed point (scale 2^f, spec B3). The sum of P independent discrete Gaussians is not a discrete
Gaussian; it is accounted here **as the continuous Gaussian with the same variance** (C·σ)², so
the analyst's row with P parties equals the TTP row. What this approximates, after Kairouz, Liu &
Steinke 2021 ("The Distributed Discrete Gaussian Mechanism for Federated Learning with Secure
Aggregation", ICML, arXiv 2102.06387, Proposition 14): in lattice units, with s² the
per-party variance, Δ₂ the L2 sensitivity and d the dimension, the sum is ½ε²-concentrated DP with
ε = min(√(Δ₂²/(P s²) + ½τd), Δ₂/(√P·s) + τ√d) and τ = 10·Σ_{k=1}^{P−1} e^{−2π²s²·k/(k+1)}.
At τ = 0 this is ε = Δ₂/σ_total, the continuous Gaussian's zCDP. At f = 32 and σ = 2.042,
s ≈ 2^32·1.44 and τ underflows to 0 in f64 ([`ddg_tau`]), so the approximation error is the
difference between ½ε²-zCDP and the continuous Gaussian's exact RDP/PLD curves (which zCDP bounds
order by order: ρ(α) = αε²/2 for the Gaussian, equality), i.e. none beyond τ. Not accounted: the
rounding of each g_n* to the 2^−f grid can raise Δ₂ from C·2^f to at most C·2^f + √D lattice
units, a relative 2^−32·√D/C (≈ 1e−8 for D = 10⁴); and a party's view with P parties uses the same
continuous approximation for the other P − 1 shares.

**What the spec's B5 numbers are.** All reproduce with capelab-core (tests/privacy.rs):
0.9948 (RDP, Poisson, add/remove), 0.909 (PLD), 25.7 (party, TTP, 66 compositions), 1.57 (P = 2,
Q = q) and 41.3 (P = 2, 66). The two large ones, **2750** (party, TTP, T = 20 000) and **5388**
(P = 2, T = 20 000), are RDP minimised over **dp-accounting's default order grid**, whose smallest
order is 1.1: at that many compositions the optimal order is below 1.1 (1.069 and 1.049). RDP over
all real orders gives **2727** and **5262**, and the PLD (exact for Gaussians: T compositions of
N(0, σ²) are one Gaussian with multiplier σ/√T, Balle & Wang 2018) gives **2693** and **5213**. The
grid numbers are valid upper bounds, just looser; [`Epsilons`] reports all three.
*/

use capelab_core::accountant::without_replacement::wor_gaussian_epsilon;
use capelab_core::accountant::{
    AccountantError, Conversion, EpsilonAt, Event, Mechanism, PldAccountant, PldError,
    PrivacyAccountant, RdpAccountant, Release,
};
use serde::{Deserialize, Serialize};

/// Who adds the DP noise (spec B3 "Noise").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NoiseSource {
    /// A trusted third party (or TEE) adds N_Z(0, C²σ²) to the opened sum; no party knows it.
    Ttp,
    /// Each of the P parties adds N_Z(0, C²σ²/P) in shares and knows its own share.
    Parties,
}

/// How the aggregator draws batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Sampling {
    /// Each record independently with rate q = B/N (the batch size varies).
    Poisson,
    /// B records uniformly without replacement at every step (what runs use, spec D5).
    FixedBatch,
    /// Each epoch a fresh shuffle cut into disjoint batches of B: a record is in at most
    /// E = ⌈T·B/N⌉ batches.
    Shuffled,
}

/// Which datasets are neighbours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Adjacency {
    /// One record added or removed: sensitivity C.
    AddRemove,
    /// One record replaced (VP-adjacency, spec B5): sensitivity 2C.
    ReplaceOne,
}

impl Adjacency {
    /// Sensitivity of the clipped sum in units of C.
    pub fn sensitivity(self) -> f64 {
        match self {
            Adjacency::AddRemove => 1.0,
            Adjacency::ReplaceOne => 2.0,
        }
    }
}

/// Who looks at the opened sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Viewer {
    /// Sees the released G̃ (or the posterior made from them), not the batch indices.
    Analyst,
    /// One party (VPDP): sees the batch indices and knows its own noise share.
    Party,
    /// `colluding` parties pooling their views (1 ≤ c < P with party noise).
    Colluding { colluding: usize },
}

impl Viewer {
    /// The viewer in words, as the CLI and the dashboard name it.
    pub fn name(self) -> String {
        match self {
            Viewer::Analyst => "outside analyst".into(),
            Viewer::Party => "a party".into(),
            Viewer::Colluding { colluding } => format!("{colluding} colluding parties"),
        }
    }
}

/// The public parameters of one run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// σ, the noise multiplier (noise std / C).
    pub noise_multiplier: f64,
    /// B.
    pub batch: usize,
    /// N, the training rows.
    pub records: usize,
    /// T.
    pub steps: u64,
    /// P.
    pub parties: usize,
    pub noise: NoiseSource,
    pub sampling: Sampling,
}

impl Run {
    /// The paper's Adult run (spec B7): σ = 2.042, B = 100, N = 30 162, T = 20 000, two parties.
    pub fn paper(noise: NoiseSource, sampling: Sampling) -> Self {
        Run {
            noise_multiplier: 2.042,
            batch: 100,
            records: 30_162,
            steps: 20_000,
            parties: 2,
            noise,
            sampling,
        }
    }

    /// q = B/N.
    pub fn sampling_rate(&self) -> f64 {
        self.batch as f64 / self.records as f64
    }

    /// E = ⌈T·B/N⌉: the most batches one record is in under shuffled epochs.
    pub fn epochs(&self) -> u64 {
        (self.steps * self.batch as u64).div_ceil(self.records as u64)
    }
}

/// Why a guarantee could not be computed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PrivacyError {
    #[error("run: {0}")]
    Run(&'static str),
    #[error(
        "{colluding} colluding parties out of {parties} know all of the noise (no TTP): no \
         privacy against them"
    )]
    NoHiddenNoise { colluding: usize, parties: usize },
    #[error(
        "replace-one adjacency with subsampling (Q = {0}) has no accountant in capelab-core \
         (only Poisson add/remove); use add/remove, or Q = 1"
    )]
    ReplaceOneSubsampled(f64),
    #[error("accountant: {0}")]
    Accountant(#[from] AccountantError),
    #[error("PLD: {0}")]
    Pld(#[from] PldError),
}

/// ε of one event at δ by every analysis capelab-core offers.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Epsilons {
    /// RDP, Balle et al.'s conversion, at the exact optimal real order for unsampled Gaussians,
    /// else on dp-accounting's default grid.
    pub rdp: EpsilonAt,
    /// RDP on dp-accounting's default order grid (1.1 … 1024), what dp-accounting prints.
    pub rdp_default_grid: EpsilonAt,
    /// RDP with the classic conversion ε = ρ + ln(1/δ)/(α − 1).
    pub rdp_classic: EpsilonAt,
    /// PLD (exact for unsampled Gaussians; grid step 1e−4 otherwise).
    pub pld: f64,
}

impl Epsilons {
    /// The tightest valid bound (what a capelab-core ledger charges): min(RDP, PLD).
    pub fn best(&self) -> f64 {
        self.rdp.epsilon.min(self.pld)
    }
}

/// ε(δ) of `event` by RDP (three ways) and PLD.
pub fn epsilons(event: &Event, delta: f64) -> Result<Epsilons, PrivacyError> {
    let mut rdp = RdpAccountant::new(Conversion::Improved);
    rdp.compose(event);
    let mut pld = PldAccountant::default();
    pld.compose(event);
    Ok(Epsilons {
        rdp: rdp.epsilon(delta)?,
        rdp_default_grid: rdp.epsilon_on_grid(delta, Conversion::Improved)?,
        rdp_classic: rdp.epsilon_with(delta, Conversion::Standard)?,
        pld: pld.epsilon(delta)?.epsilon,
    })
}

/// One viewer's guarantee for a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Guarantee {
    pub viewer: Viewer,
    pub noise: NoiseSource,
    pub adjacency: Adjacency,
    /// How the run drew its batches.
    pub sampling: Sampling,
    /// The effective noise multiplier of this view (noise this viewer does not know, over the
    /// sensitivity).
    pub noise_multiplier: f64,
    /// Q: q for the analyst under Poisson/fixed batches, 1 otherwise.
    pub sampling_rate: f64,
    /// Releases accounted: T, or E for shuffled epochs (Q = 1).
    pub compositions: u64,
    /// True when the sampling was approximated (fixed batches accounted as Poisson).
    pub approximate: bool,
    /// The event as a capelab-core accountant or ledger takes it.
    pub event: Event,
    pub delta: f64,
    pub epsilon: Epsilons,
}

/// The Gaussian event of `viewer` for `run` under `adjacency`.
pub fn viewer_event(
    run: &Run,
    viewer: Viewer,
    adjacency: Adjacency,
) -> Result<(Event, bool), PrivacyError> {
    if !(run.noise_multiplier > 0.0 && run.noise_multiplier.is_finite()) {
        return Err(PrivacyError::Run("σ must be positive and finite"));
    }
    if run.batch == 0 || run.records == 0 || run.batch > run.records {
        return Err(PrivacyError::Run("need 1 ≤ B ≤ N"));
    }
    if run.steps == 0 || run.parties == 0 {
        return Err(PrivacyError::Run("need T ≥ 1 and P ≥ 1"));
    }
    let p = run.parties as f64;
    // The share of the noise variance this viewer does not know.
    let hidden = match (viewer, run.noise) {
        (Viewer::Analyst, _) | (_, NoiseSource::Ttp) => 1.0,
        (Viewer::Party, NoiseSource::Parties) => {
            if run.parties < 2 {
                return Err(PrivacyError::NoHiddenNoise { colluding: 1, parties: run.parties });
            }
            (p - 1.0) / p
        }
        (Viewer::Colluding { colluding }, NoiseSource::Parties) => {
            if colluding == 0 {
                return Err(PrivacyError::Run("colluding parties: need c ≥ 1"));
            }
            if colluding >= run.parties {
                return Err(PrivacyError::NoHiddenNoise { colluding, parties: run.parties });
            }
            (p - colluding as f64) / p
        }
    };
    let z = run.noise_multiplier * hidden.sqrt() / adjacency.sensitivity();
    let sees_indices = viewer != Viewer::Analyst;
    let (q, count, approximate) = match (run.sampling, sees_indices) {
        (Sampling::Shuffled, _) => (1.0, run.epochs(), false),
        (_, true) => (1.0, run.steps, false),
        (Sampling::Poisson, false) => (run.sampling_rate(), run.steps, false),
        (Sampling::FixedBatch, false) => (run.sampling_rate(), run.steps, true),
    };
    if q < 1.0 && adjacency == Adjacency::ReplaceOne {
        return Err(PrivacyError::ReplaceOneSubsampled(q));
    }
    let mechanism = if q < 1.0 {
        Mechanism::PoissonSampledGaussian { noise_multiplier: z, sampling_rate: q }
    } else {
        Mechanism::Gaussian { noise_multiplier: z }
    };
    Ok((Event::new(label(viewer, run.noise, adjacency), mechanism, count)?, approximate))
}

fn label(viewer: Viewer, noise: NoiseSource, adjacency: Adjacency) -> String {
    let who = match viewer {
        Viewer::Analyst => "outside analyst".to_string(),
        Viewer::Party => "a party".to_string(),
        Viewer::Colluding { colluding } => format!("{colluding} colluding parties"),
    };
    let by = match noise {
        NoiseSource::Ttp => "TTP noise",
        NoiseSource::Parties => "parties' noise",
    };
    let adj = match adjacency {
        Adjacency::AddRemove => "add/remove",
        Adjacency::ReplaceOne => "replace-one",
    };
    format!("DPVI-VPD steps, view of {who}, {by}, {adj}")
}

/// `viewer`'s (ε, δ) for `run`.
pub fn guarantee(
    run: &Run,
    viewer: Viewer,
    adjacency: Adjacency,
    delta: f64,
) -> Result<Guarantee, PrivacyError> {
    let (event, approximate) = viewer_event(run, viewer, adjacency)?;
    let epsilon = epsilons(&event, delta)?;
    let m = event.mechanism();
    Ok(Guarantee {
        viewer,
        noise: run.noise,
        adjacency,
        sampling: run.sampling,
        noise_multiplier: m.noise_multiplier(),
        sampling_rate: m.sampling_rate(),
        compositions: event.count(),
        approximate,
        event,
        delta,
        epsilon,
    })
}

/// Spec B5's table for a run: the analyst (add/remove), for P ≥ 2 a party and, for P ≥ 3, P − 1
/// colluding parties (both adjacencies). Rows that do not exist are left out: with P = 1 (the
/// non-partitioned baseline) the one data holder is the curator, not a viewer of its own data,
/// and with parties' noise a view that knows all of it has no guarantee.
pub fn table(run: &Run, delta: f64) -> Result<Vec<Guarantee>, PrivacyError> {
    let mut rows = vec![guarantee(run, Viewer::Analyst, Adjacency::AddRemove, delta)?];
    let mut viewers = Vec::new();
    if run.parties >= 2 {
        viewers.push(Viewer::Party);
    }
    if run.parties >= 3 {
        viewers.push(Viewer::Colluding { colluding: run.parties - 1 });
    }
    for v in viewers {
        for adj in [Adjacency::AddRemove, Adjacency::ReplaceOne] {
            match guarantee(run, v, adj, delta) {
                Ok(g) => rows.push(g),
                Err(PrivacyError::NoHiddenNoise { .. }) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(rows)
}

/// The outside analyst's ε under the paper's own definitions: replace-one neighbours (spec B5's
/// VP-adjacency, sensitivity 2C, so z = σ/2) and B records drawn uniformly without replacement at
/// each of the T steps (what [`Sampling::FixedBatch`] runs do). RDP only (Wang, Balle &
/// Kasiviswanathan 2019, Thm 27, on dp-accounting's order grid); reported, never charged (the
/// ledger charges [`ledger_events`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplaceOneFixedBatches {
    /// z = σ/2.
    pub noise_multiplier: f64,
    /// q = B/N.
    pub sampling_rate: f64,
    pub compositions: u64,
    pub delta: f64,
    pub epsilon: EpsilonAt,
}

/// [`ReplaceOneFixedBatches`] for `run` (any sampling: the number is for fixed batches).
pub fn replace_one_fixed_batches(
    run: &Run,
    delta: f64,
) -> Result<ReplaceOneFixedBatches, PrivacyError> {
    // The same checks as every other view (σ, B ≤ N, T, P).
    viewer_event(run, Viewer::Analyst, Adjacency::AddRemove)?;
    let z = run.noise_multiplier / Adjacency::ReplaceOne.sensitivity();
    let q = run.sampling_rate();
    Ok(ReplaceOneFixedBatches {
        noise_multiplier: z,
        sampling_rate: q,
        compositions: run.steps,
        delta,
        epsilon: wor_gaussian_epsilon(q, z, run.steps, delta)?,
    })
}

/// What each party records in its capelab-core ledger for a run: the release of the T noisy sums
/// as the outside world sees them (the analyst's view, add/remove, the ledger's convention for
/// DP-SGD), one [`Event`] with count T (or E for shuffled epochs). Every party records the same
/// event: each one's data subjects are in every released sum. The views of the other parties
/// (Q = 1, [`guarantee`] with [`Viewer::Party`]) are much weaker and are reported, not charged: the
/// ledger's budget is against the public release.
pub fn ledger_events(run: &Run) -> Result<Vec<Event>, PrivacyError> {
    let (event, _) = viewer_event(run, Viewer::Analyst, Adjacency::AddRemove)?;
    Ok(vec![event])
}

/// The ledger releases of [`ledger_events`] under `study`, ready for `Ledger::try_spend` (or the
/// study gate) before the first opened sum.
pub fn ledger_releases(run: &Run, study: &str, time_ms: u64) -> Result<Vec<Release>, PrivacyError> {
    Ok(ledger_events(run)?.into_iter().map(|e| Release::new(study, e, time_ms)).collect())
}

/// Kairouz et al. 2021's τ = 10·Σ_{k=1}^{P−1} exp(−2π²s²·k/(k+1)) for P parties each adding a
/// discrete Gaussian of variance s² (lattice units: s = 2^f·C·σ/√P). τ = 0 means the sum is as
/// private as the continuous Gaussian of the same variance.
pub fn ddg_tau(per_party_std: f64, parties: usize) -> f64 {
    let s2 = per_party_std * per_party_std;
    (1..parties)
        .map(|k| {
            let k = k as f64;
            (-2.0 * std::f64::consts::PI.powi(2) * s2 * k / (k + 1.0)).exp()
        })
        .sum::<f64>()
        * 10.0
}

/// The zCDP parameter ε (the sum is ½ε²-concentrated DP) of P parties' discrete Gaussians
/// (Kairouz et al. 2021): min(√(Δ²/(P s²) + ½τd), Δ/(√P s) + τ√d), with Δ the L2 sensitivity in
/// lattice units and d the dimension. At τ = 0 it is Δ/(√P·s), the continuous Gaussian's.
pub fn ddg_zcdp_epsilon(sensitivity: f64, per_party_std: f64, parties: usize, dim: usize) -> f64 {
    let tau = ddg_tau(per_party_std, parties);
    let p = parties as f64;
    let d = dim as f64;
    let a =
        (sensitivity * sensitivity / (p * per_party_std * per_party_std) + 0.5 * tau * d).sqrt();
    let b = sensitivity / (p.sqrt() * per_party_std) + tau * d.sqrt();
    a.min(b)
}
