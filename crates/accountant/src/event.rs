/*!
A privacy event: one kind of release, how many times it happened, and under which view. (A
release known only to be (ε, δ)-DP is an [`ApproximateEvent`]: only the ledger takes it.)

Events are plain data so that a run's spend can be stored as JSON, replayed into any accountant
and compared. Deserialisation validates (through [`EventRecord`]), so an [`Event`] in hand is
always well formed: z > 0, q ∈ (0, 1], count ≥ 1, c_S ≥ 1.

JSON shape:
```json
{"label": "djICA step", "mechanism": {"kind": "gaussian", "noise_multiplier": 6.215},
 "count": 200, "collusion_factor": 1.295238}
```
*/

use serde::{Deserialize, Serialize};

use super::{AccountantError, check_noise_multiplier};

/// The mechanism of one release. Sensitivities are folded into the noise multiplier z = σ/Δ.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Mechanism {
    /// The Gaussian mechanism N(0, (zΔ)²) on an L2-sensitivity-Δ query.
    Gaussian { noise_multiplier: f64 },
    /// The Gaussian mechanism on a Poisson subsample (each record kept with probability q),
    /// add/remove-one neighbours, as in DP-SGD (efpsn-vertical-dpvi B4).
    PoissonSampledGaussian { noise_multiplier: f64, sampling_rate: f64 },
}

impl Mechanism {
    pub fn noise_multiplier(&self) -> f64 {
        match *self {
            Mechanism::Gaussian { noise_multiplier }
            | Mechanism::PoissonSampledGaussian { noise_multiplier, .. } => noise_multiplier,
        }
    }

    /// q, or 1 for an unsampled release.
    pub fn sampling_rate(&self) -> f64 {
        match *self {
            Mechanism::Gaussian { .. } => 1.0,
            Mechanism::PoissonSampledGaussian { sampling_rate, .. } => sampling_rate,
        }
    }

    fn validate(&self) -> Result<(), AccountantError> {
        check_noise_multiplier(self.noise_multiplier())?;
        let q = self.sampling_rate();
        if !(q > 0.0 && q <= 1.0) {
            return Err(AccountantError::SamplingRate(q));
        }
        Ok(())
    }
}

/// `count` identical releases of `mechanism`, seen through a view with collusion factor c_S
/// (1 for the aggregator's view; CAPE's exact c_S for a colluding adversary, spec §5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "EventRecord", into = "EventRecord")]
pub struct Event {
    label: String,
    mechanism: Mechanism,
    count: u64,
    collusion_factor: f64,
}

impl Event {
    /// `count` releases of `mechanism` under the aggregator's view (c_S = 1).
    pub fn new(
        label: impl Into<String>,
        mechanism: Mechanism,
        count: u64,
    ) -> Result<Self, AccountantError> {
        Self::with_collusion_factor(label, mechanism, count, 1.0)
    }

    /// `count` releases under a view with collusion factor c_S ≥ 1.
    pub fn with_collusion_factor(
        label: impl Into<String>,
        mechanism: Mechanism,
        count: u64,
        collusion_factor: f64,
    ) -> Result<Self, AccountantError> {
        mechanism.validate()?;
        if count == 0 {
            return Err(AccountantError::ZeroCount);
        }
        if !(collusion_factor >= 1.0 && collusion_factor.is_finite()) {
            return Err(AccountantError::CollusionFactor(collusion_factor));
        }
        Ok(Event { label: label.into(), mechanism, count, collusion_factor })
    }

    /// `count` unsampled Gaussian releases with multiplier z.
    pub fn gaussian(
        label: impl Into<String>,
        noise_multiplier: f64,
        count: u64,
    ) -> Result<Self, AccountantError> {
        Self::new(label, Mechanism::Gaussian { noise_multiplier }, count)
    }

    pub fn label(&self) -> &str {
        &self.label
    }
    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }
    pub fn count(&self) -> u64 {
        self.count
    }
    pub fn collusion_factor(&self) -> f64 {
        self.collusion_factor
    }

    /// z/√c_S: the multiplier of the plain Gaussian release whose privacy loss equals this
    /// view's. The colluding adversary sees a Gaussian with mean shift of Mahalanobis norm
    /// √c_S/z (spec §2 Theorem 1: μ_z = c_S/(2z²)), which is a 1-D Gaussian mechanism with
    /// multiplier z/√c_S; Poisson subsampling acts on it the same way.
    pub fn effective_noise_multiplier(&self) -> f64 {
        self.mechanism.noise_multiplier() / self.collusion_factor.sqrt()
    }

    /// The same event seen under another view (collusion factor).
    pub fn viewed_with(&self, collusion_factor: f64) -> Result<Self, AccountantError> {
        Self::with_collusion_factor(
            self.label.clone(),
            self.mechanism,
            self.count,
            collusion_factor,
        )
    }
}

/// `count` runs of a mechanism known only to be (ε, δ)-DP per run, such as EFPSN, whose privacy
/// theorem gives just that pair (efpsn-vertical-dpvi Part A, A3, Theorem IV.1). Neither RDP nor a
/// Gaussian PLD can represent it, so it is not an [`Event`] and the accountants do not take it:
/// the ledger composes it by basic composition ([`super::ledger`]). Validated: ε > 0 finite,
/// δ ∈ [0, 1), count ≥ 1.
///
/// The (ε, δ) is the guarantee as proven, against the view the proof covers: there is no
/// collusion factor to apply to it.
#[derive(Clone, Debug, PartialEq)]
pub struct ApproximateEvent {
    label: String,
    epsilon: f64,
    delta: f64,
    count: u64,
}

impl ApproximateEvent {
    /// `count` runs, each (ε, δ)-DP.
    pub fn new(
        label: impl Into<String>,
        epsilon: f64,
        delta: f64,
        count: u64,
    ) -> Result<Self, AccountantError> {
        if !(epsilon > 0.0 && epsilon.is_finite()) {
            return Err(AccountantError::ApproximateEpsilon(epsilon));
        }
        if !(0.0..1.0).contains(&delta) {
            return Err(AccountantError::ApproximateDelta(delta));
        }
        if count == 0 {
            return Err(AccountantError::ZeroCount);
        }
        Ok(ApproximateEvent { label: label.into(), epsilon, delta, count })
    }

    pub fn label(&self) -> &str {
        &self.label
    }
    /// ε of one run.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }
    /// δ of one run.
    pub fn delta(&self) -> f64 {
        self.delta
    }
    pub fn count(&self) -> u64 {
        self.count
    }
}

/// The serialised form of [`Event`]; converting it back validates.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventRecord {
    #[serde(default)]
    pub label: String,
    pub mechanism: Mechanism,
    pub count: u64,
    #[serde(default = "one")]
    pub collusion_factor: f64,
}

fn one() -> f64 {
    1.0
}

impl TryFrom<EventRecord> for Event {
    type Error = AccountantError;
    fn try_from(r: EventRecord) -> Result<Self, Self::Error> {
        Event::with_collusion_factor(r.label, r.mechanism, r.count, r.collusion_factor)
    }
}

impl From<Event> for EventRecord {
    fn from(e: Event) -> Self {
        EventRecord {
            label: e.label,
            mechanism: e.mechanism,
            count: e.count,
            collusion_factor: e.collusion_factor,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip_and_validation() {
        let e = Event::with_collusion_factor(
            "dpvi",
            Mechanism::PoissonSampledGaussian { noise_multiplier: 2.042, sampling_rate: 0.01 },
            20_000,
            1.295238,
        )
        .unwrap();
        let json = serde_json::to_string(&e).unwrap();
        assert!(json.contains(r#""kind":"poisson_sampled_gaussian""#), "{json}");
        assert_eq!(serde_json::from_str::<Event>(&json).unwrap(), e);

        let defaulted: Event = serde_json::from_str(
            r#"{"mechanism":{"kind":"gaussian","noise_multiplier":3.0},"count":2}"#,
        )
        .unwrap();
        assert_eq!(defaulted.collusion_factor(), 1.0);
        assert_eq!(defaulted.effective_noise_multiplier(), 3.0);

        let bad = serde_json::from_str::<Event>(
            r#"{"mechanism":{"kind":"gaussian","noise_multiplier":-3.0},"count":2}"#,
        )
        .unwrap_err();
        assert!(bad.to_string().contains("z = -3"), "{bad}");
        assert_eq!(Event::gaussian("x", 1.0, 0).unwrap_err(), AccountantError::ZeroCount);
        assert_eq!(
            Event::new(
                "x",
                Mechanism::PoissonSampledGaussian { noise_multiplier: 1.0, sampling_rate: 1.5 },
                1
            )
            .unwrap_err(),
            AccountantError::SamplingRate(1.5)
        );
        assert_eq!(
            Event::gaussian("x", 1.0, 1).unwrap().viewed_with(0.5).unwrap_err(),
            AccountantError::CollusionFactor(0.5)
        );
    }

    #[test]
    fn approximate_events_are_validated() {
        let e = ApproximateEvent::new("efpsn", 0.5, 1e-6, 2).unwrap();
        assert_eq!((e.label(), e.epsilon(), e.delta(), e.count()), ("efpsn", 0.5, 1e-6, 2));
        assert!(ApproximateEvent::new("pure", 1.0, 0.0, 1).is_ok());
        for eps in [0.0, -1.0, f64::INFINITY, f64::NAN] {
            let err = ApproximateEvent::new("x", eps, 1e-6, 1).unwrap_err();
            assert!(matches!(err, AccountantError::ApproximateEpsilon(_)), "{err}");
        }
        for delta in [1.0, -1e-9, 2.0, f64::NAN] {
            let err = ApproximateEvent::new("x", 0.5, delta, 1).unwrap_err();
            assert!(matches!(err, AccountantError::ApproximateDelta(_)), "{err}");
        }
        assert_eq!(
            ApproximateEvent::new("x", 0.5, 1e-6, 0).unwrap_err(),
            AccountantError::ZeroCount
        );
        let msg = ApproximateEvent::new("x", 0.5, 1.0, 1).unwrap_err().to_string();
        assert!(msg.contains("δ = 1") && msg.contains("[0, 1)"), "{msg}");
    }

    #[test]
    fn collusion_factor_scales_the_multiplier() {
        let e = Event::gaussian("x", 10.0, 1).unwrap().viewed_with(4.0).unwrap();
        assert_eq!(e.effective_noise_multiplier(), 5.0);
    }
}
