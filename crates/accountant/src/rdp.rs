/*!
Rényi DP of the Gaussian mechanism and its additive composition (spec cape-secagg §5 and §7 "RDP
facts"; Mironov 2017).

One Gaussian release with multiplier z is (α, α/(2z²))-RDP for every α > 1; RDP composes by adding
the curves. [`RdpAccountant`] keeps the composed curve on a grid of orders and, while every event is
an unsampled Gaussian, also its slope K (ρ(α) = K·α exactly), so that ε can be optimised over all
real orders ([`super::conversion::gaussian_epsilon_exact`]).
*/

use super::conversion::{
    Conversion, check_orders, delta_on_grid, epsilon_on_grid, gaussian_delta_exact,
    gaussian_epsilon_exact,
};
use super::event::{Event, Mechanism};
use super::subsampled::rdp_unchecked;
use super::{AccountantError, EpsilonAt, PrivacyAccountant, check_delta, check_epsilon};

/// Google dp-accounting's `DEFAULT_RDP_ORDERS`: 1.1, 1.2, …, 10.9, then 11, …, 63, then 128, 256,
/// 512, 1024 (the same grid makes our numbers directly comparable with theirs).
pub const DEFAULT_ORDERS: [f64; 156] = default_orders();

const fn default_orders() -> [f64; 156] {
    let mut out = [0.0; 156];
    let mut i = 0;
    while i < 99 {
        out[i] = 1.0 + (i + 1) as f64 / 10.0;
        i += 1;
    }
    while i < 152 {
        out[i] = (i - 99 + 11) as f64;
        i += 1;
    }
    out[152] = 128.0;
    out[153] = 256.0;
    out[154] = 512.0;
    out[155] = 1024.0;
    out
}

/// ρ(α) = α/(2z²): the RDP of one Gaussian release with multiplier z.
pub fn gaussian_rdp(noise_multiplier: f64, order: f64) -> f64 {
    order / (2.0 * noise_multiplier * noise_multiplier)
}

/// The RDP of one event (all its `count` releases) at order α, under its view (collusion factor).
pub fn event_rdp(event: &Event, order: f64) -> f64 {
    let z = event.effective_noise_multiplier();
    let per_release = match event.mechanism() {
        Mechanism::Gaussian { .. } => gaussian_rdp(z, order),
        Mechanism::PoissonSampledGaussian { sampling_rate, .. } => {
            rdp_unchecked(sampling_rate, z, order)
        }
    };
    event.count() as f64 * per_release
}

/// Accumulates RDP over a grid of orders; answers ε(δ) and δ(ε) with the chosen conversion.
#[derive(Clone, Debug, PartialEq)]
pub struct RdpAccountant {
    orders: Vec<f64>,
    rdp: Vec<f64>,
    /// K with ρ(α) = K·α, while every event is an unsampled Gaussian.
    gaussian_slope: Option<f64>,
    conversion: Conversion,
    events: Vec<Event>,
}

impl RdpAccountant {
    /// An empty accountant on dp-accounting's default orders.
    pub fn new(conversion: Conversion) -> Self {
        Self::with_orders(DEFAULT_ORDERS.to_vec(), conversion)
            .expect("the default orders are all finite and above 1")
    }

    /// An empty accountant on the given orders (each finite and > 1).
    pub fn with_orders(orders: Vec<f64>, conversion: Conversion) -> Result<Self, AccountantError> {
        check_orders(&orders)?;
        let rdp = vec![0.0; orders.len()];
        Ok(RdpAccountant { orders, rdp, gaussian_slope: Some(0.0), conversion, events: Vec::new() })
    }

    pub fn orders(&self) -> &[f64] {
        &self.orders
    }
    /// The composed RDP at each order.
    pub fn rdp(&self) -> &[f64] {
        &self.rdp
    }
    pub fn conversion(&self) -> Conversion {
        self.conversion
    }
    /// K with ρ(α) = K·α when every event so far is an unsampled Gaussian (spec §5: K = C =
    /// J* / (2σ_RDP²), times c_S for the collusion-aware view).
    pub fn gaussian_slope(&self) -> Option<f64> {
        self.gaussian_slope
    }

    /// ε(δ) with a given conversion: at the exact optimal order for a pure Gaussian curve, else on
    /// the grid. With no events, ε = 0.
    pub fn epsilon_with(
        &self,
        delta: f64,
        conversion: Conversion,
    ) -> Result<EpsilonAt, AccountantError> {
        check_delta(delta)?;
        match self.gaussian_slope {
            Some(0.0) => Ok(EpsilonAt { epsilon: 0.0, order: f64::INFINITY, exact: true }),
            Some(k) => gaussian_epsilon_exact(k, delta, conversion),
            None => self.epsilon_on_grid(delta, conversion),
        }
    }

    /// ε(δ) at the best order of the grid (what dp-accounting reports).
    pub fn epsilon_on_grid(
        &self,
        delta: f64,
        conversion: Conversion,
    ) -> Result<EpsilonAt, AccountantError> {
        if self.events.is_empty() {
            check_delta(delta)?;
            return Ok(EpsilonAt { epsilon: 0.0, order: f64::INFINITY, exact: false });
        }
        epsilon_on_grid(&self.orders, &self.rdp, delta, conversion)
    }

    /// δ(ε) with a given conversion (grid, and the exact optimum for a pure Gaussian curve).
    pub fn delta_with(&self, epsilon: f64, conversion: Conversion) -> Result<f64, AccountantError> {
        check_epsilon(epsilon)?;
        if self.events.is_empty() {
            return Ok(0.0);
        }
        let (grid, _) = delta_on_grid(&self.orders, &self.rdp, epsilon, conversion)?;
        match self.gaussian_slope {
            Some(k) => Ok(grid.min(gaussian_delta_exact(k, epsilon, conversion)?.0)),
            None => Ok(grid),
        }
    }
}

impl PrivacyAccountant for RdpAccountant {
    fn compose(&mut self, event: &Event) {
        for (r, &a) in self.rdp.iter_mut().zip(&self.orders) {
            *r += event_rdp(event, a);
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
        self.epsilon_with(delta, self.conversion)
    }

    fn delta(&self, epsilon: f64) -> Result<f64, AccountantError> {
        self.delta_with(epsilon, self.conversion)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_orders_are_dp_accountings() {
        assert_eq!(DEFAULT_ORDERS[0], 1.1);
        assert_eq!(DEFAULT_ORDERS[98], 1.0 + 99.0 / 10.0);
        assert_eq!(DEFAULT_ORDERS[99], 11.0);
        assert_eq!(DEFAULT_ORDERS[151], 63.0);
        assert_eq!(DEFAULT_ORDERS[155], 1024.0);
        assert!(DEFAULT_ORDERS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn composition_adds_curves() {
        let mut acc = RdpAccountant::new(Conversion::Standard);
        acc.compose(&Event::gaussian("a", 2.0, 3).unwrap());
        acc.compose(&Event::gaussian("b", 4.0, 1).unwrap().viewed_with(2.0).unwrap());
        let k = 3.0 / 8.0 + 2.0 / 32.0;
        assert!((acc.gaussian_slope().unwrap() - k).abs() < 1e-15);
        for (&a, &r) in acc.orders().iter().zip(acc.rdp()) {
            assert!((r - k * a).abs() < 1e-12 * r);
        }
        acc.compose(
            &Event::new(
                "c",
                Mechanism::PoissonSampledGaussian { noise_multiplier: 1.0, sampling_rate: 0.5 },
                1,
            )
            .unwrap(),
        );
        assert_eq!(acc.gaussian_slope(), None);
        assert_eq!(acc.events().len(), 3);
    }
}
