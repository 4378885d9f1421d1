//! What `cape fm` prints: the JSON report of one run, its text rendering, and the error exit.

use std::process::ExitCode;

use capelab_core::fm::{Evaluation, FmConfig, FmFit, GuaranteeKind, Model};
use serde::Serialize;
use serde_json::{Value, json};

use super::data::Loaded;

pub(super) use crate::exit::fail;

pub(super) fn print_json(v: &impl Serialize) -> ExitCode {
    match serde_json::to_string_pretty(v) {
        Ok(s) => {
            println!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(format!("could not encode the report as JSON: {e}")),
    }
}

/// How a guaranteed ε was obtained, as the JSON and CSV name it: every FM release is one
/// mechanism, so its ε is exact, never a composition bound.
pub(super) fn accounting(kind: GuaranteeKind) -> &'static str {
    match kind {
        // The Gaussian mechanism's exact privacy profile (Balle & Wang 2018), what PLD gives too.
        GuaranteeKind::Approximate => "exact_gaussian_profile",
        // Laplace FM and output perturbation: ε-DP by construction.
        GuaranteeKind::Pure => "pure_dp",
        GuaranteeKind::None => "none",
    }
}

/// [`accounting`] for people.
fn accounting_text(kind: GuaranteeKind) -> &'static str {
    match kind {
        GuaranteeKind::Approximate => "the exact Gaussian privacy profile (= PLD)",
        GuaranteeKind::Pure => "the mechanism (pure ε-DP)",
        GuaranteeKind::None => "nothing (no guarantee)",
    }
}

pub(super) fn run_json(
    cfg: &FmConfig,
    data: &Loaded,
    result: &FmFit,
    eval: &Evaluation,
    np: &Evaluation,
) -> Value {
    let mut warnings: Vec<String> = result.guarantee.warnings.clone();
    if let Some(w) = &data.normalisation.warning {
        warnings.push(w.clone());
    }
    let mut v = json!({
        "model": cfg.model.name(),
        "mechanism": cfg.mechanism.name(),
        "mechanism_label": cfg.mechanism.paper_label(),
        "data": {
            "name": data.name,
            "features": data.train.features(),
            "train": data.train.len(),
            "test": data.test.len(),
            "records_used": result.records_used,
            "normalisation": data.normalisation,
        },
        "epsilon": cfg.epsilon,
        "delta": cfg.delta,
        "sites": cfg.mechanism.is_distributed().then_some(cfg.sites),
        "seed": cfg.seed,
        "strict": cfg.strict,
        "train_loss": eval.train_loss,
        "err_w": eval.err_w,
        "epsilon_guaranteed": result.guarantee.epsilon,
        "delta_guaranteed": result.guarantee.delta,
        "epsilon_accountant": accounting(result.guarantee.kind),
        "guarantee": result.guarantee,
        "minimiser": result.minimiser,
        "noise": result.noise,
        "output_noise_scale": result.output_noise_scale,
        "weights": result.weights,
        "warnings": warnings,
    });
    match cfg.model {
        Model::Linear => {
            v["mse"] = json!(eval.mse);
            v["nonprivate_mse"] = json!(np.mse);
            let zero = data.test.y.norm_squared() / data.test.len() as f64;
            v["zero_predictor_mse"] = json!(zero);
        }
        Model::Logistic => {
            v["accuracy"] = json!(eval.accuracy);
            v["train_accuracy"] = json!(eval.train_accuracy);
            v["nonprivate_accuracy"] = json!(np.accuracy);
        }
    }
    v
}

pub(super) fn human(v: &Value) -> String {
    let mut out = String::new();
    let line = |out: &mut String, k: &str, val: String| out.push_str(&format!("{k:<22} {val}\n"));
    line(
        &mut out,
        "model / mechanism",
        format!("{} / {} ({})", v["model"], v["mechanism"], v["mechanism_label"]).replace('"', ""),
    );
    line(
        &mut out,
        "data",
        format!(
            "{}, D = {}, {} train, {} test, {} used",
            v["data"]["name"],
            v["data"]["features"],
            v["data"]["train"],
            v["data"]["test"],
            v["data"]["records_used"]
        )
        .replace('"', ""),
    );
    line(
        &mut out,
        "normalisation",
        v["data"]["normalisation"]["method"].as_str().unwrap_or("").to_string(),
    );
    if let Some(m) = v["mse"].as_f64() {
        line(
            &mut out,
            "test MSE",
            format!(
                "{m:.4e}  (non-private {:.4e}, predicting 0: {:.4e})",
                v["nonprivate_mse"].as_f64().unwrap_or(f64::NAN),
                v["zero_predictor_mse"].as_f64().unwrap_or(f64::NAN)
            ),
        );
    }
    if let Some(a) = v["accuracy"].as_f64() {
        line(
            &mut out,
            "test accuracy",
            format!(
                "{:.2}%  (non-private {:.2}%)",
                100.0 * a,
                100.0 * v["nonprivate_accuracy"].as_f64().unwrap_or(f64::NAN)
            ),
        );
    }
    line(
        &mut out,
        "training loss",
        format!("{:.4e}", v["train_loss"].as_f64().unwrap_or(f64::NAN)),
    );
    if let Some(e) = v["err_w"].as_f64() {
        line(&mut out, "err_w", format!("{e:.4e}"));
    }
    let num = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    line(&mut out, "requested (ε, δ)", format!("({}, {:e})", num("epsilon"), num("delta")));
    let kind: Option<GuaranteeKind> = serde_json::from_value(v["guarantee"]["kind"].clone()).ok();
    line(
        &mut out,
        "guaranteed (ε, δ)",
        format!(
            "({:.4}, {:e}) by {}",
            num("epsilon_guaranteed"),
            num("delta_guaranteed"),
            kind.map_or("?", accounting_text)
        ),
    );
    line(&mut out, "how", v["guarantee"]["how"].as_str().unwrap_or("").to_string());
    if let Some(m) = v["minimiser"].as_object() {
        line(
            &mut out,
            "minimiser",
            format!(
                "{}; floor {:.3e}; kept {} eigenvalues, trimmed {} ({} negative){}",
                m["method"].as_str().unwrap_or(""),
                m["floor"].as_f64().unwrap_or(f64::NAN),
                m["kept_eigenvalues"],
                m["trimmed_eigenvalues"].as_array().map_or(0, Vec::len),
                m["negative_eigenvalues"],
                if m["all_trimmed"].as_bool() == Some(true) { "; ALL trimmed: ŵ = 0" } else { "" }
            ),
        );
    }
    for w in v["warnings"].as_array().into_iter().flatten() {
        line(&mut out, "warning", w.as_str().unwrap_or("").to_string());
    }
    out
}
