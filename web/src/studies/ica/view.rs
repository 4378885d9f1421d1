/*!
What the dashboard shows of a Joint ICA study: the recovered maps next to the true ones, q_NGI,
the learning rate and the ε spent per iteration, capePCA's subspace, the guarantee, and the
exports. Pure logic over [`IcaLive`], tested natively.

The true maps are public in this study (the data set's maps seed is announced), so the dashboard
scores what the study recovers without seeing any site's data.
*/

use capelab_core::djica::PrivacyUnit;
use capelab_core::study::iterative::{IterativePrivacy, NoiseMode};
use serde_json::json;

use crate::components::charts::heatmap::{HeatmapSpec, Tile};
use crate::components::charts::line::{LineChartSpec, Marker, Series};
use crate::components::charts::scale::{Scale, format_value};
use crate::components::charts::svg::PALETTE;
use crate::frame::bounds::{BoundPair, GaussianRun};
use crate::studies::ica::run::{IcaLive, IcaPoint, MapsView};

/// The true maps above the recovered ones, matched (permutation and sign) to them.
pub fn maps_spec(maps: &MapsView, q: Option<f64>, title: &str) -> HeatmapSpec {
    let g = maps.grid;
    let truth = maps
        .truth
        .iter()
        .enumerate()
        .map(|(j, m)| Tile::square(format!("network {}", j + 1), g, m))
        .collect();
    let recovered = maps
        .recovered
        .iter()
        .zip(&maps.strength)
        .map(|(m, s)| Tile::square(format!("match {s:.2}"), g, m))
        .collect();
    HeatmapSpec {
        title: match q {
            Some(q) => format!("{title}: q_NGI = {q:.3}"),
            None => title.to_owned(),
        },
        rows: vec![("true".into(), truth), ("recovered".into(), recovered)],
        tile: 64.0,
        note: Some(
            "Recovered: columns of (W·K)⁺, each matched to its true network and sign-corrected; \
             “match” is |p_ij|/‖p_i‖ (1 = a clean recovery)."
                .into(),
        ),
    }
}

fn iteration_scale(max_iterations: u32) -> Scale {
    Scale::linear_fit([0.0, f64::from(max_iterations.max(1))], &[])
}

/// q_NGI per iteration (0 = perfect separation), with the spec's q = 0.1 line.
pub fn quality_chart(points: &[IcaPoint], max_iterations: u32) -> LineChartSpec {
    let q: Vec<(f64, f64)> =
        points.iter().filter_map(|p| p.q.map(|q| (f64::from(p.iteration), q))).collect();
    LineChartSpec {
        title: "Separation quality q_NGI per iteration (lower is better)".into(),
        x_label: "iteration j".into(),
        y_label: "q_NGI of W·K·A".into(),
        x: iteration_scale(max_iterations),
        y: Scale::linear_fit(q.iter().map(|p| p.1), &[0.0, 0.1]),
        series: vec![
            Series {
                name: "q_NGI".into(),
                color: PALETTE[0],
                points: q,
                dashed: false,
                dots: false,
            },
            Series {
                name: "q = 0.1 (spec: maps recovered)".into(),
                color: PALETTE[6],
                points: vec![(0.0, 0.1), (f64::from(max_iterations.max(1)), 0.1)],
                dashed: true,
                dots: false,
            },
        ],
        markers: Vec::<Marker>::new(),
        note: None,
    }
}

/// ε a site has spent in capeDJICA after each iteration, and the learning rate ρ_j.
pub fn epsilon_chart(points: &[IcaPoint], max_iterations: u32, delta: f64) -> LineChartSpec {
    let spent: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|p| p.epsilon_spent.map(|e| (f64::from(p.iteration), e)))
        .collect();
    LineChartSpec {
        title: format!("ε spent in capeDJICA per iteration (δ = {delta:e})"),
        x_label: "iteration j".into(),
        y_label: "ε spent so far".into(),
        x: iteration_scale(max_iterations),
        y: Scale::linear_fit(spent.iter().map(|p| p.1), &[0.0]),
        series: vec![Series {
            name: "ε spent by a site that released every iteration (full view)".into(),
            color: PALETTE[2],
            points: spent,
            dashed: false,
            dots: false,
        }],
        markers: Vec::new(),
        note: None,
    }
}

pub fn rate_chart(points: &[IcaPoint], max_iterations: u32) -> LineChartSpec {
    let rate: Vec<(f64, f64)> = points.iter().map(|p| (f64::from(p.iteration), p.rate)).collect();
    LineChartSpec {
        title: "Learning rate ρ_j".into(),
        x_label: "iteration j".into(),
        y_label: "ρ".into(),
        x: iteration_scale(max_iterations),
        y: Scale::linear_fit(rate.iter().map(|p| p.1), &[0.0]),
        series: vec![Series {
            name: "ρ_j (decays under noise, spec §9.3)".into(),
            color: PALETTE[1],
            points: rate,
            dashed: false,
            dots: false,
        }],
        markers: Vec::new(),
        note: None,
    }
}

/// The privacy unit in plain words.
pub fn unit_text(unit: PrivacyUnit) -> &'static str {
    match unit {
        PrivacyUnit::Subject => "per subject (the paper's unit: all of a subject's time points)",
        PrivacyUnit::TimePoint => {
            "per time point: a WEAKER guarantee (one subject's time points are correlated, so a \
             subject is not protected as a whole)"
        }
    }
}

pub fn mode_text(mode: NoiseMode) -> &'static str {
    match mode {
        NoiseMode::Upfront => "CAPE (zero-sum noise from one SecureAgg run per step)",
        NoiseMode::Conventional => "conventional (independent noise at every site)",
        NoiseMode::NonPrivate => "non-private",
    }
}

/// The study's privacy cost in plain numbers: capePCA's and capeDJICA's ε in the full
/// (collusion-aware) view, and what a site's ledger composes.
pub fn cost_lines(live: &IcaLive) -> Vec<String> {
    let mut lines = vec![format!(
        "Privacy unit: {}. {} sites; ε_p = {} for capePCA, ε_i = {} per release (δ = {:e}).",
        unit_text(live.form.unit),
        live.form.sites.len(),
        format_value(live.form.pca_level.epsilon),
        format_value(live.form.level.epsilon),
        live.form.level.delta,
    )];
    let pca_epsilon = live.pca.as_ref().and_then(|o| o.privacy.as_ref()).map(|p| p.epsilon);
    if let Some(e) = pca_epsilon {
        lines.push(format!("capePCA spent ε = {} (one release, full view).", format_value(e)));
    }
    let spent = live.points.last().and_then(|p| p.epsilon_spent);
    if let (Some(e), Some(p)) = (spent, live.points.last()) {
        lines.push(format!(
            "capeDJICA so far: ε = {} after {} iterations (full view); each site's ledger composes \
             both steps (see the budgets below).",
            format_value(e),
            p.iteration
        ));
    }
    if let Some(c) = &live.form.calibration {
        lines.push(format!(
            "capeDJICA's noise was calibrated for ε = {} over all {} iterations (aggregator \
             view): {}.",
            format_value(c.target_epsilon),
            c.iterations,
            c.summary()
        ));
    }
    let pca = live.pca.as_ref().and_then(|o| o.privacy.clone());
    let djica = live.djica.as_ref().and_then(|o| o.privacy.clone());
    lines.extend(bound_lines(pca.as_ref(), djica.as_ref()));
    lines
}

/// capePCA's and capeDJICA's guarantees (their full views) under PLD and under RDP, and both
/// steps composed as a site's ledger composes them, with the bound it charges.
pub fn bound_lines(
    pca: Option<&IterativePrivacy>,
    djica: Option<&IterativePrivacy>,
) -> Vec<String> {
    let mut lines = Vec::new();
    let mut runs = Vec::new();
    for (name, privacy) in [("capePCA", pca), ("capeDJICA", djica)] {
        let Some(p) = privacy else { continue };
        if let Some(b) = BoundPair::of_study(p) {
            lines.push(format!(
                "{name} after {} release(s), {}: {}.",
                p.iterations,
                p.guarantee_view,
                b.sentence()
            ));
        }
        runs.extend(GaussianRun::of_study(p).map(|r| (r, p.delta)));
    }
    if let [(a, delta), (b, _)] = runs[..]
        && let Ok(both) = BoundPair::gaussians(&[a, b], delta)
    {
        lines.push(format!("Both steps composed: {}.", both.sentence()));
    }
    lines
}

/// The run as JSON: parameters, capePCA's eigenvalues, cosines and K, the iterations, the final
/// W, b and the guarantee.
pub fn run_json(live: &IcaLive) -> String {
    let pca = live.pca.as_ref();
    let djica = live.djica.as_ref();
    let value = json!({
        "study": "capelab Joint ICA (capePCA + capeDJICA)",
        "number": live.number,
        "data": match &live.form.data.synthetic {
            Some(s) => json!({
                "source": "generated at every site (public maps, each site's own sources)",
                "preset": format!("{:?}", s.preset),
                "grid": s.grid,
                "components": s.components,
                "timepoints": s.timepoints,
                "subjects_per_site": s.subjects_per_site,
                "maps_seed": s.maps_seed,
            }),
            None => json!({
                "source": "the sites' own files (no ground truth: no q_NGI, no matched maps)",
                "voxels": live.form.data.voxels,
                "components": live.form.data.components,
                "min_samples_per_site": live.form.data.min_samples,
                "longest_subject": live.form.data.longest_subject,
            }),
        },
        "privacy_unit": format!("{:?}", live.form.unit),
        "mode": live.form.mode.name(),
        "epsilon_pca": live.form.pca_level.epsilon,
        "epsilon_iteration": live.form.level.epsilon,
        "delta": live.form.level.delta,
        "max_iterations": live.form.max_iterations,
        "clip_gradient": live.form.bounds.gradient,
        "sites": live.form.sites,
        "pca": pca.map(|o| json!({
            "eigenvalues": o.final_state.eigenvalues,
            "projection_rxd_column_major": o.final_state.projection,
            "principal_cosines": o.records.last().and_then(|r| r.report.principal_cosines.clone()),
            "privacy": o.privacy,
            "stop": o.stop.to_string(),
        })),
        "iterations": live.points.iter().map(|p| json!({
            "iteration": p.iteration, "q_ngi": p.q, "rate": p.rate, "epsilon_spent": p.epsilon_spent,
        })).collect::<Vec<_>>(),
        "djica": djica.map(|o| json!({
            "w_rxr_column_major": o.final_state.w,
            "b": o.final_state.b,
            "q_ngi": o.records.last().and_then(|r| r.report.q),
            "privacy": o.privacy,
            "stop": o.stop.to_string(),
            "contributors": o.contributors,
        })),
        "failure": live.failure,
    });
    serde_json::to_string_pretty(&value).unwrap_or_default()
}

/// One row per iteration: j, q_NGI, ρ, ε spent.
pub fn iterations_csv(points: &[IcaPoint]) -> String {
    let mut out = String::from("iteration,q_ngi,rate,epsilon_spent\n");
    for p in points {
        let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
        out.push_str(&format!(
            "{},{},{},{}\n",
            p.iteration,
            opt(p.q),
            p.rate,
            opt(p.epsilon_spent)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::bounds::{PLD_LABEL, RDP_LABEL};

    fn points() -> Vec<IcaPoint> {
        (1..=3)
            .map(|j| IcaPoint {
                iteration: j,
                q: Some(0.5 / f64::from(j)),
                rate: 0.5,
                epsilon_spent: Some(0.1 * f64::from(j)),
            })
            .collect()
    }

    #[test]
    fn charts_and_exports_carry_every_iteration() {
        let p = points();
        let q = quality_chart(&p, 10);
        assert_eq!(q.series[0].points, vec![(1.0, 0.5), (2.0, 0.25), (3.0, 0.5 / 3.0)]);
        assert_eq!(epsilon_chart(&p, 10, 1e-2).series[0].points.len(), 3);
        let csv = iterations_csv(&p);
        assert_eq!(csv.lines().count(), 4);
        assert!(csv.lines().nth(2).unwrap().starts_with("2,0.25,0.5,0.2"));
    }

    /// An iterative study's privacy as the core's aggregator reports it (both views).
    fn privacy(z: f64, iterations: u32, delta: f64) -> IterativePrivacy {
        use capelab_core::nn::privacy::account;
        let j = iterations as usize;
        let views = vec![
            account("aggregator alone (S_C = 0)", z, j, delta, 1.0).unwrap(),
            account("full adversary view (S_C = 1)", z, j, delta, 1.5).unwrap(),
        ];
        IterativePrivacy {
            iterations,
            releases: iterations,
            delta,
            noise_multiplier: z,
            epsilon: views[1].epsilon_exact,
            guarantee_view: views[1].view.clone(),
            views,
        }
    }

    #[test]
    fn the_cost_states_both_steps_under_pld_and_rdp() {
        let (pca, djica) = (privacy(6.0, 1, 1e-2), privacy(10.0, 150, 1e-2));
        assert!(bound_lines(None, None).is_empty());
        let lines = bound_lines(Some(&pca), Some(&djica));
        assert_eq!(lines.len(), 3, "{lines:?}");
        for line in &lines {
            assert!(line.contains(PLD_LABEL) && line.contains(RDP_LABEL), "{line}");
            assert!(line.ends_with("the tighter, PLD."), "{line}");
        }
        assert!(lines[1].starts_with("capeDJICA after 150 release(s), full adversary view"));
        let one = BoundPair::of_study(&djica).unwrap();
        assert!(one.pld <= one.rdp, "{one:?}");
        assert!(lines[1].contains(&format_value(one.pld)), "{}", lines[1]);
        // composing both costs more than either alone and less than their sum
        let runs = [GaussianRun::of_study(&pca).unwrap(), GaussianRun::of_study(&djica).unwrap()];
        let both = BoundPair::gaussians(&runs, 1e-2).unwrap();
        let first = BoundPair::of_study(&pca).unwrap();
        assert!(both.pld > one.pld.max(first.pld) && both.pld < one.pld + first.pld, "{both:?}");
        assert!(both.pld <= both.rdp);
        assert!(lines[2].contains(&format_value(both.pld)), "{}", lines[2]);
    }

    #[test]
    fn maps_are_laid_out_truth_above_recovered() {
        let maps = MapsView {
            grid: 2,
            truth: vec![vec![1.0, 0.0, 0.0, 0.0], vec![0.0, 0.0, 0.0, 1.0]],
            recovered: vec![vec![0.9, 0.1, 0.0, 0.0], vec![0.0, 0.0, 0.2, 0.8]],
            strength: vec![0.95, 0.8],
        };
        let spec = maps_spec(&maps, Some(0.05), "Maps");
        assert_eq!(spec.rows.len(), 2);
        assert_eq!(spec.rows[1].1[1].label, "match 0.80");
        assert!(spec.title.ends_with("q_NGI = 0.050"));
    }
}
