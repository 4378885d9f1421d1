/*!
One privacy statement per round of the mean or the regression (issue 17 item 13): before the round,
what each site's ledger will charge; after it, the one headline guarantee, equal to what the
ledgers charged. Both are the ledger's own figure: CAPE's release in the adversary's full view
(collusion factor c_S), plus the conventional release when the study asks for it, composed by the
tighter of PLD and RDP ([`BoundPair`]) at the δ the ledgers account at: their budget's δ, as the
sites report it. The study's own δ only sets the noise; where the two differ the sentences say so,
so the figure shown is always the one the ledgers hold.

Before the round a site's gate previews the largest c_S over every |U| from t to S (the estimate's
sites are not known yet); at release it charges the c_S of the actual |U|. The preview is therefore
an upper bound, and equal to the charge when every site takes part.
*/

use capelab_core::study::mean::{StudyConfigError, StudyParams};

use crate::components::charts::scale::format_value;
use crate::frame::bounds::{BoundPair, GaussianRun};

/// What one round charges each site's ledger.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoundCharge {
    pub pair: BoundPair,
    /// c_S of the full view the CAPE release is charged with.
    pub collusion_factor: f64,
    /// The δ the ε is stated at: the ledgers' budget δ.
    pub delta: f64,
    /// The study's δ, which sets the noise (with its ε).
    pub study_delta: f64,
    /// Whether the conventional release is charged too.
    pub conventional: bool,
}

impl RoundCharge {
    /// The gate's preview before the round: the largest c_S over t..S sites, at the ledgers'
    /// δ (`ledger_delta`; the study's δ when no site has reported its ledger yet).
    pub fn preview(params: &StudyParams, ledger_delta: Option<f64>) -> Result<Self, String> {
        Self::at(params, params.worst_case_collusion_factor(), ledger_delta)
    }

    /// The charge of a round whose estimate's sites give collusion factor `collusion_factor`, at
    /// the ledgers' δ (the study's when unknown).
    pub fn at(
        params: &StudyParams,
        collusion_factor: f64,
        ledger_delta: Option<f64>,
    ) -> Result<Self, String> {
        let delta = ledger_delta.unwrap_or(params.delta);
        let plan = params.noise().map_err(|e: StudyConfigError| e.to_string())?;
        let z = plan.noise_multiplier;
        let mut runs = vec![GaussianRun { z, count: 1, c_s: collusion_factor }];
        if params.also_conventional {
            runs.push(GaussianRun { z, count: 1, c_s: 1.0 });
        }
        let pair = BoundPair::gaussians(&runs, delta).map_err(|e| e.to_string())?;
        Ok(RoundCharge {
            pair,
            collusion_factor,
            delta,
            study_delta: params.delta,
            conventional: params.also_conventional,
        })
    }

    /// When the ledgers account at another δ than the study's: which δ sets the noise and which
    /// one the figure is at, so the two are not read as one statement.
    fn delta_note(&self, epsilon: f64) -> String {
        if self.delta == self.study_delta {
            return String::new();
        }
        format!(
            " The noise is set for ε = {} at the study's δ = {:e}; the sites' ledgers account at \
             their budget's δ = {:e}, so the ε above is stated at that δ.",
            format_value(epsilon),
            self.study_delta,
            self.delta,
        )
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
             full view (c_S = {}, the largest for t = {} to S = {} sites), by {}; {} would say {}.{}",
            format_value(self.epsilon()),
            self.delta,
            self.releases(),
            format_value(self.collusion_factor),
            params.threshold,
            params.site_count(),
            self.pair.charged(),
            other(self),
            format_value(self.pair.pld.max(self.pair.rdp)),
            self.delta_note(params.epsilon),
        )
    }

    /// The headline after the round, for an estimate formed from `sites` sites of a study that
    /// asked for `requested_epsilon`.
    pub fn guarantee_sentence(&self, sites: usize, requested_epsilon: f64) -> String {
        format!(
            "The guarantee: each site's release ({}) is ({}, {:e})-DP in the adversary's full view \
             (c_S = {} for the {sites} sites of the estimate), by {}: what its ledger charged. \
             {} would say {}.{}",
            self.releases(),
            format_value(self.epsilon()),
            self.delta,
            format_value(self.collusion_factor),
            self.pair.charged(),
            other(self),
            format_value(self.pair.pld.max(self.pair.rdp)),
            self.delta_note(requested_epsilon),
        )
    }
}

/// The δ the sites' ledgers account at, from their latest reports: the smallest budget δ among
/// `budget_deltas` (the largest ε, so "at most" stays true for every site), None before any
/// site has reported.
pub fn ledger_delta(budget_deltas: impl IntoIterator<Item = f64>) -> Option<f64> {
    budget_deltas.into_iter().filter(|d| d.is_finite() && *d > 0.0).reduce(f64::min)
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

    /// Runs a round of `s` sites at the study's δ = 1e-5, each site's fresh ledger at
    /// `budget_delta`, and returns the parameters, the full view's c_S and what each ledger holds.
    fn round(s: usize, conventional: bool, budget_delta: f64) -> (StudyParams, f64, Vec<f64>) {
        let config = StudySimConfig::new(3, 0.5, 1e-5, 200).with_conventional(conventional);
        let data = (0..s)
            .map(|i| {
                let rows = crate::local_data::generate(i as u64, 200, 1);
                let budget = Budget::new(10.0, budget_delta).unwrap();
                (rows, Ledger::new(format!("s{i}"), budget).unwrap())
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
            let (params, c_s, spent) = round(s, conventional, 1e-5);
            let charged = RoundCharge::at(&params, c_s, Some(1e-5)).unwrap();
            for e in &spent {
                assert!((e - charged.epsilon()).abs() <= 1e-9 * e, "{e} vs {charged:?}");
            }
            let preview = RoundCharge::preview(&params, Some(1e-5)).unwrap();
            assert!(preview.epsilon() >= charged.epsilon() - 1e-12, "{preview:?} {charged:?}");
            let text = charged.guarantee_sentence(s, params.epsilon);
            assert!(text.contains(&format_value(charged.epsilon())), "{text}");
            assert!(text.contains("by PLD"), "{text}");
            assert!(!text.contains("budget's δ"), "same δ, no note: {text}");
        }
        // every site took part: the preview is the charge; no report yet: the study's δ
        let (params, c_s, _) = round(4, false, 1e-5);
        let preview = RoundCharge::preview(&params, None).unwrap();
        assert_eq!(preview, RoundCharge::at(&params, c_s, Some(1e-5)).unwrap());
        let text = preview.preview_sentence(&params);
        assert!(text.starts_with("Each site's ledger will charge at most ε = "), "{text}");
        assert!(text.contains("t = 3 to S = 4"), "{text}");
    }

    /// Ledgers whose budget δ is not the study's: the statements are at the ledgers' δ, equal to
    /// what they charged (not the ε at the study's δ), and say which δ set the noise.
    #[test]
    fn statements_are_at_the_ledgers_delta_when_it_is_not_the_studys() {
        for budget_delta in [1e-7, 1e-3] {
            let (params, c_s, spent) = round(4, false, budget_delta);
            let charged = RoundCharge::at(&params, c_s, Some(budget_delta)).unwrap();
            for e in &spent {
                assert!((e - charged.epsilon()).abs() <= 1e-9 * e, "{e} vs {charged:?}");
            }
            let at_study = RoundCharge::at(&params, c_s, None).unwrap();
            // a smaller δ costs more ε, a larger one less: the figures really differ
            let differs = (charged.epsilon() - at_study.epsilon()).abs();
            assert!(differs > 1e-3, "{charged:?} vs {at_study:?}");
            assert_eq!(charged.epsilon() > at_study.epsilon(), budget_delta < 1e-5);
            let headline = charged.guarantee_sentence(4, params.epsilon);
            assert!(headline.contains(&format!("{budget_delta:e})-DP")), "{headline}");
            assert!(headline.contains("the study's δ = 1e-5"), "{headline}");
            let preview = RoundCharge::preview(&params, Some(budget_delta)).unwrap();
            let text = preview.preview_sentence(&params);
            assert!(text.contains(&format!("at δ = {budget_delta:e} for")), "{text}");
            assert!(text.contains("their budget's δ"), "{text}");
        }
    }

    #[test]
    fn the_ledgers_delta_is_the_smallest_reported() {
        assert_eq!(ledger_delta([]), None);
        assert_eq!(ledger_delta([1e-5, 1e-6, 1e-5]), Some(1e-6));
        assert_eq!(ledger_delta([f64::NAN, 1e-5]), Some(1e-5));
    }
}
