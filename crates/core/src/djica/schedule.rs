/*!
The learning rate and the stopping rule: Algorithm 4's unspecified step 19 ("check upper bound
and learning-rate adjustment"), spec §5 proposal and §9.1–9.3.

Rules shared by every schedule (runica/djica defaults, spec §5):
- **Blow-up restart**: if max|W| > 1e8 or the update is not finite, restart from (W₀, b₀) with
  ρ ← 0.9ρ. The thrown-away iterations still count towards J* (they were released).
- ‖ΔW‖² > 1e9: ρ ← 0.8ρ.
- Stop when step > 2 and ‖ΔW‖²_F < tol; quit when ρ < 1e-6.

What differs is how ρ moves otherwise ([`Schedule`]):
- [`Schedule::Anneal`]: runica's rule, ρ ← 0.9ρ whenever the update turns by more than 60° from
  the reference update. Right for exact gradients; **under DP noise it collapses** (spec §9.3: two
  noise-dominated updates are ~90° apart, so ρ shrinks every iteration and the run stops after
  33–127 iterations whatever the data).
- [`Schedule::Decay`]: ρ_j = ρ₀/(1 + j/half_life), a fixed decay that ignores the direction of the
  updates, so noise is not read as divergence. The default for every noisy method.
- [`Schedule::Constant`]: ρ_j = ρ₀ (spec §9.5's measurement used this).

Every decision reads only released quantities (W, ΔW), so it is free post-processing.
*/

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

/// How ρ evolves between the shared blow-up rules.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Schedule {
    /// runica's annealing: ρ ← `factor`·ρ when the angle between ΔW and the reference update
    /// exceeds `degrees`.
    Anneal {
        /// Angle threshold in degrees (runica: 60).
        degrees: f64,
        /// Multiplicative decrease (runica: 0.9).
        factor: f64,
    },
    /// ρ_j = ρ₀/(1 + j/`half_life`), j counted from the last restart.
    Decay {
        /// Iterations after which ρ has halved.
        half_life: f64,
    },
    /// ρ_j = ρ₀.
    Constant,
}

impl Schedule {
    /// runica's annealing (60°, 0.9): the non-private default.
    pub const RUNICA: Schedule = Schedule::Anneal { degrees: 60.0, factor: 0.9 };
}

/// Largest allowed |W_ij| before a restart (runica MAX_WEIGHT).
pub const MAX_WEIGHT: f64 = 1e8;
/// ‖ΔW‖² above which ρ is cut (runica DEFAULT_BLOWUP).
pub const BLOWUP_CHANGE: f64 = 1e9;
/// ρ factor on a large change (runica DEFAULT_BLOWUP_FAC).
pub const BLOWUP_FACTOR: f64 = 0.8;
/// ρ factor on a restart (runica DEFAULT_RESTART_FAC).
pub const RESTART_FACTOR: f64 = 0.9;
/// The run quits when ρ falls below this (runica MIN_LRATE).
pub const MIN_RATE: f64 = 1e-6;

/// What the aggregator does after an update.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Keep iterating with the current (W, b).
    Continue,
    /// The weights blew up: restart from (W₀, b₀) with a smaller ρ.
    Restart,
    /// Converged: ‖ΔW‖² < tol.
    Converged,
    /// ρ fell below [`MIN_RATE`]: give up.
    RateTooSmall,
}

/// The learning-rate state machine of one run.
#[derive(Clone, Debug)]
pub struct RateController {
    schedule: Schedule,
    tolerance: f64,
    base_rate: f64,
    rate: f64,
    /// Updates since the last restart (runica's `step`).
    step: usize,
    reference: Option<(DMatrix<f64>, f64)>,
}

impl RateController {
    /// Starts at ρ₀ = `initial_rate`.
    pub fn new(schedule: Schedule, initial_rate: f64, tolerance: f64) -> Self {
        RateController {
            schedule,
            tolerance,
            base_rate: initial_rate,
            rate: initial_rate,
            step: 0,
            reference: None,
        }
    }

    /// The ρ to use for the next update.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Updates since the last restart.
    pub fn step(&self) -> usize {
        self.step
    }

    /// Judges the update ΔW that produced `w` (both released) and sets ρ for the next one.
    pub fn judge(&mut self, delta_w: &DMatrix<f64>, w: &DMatrix<f64>) -> Verdict {
        let change = delta_w.norm_squared();
        let blown = !change.is_finite() || w.iter().any(|v| !v.is_finite() || v.abs() > MAX_WEIGHT);
        if blown {
            self.step = 0;
            self.reference = None;
            self.base_rate *= RESTART_FACTOR;
            self.rate = self.base_rate;
            return if self.rate < MIN_RATE { Verdict::RateTooSmall } else { Verdict::Restart };
        }
        self.step += 1;
        match self.schedule {
            Schedule::Anneal { degrees, factor } => {
                // runica: the reference is the first update, then the update at each anneal.
                match &self.reference {
                    None => self.reference = Some((delta_w.clone(), change)),
                    Some((old, old_change)) if self.step > 2 => {
                        let cos = delta_w.dot(old) / (change * old_change).sqrt();
                        let angle = cos.clamp(-1.0, 1.0).acos().to_degrees();
                        if angle > degrees {
                            self.rate *= factor;
                            self.reference = Some((delta_w.clone(), change));
                        }
                    }
                    Some(_) => {}
                }
            }
            Schedule::Decay { half_life } => {
                self.rate = self.base_rate / (1.0 + self.step as f64 / half_life);
            }
            Schedule::Constant => self.rate = self.base_rate,
        }
        if self.step > 2 && change < self.tolerance {
            return Verdict::Converged;
        }
        if change > BLOWUP_CHANGE {
            self.rate *= BLOWUP_FACTOR;
            self.base_rate *= BLOWUP_FACTOR;
        }
        if self.rate < MIN_RATE {
            return Verdict::RateTooSmall;
        }
        Verdict::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anneal_cuts_the_rate_when_updates_turn_around() {
        let mut c = RateController::new(Schedule::RUNICA, 1.0, 1e-12);
        let e = DMatrix::from_row_slice(1, 2, &[1.0, 0.0]);
        let f = DMatrix::from_row_slice(1, 2, &[0.0, 1.0]);
        let w = DMatrix::zeros(1, 2);
        assert_eq!(c.judge(&e, &w), Verdict::Continue);
        assert_eq!(c.judge(&f, &w), Verdict::Continue);
        assert_eq!(c.rate(), 1.0, "no angle test before step 3");
        assert_eq!(c.judge(&f, &w), Verdict::Continue);
        assert!((c.rate() - 0.9).abs() < 1e-15, "90° turn anneals");
        assert_eq!(c.judge(&f, &w), Verdict::Continue);
        assert!((c.rate() - 0.9).abs() < 1e-15, "same direction keeps ρ");
    }

    #[test]
    fn decay_ignores_directions_and_blow_ups_restart() {
        let mut c = RateController::new(Schedule::Decay { half_life: 10.0 }, 0.5, 1e-12);
        let e = DMatrix::from_row_slice(1, 2, &[1.0, 0.0]);
        let f = DMatrix::from_row_slice(1, 2, &[-1.0, 0.0]);
        let w = DMatrix::zeros(1, 2);
        for j in 1..=10 {
            let d = if j % 2 == 0 { &e } else { &f };
            assert_eq!(c.judge(d, &w), Verdict::Continue);
        }
        assert!((c.rate() - 0.25).abs() < 1e-15);
        let huge = DMatrix::from_row_slice(1, 2, &[2e8, 0.0]);
        assert_eq!(c.judge(&e, &huge), Verdict::Restart);
        assert!((c.rate() - 0.45).abs() < 1e-15);
        assert_eq!(c.step(), 0);
    }

    #[test]
    fn stops_below_tolerance_only_after_two_steps() {
        let mut c = RateController::new(Schedule::Constant, 0.5, 1e-6);
        let tiny = DMatrix::from_row_slice(1, 1, &[1e-4]);
        let w = DMatrix::zeros(1, 1);
        assert_eq!(c.judge(&tiny, &w), Verdict::Continue);
        assert_eq!(c.judge(&tiny, &w), Verdict::Continue);
        assert_eq!(c.judge(&tiny, &w), Verdict::Converged);
    }
}
