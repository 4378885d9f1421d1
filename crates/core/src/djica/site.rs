/*!
The two halves of one capeDJICA iteration (spec §5, Algorithm 4), split the way the browser runs
them: [`DjicaSite::release`] in each site's tab, [`aggregate`] and [`DjicaAggregator::apply`] at
the aggregator.

A site holds its projected data X_s^r, its reusable gradient buffers and its own generator for the
local noise. Per iteration it computes the clipped mean gradient (G_s, h_s) at the broadcast
(W, b) and releases Ĝ_s = G_s + E_s^G + K_s^G and ĥ_s = h_s + e_s^h + k_s^h, where E and e are its
shares of two separate zero-sum draws and K, k are local (CAPE), or just N(0, τ²) noise
(conventional), or nothing (non-private).
*/

use super::calibration::{GaussianLevel, PrivacyUnit, mean_sensitivity};
use super::gradient::{ClipBounds, GradientWorkspace, SampleColumns, SiteGradient, site_gradient};
use super::noise::{NoiseScheme, site_noise};
use super::schedule::{RateController, Verdict};
use crate::rng::CapeRng;
use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

/// One site's noisy contribution to an iteration. (Not serde-derived: nalgebra's serde feature
/// is off in this crate; the wire format is the lead's choice.)
#[derive(Clone, Debug, PartialEq)]
pub struct SiteRelease {
    /// Ĝ_s, R×R.
    pub g: DMatrix<f64>,
    /// ĥ_s, length R.
    pub h: DVector<f64>,
}

/// A site's noise scales for the two releases of each iteration.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SiteNoiseScales {
    /// Δ_G^s.
    pub delta_g: f64,
    /// Δ_h^s.
    pub delta_h: f64,
    /// τ_G^s = Δ_G^s·c(δ_i)/ε_i (0 when non-private).
    pub tau_g: f64,
    /// τ_h^s = Δ_h^s·c(δ_i)/ε_i (0 when non-private).
    pub tau_h: f64,
}

impl SiteNoiseScales {
    /// Eq. (3) of the paper with the sensitivity of `unit` (spec §5, §9.4–9.5); `level = None`
    /// gives zero noise.
    pub fn new(
        unit: PrivacyUnit,
        bounds: ClipBounds,
        level: Option<GaussianLevel>,
        samples: usize,
        max_subject_len: usize,
    ) -> Self {
        let delta_g = mean_sensitivity(unit, bounds.gradient, samples, max_subject_len);
        let delta_h = mean_sensitivity(unit, bounds.bias, samples, max_subject_len);
        let z = level.and_then(|l| l.multiplier().ok()).unwrap_or(0.0);
        SiteNoiseScales { delta_g, delta_h, tau_g: delta_g * z, tau_h: delta_h * z }
    }
}

/// The precision of a site's stored samples and of the per-block gradient arithmetic. The
/// released gradient, W and b are f64 either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// f32 samples and blocks: faster, and half the memory.
    #[default]
    F32,
    /// f64 throughout.
    F64,
}

enum Samples {
    F32(SampleColumns<f32>, GradientWorkspace<f32>),
    F64(SampleColumns<f64>, GradientWorkspace<f64>),
}

/// A site's state across iterations.
pub struct DjicaSite {
    samples: Samples,
    rng: CapeRng,
    scales: SiteNoiseScales,
    last_clipped: usize,
}

impl DjicaSite {
    /// A site with projected data `x` (R×N_s), kept in `precision`, its noise scales and its
    /// local noise generator.
    pub fn new(
        x: DMatrix<f64>,
        precision: Precision,
        scales: SiteNoiseScales,
        rng: CapeRng,
    ) -> Self {
        let r = x.nrows();
        let samples = match precision {
            Precision::F32 => {
                Samples::F32(SampleColumns::from_matrix(&x), GradientWorkspace::new(r))
            }
            Precision::F64 => {
                Samples::F64(SampleColumns::from_matrix(&x), GradientWorkspace::new(r))
            }
        };
        DjicaSite { samples, rng, scales, last_clipped: 0 }
    }

    /// A site that only computes gradients ([`Self::gradient`]): its caller adds the noise, as
    /// the iterative study roles do. Its noise scales are zero, so [`Self::release`] would add
    /// only a zero-sum share it is given.
    pub fn gradient_only(x: DMatrix<f64>, precision: Precision) -> Self {
        let zero = SiteNoiseScales { delta_g: 0.0, delta_h: 0.0, tau_g: 0.0, tau_h: 0.0 };
        // Never drawn from: every τ is 0.
        Self::new(x, precision, zero, crate::rng::derive(0, "djica/gradient-only"))
    }

    /// The site's noise scales.
    pub fn scales(&self) -> SiteNoiseScales {
        self.scales
    }

    /// N_s.
    pub fn samples(&self) -> usize {
        match &self.samples {
            Samples::F32(x, _) => x.samples(),
            Samples::F64(x, _) => x.samples(),
        }
    }

    /// How many samples the gradient clip scaled down in the last iteration (not released).
    pub fn last_clipped(&self) -> usize {
        self.last_clipped
    }

    /// The noiseless clipped mean gradient at (W, b): steps 2–5.
    pub fn gradient(
        &mut self,
        w: &DMatrix<f64>,
        b: &DVector<f64>,
        bounds: ClipBounds,
    ) -> SiteGradient {
        let grad = match &mut self.samples {
            Samples::F32(x, ws) => site_gradient(x, w, b, bounds, ws),
            Samples::F64(x, ws) => site_gradient(x, w, b, bounds, ws),
        };
        self.last_clipped = grad.clipped;
        grad
    }

    /// Steps 1–6: the gradient plus this site's noise. `zero_sum` is the site's share (E_s^G,
    /// e_s^h) of two fresh zero-sum draws, needed for CAPE only; `sites` is the number of sites
    /// present.
    pub fn release(
        &mut self,
        w: &DMatrix<f64>,
        b: &DVector<f64>,
        bounds: ClipBounds,
        scheme: NoiseScheme,
        zero_sum: Option<(&[f64], &[f64])>,
        sites: usize,
    ) -> SiteRelease {
        let SiteGradient { mut g, mut h, .. } = self.gradient(w, b, bounds);
        let r = g.nrows();
        let noise_g = site_noise(
            scheme,
            zero_sum.map(|z| z.0),
            self.scales.tau_g,
            sites,
            r * r,
            &mut self.rng,
        );
        let noise_h =
            site_noise(scheme, zero_sum.map(|z| z.1), self.scales.tau_h, sites, r, &mut self.rng);
        for (v, n) in g.iter_mut().zip(&noise_g) {
            *v += n;
        }
        for (v, n) in h.iter_mut().zip(&noise_h) {
            *v += n;
        }
        SiteRelease { g, h }
    }
}

/// Aggregator step 1 without ρ: the averages (1/S)·Σ Ĝ_s and (1/S)·Σ ĥ_s.
///
/// # Panics
/// If `releases` is empty or their shapes differ (the aggregator validates messages first).
pub fn aggregate(releases: &[SiteRelease]) -> (DMatrix<f64>, DVector<f64>) {
    let mut g = releases[0].g.clone();
    let mut h = releases[0].h.clone();
    for r in &releases[1..] {
        g += &r.g;
        h += &r.h;
    }
    let inv = 1.0 / releases.len() as f64;
    (g * inv, h * inv)
}

/// The aggregator's state: (W, b), the learning-rate controller and the iteration counts.
pub struct DjicaAggregator {
    w0: DMatrix<f64>,
    b0: DVector<f64>,
    w: DMatrix<f64>,
    b: DVector<f64>,
    controller: RateController,
    iterations: usize,
    restarts: usize,
    last_change: f64,
}

impl DjicaAggregator {
    /// Starts from (W₀, b₀) with the given controller.
    pub fn new(w0: DMatrix<f64>, b0: DVector<f64>, controller: RateController) -> Self {
        DjicaAggregator {
            w: w0.clone(),
            b: b0.clone(),
            w0,
            b0,
            controller,
            iterations: 0,
            restarts: 0,
            last_change: f64::NAN,
        }
    }

    /// The current W, broadcast to the sites.
    pub fn w(&self) -> &DMatrix<f64> {
        &self.w
    }

    /// The current b, broadcast to the sites.
    pub fn b(&self) -> &DVector<f64> {
        &self.b
    }

    /// ρ for the next update.
    pub fn rate(&self) -> f64 {
        self.controller.rate()
    }

    /// J*: every iteration whose releases were made, including those a restart threw away.
    pub fn iterations(&self) -> usize {
        self.iterations
    }

    /// How many blow-up restarts happened.
    pub fn restarts(&self) -> usize {
        self.restarts
    }

    /// ‖ΔW‖²_F of the last update (NaN before the first).
    pub fn last_change(&self) -> f64 {
        self.last_change
    }

    /// Steps 1–3: W ← W + ρ·Ḡ, b ← b + ρ·h̄, then the learning-rate rules. On a restart (W, b)
    /// go back to (W₀, b₀).
    pub fn apply(&mut self, mean_g: &DMatrix<f64>, mean_h: &DVector<f64>) -> Verdict {
        let rate = self.controller.rate();
        let delta_w = mean_g * rate;
        self.w += &delta_w;
        self.b += mean_h * rate;
        self.iterations += 1;
        self.last_change = delta_w.norm_squared();
        let verdict = self.controller.judge(&delta_w, &self.w);
        if verdict == Verdict::Restart {
            self.restarts += 1;
            self.w.copy_from(&self.w0);
            self.b.copy_from(&self.b0);
        }
        verdict
    }
}
