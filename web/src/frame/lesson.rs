//! The classroom lesson: the four default studies in the picker's order (private mean,
//! regression, NN, Joint ICA) on fresh sites with no setting changed. Its cost to one site's
//! ledger, by the events each study records (the gate's worst-case collusion factor), must fit
//! the default budget ([`crate::ledger_store::DEFAULT_BUDGET`]), or the class's fourth study is
//! refused (issue 17 item 9).

#[cfg(test)]
mod tests {
    use capelab_core::accountant::{Event, Ledger, Mechanism, Release};
    use capelab_core::wire::ParticipantId;

    use crate::ledger_store::DEFAULT_BUDGET;
    use crate::studies::ica::form::IcaFields;
    use crate::studies::mean::form::MeanFields;
    use crate::studies::nn::form::NnFields;
    use crate::studies::regression::form::RegressionFields;

    /// A class of four sites.
    const SITES: [ParticipantId; 4] = [1, 2, 3, 4];

    fn spend(ledger: &mut Ledger, study: &str, event: Event) {
        let label = format!("{study}: {}", ledger.spent());
        ledger.try_spend(Release::new(study, event, 0)).unwrap_or_else(|e| panic!("{label}: {e}"));
    }

    /// A one-shot round (mean, regression): CAPE's release under the worst-case c_S, and the
    /// conventional release when the form asks for it.
    fn round(ledger: &mut Ledger, study: &str, params: &capelab_core::study::mean::StudyParams) {
        let z = params.noise().unwrap().noise_multiplier;
        let gaussian = Mechanism::Gaussian { noise_multiplier: z };
        let c = params.worst_case_collusion_factor();
        spend(ledger, study, Event::with_collusion_factor("cape", gaussian, 1, c).unwrap());
        if params.also_conventional {
            spend(ledger, study, Event::gaussian("conventional", z, 1).unwrap());
        }
    }

    #[test]
    fn the_four_default_studies_fit_a_fresh_sites_default_budget_in_order() {
        let mut ledger = Ledger::new("Lab A", DEFAULT_BUDGET).unwrap();
        let mut after = Vec::new();
        round(&mut ledger, "mean", &MeanFields::default().read(SITES.to_vec()).unwrap().params);
        after.push(ledger.spent());
        let regression = RegressionFields::default().read(SITES.to_vec()).unwrap();
        round(&mut ledger, "regression", &regression.params);
        after.push(ledger.spent());
        let nn = NnFields::default().read(SITES.to_vec()).unwrap().params;
        let j = u64::from(nn.max_iterations);
        spend(
            &mut ledger,
            "nn",
            nn.event("nn".into(), j, nn.worst_case_collusion_factor()).unwrap(),
        );
        after.push(ledger.spent());
        let ica = IcaFields::default().read(SITES.to_vec()).unwrap();
        let task = ica.djica_task(vec![0.0; 8 * 400]);
        let (djica, _) = ica.djica_params(&ica.sites, task).unwrap();
        for (p, count) in [(&ica.pca_params, 1), (&djica, u64::from(djica.max_iterations))] {
            spend(
                &mut ledger,
                "ica",
                p.event("ica".into(), count, p.worst_case_collusion_factor()).unwrap(),
            );
        }
        after.push(ledger.spent());
        eprintln!("spent after each study: {after:?}");
        assert!(after.windows(2).all(|w| w[1] > w[0]), "{after:?}");
        assert!(ledger.spent() <= DEFAULT_BUDGET.epsilon, "{after:?}");
    }
}
