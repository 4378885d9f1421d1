//! `result.json` of `cape djica`: q_NGI, overall ε under every view, the parameters, PCA quality,
//! the privacy account, the ledger releases and the history.

use capelab_core::djica::accounting::StudyAccount;
use capelab_core::djica::{Method, ledger_releases};
use capelab_core::fmri::SiteData;
use capelab_core::fmri::maps::condition_number;
use serde_json::{Value, json};

use super::args::{DjicaCommon, PcaArg, UnitArg, method_name};
use super::pipeline::Run;
use super::study::Study;

fn views_json(composition: Option<&capelab_core::djica::accounting::Composition>) -> Value {
    match composition {
        None => Value::Null,
        Some(c) => {
            let mut m = serde_json::Map::new();
            m.insert("iterations".into(), json!(c.iterations));
            for v in &c.views {
                m.insert(v.view.clone(), json!(v.epsilon_exact));
            }
            Value::Object(m)
        }
    }
}

fn overall_epsilon_json(a: &StudyAccount) -> Value {
    let Some(ica) = &a.ica else {
        return json!({
            "delta": a.delta,
            "note": "non-private: no privacy guarantee (ε = ∞)",
            "aggregator_view": null, "full_view": null, "at_realised": null, "at_max": null,
            "pca": a.pca.as_ref().map(|p| views_json(Some(&p.release))),
        });
    };
    json!({
        "delta": a.delta,
        "composition": "exact Gaussian composition; RDP figures under privacy.ica",
        "guarantee_view": a.guarantee_view,
        "aggregator_view": ica.at_realised.exact("aggregator"),
        "full_view": ica.at_realised.exact(&a.guarantee_view),
        "aggregator_view_at_max": ica.at_max.exact("aggregator"),
        "full_view_at_max": ica.at_max.exact(&a.guarantee_view),
        "at_realised": views_json(Some(&ica.at_realised)),
        "at_max": views_json(Some(&ica.at_max)),
        "pca": a.pca.as_ref().map(|p| views_json(Some(&p.release))),
    })
}

pub(super) fn parameters_json(c: &DjicaCommon, method: Method, eps: f64, subjects: usize) -> Value {
    json!({
        "method": method_name(method),
        "sites": c.sites,
        "subjects": subjects,
        "components": c.components,
        "grid": c.grid,
        "voxels": c.grid * c.grid,
        "timepoints_per_subject": c.timepoints,
        "preset": format!("{:?}", c.preset).to_lowercase(),
        "eps_iter": eps,
        "delta_iter": c.delta_iter,
        "privacy_unit": match c.privacy_unit { UnitArg::Subject => "subject", UnitArg::Timepoint => "timepoint" },
        "pca": match c.pca { PcaArg::Cape => "cape", PcaArg::Nonprivate => "nonprivate" },
        "eps_pca": c.eps_pca,
        "delta_pca": c.delta_pca,
        "pca_rigorous_sensitivity": c.pca_rigorous,
        "whitening": "runica (2·Λ^(-1/2)·V_Rᵀ)",
        "rate": c.rate,
        "max_iterations": c.max_iterations,
        "schedule": format!("{:?}", c.schedule).to_lowercase(),
        "half_life": c.half_life,
        "average_tail": c.average_tail,
        "clip_gradient": c.clip,
        "clip_bias": c.clip.sqrt(),
        "seed": c.seed,
    })
}

pub(super) fn result_json(run: &Run, c: &DjicaCommon, study: &Study) -> Value {
    let d = &run.djica;
    let cos = run.projected.principal_cosines.clone().unwrap_or_default();
    let mut warnings = vec![];
    if c.privacy_unit == UnitArg::Timepoint && run.method.is_private() {
        warnings.push(
            "time-point privacy protects one time point, not one subject: a subject's 250 time \
             points are correlated, so this is a weaker guarantee than the paper states"
                .to_string(),
        );
    }
    if c.privacy_unit == UnitArg::Subject && run.method.is_private() && c.eps_iter <= 1.0 {
        warnings.push(
            "at subject level and ε_i ≤ 1 the noise swamps the gradient at M ≤ 1024 (spec §9.4): \
             expect q_NGI near that of W = I"
                .to_string(),
        );
    }
    if c.eps_iter >= 1.0 && run.method.is_private() {
        warnings.push(format!(
            "ε_i = {} ≥ 1: the classical calibration is applied as in the paper; it labels the \
             noise level, the guarantee is overall_epsilon",
            c.eps_iter
        ));
    }
    json!({
        "method": method_name(run.method),
        "q_ngi": d.q,
        "iterations": d.privacy.iterations,
        "max_iterations": d.privacy.max_iterations,
        "stop": d.stop,
        "restarts": d.restarts,
        "final_rate": d.final_rate,
        "overall_epsilon": overall_epsilon_json(&run.account),
        "parameters": parameters_json(
            c,
            run.method,
            c.eps_iter,
            study.sites.iter().map(SiteData::subjects).sum(),
        ),
        "pca": {
            "private": c.pca == PcaArg::Cape,
            "principal_cosines": cos,
            "mean_principal_cosine": (!cos.is_empty())
                .then(|| cos.iter().sum::<f64>() / cos.len() as f64),
            "min_principal_cosine": cos.iter().copied().reduce(f64::min),
            "eigenvalues": run.projected.pca.subspace.eigenvalues.as_slice(),
            "noise": run.projected.pca.privacy,
        },
        "privacy": run.account,
        // What a site's ledger records for this run (guarantee view; time 0 here), so a study
        // driver can gate on it (accountant::ledger).
        "ledger_releases": ledger_releases(&run.account, &format!("djica seed {}", c.seed), 0)
            .map_err(|e| e.to_string())
            .ok(),
        "noise_scales": d.privacy.scales,
        "data": {
            "source": study.source,
            "subjects_per_site": study.sites.iter().map(SiteData::subjects).collect::<Vec<_>>(),
            "voxels": study.sites[0].voxels(),
            "condition_number_a": study.truth.as_ref().map(condition_number),
            "ground_truth": study.truth.is_some(),
            "note": study.truth.is_none().then_some(
                "real data: no ground truth, so no q_NGI, A.csv or maps",
            ),
            "clipped_fraction": study.clipped_fraction,
        },
        "history": d.history,
        "warnings": warnings,
    })
}
