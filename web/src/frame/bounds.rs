/*!
One guarantee under both accountants, side by side: PLD and RDP, and which one a site's ledger
charges (the tighter, as core's `Ledger` does: ties go to PLD).

The studies the privacy panels describe release unsampled Gaussians, whose privacy loss
distributions stay Gaussian under composition, so the PLD figure is exact ("PLD (exact for
Gaussians)", [`PldAccountant`] answers it in closed form); RDP uses Balle et al.'s improved
conversion, as the ledger does. Showing both says how much the older bound overstates.
*/

use capelab_core::accountant::ledger::Bound;
use capelab_core::accountant::{
    Conversion, Event, Mechanism, PldAccountant, PldError, PrivacyAccountant, RdpAccountant,
};

use capelab_core::nn::ViewAccount;
use capelab_core::study::iterative::IterativePrivacy;

use crate::components::charts::scale::format_value;

/// The label of the PLD figure wherever a panel shows it.
pub const PLD_LABEL: &str = "PLD (exact for Gaussians)";
/// The label of the RDP figure.
pub const RDP_LABEL: &str = "RDP (improved conversion)";

/// `count` Gaussian releases of multiplier `z` seen with collusion factor `c_s`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GaussianRun {
    pub z: f64,
    pub count: u64,
    pub c_s: f64,
}

impl GaussianRun {
    /// The releases behind an iterative study's guarantee, in its guarantee's view.
    pub fn of_study(privacy: &IterativePrivacy) -> Option<GaussianRun> {
        guarantee_view(privacy).map(|v| GaussianRun {
            z: privacy.noise_multiplier,
            count: u64::from(privacy.iterations.max(1)),
            c_s: v.collusion_factor,
        })
    }
}

fn guarantee_view(privacy: &IterativePrivacy) -> Option<&ViewAccount> {
    privacy.views.iter().find(|v| v.view == privacy.guarantee_view)
}

/// ε of one composition at one δ under PLD and under RDP.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoundPair {
    pub pld: f64,
    pub rdp: f64,
}

impl BoundPair {
    /// `count` Gaussian releases of multiplier `z`, seen with collusion factor `c_s` (effective
    /// multiplier z/√c_S), at `delta`.
    pub fn gaussian(z: f64, count: u64, c_s: f64, delta: f64) -> Result<Self, PldError> {
        Self::gaussians(&[GaussianRun { z, count, c_s }], delta)
    }

    /// Several runs of Gaussian releases composed, as a site's ledger composes its studies.
    pub fn gaussians(runs: &[GaussianRun], delta: f64) -> Result<Self, PldError> {
        let mut pld = PldAccountant::default();
        let mut rdp = RdpAccountant::new(Conversion::Improved);
        for run in runs {
            let event = Event::with_collusion_factor(
                "guarantee",
                Mechanism::Gaussian { noise_multiplier: run.z },
                run.count,
                run.c_s,
            )?;
            pld.compose(&event);
            rdp.compose(&event);
        }
        Ok(BoundPair { pld: pld.epsilon(delta)?.epsilon, rdp: rdp.epsilon(delta)?.epsilon })
    }

    /// An iterative study's guarantee (its largest-ε view) under both accountants: the core's
    /// exact composition (PLD is exact here) and RDP.
    pub fn of_study(privacy: &IterativePrivacy) -> Option<BoundPair> {
        guarantee_view(privacy)
            .map(|v| BoundPair { pld: v.epsilon_exact, rdp: v.epsilon_rdp_improved })
    }

    /// The bound a ledger charges: the smaller ε, PLD on a tie.
    pub fn charged(&self) -> Bound {
        if self.pld <= self.rdp { Bound::Pld } else { Bound::Rdp }
    }

    /// "PLD (exact for Gaussians) ε = 1.2, RDP (improved conversion) ε = 1.4; the ledger charges
    /// the tighter, PLD".
    pub fn sentence(&self) -> String {
        format!(
            "{PLD_LABEL} ε = {}, {RDP_LABEL} ε = {}; a site's ledger charges the tighter, {}",
            format_value(self.pld),
            format_value(self.rdp),
            self.charged(),
        )
    }
}

#[cfg(test)]
mod tests {
    use capelab_core::accountant::{Budget, Ledger, Release};

    use super::*;

    #[test]
    fn pld_is_at_most_rdp_and_matches_what_a_ledger_charges() {
        for (z, count, c_s) in [(3.0, 60, 1.0), (12.0, 150, 1.5), (1.0, 1, 1.0)] {
            let pair = BoundPair::gaussian(z, count, c_s, 1e-5).unwrap();
            assert!(pair.pld <= pair.rdp, "{pair:?}");
            assert_eq!(pair.charged(), Bound::Pld);
            let event = Event::with_collusion_factor(
                "x",
                Mechanism::Gaussian { noise_multiplier: z },
                count,
                c_s,
            )
            .unwrap();
            let mut ledger = Ledger::new("A", Budget::new(1e6, 1e-5).unwrap()).unwrap();
            ledger.try_spend(Release::new("s", event, 0)).unwrap();
            let spend = ledger.spend();
            assert_eq!(spend.bound, Bound::Pld);
            assert!((spend.pld - pair.pld).abs() <= 1e-9 * pair.pld, "{spend:?} {pair:?}");
            assert!((spend.rdp - pair.rdp).abs() <= 1e-6 * pair.rdp, "{spend:?} {pair:?}");
        }
        let text = BoundPair { pld: 1.0, rdp: 1.25 }.sentence();
        assert!(text.contains(PLD_LABEL) && text.contains(RDP_LABEL), "{text}");
        assert!(text.ends_with("the tighter, PLD"), "{text}");
    }

    #[test]
    fn bad_input_is_refused_not_panicked_on() {
        assert!(BoundPair::gaussian(0.0, 1, 1.0, 1e-5).is_err());
        assert!(BoundPair::gaussian(1.0, 0, 1.0, 1e-5).is_err());
        assert!(BoundPair::gaussian(1.0, 1, 1.0, 1.5).is_err());
    }
}
