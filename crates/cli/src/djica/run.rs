//! `cape djica`: one run, its files (result.json, W.csv, V.csv, A.csv, maps) and the summary it
//! prints; with the file, progress-bar and number helpers the sweep shares.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use capelab_core::djica::{
    CapeZeroSumNoise, IterationReport, Method, REPORT_DELTA, TargetLevel, level_for_target,
};
use capelab_core::fmri::matrix_io::to_csv;
use capelab_core::rng::Seed;
use serde_json::{Value, json};

use super::args::{DjicaArgs, DjicaCommon, PcaArg, method_name, validate};
use super::maps::maps_figure;
use super::output::result_json;
use super::pipeline::{project, run_once, used_sites};
use super::study::{load_study, nifti_study, nifti_subject_files, synthetic_study};
use crate::outdir::{OutDir, with_out};
use crate::progress::Progress;

pub(super) fn write(path: &Path, text: String) -> Result<PathBuf, String> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(path.to_path_buf())
}

fn djica(args: &DjicaArgs, out: &OutDir) -> Result<(Value, Vec<PathBuf>), String> {
    let c = &args.common;
    let method: Method = args.method.into();
    let nifti_files = nifti_subject_files(&args.nifti_site)?;
    // Real data decide S and M; the checks below see them.
    let c = &if !args.data.is_empty() {
        let subjects = args.data.len().max(1);
        DjicaCommon { sites: args.data.len(), subjects, ..c.clone() }
    } else if !nifti_files.is_empty() {
        let subjects = nifti_files.iter().map(Vec::len).sum();
        DjicaCommon { sites: nifti_files.len(), subjects, ..c.clone() }
    } else {
        c.clone()
    };
    validate(c, method)?;
    let phase = Progress::spinner("djica: reading or generating the sites' data");
    let study = if !args.data.is_empty() {
        load_study(&args.data, c.timepoints, args.data_scale)?
    } else if let Some(mask) = args.mask.as_deref().filter(|_| !nifti_files.is_empty()) {
        nifti_study(&nifti_files, mask, args.data_scale)?
    } else {
        synthetic_study(c, c.subjects, c.seed)?
    };
    phase.finish();
    if c.components > study.sites[0].voxels() {
        return Err(format!(
            "--components {} exceeds the data's {} voxels",
            c.components,
            study.sites[0].voxels()
        ));
    }
    let releasing = used_sites(&study, method).len();
    let target = args
        .target_epsilon
        .map(|e| {
            level_for_target(e, REPORT_DELTA, c.delta_iter, c.max_iterations, method, releasing)
        })
        .transpose()
        .map_err(|e| format!("--target-epsilon: {e}"))?;
    let c = &match target {
        Some(t) => DjicaCommon { eps_iter: t.level.epsilon, ..c.clone() },
        None => c.clone(),
    };
    let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(c.seed), releasing);
    let phase = Progress::spinner(match c.pca {
        PcaArg::Cape => "djica: capePCA",
        PcaArg::Nonprivate => "djica: exact PCA",
    });
    let projected = project(&study, c, method, &mut noise)?;
    phase.finish();
    let bar = Progress::new(
        &format!("djica {}", method_name(method)),
        "iteration",
        c.max_iterations as u64,
    );
    let mut observer = |r: &IterationReport<'_>| {
        bar.set_position(r.iteration as u64);
        if r.iteration.is_multiple_of(10) {
            bar.set_message(format!("q = {:.3}, ρ = {:.3}", r.q.unwrap_or(f64::NAN), r.rate));
        }
    };
    let run = run_once(&study, c, method, c.eps_iter, projected, &mut observer)?;
    bar.finish();
    let mut result = result_json(&run, c, &study);
    if let (Some(t), Some(e)) = (target, args.target_epsilon) {
        result["target"] = target_json(e, &t);
    }
    let mut files = vec![write(
        &out.join("result.json"),
        serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?,
    )?];
    // W (R×R) with sources = W·V_Rᵀ·x: the whitening K = 2Λ^(-1/2)V_Rᵀ lies in span(V_Rᵀ).
    let w_full = &run.unmixing * &run.projected.pca.subspace.v;
    files.push(write(&out.join("W.csv"), to_csv(&w_full))?);
    files.push(write(&out.join("V.csv"), to_csv(&run.projected.pca.subspace.v))?);
    if let Some(truth) = &study.truth {
        files.push(write(&out.join("A.csv"), to_csv(truth))?);
        files.extend(maps_figure(&run, truth, c, &out.join("maps"))?);
    }
    Ok((result, files))
}

/// The calibration behind `--target-epsilon`: the level run at and the noise RDP would have needed.
fn target_json(target_epsilon: f64, t: &TargetLevel) -> Value {
    json!({
        "epsilon": target_epsilon,
        "delta": REPORT_DELTA,
        "accountant": "pld",
        "eps_iter": t.level.epsilon,
        "noise_multiplier": t.noise_multiplier,
        "noise_multiplier_rdp": t.noise_multiplier_rdp,
        "noise_saved": 1.0 - t.noise_multiplier / t.noise_multiplier_rdp,
        "collusion_factor": t.collusion_factor,
    })
}

pub(super) fn fmt_opt(v: &Value) -> String {
    v.as_f64().map_or("—".into(), |x| format!("{x:.3}"))
}

pub fn run(args: DjicaArgs) -> ExitCode {
    match with_out(args.out.as_deref(), "djica", |out| djica(&args, out)) {
        Ok((v, files)) => {
            let e = &v["overall_epsilon"];
            println!("method                  {}", v["method"].as_str().unwrap_or(""));
            println!("q_NGI                   {}", fmt_opt(&v["q_ngi"]));
            println!("iterations J*           {} (stop: {})", v["iterations"], v["stop"]);
            println!(
                "overall ε (δ = {:e})    exact Gaussian composition (= PLD): aggregator view {}, \
                 full view {} at J*; {} / {} at J_max",
                REPORT_DELTA,
                fmt_opt(&e["aggregator_view"]),
                fmt_opt(&e["full_view"]),
                fmt_opt(&e["aggregator_view_at_max"]),
                fmt_opt(&e["full_view_at_max"])
            );
            let t = &v["target"];
            if !t.is_null() {
                println!(
                    "calibrated (PLD)        z = {} per release (ε_i = {}); RDP would need z = {} \
                     ({:.1}% less noise with PLD)",
                    fmt_opt(&t["noise_multiplier"]),
                    fmt_opt(&t["eps_iter"]),
                    fmt_opt(&t["noise_multiplier_rdp"]),
                    100.0 * t["noise_saved"].as_f64().unwrap_or(f64::NAN)
                );
            }
            println!("PCA mean principal cos  {}", fmt_opt(&v["pca"]["mean_principal_cosine"]));
            for w in v["warnings"].as_array().into_iter().flatten() {
                println!("warning                 {}", w.as_str().unwrap_or(""));
            }
            crate::exit::print_written(&files);
            ExitCode::SUCCESS
        }
        Err(m) => crate::exit::fail(m),
    }
}
