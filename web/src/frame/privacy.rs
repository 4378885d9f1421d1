/*!
The privacy panel's charts, all computed by the core:
- ε spent per site, round by round, from the sites' ledger reports;
- the same run of releases under basic, strong, RDP and collusion-aware accounting
  ([`ComparisonRequest`], what `cape account` prints);
- seed 000 Fig. 5: δ_cape, δ_conv and δ_pool over the local noise level z for the room's S
  ([`fig5_noise_sweep`]).
*/

use std::collections::BTreeMap;

use capelab_core::accountant::{AccountantError, ComparisonRequest};
use capelab_core::cape::figures::{fig5_noise_sweep, log_grid};
use capelab_core::cape::{Collusion, PrivacyError};
use capelab_core::wire::ParticipantId;

use crate::components::charts::line::{LineChartSpec, Marker, Series};
use crate::components::charts::scale::{Scale, format_value};
use crate::components::charts::svg::PALETTE;
use crate::ledger_report::LedgerReport;

/// The ledger study names of `studies` that some site has released in, ordered by their first
/// release in the reports (the dashboard runs one study at a time, so this is the order it ran
/// them in, whatever their kind).
pub fn in_release_order(
    studies: &[String],
    reports: &BTreeMap<ParticipantId, LedgerReport>,
) -> Vec<String> {
    let mut first: BTreeMap<&str, u64> = BTreeMap::new();
    for release in reports.values().flat_map(|r| &r.releases) {
        if studies.contains(&release.study) {
            let t = first.entry(release.study.as_str()).or_insert(release.time_ms);
            *t = (*t).min(release.time_ms);
        }
    }
    let mut ordered: Vec<(&str, u64)> = first.into_iter().collect();
    ordered.sort_by_key(|&(study, t)| (t, study));
    ordered.into_iter().map(|(study, _)| study.to_owned()).collect()
}

/// ε spent by every reporting site before the first of `studies` (ledger study names of the
/// studies this dashboard ran, of any kind) and after each, in the order they ran.
pub fn spend_chart(
    studies: &[String],
    reports: &BTreeMap<ParticipantId, LedgerReport>,
) -> LineChartSpec {
    let studies = in_release_order(studies, reports);
    let series: Vec<Series> = reports
        .iter()
        .enumerate()
        .map(|(i, (id, report))| Series {
            name: format!(
                "{} (#{id}, budget ε = {})",
                report.site,
                format_value(report.budget_epsilon)
            ),
            color: PALETTE[i % PALETTE.len()],
            points: report
                .spend_by_round(&studies)
                .into_iter()
                .enumerate()
                .map(|(k, spent)| (k as f64, spent))
                .collect(),
            dashed: false,
            dots: true,
        })
        .collect();
    let x = Scale::Linear { min: 0.0, max: (studies.len().max(1)) as f64 };
    let y = Scale::linear_fit(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)), &[0.0]);
    LineChartSpec {
        title: "ε spent per site, study by study".into(),
        x_label: "studies this dashboard ran, in order (0 = before the first)".into(),
        y_label: "ε spent (at the site's budget δ)".into(),
        x,
        y,
        series,
        markers: Vec::new(),
        note: Some(
            "Each site's own ledger (the tighter of RDP with Balle et al.'s conversion and the \
             privacy loss distribution, CAPE releases counted with the collusion factor c_S of the \
             adversary's full view), as the site reports it."
                .into(),
        ),
    }
}

/// J = 1..=`releases` releases with multiplier z at δ: basic, strong, RDP (two conversions) and
/// PLD in the aggregator's view, and RDP and PLD in the colluding adversary's view (factor
/// `collusion_factor`). The releases are unsampled Gaussians, whose PLDs compose exactly, so PLD
/// here is the exact composition (`ViewReport::epsilon_exact`), the tightest bound there is.
pub fn comparison_chart(
    noise_multiplier: f64,
    collusion_factor: f64,
    delta: f64,
    releases: u64,
    done: Option<u64>,
) -> Result<LineChartSpec, AccountantError> {
    let mut basic = Vec::new();
    let mut strong = Vec::new();
    let mut rdp = Vec::new();
    let mut improved = Vec::new();
    let mut pld = Vec::new();
    let mut colluding = Vec::new();
    let mut colluding_pld = Vec::new();
    for j in 1..=releases.max(1) {
        let report = ComparisonRequest {
            collusion_factor: Some(collusion_factor),
            ..ComparisonRequest::gaussian(noise_multiplier, j, delta)
        }
        .run()?;
        let x = j as f64;
        basic.push((x, report.aggregator.epsilon_basic));
        strong.push((x, report.aggregator.epsilon_strong));
        rdp.push((x, report.aggregator.epsilon_rdp));
        improved.push((x, report.aggregator.epsilon_rdp_improved));
        pld.extend(report.aggregator.epsilon_exact.map(|e| (x, e)));
        if let Some(view) = &report.collusion_aware {
            colluding.push((x, view.epsilon_rdp_improved));
            colluding_pld.extend(view.epsilon_exact.map(|e| (x, e)));
        }
    }
    let line = |name: &str, color, points, dashed| Series {
        name: name.into(),
        color,
        points,
        dashed,
        dots: false,
    };
    let series = vec![
        line("basic composition", PALETTE[6], basic, true),
        line("strong composition", PALETTE[4], strong, true),
        line("RDP (standard conversion)", PALETTE[0], rdp, false),
        line("RDP (Balle et al. conversion)", PALETTE[5], improved, false),
        line(
            &format!("collusion-aware RDP (c_S = {})", format_value(collusion_factor)),
            PALETTE[1],
            colluding,
            false,
        ),
        line("PLD (exact here)", PALETTE[2], pld, true),
        line(
            &format!("collusion-aware PLD (c_S = {})", format_value(collusion_factor)),
            PALETTE[3],
            colluding_pld,
            true,
        ),
    ];
    let y = Scale::linear_fit(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)), &[0.0]);
    Ok(LineChartSpec {
        title: "One run of releases under every accountant".into(),
        x_label: "number of releases J".into(),
        y_label: format!("ε at δ = {delta:e}"),
        x: Scale::Linear { min: 0.0, max: releases.max(1) as f64 },
        y,
        series,
        markers: done
            .filter(|&j| j >= 1)
            .map(|j| vec![Marker { x: j as f64, label: format!("rounds so far: {j}") }])
            .unwrap_or_default(),
        note: Some(format!(
            "J CAPE releases with noise multiplier z = {}. The aggregator's view counts each as a \
             Gaussian release with multiplier z; the colluding adversary's full view as one with \
             z/√c_S, which is what the sites' ledgers charge, by the tighter of RDP and PLD.",
            format_value(noise_multiplier)
        )),
    })
}

/// Seed 000 Fig. 5(a, b) for `sites` sites with the default S_C = ⌈S/3⌉ − 1 at ε: δ over z, with
/// this study's z marked.
pub fn fig5_chart(
    sites: usize,
    epsilon: f64,
    study_z: Option<f64>,
) -> Result<LineChartSpec, PrivacyError> {
    let collusion = Collusion::default_for(sites)?;
    let (lo, hi) = match study_z {
        Some(z) => ((z / 3.0).min(1.0), (z * 3.0).max(100.0)),
        None => (1.0, 100.0),
    };
    let rows = fig5_noise_sweep(&collusion, epsilon, &log_grid(lo, hi, 90))?;
    let pick = |f: &dyn Fn(&capelab_core::cape::figures::Fig5Row) -> Option<f64>| {
        rows.iter()
            .map(|r| (r.noise_multiplier, f(r).map_or(f64::NAN, |d| d.min(1.0))))
            .collect::<Vec<_>>()
    };
    let series = vec![
        Series {
            name: "δ_cape, adversary's full view (the guarantee)".into(),
            color: PALETTE[1],
            points: pick(&|r| r.delta_cape_full_view),
            dashed: false,
            dots: false,
        },
        Series {
            name: "δ_cape, Theorem 1 (exact c_S)".into(),
            color: PALETTE[0],
            points: pick(&|r| r.delta_cape),
            dashed: false,
            dots: false,
        },
        Series {
            name: "δ_cape, eq. (1) as printed".into(),
            color: PALETTE[5],
            points: pick(&|r| r.delta_cape_paper_eq1),
            dashed: true,
            dots: false,
        },
        Series {
            name: "δ_conv (conventional)".into(),
            color: PALETTE[2],
            points: pick(&|r| Some(r.delta_conv)),
            dashed: false,
            dots: false,
        },
        Series {
            name: "δ_pool (pooled data)".into(),
            color: PALETTE[6],
            points: pick(&|r| Some(r.delta_pool)),
            dashed: true,
            dots: false,
        },
    ];
    Ok(LineChartSpec {
        title: format!(
            "Seed 000 Fig. 5: δ at ε = {} for S = {sites} sites, S_C = {}",
            format_value(epsilon),
            collusion.colluders()
        ),
        x_label: "local noise level z = τ/Δ (log scale)".into(),
        y_label: "δ (log scale)".into(),
        x: Scale::Log { min: lo, max: hi },
        y: Scale::Log { min: 1e-16, max: 1.0 },
        series,
        markers: study_z
            .map(|z| vec![Marker { x: z, label: format!("this study: z = {}", format_value(z)) }])
            .unwrap_or_default(),
        note: Some(
            "The paper's Theorem 1 view leaves out what colluders know (their own noise); the \
             full view is this project's guarantee. δ_pool uses the classical bound and δ_cape a \
             tail bound, so \"better than pooled\" is partly an artefact of the bounds. Values ≥ 1 \
             say nothing and sit on the top edge."
                .into(),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::studies::mean::fixtures::simulated;

    #[test]
    fn spend_per_round_follows_each_sites_ledger() {
        use capelab_core::accountant::{Budget, Event, Ledger, Release};
        let round = simulated(3, false, None);
        let study = round.outcome.params.query.ledger_study_name(round.outcome.study);
        let mut ledger = Ledger::new("Clinic 0", Budget::new(10.0, 1e-5).unwrap()).unwrap();
        let release = |s: &str, t| Release {
            study: s.into(),
            event: Event::gaussian("x", 8.0, 1).unwrap().into(),
            time_ms: t,
        };
        ledger.try_spend(release("earlier", 1)).unwrap();
        ledger.try_spend(release(&study, 2)).unwrap();
        let reports = BTreeMap::from([(2, LedgerReport::of(&ledger))]);
        let chart = spend_chart(&[study.clone(), "iterative/ab".into()], &reports);
        let points = &chart.series[0].points;
        assert_eq!(points.len(), 2);
        assert_eq!(points[0], (0.0, ledger.entries()[0].epsilon_after));
        assert_eq!(points[1], (1.0, ledger.spent()));
        assert!(chart.series[0].name.starts_with("Clinic 0 (#2"));
    }

    #[test]
    fn studies_of_every_kind_count_in_the_order_they_released() {
        use capelab_core::accountant::{Budget, Event, Ledger, Release};
        let mut ledger = Ledger::new("Clinic 0", Budget::new(100.0, 1e-5).unwrap()).unwrap();
        let release = |s: &str, t| Release {
            study: s.into(),
            event: Event::gaussian("x", 8.0, 1).unwrap().into(),
            time_ms: t,
        };
        ledger.try_spend(release("iterative/bb", 5)).unwrap();
        ledger.try_spend(release("iterative/bb", 6)).unwrap();
        ledger.try_spend(release("mean aa", 9)).unwrap();
        let reports = BTreeMap::from([(2, LedgerReport::of(&ledger))]);
        let studies = ["mean aa".to_owned(), "iterative/bb".to_owned(), "mean none".to_owned()];
        assert_eq!(in_release_order(&studies, &reports), ["iterative/bb", "mean aa"]);
        let chart = spend_chart(&studies, &reports);
        let points = &chart.series[0].points;
        assert_eq!(points.len(), 3, "before, after the iterative study, after the mean");
        assert_eq!(points[1], (1.0, ledger.entries()[1].epsilon_after));
        assert_eq!(points[2], (2.0, ledger.spent()));
        assert_eq!(chart.x, Scale::Linear { min: 0.0, max: 2.0 });
    }

    #[test]
    fn the_accountings_are_ordered_as_theory_says() {
        let c = capelab_core::study::mean::collusion_factor(5);
        let chart = comparison_chart(9.69, c, 1e-5, 10, Some(2)).unwrap();
        assert_eq!(chart.series.len(), 7);
        let at = |s: usize, j: usize| chart.series[s].points[j - 1].1;
        // independent facts: basic splits δ over J, so each of J releases costs more than one
        // release at the whole δ; RDP beats basic for many releases; the colluding view
        // (smaller effective z) costs more than the aggregator's
        assert!(at(0, 10) > 10.0 * at(0, 1), "basic at δ/J per release: more than J·ε₁(δ)");
        assert!(at(0, 10) < 10.0 * 1.5 * at(0, 1), "δ/10 changes ε₁ only a little at z = 9.69");
        assert!(at(2, 10) < at(0, 10));
        assert!(at(3, 10) <= at(2, 10) + 1e-12);
        assert!(at(4, 10) > at(3, 10));
        // PLD (exact for Gaussians) is below every RDP bound, in both views, at every J
        for j in 1..=10 {
            assert!(at(5, j) < at(3, j) && at(6, j) < at(4, j), "J = {j}");
            assert!(at(6, j) > at(5, j));
        }
        assert_eq!(chart.markers[0].x, 2.0);
    }

    #[test]
    fn fig5_orders_the_deltas_like_the_paper() {
        let chart = fig5_chart(5, 0.5, Some(9.69)).unwrap();
        assert_eq!(chart.series.len(), 5);
        assert_eq!(chart.markers[0].label, "this study: z = 9.6900");
        // at a large z, δ_conv is far above δ_cape (the gain), and every δ ≤ 1
        let last = |s: usize| chart.series[s].points.last().unwrap().1;
        assert!(last(3) > last(1), "δ_conv {} vs δ_cape {}", last(3), last(1));
        // the full view is the weaker guarantee: its δ is at least Theorem 1's
        assert!(last(0) >= last(1));
        assert!(chart.series.iter().flat_map(|s| &s.points).all(|p| p.1.is_nan() || p.1 <= 1.0));
        assert!(fig5_chart(1, 0.5, None).is_err());
    }
}
