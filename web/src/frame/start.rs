//! What every study form ends with: the start button (it needs two sites present and no study
//! running), the driver's refusal to start, in its own words, and for a round (mean, regression)
//! what each site's ledger will be charged.

use std::collections::BTreeMap;

use capelab_core::study::mean::StudyParams;
use capelab_core::wire::ParticipantId;
use leptos::prelude::*;

use crate::frame::form::FormError;
use crate::ledger_report::LedgerReport;
use crate::studies::mean::form::MeanForm;
use crate::studies::mean::masking::masking_sentence;
use crate::studies::mean::round_charge::{RoundCharge, ledger_delta};

/// The form's submit button: "Waiting for at least 2 sites", or "{action} with the S sites present".
#[component]
pub fn StartButton(
    test_id: &'static str,
    action: &'static str,
    present: Memo<usize>,
    #[prop(into)] running: Signal<bool>,
) -> impl IntoView {
    let label = move || match present.get() {
        0 | 1 => "Waiting for at least 2 sites".to_owned(),
        s => format!("{action} with the {s} sites present"),
    };
    view! {
        <button
            type="submit"
            class="button button-primary"
            data-testid=test_id
            disabled=move || running.get() || present.get() < 2
        >
            {label}
        </button>
    }
}

/// Why the last start was refused, when it was about the form as a whole (not enough sites, a
/// study already running, the relay gone); a field's own error shows beside that field.
#[component]
pub fn StartError(error: RwSignal<Option<FormError>>) -> impl IntoView {
    move || {
        error.with(|e| e.as_ref().filter(|e| e.field.is_none()).map(|e| e.message.clone())).map(
            |e| view! { <p class="callout callout-error" data-testid="start-error" role="alert">{e}</p> },
        )
    }
}

/// Before a round starts, what each site's ledger will charge for it ([`RoundCharge::preview`]),
/// recomputed as the form changes: `read` checks the form for the sites present (their count is
/// all the charge depends on). Nothing while the form does not read; its error shows at start.
/// Stated at the δ the sites' ledgers account at (from their reports), which is what they charge.
#[component]
pub fn ChargePreview(
    present: Memo<usize>,
    /// The sites' latest ledger reports.
    reports: RwSignal<BTreeMap<ParticipantId, LedgerReport>>,
    read: impl Fn(Vec<ParticipantId>) -> Result<MeanForm, FormError> + Send + Sync + 'static,
) -> impl IntoView {
    let charge = Memo::new(move |_| {
        let sites: Vec<ParticipantId> = (1..=present.get() as ParticipantId).collect();
        let params: StudyParams = read(sites).ok()?.params;
        let delta = reports.with(|r| ledger_delta(r.values().map(|r| r.budget_delta)));
        let charge = RoundCharge::preview(&params, delta).ok()?;
        Some((charge.preview_sentence(&params), charge.epsilon()))
    });
    move || {
        charge.get().map(|(text, epsilon)| {
            view! { <p class="muted" data-testid="charge-preview" data-epsilon=epsilon>{text}</p> }
        })
    }
}

/// Under the form when SecAgg+ is chosen: with whom each site masks, what a neighbourhood must
/// keep, and the failure bound for one dropout and one colluder ([`masking_sentence`]).
#[component]
pub fn MaskingNote(
    present: Memo<usize>,
    read: impl Fn(Vec<ParticipantId>) -> Result<MeanForm, FormError> + Send + Sync + 'static,
) -> impl IntoView {
    let note = Memo::new(move |_| {
        let sites: Vec<ParticipantId> = (1..=present.get() as ParticipantId).collect();
        let params = read(sites).ok()?.params;
        masking_sentence(params.masking, params.site_count())
    });
    move || note.get().map(|text| view! { <p class="muted" data-testid="masking-note">{text}</p> })
}
