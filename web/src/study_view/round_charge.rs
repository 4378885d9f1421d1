/*!
One privacy statement per round of the mean or the regression (issue 17 item 13): before the round,
what each site's ledger will charge; after it, the one headline guarantee, equal to what the
ledgers charged. Both are the ledger's own figure: CAPE's release in the adversary's full view
(collusion factor c_S), plus the conventional release when the study asks for it, composed by the
tighter of PLD and RDP at the study's δ ([`BoundPair`]).

Before the round a site's gate previews the largest c_S over every |U| from t to S (the estimate's
sites are not known yet); at release it charges the c_S of the actual |U|. The preview is therefore
an upper bound, and equal to the charge when every site takes part.
*/

use capelab_core::study::mean::{StudyConfigError, StudyParams};

use super::bounds::{BoundPair, GaussianRun};
use crate::components::charts::scale::format_value;

/// What one round charges each site's ledger.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoundCharge {
    pub pair: BoundPair,
    /// c_S of the full view the CAPE release is charged with.
    pub collusion_factor: f64,
    pub delta: f64,
    /// Whether the conventional release is charged too.
    pub conventional: bool,
}

impl RoundCharge {
    /// The gate's preview before the round: the largest c_S over t..S sites.
    pub fn preview(params: &StudyParams) -> Result<Self, String> {
        Self::at(params, params.worst_case_collusion_factor())
    }

    /// The charge of a round whose estimate's sites give collusion factor `collusion_factor`.
    pub fn at(params: &StudyParams, collusion_factor: f64) -> Result<Self, String> {
        let plan = params.noise().map_err(|e: StudyConfigError| e.to_string())?;
        let z = plan.noise_multiplier;
        let mut runs = vec![GaussianRun { z, count: 1, c_s: collusion_factor }];
        if params.also_conventional {
            runs.push(GaussianRun { z, count: 1, c_s: 1.0 });
        }
        let pair = BoundPair::gaussians(&runs, params.delta).map_err(|e| e.to_string())?;
        Ok(RoundCharge {
            pair,
            collusion_factor,
            delta: params.delta,
            conventional: params.also_conventional,
        })
    }

    /// The ε a site's ledger charges: the tighter bound.
    pub fn epsilon(&self) -> f64 {
        self.pair.pld.min(self.pair.rdp)
    }

    fn releases(&self) -> &'static str {
        if self.conventional { "its CAPE and conventional messages" } else { "its message" }
    }

    /// Under the form, before the round starts.
    pub fn preview_sentence(&self, params: &StudyParams) -> String {
        format!(
            "Each site's ledger will charge at most ε = {} at δ = {:e} for {}: the adversary's \
             full view (c_S = {}, the largest for t = {} to S = {} sites), by {}; {} would say {}.",
            format_value(self.epsilon()),
            self.delta,
            self.releases(),
            format_value(self.collusion_factor),
            params.threshold,
            params.site_count(),
            self.pair.charged(),
            other(self),
            format_value(self.pair.pld.max(self.pair.rdp)),
        )
    }

    /// The headline after the round, for an estimate formed from `sites` sites.
    pub fn guarantee_sentence(&self, sites: usize) -> String {
        format!(
            "The guarantee: each site's release ({}) is ({}, {:e})-DP in the adversary's full view \
             (c_S = {} for the {sites} sites of the estimate), by {}: what its ledger charged. \
             {} would say {}.",
            self.releases(),
            format_value(self.epsilon()),
            self.delta,
            format_value(self.collusion_factor),
            self.pair.charged(),
            other(self),
            format_value(self.pair.pld.max(self.pair.rdp)),
        )
    }
}

/// The accountant the ledger does not charge by.
fn other(charge: &RoundCharge) -> &'static str {
    match charge.pair.charged() {
        capelab_core::accountant::ledger::Bound::Pld => "RDP",
        capelab_core::accountant::ledger::Bound::Rdp => "PLD",
    }
}

#[cfg(test)]
mod tests {
    use capelab_core::accountant::{Budget, Ledger};
    use capelab_core::study::mean::sim::{StudySim, StudySimConfig};

    use super::*;

    /// Runs a round of `s` sites and returns its parameters, the full view's c_S and what each
    /// site's (fresh) ledger holds after it.
    fn round(s: usize, conventional: bool) -> (StudyParams, f64, Vec<f64>) {
        let config = StudySimConfig::new(3, 0.5, 1e-5, 200).with_conventional(conventional);
        let data = (0..s)
            .map(|i| {
                let rows = crate::local_data::generate(i as u64, 200, 1);
                (rows, Ledger::new(format!("s{i}"), Budget::new(10.0, 1e-5).unwrap()).unwrap())
            })
            .collect();
        let mut sim = StudySim::new(config, data).unwrap();
        let outcome = sim.run().outcome.unwrap();
        let c_s = outcome.theory.as_ref().unwrap().privacy.full_view.c_s;
        let spent = (0..s).map(|i| sim.site(i).spent().last().unwrap().epsilon_after).collect();
        (outcome.params, c_s, spent)
    }

    #[test]
    fn the_headline_is_what_every_ledger_charged_and_the_preview_bounds_it() {
        for (s, conventional) in [(4, false), (4, true), (7, false)] {
            let (params, c_s, spent) = round(s, conventional);
            let charged = RoundCharge::at(&params, c_s).unwrap();
            for e in &spent {
                assert!((e - charged.epsilon()).abs() <= 1e-9 * e, "{e} vs {charged:?}");
            }
            let preview = RoundCharge::preview(&params).unwrap();
            assert!(preview.epsilon() >= charged.epsilon() - 1e-12, "{preview:?} {charged:?}");
            let text = charged.guarantee_sentence(s);
            assert!(text.contains(&format_value(charged.epsilon())), "{text}");
            assert!(text.contains("by PLD"), "{text}");
        }
        // every site took part: the preview is the charge
        let (params, c_s, _) = round(4, false);
        let preview = RoundCharge::preview(&params).unwrap();
        assert_eq!(preview, RoundCharge::at(&params, c_s).unwrap());
        let text = preview.preview_sentence(&params);
        assert!(text.starts_with("Each site's ledger will charge at most ε = "), "{text}");
        assert!(text.contains("t = 3 to S = 4"), "{text}");
    }
}
