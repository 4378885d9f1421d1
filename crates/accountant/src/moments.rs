/*!
The moments accountant (Abadi et al. 2016), as used in spec cape-secagg §5 (IV-B, App. G),
including the spec's erratum.

For a Gaussian release with multiplier z the log moment of the privacy loss at moment order t is
α(t) = (t + t²)/(2z²); a composition of releases adds them, so a pure Gaussian run has
α(t) = K·(t + t²) with K = Σ count·c_S/(2z²) (= J*Δ²/(2σ²) in the paper). The tail bound is
δ = min_t exp(α(t) − t·ε). Minimising over real t > 0 gives t* = ½(ε/K − 1) and
ln δ = −(ε − K)²/(4K), i.e. the quadratic in ε

  ε²/(4K) − ε/2 + K/4 + ln δ = 0,   whose larger root is ε = K + 2·sqrt(K·ln(1/δ)),

the same ε as RDP's standard conversion at its optimal order (α = t + 1).

**Erratum [spec §5].** The paper prints the middle coefficient as −ε instead of −ε/2, which
overestimates ε (27.47 against 20.17 for z = 10, J = 1000). [`MomentsQuadratic::AsPrinted`]
reproduces the printed version for comparison only.

Compositions that include subsampled releases have no such closed form; there the accountant uses
the tail bound over integer moment orders t = 1..=255 (as Abadi et al. do), with the exact log
moments α(t) = t·ρ(t + 1), ρ the RDP from [`super::subsampled`] (Mironov et al.'s A_{t+1} is
Abadi et al.'s moment).
*/

use serde::{Deserialize, Serialize};

use super::event::{Event, Mechanism};
use super::rdp::event_rdp;
use super::{AccountantError, EpsilonAt, PrivacyAccountant, check_delta, check_epsilon};

/// Largest integer moment order used for compositions without a closed form.
pub const MAX_MOMENT_ORDER: u32 = 255;

/// Which quadratic to solve for ε in the pure Gaussian case.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MomentsQuadratic {
    /// ε²/(4K) − ε/2 + K/4 + ln δ = 0 (spec §5 erratum).
    #[default]
    Corrected,
    /// ε²/(4K) − ε + K/4 + ln δ = 0, as printed in the paper (wrong; for comparison).
    AsPrinted,
}

/// ε for a pure Gaussian composition with log-moment slope K (α(t) = K(t + t²)) from the
/// quadratic; `order` is the paper's t_opt = ½(ε/K − 1).
pub fn gaussian_moments_epsilon(
    k: f64,
    delta: f64,
    quadratic: MomentsQuadratic,
) -> Result<EpsilonAt, AccountantError> {
    check_delta(delta)?;
    let a = 1.0 / (4.0 * k);
    let b = match quadratic {
        MomentsQuadratic::Corrected => 0.5,
        MomentsQuadratic::AsPrinted => 1.0,
    };
    let c = k / 4.0 + delta.ln();
    let epsilon = (b + (b * b - 4.0 * a * c).sqrt()) / (2.0 * a);
    Ok(EpsilonAt { epsilon, order: 0.5 * (epsilon / k - 1.0), exact: true })
}

/// The moments accountant.
#[derive(Clone, Debug, PartialEq)]
pub struct MomentsAccountant {
    quadratic: MomentsQuadratic,
    /// K while every event is an unsampled Gaussian.
    gaussian_slope: Option<f64>,
    /// α(t) for t = 1..=MAX_MOMENT_ORDER.
    log_moments: Vec<f64>,
    events: Vec<Event>,
}

impl MomentsAccountant {
    pub fn new(quadratic: MomentsQuadratic) -> Self {
        MomentsAccountant {
            quadratic,
            gaussian_slope: Some(0.0),
            log_moments: vec![0.0; MAX_MOMENT_ORDER as usize],
            events: Vec::new(),
        }
    }

    /// ε at the best integer moment order, whatever the events (Abadi et al.'s tail bound).
    pub fn epsilon_integer_orders(&self, delta: f64) -> Result<EpsilonAt, AccountantError> {
        check_delta(delta)?;
        let ln_inv_delta = (1.0 / delta).ln();
        let mut best = EpsilonAt { epsilon: f64::INFINITY, order: 1.0, exact: false };
        for (i, &m) in self.log_moments.iter().enumerate() {
            let t = (i + 1) as f64;
            let eps = (m + ln_inv_delta) / t;
            if eps < best.epsilon {
                best = EpsilonAt { epsilon: eps, order: t, exact: false };
            }
        }
        Ok(best)
    }
}

impl PrivacyAccountant for MomentsAccountant {
    fn compose(&mut self, event: &Event) {
        for (i, m) in self.log_moments.iter_mut().enumerate() {
            let t = (i + 1) as f64;
            *m += t * event_rdp(event, t + 1.0);
        }
        self.gaussian_slope = match (self.gaussian_slope, event.mechanism()) {
            (Some(k), Mechanism::Gaussian { .. }) => Some(k + event_rdp(event, 1.0)),
            _ => None,
        };
        self.events.push(event.clone());
    }

    fn events(&self) -> &[Event] {
        &self.events
    }

    fn epsilon(&self, delta: f64) -> Result<EpsilonAt, AccountantError> {
        match self.gaussian_slope {
            Some(0.0) => {
                check_delta(delta)?;
                Ok(EpsilonAt { epsilon: 0.0, order: f64::INFINITY, exact: true })
            }
            Some(k) => gaussian_moments_epsilon(k, delta, self.quadratic),
            None => self.epsilon_integer_orders(delta),
        }
    }

    /// δ = min_t exp(α(t) − tε) (the erratum concerns only the ε quadratic).
    fn delta(&self, epsilon: f64) -> Result<f64, AccountantError> {
        check_epsilon(epsilon)?;
        if let Some(k) = self.gaussian_slope {
            if k == 0.0 {
                return Ok(0.0);
            }
            return Ok(if epsilon <= k { 1.0 } else { (-(epsilon - k).powi(2) / (4.0 * k)).exp() });
        }
        let ln_d = self
            .log_moments
            .iter()
            .enumerate()
            .map(|(i, &m)| m - (i + 1) as f64 * epsilon)
            .fold(0.0_f64, f64::min);
        Ok(ln_d.exp())
    }
}
