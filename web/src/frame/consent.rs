//! A site's one switch for comparison runs: "allow non-private comparison runs, in any study".
//! A comparison run (EFPSN's baseline and noise-free runs, the NN's and Joint ICA's non-private
//! mode) releases this site's exact values, which no privacy guarantee covers. Off until the
//! user turns it on; kept by site name; the dashboard hears of it with the ledger report and
//! ticks a comparison run by default only when every site present allows it.

use capelab_core::wire::{ParticipantId, Role};
use leptos::prelude::*;

use crate::frame::dashboard::DashboardStudy;
use crate::frame::site::SiteStudy;
use crate::roster::Presence;
use crate::session::RoomState;

#[component]
pub fn ComparisonConsent(study: SiteStudy) -> impl IntoView {
    let allow = study.view.allow_nonprivate;
    view! {
        <section class="card consent-card" data-testid="comparison-consent">
            <label class="check">
                <input type="checkbox" data-testid="allow-nonprivate" bind:checked=allow />
                "allow non-private comparison runs, in any study"
            </label>
            <p class="muted small">
                {move || if allow.get() {
                    "On: in a comparison run this site's exact values leave this tab, with no privacy guarantee."
                } else {
                    "Off: this site declines comparison runs and takes part only in private ones."
                }}
            </p>
        </section>
    }
}

/// How many of the sites present allow comparison runs, as their latest ledger reports say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Consent {
    pub allowing: usize,
    pub present: usize,
}

impl Consent {
    /// Every site present allows comparison runs (and some are present): what a form needs to
    /// tick a comparison run by default.
    pub fn all(self) -> bool {
        self.present > 0 && self.allowing == self.present
    }

    /// "2 of 4 sites allow non-private comparison runs", for beside a comparison's checkbox.
    pub fn sentence(self) -> String {
        let allow = if self.allowing == 1 { "allows" } else { "allow" };
        format!(
            "{} of {} sites present {allow} non-private comparison runs (the switch on each site's \
             page); the others would decline them",
            self.allowing, self.present
        )
    }
}

/// The consent of the sites present, tracked as sites come and go and change their switch.
pub fn present_consent(state: RoomState, study: DashboardStudy) -> Memo<Consent> {
    Memo::new(move |_| {
        let present: Vec<ParticipantId> = state.roster.with(|r| {
            r.with_role(Role::Site)
                .filter(|m| m.presence == Presence::Present)
                .map(|m| m.peer.id)
                .collect()
        });
        let allowing = study.view.reports.with(|reports| {
            present
                .iter()
                .filter(|id| reports.get(id).is_some_and(|r| r.allows_comparisons))
                .count()
        });
        Consent { allowing, present: present.len() }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consent_is_all_only_when_every_present_site_allows() {
        assert!(Consent { allowing: 3, present: 3 }.all());
        assert!(!Consent { allowing: 2, present: 3 }.all());
        assert!(!Consent { allowing: 0, present: 0 }.all());
        assert!(
            Consent { allowing: 1, present: 4 }
                .sentence()
                .starts_with("1 of 4 sites present allows")
        );
    }
}
