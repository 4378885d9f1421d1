/*!
The PLD accountant: [`Event`]s in (each seen through its view: multiplier z/√c_S), ε(δ) and δ(ε)
out, like dp-accounting's `PLDAccountant` with add/remove neighbours.

Unsampled Gaussian releases compose exactly: T releases with multipliers z_i are one Gaussian
release with 1/z² = Σ_i 1/z_i² (their PLDs are Gaussian, N(μ²/2, μ²) with μ = 1/z, and Gaussians
convolve to Gaussians). A run of only those is answered from the analytic curve, with no grid and
no discretisation error ([`PldEpsilon::interval`] is `None`). Anything else (Poisson-subsampled
releases) is discretised: identical events are grouped and self-composed once per group, then the
groups and the pooled Gaussian are convolved.
*/

use serde::{Deserialize, Serialize};

use super::super::analytic_gaussian::{epsilon_for_delta_unchecked, ln_delta_for_epsilon};
use super::super::event::{Event, Mechanism};
use super::super::{check_delta, check_epsilon};
use super::{DEFAULT_INTERVAL, Pld, PldError, check_interval};

/// ε from the PLD accountant and how it was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PldEpsilon {
    pub epsilon: f64,
    /// The grid step used, or `None` when the composition was exact (unsampled Gaussians only).
    pub interval: Option<f64>,
}

/// Events in, ε(δ) out, by composing privacy loss distributions.
#[derive(Clone, Debug, PartialEq)]
pub struct PldAccountant {
    interval: f64,
    events: Vec<Event>,
}

impl Default for PldAccountant {
    fn default() -> Self {
        PldAccountant { interval: DEFAULT_INTERVAL, events: Vec::new() }
    }
}

/// The composition of everything so far.
enum Composed {
    /// Unsampled Gaussians only: one Gaussian with this multiplier (`None`: nothing released).
    Exact(Option<f64>),
    Grid(Pld),
}

impl PldAccountant {
    /// An accountant on a grid of step `interval` (nats; see [`super::DEFAULT_INTERVAL`]).
    pub fn with_interval(interval: f64) -> Result<Self, PldError> {
        check_interval(interval)?;
        Ok(PldAccountant { interval, events: Vec::new() })
    }

    pub fn interval(&self) -> f64 {
        self.interval
    }

    pub fn compose(&mut self, event: &Event) {
        self.events.push(event.clone());
    }

    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The smallest ε such that everything composed so far is (ε, δ)-DP (an upper bound).
    pub fn epsilon(&self, delta: f64) -> Result<PldEpsilon, PldError> {
        check_delta(delta)?;
        Ok(match self.composed()? {
            Composed::Exact(None) => PldEpsilon { epsilon: 0.0, interval: None },
            Composed::Exact(Some(z)) => {
                PldEpsilon { epsilon: epsilon_for_delta_unchecked(z, delta), interval: None }
            }
            Composed::Grid(pld) => {
                PldEpsilon { epsilon: pld.epsilon_for_delta(delta)?, interval: Some(self.interval) }
            }
        })
    }

    /// The smallest δ certified at ε.
    pub fn delta(&self, epsilon: f64) -> Result<f64, PldError> {
        check_epsilon(epsilon)?;
        Ok(match self.composed()? {
            Composed::Exact(None) => 0.0,
            Composed::Exact(Some(z)) => ln_delta_for_epsilon(z, epsilon).exp(),
            Composed::Grid(pld) => pld.delta_for_epsilon(epsilon)?,
        })
    }

    fn composed(&self) -> Result<Composed, PldError> {
        // Σ count/z² over unsampled releases; sampled ones grouped by (z, q).
        let mut precision = 0.0;
        let mut groups: Vec<(f64, f64, u64)> = Vec::new();
        for e in &self.events {
            let z = e.effective_noise_multiplier();
            match e.mechanism() {
                Mechanism::Gaussian { .. } => precision += e.count() as f64 / (z * z),
                Mechanism::PoissonSampledGaussian { sampling_rate: q, .. } => {
                    match groups.iter_mut().find(|g| g.0 == z && g.1 == q) {
                        Some(g) => g.2 += e.count(),
                        None => groups.push((z, q, e.count())),
                    }
                }
            }
        }
        let pooled = (precision > 0.0).then(|| precision.sqrt().recip());
        if groups.is_empty() {
            return Ok(Composed::Exact(pooled));
        }
        // Start from the first group itself, not the identity: composing with a point mass would
        // cost three transforms of the longest grid and truncate its tails a second time.
        let mut pld = pooled.map(|z| Pld::gaussian(z, self.interval)).transpose()?;
        for (z, q, count) in groups {
            let group = Pld::poisson_sampled_gaussian(z, q, self.interval)?.self_compose(count)?;
            pld = Some(match pld {
                Some(p) => p.compose(&group)?,
                None => group,
            });
        }
        Ok(Composed::Grid(pld.expect("at least one sampled group")))
    }
}
