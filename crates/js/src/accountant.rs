//! Privacy accounting for JavaScript: releases in, (ε, δ) out, as a site's ledger charges them
//! (the tighter of the PLD accountant and RDP with Balle et al.'s conversion, `capelab-accountant`),
//! and one CAPE release's privacy (spec cape-secagg-pca-djica §2, [`release_privacy`]).

use capelab_core::accountant::{
    Conversion, Event, Mechanism, PldAccountant, PrivacyAccountant, RdpAccountant,
};
use capelab_core::cape::privacy::{Collusion, release_privacy};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::convert;

/// `GaussianEvent` of `TYPES`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GaussianEvent {
    noise_multiplier: f64,
    #[serde(default)]
    count: Option<f64>,
    #[serde(default)]
    sampling_rate: Option<f64>,
    #[serde(default)]
    collusion_factor: Option<f64>,
}

impl GaussianEvent {
    /// The core's event; every bad value is refused by the core with its own message.
    fn event(&self) -> Result<Event, String> {
        let count = match self.count {
            None => 1,
            Some(c) if convert::whole(c) && c >= 1.0 => c as u64,
            Some(c) => return Err(format!("count = {c} must be a whole number of releases ≥ 1")),
        };
        let z = self.noise_multiplier;
        let mechanism = match self.sampling_rate {
            None => Mechanism::Gaussian { noise_multiplier: z },
            Some(q) => Mechanism::PoissonSampledGaussian { noise_multiplier: z, sampling_rate: q },
        };
        let c = self.collusion_factor.unwrap_or(1.0);
        Event::with_collusion_factor("js", mechanism, count, c).map_err(|e| e.to_string())
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EpsilonReport {
    epsilon: f64,
    pld: Option<f64>,
    rdp: f64,
    rdp_order: f64,
    bound: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeltaReport {
    delta: f64,
    pld: Option<f64>,
    rdp: f64,
}

/// Releases in, ε(δ) and δ(ε) out.
///
/// ```js
/// const acc = new Accountant();
/// acc.add({ noiseMultiplier: 2.042, samplingRate: 100 / 30162, count: 20000 });
/// acc.epsilon(1e-5).pld; // 0.909 (DP-VI's setting)
/// ```
#[wasm_bindgen]
pub struct Accountant {
    pld: PldAccountant,
    rdp: RdpAccountant,
}

impl Default for Accountant {
    fn default() -> Self {
        Accountant { pld: PldAccountant::default(), rdp: RdpAccountant::new(Conversion::Improved) }
    }
}

#[wasm_bindgen]
impl Accountant {
    /// An accountant with nothing released.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Accountant {
        Accountant::default()
    }

    /// Adds `count` releases of one Gaussian mechanism (checked: z > 0, q ∈ (0, 1], c_S ≥ 1).
    pub fn add(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "GaussianEvent")] event: JsValue,
    ) -> Result<(), JsError> {
        let event: GaussianEvent = convert::read(event, "event")?;
        let event = event.event().map_err(|e| JsError::new(&e))?;
        self.add_event(&event);
        Ok(())
    }

    /// How many releases were added.
    #[wasm_bindgen(getter)]
    pub fn releases(&self) -> f64 {
        self.pld.events().iter().map(|e| e.count() as f64).fold(0.0, |a, c| a + c)
    }

    /// The smallest ε such that everything added is (ε, δ)-DP, under each accountant.
    #[wasm_bindgen(unchecked_return_type = "EpsilonReport")]
    pub fn epsilon(&self, delta: f64) -> Result<JsValue, JsError> {
        convert::object(&self.epsilon_report(delta).map_err(|e| JsError::new(&e))?)
    }

    /// The smallest δ certified at ε, under each accountant.
    #[wasm_bindgen(unchecked_return_type = "DeltaReport")]
    pub fn delta(&self, epsilon: f64) -> Result<JsValue, JsError> {
        let rdp = self.rdp.delta(epsilon).map_err(|e| JsError::new(&e.to_string()))?;
        let pld = self.pld.delta(epsilon).ok();
        let delta = pld.map_or(rdp, |p| p.min(rdp));
        convert::object(&DeltaReport { delta, pld, rdp })
    }
}

impl Accountant {
    fn add_event(&mut self, event: &Event) {
        self.pld.compose(event);
        self.rdp.compose(event);
    }

    fn epsilon_report(&self, delta: f64) -> Result<EpsilonReport, String> {
        let rdp = self.rdp.epsilon(delta).map_err(|e| e.to_string())?;
        // A composition too large for the PLD grid is charged by RDP, as the ledger does.
        let pld = self.pld.epsilon(delta).ok().map(|p| p.epsilon);
        let (epsilon, bound) = match pld {
            Some(p) if p <= rdp.epsilon => (p, "pld"),
            _ => (rdp.epsilon, "rdp"),
        };
        Ok(EpsilonReport { epsilon, pld, rdp: rdp.epsilon, rdp_order: rdp.order, bound })
    }
}

/// One CAPE release's privacy among `sites` sites (S_C = ⌈S/3⌉ − 1 colluders unless
/// `colluders` is given) at noise multiplier z and target ε: Theorem 1 with the spec's errata,
/// the paper's eq. (1) beside it, the full view capelab's ledgers account, δ_conv and δ_pool.
#[wasm_bindgen(js_name = capeBounds, unchecked_return_type = "CapeBounds")]
pub fn cape_bounds(
    sites: f64,
    #[wasm_bindgen(js_name = "noiseMultiplier")] noise_multiplier: f64,
    epsilon: f64,
    colluders: Option<f64>,
) -> Result<JsValue, JsError> {
    let count = |v: f64, what: &str| {
        if v.fract() == 0.0 && (0.0..=1e6).contains(&v) {
            Ok(v as usize)
        } else {
            Err(JsError::new(&format!("{what} = {v} must be a whole number")))
        }
    };
    let sites = count(sites, "sites")?;
    let collusion = match colluders {
        None => Collusion::default_for(sites),
        Some(c) => Collusion::new(sites, count(c, "colluders")?),
    }
    .map_err(|e| JsError::new(&e.to_string()))?;
    let report = release_privacy(&collusion, noise_multiplier, epsilon)
        .map_err(|e| JsError::new(&e.to_string()))?;
    convert::json(&report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DP-VI's setting (seed 004, spec efpsn-vertical-dpvi B4): PLD 0.909, RDP 0.9948.
    #[test]
    fn the_dp_vi_setting_accounts_as_the_ledger_does() {
        let mut acc = Accountant::default();
        let event = GaussianEvent {
            noise_multiplier: 2.042,
            count: Some(20_000.0),
            sampling_rate: Some(100.0 / 30162.0),
            collusion_factor: None,
        };
        acc.add_event(&event.event().unwrap());
        let r = acc.epsilon_report(1e-5).unwrap();
        assert!((r.pld.unwrap() - 0.909).abs() < 5e-4, "{}", r.epsilon);
        assert!((r.rdp - 0.9948).abs() < 5e-5, "{}", r.rdp);
        assert_eq!((r.epsilon, r.bound), (r.pld.unwrap(), "pld"));
    }

    #[test]
    fn bad_events_are_named() {
        let event = |count, q, c| GaussianEvent {
            noise_multiplier: 1.0,
            count,
            sampling_rate: q,
            collusion_factor: c,
        };
        assert!(event(Some(0.0), None, None).event().unwrap_err().contains("count = 0"));
        assert!(event(Some(1.5), None, None).event().is_err());
        assert!(event(None, Some(1.5), None).event().unwrap_err().contains("q = 1.5"));
        assert!(event(None, None, Some(0.5)).event().unwrap_err().contains("c_S = 0.5"));
        let z = GaussianEvent { noise_multiplier: -1.0, ..event(None, None, None) };
        assert!(z.event().unwrap_err().contains("z = -1"));
    }
}
