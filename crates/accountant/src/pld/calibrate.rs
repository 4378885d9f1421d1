/*!
Calibration under PLD accounting: the smallest noise multiplier z for which T releases (each a
Gaussian with multiplier z, on a Poisson subsample of rate q or unsampled) are (ε, δ)-DP.

ε(z) is non-increasing in z, so z is found by bracketing and bisection in log z; the answer is the
upper end of the final bracket, so the returned z always meets the target (its ε is reported).
*/

use serde::{Deserialize, Serialize};

use super::super::conversion::Conversion;
use super::super::event::{Event, Mechanism};
use super::super::rdp::RdpAccountant;
use super::super::{AccountantError, PrivacyAccountant, check_delta};
use super::{PldAccountant, PldError};

/// Relative width of the final bracket on z.
const Z_TOLERANCE: f64 = 1e-4;

/// A calibrated multiplier and the ε it achieves (≤ the target).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub noise_multiplier: f64,
    pub epsilon: f64,
}

/// The smallest z (to a relative 1e−4, rounded up) with PLD ε ≤ `target_epsilon` at `delta` over
/// `compositions` releases at sampling rate `sampling_rate` (1 for unsampled).
pub fn calibrate_noise_multiplier(
    target_epsilon: f64,
    delta: f64,
    compositions: u64,
    sampling_rate: f64,
    interval: f64,
) -> Result<Calibration, PldError> {
    check_target(target_epsilon, delta, compositions, sampling_rate)?;
    let accountant = PldAccountant::with_interval(interval)?;
    let event = event_maker(compositions, sampling_rate);
    bisect_multiplier(target_epsilon, |z| {
        let mut a = accountant.clone();
        a.compose(&event(z)?);
        Ok(a.epsilon(delta)?.epsilon)
    })
}

/// The same under RDP with Balle et al.'s conversion (for comparison: how much noise PLD saves).
pub fn calibrate_noise_multiplier_rdp(
    target_epsilon: f64,
    delta: f64,
    compositions: u64,
    sampling_rate: f64,
) -> Result<Calibration, PldError> {
    check_target(target_epsilon, delta, compositions, sampling_rate)?;
    let event = event_maker(compositions, sampling_rate);
    bisect_multiplier(target_epsilon, |z| {
        let mut a = RdpAccountant::new(Conversion::Improved);
        a.compose(&event(z)?);
        Ok(a.epsilon(delta)?.epsilon)
    })
}

fn check_target(
    target_epsilon: f64,
    delta: f64,
    compositions: u64,
    sampling_rate: f64,
) -> Result<(), PldError> {
    if !(target_epsilon > 0.0 && target_epsilon.is_finite()) {
        return Err(AccountantError::TargetEpsilon(target_epsilon).into());
    }
    check_delta(delta)?;
    if compositions == 0 {
        return Err(AccountantError::ZeroCount.into());
    }
    if !(sampling_rate > 0.0 && sampling_rate <= 1.0) {
        return Err(AccountantError::SamplingRate(sampling_rate).into());
    }
    Ok(())
}

fn event_maker(
    compositions: u64,
    sampling_rate: f64,
) -> impl Fn(f64) -> Result<Event, AccountantError> {
    move |z| {
        let mechanism = if sampling_rate == 1.0 {
            Mechanism::Gaussian { noise_multiplier: z }
        } else {
            Mechanism::PoissonSampledGaussian { noise_multiplier: z, sampling_rate }
        };
        Event::new("calibration", mechanism, compositions)
    }
}

/// Bracket ε(lo) > target ≥ ε(hi) by doubling, then bisect in log z down to [`Z_TOLERANCE`].
fn bisect_multiplier(
    target_epsilon: f64,
    epsilon_at: impl Fn(f64) -> Result<f64, PldError>,
) -> Result<Calibration, PldError> {
    let (mut lo, mut hi) = (0.5, 1.0);
    let mut eps_hi = epsilon_at(hi)?;
    while eps_hi > target_epsilon {
        lo = hi;
        hi *= 2.0;
        eps_hi = epsilon_at(hi)?;
    }
    while lo > 1e-3 && epsilon_at(lo)? <= target_epsilon {
        hi = lo;
        lo /= 2.0;
    }
    eps_hi = epsilon_at(hi)?;
    while hi / lo > 1.0 + Z_TOLERANCE {
        let mid = (lo * hi).sqrt();
        let eps = epsilon_at(mid)?;
        if eps <= target_epsilon {
            hi = mid;
            eps_hi = eps;
        } else {
            lo = mid;
        }
    }
    Ok(Calibration { noise_multiplier: hi, epsilon: eps_hi })
}
