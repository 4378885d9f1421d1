/*!
Every accounting of one homogeneous run, side by side: J releases with multiplier z (optionally
Poisson-subsampled at rate q), at a target δ, under the aggregator's view and, given c_S, under the
colluding adversary's view (spec cape-secagg §5: "Report both numbers"). This is what
`cape account` prints and what the browser's accounting panel will show.
*/

use serde::{Deserialize, Serialize};

use super::analytic_gaussian::epsilon_for_delta_unchecked;
use super::composition::{CompositionBound, basic_for_event, strong_for_event};
use super::conversion::{Conversion, closed_form_epsilon};
use super::event::{Event, Mechanism};
use super::moments::{MomentsAccountant, MomentsQuadratic, gaussian_moments_epsilon};
use super::pld::{PldAccountant, PldError};
use super::rdp::{DEFAULT_ORDERS, RdpAccountant};
use super::{AccountantError, PrivacyAccountant, check_delta};

/// The run to account.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComparisonRequest {
    pub noise_multiplier: f64,
    /// J, the number of releases.
    pub compositions: u64,
    pub delta: f64,
    /// Poisson sampling rate q; `None` for unsampled releases.
    pub sampling_rate: Option<f64>,
    /// CAPE's c_S for the collusion-aware view; `None` to report the aggregator's view only.
    pub collusion_factor: Option<f64>,
    /// RDP orders for the grid; `None` for dp-accounting's defaults ([`DEFAULT_ORDERS`]).
    pub orders: Option<Vec<f64>>,
    /// Include the composed RDP curve (α, ρ(α)) in the report.
    pub include_curve: bool,
}

/// The report: the request echoed, the aggregator's view, and the collusion-aware view if asked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComparisonReport {
    pub noise_multiplier: f64,
    pub compositions: u64,
    pub delta: f64,
    pub sampling_rate: Option<f64>,
    /// How many RDP orders the grid had.
    pub grid_orders: usize,
    #[serde(flatten)]
    pub aggregator: ViewReport,
    pub collusion_aware: Option<ViewReport>,
}

/// Every ε of one view at the requested δ. `alpha_*` are RDP orders; a `*_grid` value is the best
/// point of the order grid (comparable with dp-accounting), the plain value is optimised over all
/// real orders when the curve is a pure Gaussian's (else it equals the grid value).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewReport {
    pub collusion_factor: f64,
    /// z/√c_S.
    pub effective_noise_multiplier: f64,
    /// Standard conversion ε = ρ(α) + ln(1/δ)/(α − 1), optimised over α.
    pub epsilon_rdp: f64,
    pub alpha_rdp: f64,
    pub epsilon_rdp_grid: f64,
    pub alpha_rdp_grid: f64,
    /// Balle et al. 2020 conversion, optimised over α.
    pub epsilon_rdp_improved: f64,
    pub alpha_rdp_improved: f64,
    pub epsilon_rdp_improved_grid: f64,
    pub alpha_rdp_improved_grid: f64,
    /// K with ρ(α) = K·α (unsampled only): spec §5's C.
    pub rdp_slope: Option<f64>,
    /// C + 2·sqrt(C·ln(1/δ)) (unsampled only).
    pub epsilon_closed_form: Option<f64>,
    /// The tight ε of the composition (unsampled only): the analytic Gaussian curve at z/√(J·c_S).
    pub epsilon_exact: Option<f64>,
    /// Moments accountant, corrected quadratic (unsampled) or integer moment orders (sampled).
    pub epsilon_moments: f64,
    /// The optimal moment order t (= α − 1).
    pub moments_order: f64,
    /// The paper's printed quadratic (spec §5 erratum; unsampled only), for comparison.
    pub epsilon_moments_as_printed: Option<f64>,
    /// Basic composition with δ₀ = δ/J from the exact per-release curve.
    pub epsilon_basic: f64,
    /// Strong composition (DRV'10) with δ₀ = δ/(2J), δ' = δ/2.
    pub epsilon_strong: f64,
    pub basic: CompositionBound,
    pub strong: CompositionBound,
    /// (α, ρ(α)) of the whole run, if requested.
    pub rdp_curve: Option<Vec<(f64, f64)>>,
}

/// The same run under the PLD accountant: the aggregator's view and, given c_S, the
/// collusion-aware view (what `cape account --accountant pld` prints).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PldReport {
    pub noise_multiplier: f64,
    pub compositions: u64,
    pub delta: f64,
    pub sampling_rate: Option<f64>,
    pub aggregator: PldView,
    pub collusion_aware: Option<PldView>,
}

/// One view's PLD ε at the requested δ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PldView {
    pub collusion_factor: f64,
    /// z/√c_S.
    pub effective_noise_multiplier: f64,
    pub epsilon: f64,
    /// The grid step, or `None` when the composition was exact (unsampled Gaussian releases).
    pub interval: Option<f64>,
}

impl ComparisonRequest {
    /// A request for J unsampled Gaussian releases, aggregator view, default orders.
    pub fn gaussian(noise_multiplier: f64, compositions: u64, delta: f64) -> Self {
        ComparisonRequest {
            noise_multiplier,
            compositions,
            delta,
            sampling_rate: None,
            collusion_factor: None,
            orders: None,
            include_curve: false,
        }
    }

    fn mechanism(&self) -> Mechanism {
        match self.sampling_rate {
            None => Mechanism::Gaussian { noise_multiplier: self.noise_multiplier },
            Some(q) => Mechanism::PoissonSampledGaussian {
                noise_multiplier: self.noise_multiplier,
                sampling_rate: q,
            },
        }
    }

    /// Computes every number; refuses bad inputs with a message naming the value.
    pub fn run(&self) -> Result<ComparisonReport, AccountantError> {
        check_delta(self.delta)?;
        let event = Event::new("run", self.mechanism(), self.compositions)?;
        let orders = self.orders.clone().unwrap_or_else(|| DEFAULT_ORDERS.to_vec());
        // Validate the orders once, before any work.
        RdpAccountant::with_orders(orders.clone(), Conversion::Standard)?;
        let aggregator = self.view(&event, &orders)?;
        let collusion_aware = match self.collusion_factor {
            None => None,
            Some(c) => Some(self.view(&event.viewed_with(c)?, &orders)?),
        };
        Ok(ComparisonReport {
            noise_multiplier: self.noise_multiplier,
            compositions: self.compositions,
            delta: self.delta,
            sampling_rate: self.sampling_rate,
            grid_orders: orders.len(),
            aggregator,
            collusion_aware,
        })
    }

    /// The PLD accountant's ε for both views on a grid of step `interval` (the RDP orders and
    /// the curve flag are not used). Refuses bad inputs as [`ComparisonRequest::run`] does.
    pub fn pld(&self, interval: f64) -> Result<PldReport, PldError> {
        let event = Event::new("run", self.mechanism(), self.compositions)?;
        let view = |event: Event| -> Result<PldView, PldError> {
            let mut accountant = PldAccountant::with_interval(interval)?;
            accountant.compose(&event);
            let eps = accountant.epsilon(self.delta)?;
            Ok(PldView {
                collusion_factor: event.collusion_factor(),
                effective_noise_multiplier: event.effective_noise_multiplier(),
                epsilon: eps.epsilon,
                interval: eps.interval,
            })
        };
        let collusion_aware = match self.collusion_factor {
            None => None,
            Some(c) => Some(view(event.viewed_with(c)?)?),
        };
        Ok(PldReport {
            noise_multiplier: self.noise_multiplier,
            compositions: self.compositions,
            delta: self.delta,
            sampling_rate: self.sampling_rate,
            aggregator: view(event)?,
            collusion_aware,
        })
    }

    fn view(&self, event: &Event, orders: &[f64]) -> Result<ViewReport, AccountantError> {
        let delta = self.delta;
        let mut rdp = RdpAccountant::with_orders(orders.to_vec(), Conversion::Standard)?;
        rdp.compose(event);
        let standard = rdp.epsilon_with(delta, Conversion::Standard)?;
        let standard_grid = rdp.epsilon_on_grid(delta, Conversion::Standard)?;
        let improved = rdp.epsilon_with(delta, Conversion::Improved)?;
        let improved_grid = rdp.epsilon_on_grid(delta, Conversion::Improved)?;

        let mut moments = MomentsAccountant::new(MomentsQuadratic::Corrected);
        moments.compose(event);
        let moments_eps = moments.epsilon(delta)?;

        let slope = rdp.gaussian_slope();
        let z_eff = event.effective_noise_multiplier();
        let exact = slope
            .map(|_| epsilon_for_delta_unchecked(z_eff / (event.count() as f64).sqrt(), delta));
        let as_printed = match slope {
            Some(k) => {
                Some(gaussian_moments_epsilon(k, delta, MomentsQuadratic::AsPrinted)?.epsilon)
            }
            None => None,
        };
        let basic = basic_for_event(event, delta)?;
        let strong = strong_for_event(event, delta)?;
        Ok(ViewReport {
            collusion_factor: event.collusion_factor(),
            effective_noise_multiplier: z_eff,
            epsilon_rdp: standard.epsilon,
            alpha_rdp: standard.order,
            epsilon_rdp_grid: standard_grid.epsilon,
            alpha_rdp_grid: standard_grid.order,
            epsilon_rdp_improved: improved.epsilon,
            alpha_rdp_improved: improved.order,
            epsilon_rdp_improved_grid: improved_grid.epsilon,
            alpha_rdp_improved_grid: improved_grid.order,
            rdp_slope: slope,
            epsilon_closed_form: slope.map(|k| closed_form_epsilon(k, delta)),
            epsilon_exact: exact,
            epsilon_moments: moments_eps.epsilon,
            moments_order: moments_eps.order,
            epsilon_moments_as_printed: as_printed,
            epsilon_basic: basic.epsilon,
            epsilon_strong: strong.epsilon,
            basic,
            strong,
            rdp_curve: self
                .include_curve
                .then(|| rdp.orders().iter().copied().zip(rdp.rdp().iter().copied()).collect()),
        })
    }
}
