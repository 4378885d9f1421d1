//! A finished study's results as the dashboard shows them: the messages-and-estimates chart, the
//! noise-variance gain, and who dropped or declined, in words. Every number comes from the core's
//! [`StudyOutcome`] (and its [`Theory`]); nothing here is protocol or privacy math.

use capelab_core::secagg::DropReason;
use capelab_core::study::mean::{DeclineReason, StudyDropout, StudyOutcome, StudyPhase, Theory};

use crate::components::charts::forest::{ForestRow, ForestSpec};
use crate::components::charts::scale::format_value;
use crate::components::charts::svg::PALETTE;
use crate::frame::dashboard::FinishedRound;

pub const MESSAGE_COLOR: &str = PALETTE[0];
pub const CAPE_COLOR: &str = PALETTE[1];
pub const CONVENTIONAL_COLOR: &str = PALETTE[2];

/// Each site's â_s (coordinate `j`) with its noise sd τ, then the CAPE estimate (sd τ/|U|) and
/// the conventional one (sd τ/√|U|), on one axis. `None` without estimates.
pub fn messages_chart(round: &FinishedRound, j: usize) -> Option<ForestSpec> {
    let outcome = &round.outcome;
    let est = outcome.estimates()?;
    let theory = outcome.theory.as_ref()?;
    let tau = theory.var_message.sqrt();
    let mut rows: Vec<ForestRow> = est
        .messages
        .iter()
        .filter_map(|m| {
            Some(ForestRow {
                label: format!("â  {} (#{})", round.name(m.site), m.site),
                value: *m.values.get(j)?,
                sd: tau,
                color: MESSAGE_COLOR,
                emphasis: false,
            })
        })
        .collect();
    rows.push(ForestRow {
        label: "CAPE estimate".into(),
        value: *est.cape.get(j)?,
        sd: theory.var_cape.sqrt(),
        color: CAPE_COLOR,
        emphasis: true,
    });
    if let Some(conv) = est.conventional.as_ref().and_then(|c| c.get(j)) {
        rows.push(ForestRow {
            label: "conventional estimate".into(),
            value: *conv,
            sd: theory.var_conventional.sqrt(),
            color: CONVENTIONAL_COLOR,
            emphasis: true,
        });
    }
    let coordinate = if outcome.params.dimension > 1 {
        format!(", coordinate {}", j + 1)
    } else {
        String::new()
    };
    Some(ForestSpec {
        title: format!("Round {}: each message vs the aggregate{coordinate}", round.number),
        x_label: "value (the mean of the sites' data plus noise)".into(),
        rows,
        note: Some(format!(
            "Each message â_s is the site's mean plus noise of sd τ = {}: enough to hide any one \
             record (what DP promises), not the site's mean itself, which its message shows to \
             within about τ. Averaging the {} messages cancels the zero-sum noise e_s exactly, \
             leaving sd τ/|U| = {}.",
            format_value(tau),
            est.messages.len(),
            format_value(theory.var_cape.sqrt()),
        )),
    })
}

/// The noise-variance gain var(conventional)/var(CAPE): for the S sites invited, and for the |U|
/// whose data is in this round's estimate.
#[derive(Clone, Debug, PartialEq)]
pub struct Gain {
    pub invited: usize,
    pub invited_gain: f64,
    pub survivors: usize,
    pub round_gain: f64,
    pub var_message: f64,
    pub var_conventional: f64,
    pub var_cape: f64,
    /// τ estimated from this round's messages, when the conventional release was asked for.
    pub measured: Option<MeasuredNoise>,
}

/// τ̂² = mean of (â_s − c_s)²/2 over sites and coordinates: â_s and the conventional c_s carry the
/// same f(x_s), so the data cancels and each difference has variance 2τ² (τ² from e_s + g_s,
/// τ² from the conventional noise).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeasuredNoise {
    pub tau: f64,
    pub samples: usize,
}

pub fn gain(outcome: &StudyOutcome) -> Option<Gain> {
    let theory = outcome.theory.as_ref()?;
    let invited = outcome.params.site_count();
    let at_invited = Theory::new(&outcome.noise, invited, outcome.params.epsilon)?;
    let measured = outcome.estimates().and_then(|est| {
        let mut sum = 0.0;
        let mut samples = 0;
        for m in &est.messages {
            let Some(c) = est.conventional_messages.iter().find(|c| c.site == m.site) else {
                continue;
            };
            for (a, c) in m.values.iter().zip(&c.values) {
                sum += (a - c) * (a - c) / 2.0;
                samples += 1;
            }
        }
        (samples > 0).then(|| MeasuredNoise { tau: (sum / samples as f64).sqrt(), samples })
    });
    Some(Gain {
        invited,
        invited_gain: at_invited.gain,
        survivors: theory.sites,
        round_gain: theory.gain,
        var_message: theory.var_message,
        var_conventional: theory.var_conventional,
        var_cape: theory.var_cape,
        measured,
    })
}

/// "R2 masked input", "the invitation", "the release".
pub fn phase_words(phase: StudyPhase) -> String {
    match phase {
        StudyPhase::Invitation => "the invitation".into(),
        StudyPhase::SecAgg { round } => round.to_string(),
        StudyPhase::Release => "the release".into(),
    }
}

/// A stable token for `data-phase`.
pub fn phase_token(phase: StudyPhase) -> &'static str {
    use capelab_core::secagg::Phase;
    match phase {
        StudyPhase::Invitation => "invitation",
        StudyPhase::SecAgg { round: Phase::AdvertiseKeys } => "advertise-keys",
        StudyPhase::SecAgg { round: Phase::ShareKeys } => "share-keys",
        StudyPhase::SecAgg { round: Phase::MaskedInput } => "masked-input",
        StudyPhase::SecAgg { round: Phase::Unmask } => "unmask",
        StudyPhase::Release => "release",
    }
}

/// "Clinic E (#6) left during R2 masked input of attempt 1."
pub fn dropout_sentence(d: &StudyDropout, name: &str) -> String {
    let how = match d.reason {
        DropReason::Left => "left",
        DropReason::TimedOut => "stopped answering",
    };
    let attempt = if d.attempt == 0 { String::new() } else { format!(" of attempt {}", d.attempt) };
    format!("{name} (#{}) {how} during {}{attempt}.", d.site, phase_words(d.phase))
}

/// A site's decline of a round in words: for its budget, what to raise it to.
pub fn decline_text(name: &str, reason: &DeclineReason) -> String {
    match reason {
        DeclineReason::Budget { message, shortfall } => {
            crate::frame::budget::decline_sentence(name, message, shortfall.as_ref())
        }
        other => crate::frame::budget::decline_sentence(name, &other.to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    use capelab_core::secagg::Phase;
    use capelab_core::study::mean::sim::StudyDropPoint;

    use super::*;
    use crate::studies::mean::fixtures::simulated;

    #[test]
    fn the_chart_has_every_message_and_both_estimates_with_their_sds() {
        let round = simulated(4, true, None);
        let chart = messages_chart(&round, 0).unwrap();
        assert_eq!(chart.rows.len(), 4 + 2);
        let theory = round.outcome.theory.as_ref().unwrap();
        assert_eq!(chart.rows[0].sd, theory.var_message.sqrt());
        assert_eq!(chart.rows[4].label, "CAPE estimate");
        assert!((chart.rows[4].sd * 4.0 - chart.rows[0].sd).abs() < 1e-15, "τ/S");
        assert!((chart.rows[5].sd * 2.0 - chart.rows[0].sd).abs() < 1e-15, "τ/√S");
        assert!(chart.rows[0].label.contains("Clinic 0"));
        assert!(chart.title.contains("coordinate 1"));
    }

    #[test]
    fn the_gain_is_s_in_theory_and_the_messages_measure_tau() {
        let round = simulated(4, true, None);
        let g = gain(&round.outcome).unwrap();
        assert_eq!((g.invited, g.invited_gain, g.survivors, g.round_gain), (4, 4.0, 4, 4.0));
        let m = g.measured.unwrap();
        assert_eq!(m.samples, 4 * 400);
        // Independent check: τ̂²/τ² from 1600 differences is within 5 sd of 1 (sd ≈ √(2/1600)).
        let ratio = (m.tau * m.tau) / g.var_message;
        assert!((ratio - 1.0).abs() < 5.0 * (2.0f64 / 1600.0).sqrt(), "τ̂²/τ² = {ratio}");
        // without the conventional release there is nothing to measure with
        assert_eq!(gain(&simulated(3, false, None).outcome).unwrap().measured, None);
    }

    #[test]
    fn a_dropout_in_secagg_shrinks_u_and_is_told_in_words() {
        use capelab_core::secagg::sim::DropPoint;
        let at = StudyDropPoint::SecAgg { attempt: 1, at: DropPoint::AfterShareKeys };
        let round = simulated(5, false, Some(at));
        let g = gain(&round.outcome).unwrap();
        assert_eq!((g.invited, g.survivors), (5, 4));
        assert_eq!((g.invited_gain, g.round_gain), (5.0, 4.0));
        let d = round.outcome.dropouts[0];
        assert_eq!(d.phase, StudyPhase::SecAgg { round: Phase::MaskedInput });
        let text = dropout_sentence(&d, &round.name(d.site));
        assert_eq!(
            text,
            format!("Clinic 4 (#{}) left during R2 masked input of attempt 1.", d.site)
        );
        assert_eq!(phase_token(d.phase), "masked-input");
    }
}
