/*!
`cape bench djica`: capePCA + capeDJICA end to end, natively, at paper scale (S = 4, M = 1024,
D = 900, R = 20; spec §6, §9.8) and at the browser's size (M = 256).

Per cell (one M): the time to generate the synthetic study (reported, not counted), capePCA with
CAPE noise (ε_p = 1, subject level: the sites' covariances, the zero-sum noise through
`crate::cape`, the eigendecomposition, the projection) and `--iterations` capeDJICA iterations
with CAPE noise (ε_i = 0.5, subject level, constant ρ), the same work per iteration as J_max = 1000
would do; `end_to_end_s` = capePCA + J_max × the mean iteration time.

`--numpy FILE` merges the JSON line of `scripts/bench_djica_numpy.py` (the same loop in numpy) and
`--wasm FILE` the line printed by `crates/core/tests/bench_wasm_djica.rs` (headless Chromium),
each with its ratio to the native cell of the same M. `scripts/bench` runs all three.

Threads: the `native` cells run on one thread (like numpy on one BLAS thread and the browser);
each M is then run again on `--threads` threads (default: all cores), the sites' work in parallel
([`capelab_core::par`]: the covariances, the noise, the projections, each iteration's releases),
into `native_threads`, with `threads.one_over_threads` the speed-up per M. Both runs must give the
same bits (a digest of the eigenvalues, V, W and b), or the benchmark fails.

`pca_rate` puts capePCA's time against its arithmetic: the sites' covariances (the lower triangle
of X_s X_sᵀ, N_s·D·(D+1) floating-point operations per site, nearly all of capePCA's work) over
each runner's capePCA seconds, in GFLOP/s. When two runners reach the core's f64 FMA rate, neither
can be much faster than the other at this step without doing less arithmetic.

`ceiling` is each runner's arithmetic ceiling ([`capelab_core::roofline`]: an in-cache 256×256
product on one thread, f64 and f32), and `*_ceiling_over_native` its ratio to native's: the part
of a runtime ratio that the target's vector units set, whatever the code does.
*/

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use capelab_core::djica::{
    CapeZeroSumNoise, DjicaConfig, GaussianLevel, Method, PrivacyUnit, ProjectedSite, Schedule,
    run_djica,
};
use capelab_core::fmri::{SyntheticConfig, SyntheticStudy, generate};
use capelab_core::pca::{CovarianceSensitivity, PcaConfig, Whitening, cape_pca, project};
use capelab_core::rng::Seed;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(clap::Args, Debug)]
pub struct DjicaBenchArgs {
    /// S.
    #[arg(long, default_value_t = 4)]
    sites: usize,
    /// M per cell, comma-separated (1024 is paper scale, 256 the browser's size).
    #[arg(long, value_delimiter = ',', default_values_t = [1024usize, 256])]
    subjects: Vec<usize>,
    /// G (D = G²).
    #[arg(long, default_value_t = 30)]
    grid: usize,
    /// R.
    #[arg(long, default_value_t = 20)]
    components: usize,
    /// capeDJICA iterations timed per cell.
    #[arg(long, default_value_t = 200)]
    iterations: usize,
    /// J_max for the end-to-end projection.
    #[arg(long, default_value_t = 1000)]
    jmax: usize,
    /// numpy's JSON line (scripts/bench_djica_numpy.py) to merge, with ratios.
    #[arg(long, value_name = "FILE")]
    numpy: Option<PathBuf>,
    /// The browser's output (tests/bench_wasm_djica.rs) to merge, with ratios.
    #[arg(long, value_name = "FILE")]
    wasm: Option<PathBuf>,
    /// Write the JSON here as well.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// One M's figures, in the shape every runner prints.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Cell {
    pub subjects: usize,
    pub sites: usize,
    pub voxels: usize,
    pub components: usize,
    pub timepoints: usize,
    #[serde(default)]
    pub generate_s: Option<f64>,
    pub pca_s: f64,
    pub iterations: usize,
    pub iteration_ms: f64,
    pub jmax: usize,
    pub end_to_end_s: f64,
}

/// One runner's cells.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchRun {
    pub bench: String,
    pub runner: String,
    pub build: String,
    pub cells: Vec<Cell>,
    /// The runner's arithmetic ceiling ([`capelab_core::roofline`]), when it measured one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<Ceiling>,
}

/// GFLOP/s of an in-cache 256×256 matrix product on one thread: faer's natively and in the
/// browser, OpenBLAS's through numpy.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Ceiling {
    pub f64_gflops: f64,
    pub f32_gflops: f64,
}

impl Ceiling {
    /// This process's ceiling (faer, one thread).
    fn measure() -> Ceiling {
        let start = Instant::now();
        let mut now = || start.elapsed().as_secs_f64();
        Ceiling {
            f64_gflops: capelab_core::roofline::gemm_gflops_f64(&mut now),
            f32_gflops: capelab_core::roofline::gemm_gflops_f32(&mut now),
        }
    }
}

/// `other`'s ceiling over native's, per precision: how much faster (> 1) or slower the runner's
/// best product is. A runtime ratio near the inverse of this is the hardware's, not the code's.
fn ceiling_ratio(native: &BenchRun, other: &BenchRun) -> Option<Value> {
    let (n, o) = (native.ceiling?, other.ceiling?);
    Some(json!({ "f64": o.f64_gflops / n.f64_gflops, "f32": o.f32_gflops / n.f32_gflops }))
}

/// A pool of `threads` threads for one timed run.
pub fn pool(threads: usize) -> Result<rayon::ThreadPool, String> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| format!("a pool of {threads} threads: {e}"))
}

/// One M's synthetic study, its time points per subject, and the seconds it took to generate.
fn study(args: &DjicaBenchArgs, subjects: usize) -> Result<(SyntheticStudy, usize, f64), String> {
    let t = Instant::now();
    let config = SyntheticConfig {
        grid: args.grid,
        components: args.components,
        ..SyntheticConfig::well_conditioned(subjects, args.sites)
    };
    let study = generate(&config, 1).map_err(|e| e.to_string())?;
    Ok((study, config.timepoints, t.elapsed().as_secs_f64()))
}

/// capePCA and the capeDJICA iterations on `study`, timed on the current rayon pool.
fn measure(
    args: &DjicaBenchArgs,
    (study, timepoints): (&SyntheticStudy, usize),
    generate_s: Option<f64>,
) -> Result<(Cell, u64), String> {
    let subjects = study.sites.iter().map(|s| s.subjects()).sum();
    let t = Instant::now();
    let mut noise = CapeZeroSumNoise::ideal(Seed::Fixed(1), args.sites);
    let pca = cape_pca(
        &study.sites,
        &PcaConfig {
            components: args.components,
            scheme: capelab_core::djica::NoiseScheme::Cape,
            level: GaussianLevel { epsilon: 1.0, delta: 1e-5 },
            sensitivity: CovarianceSensitivity::default(),
        },
        Seed::Fixed(1),
        &mut noise,
    )
    .map_err(|e| e.to_string())?;
    let k = pca.subspace.projection(Whitening::Runica).map_err(|e| e.to_string())?;
    let sites: Vec<ProjectedSite> = capelab_core::par::map_sites(&study.sites, |_, s| {
        ProjectedSite { x: project(&k, s), max_subject_len: s.max_subject_len() }
    });
    let pca_s = t.elapsed().as_secs_f64();

    let djica = DjicaConfig {
        method: Method::Cape,
        unit: PrivacyUnit::Subject,
        max_iterations: args.iterations,
        schedule: Some(Schedule::Constant),
        average_tail: 0.0,
        ..DjicaConfig::default()
    };
    let t = Instant::now();
    let result = run_djica(sites, &djica, Seed::Fixed(1), &mut noise, None, &mut |_| {})
        .map_err(|e| e.to_string())?;
    let ica_s = t.elapsed().as_secs_f64();
    let iteration_ms = 1e3 * ica_s / result.privacy.iterations as f64;
    let digest = digest(
        pca.subspace.eigenvalues.iter().chain(&pca.subspace.v).chain(&result.w).chain(&result.b),
    );
    let cell = Cell {
        subjects,
        sites: args.sites,
        voxels: args.grid * args.grid,
        components: args.components,
        timepoints,
        generate_s,
        pca_s,
        iterations: result.privacy.iterations,
        iteration_ms,
        jmax: args.jmax,
        end_to_end_s: pca_s + args.jmax as f64 * iteration_ms / 1e3,
    };
    Ok((cell, digest))
}

/// FNV-1a over the bits of `values`: equal digests, equal results.
pub fn digest<'a>(values: impl IntoIterator<Item = &'a f64>) -> u64 {
    values.into_iter().fold(0xcbf2_9ce4_8422_2325, |h, v| {
        v.to_bits()
            .to_le_bytes()
            .iter()
            .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
    })
}

/// The first line of `path` that parses as a djica [`BenchRun`] (the wasm log has other lines).
fn read_run(path: &std::path::Path) -> Result<BenchRun, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    text.lines()
        .filter_map(|l| l.find('{').map(|i| &l[i..]))
        .filter_map(|l| serde_json::from_str::<BenchRun>(l).ok())
        .find(|r| r.bench == "djica")
        .ok_or_else(|| format!("{}: no {{\"bench\":\"djica\",…}} line", path.display()))
}

/// f64 operations of the sites' covariances in one capePCA: N_s·D·(D+1) per site (D(D+1)/2
/// entries of the lower triangle, each N_s multiplies and N_s adds), N_s = M/S × time points.
fn covariance_flops(cell: &Cell) -> f64 {
    let samples = (cell.subjects / cell.sites * cell.timepoints) as f64;
    let d = cell.voxels as f64;
    cell.sites as f64 * samples * d * (d + 1.0)
}

/// Per M: the covariances' arithmetic, and each runner's rate over its whole capePCA time (a lower
/// bound of its covariance rate, since capePCA also draws noise and decomposes).
fn pca_rate(runs: &[(&str, &BenchRun)]) -> Vec<Value> {
    let Some((_, first)) = runs.first() else { return Vec::new() };
    first
        .cells
        .iter()
        .map(|cell| {
            let flops = covariance_flops(cell);
            let mut row = json!({ "subjects": cell.subjects, "covariance_flops": flops });
            for (name, run) in runs {
                if let Some(c) = run.cells.iter().find(|c| c.subjects == cell.subjects) {
                    row[format!("{name}_gflops")] = json!(flops / c.pca_s / 1e9);
                }
            }
            row
        })
        .collect()
}

/// `other`'s time over native's, per cell of equal M.
fn ratios(native: &BenchRun, other: &BenchRun) -> Vec<Value> {
    other
        .cells
        .iter()
        .filter_map(|o| {
            let n = native.cells.iter().find(|n| n.subjects == o.subjects)?;
            Some(json!({
                "subjects": o.subjects,
                "iteration": o.iteration_ms / n.iteration_ms,
                "pca": o.pca_s / n.pca_s,
                "end_to_end": o.end_to_end_s / n.end_to_end_s,
            }))
        })
        .collect()
}

fn bench(args: &DjicaBenchArgs) -> Result<Value, String> {
    if args.iterations == 0 || args.sites < 2 || args.subjects.iter().any(|&m| m < args.sites) {
        return Err(format!(
            "need --iterations ≥ 1, --sites ≥ 2 and every --subjects ≥ --sites (got {}, {}, {:?})",
            args.iterations, args.sites, args.subjects
        ));
    }
    // Each M twice on the same study: on one thread (the `native` cells, which the numpy and
    // wasm ratios compare with: both run on one thread too) and on the pool `--threads` chose
    // (all cores by default); the speed-up is computed here, in the same run.
    let threads = rayon::current_num_threads();
    let (mut cells, mut multi) = (vec![], vec![]);
    let mut identical = true;
    for &m in &args.subjects {
        let progress = crate::progress::Progress::spinner(&format!(
            "bench djica: M = {m}, on 1 thread and then on {threads}"
        ));
        let (study, timepoints, generate_s) = study(args, m)?;
        let (one, one_digest) =
            pool(1)?.install(|| measure(args, (&study, timepoints), Some(generate_s)))?;
        let (many, many_digest) =
            pool(threads)?.install(|| measure(args, (&study, timepoints), None))?;
        identical &= one_digest == many_digest;
        progress.finish();
        eprintln!(
            "native M = {m}: capePCA {:.2} s, {:.2} ms per iteration, end to end {:.1} s on 1 \
             thread; {:.2} s, {:.2} ms, {:.1} s on {threads} threads; same results: {}",
            one.pca_s,
            one.iteration_ms,
            one.end_to_end_s,
            many.pca_s,
            many.iteration_ms,
            many.end_to_end_s,
            one_digest == many_digest
        );
        cells.push(one);
        multi.push(many);
    }
    if !identical {
        return Err(format!("the run on {threads} threads differs from the run on one thread"));
    }
    let build = if cfg!(debug_assertions) { "debug" } else { "release" };
    let ceiling = Ceiling::measure();
    eprintln!(
        "native ceiling (faer, in-cache product, 1 thread): {:.1} GFLOP/s f64, {:.1} f32",
        ceiling.f64_gflops, ceiling.f32_gflops
    );
    let native = BenchRun {
        bench: "djica".into(),
        runner: "native".into(),
        build: build.into(),
        cells,
        ceiling: Some(ceiling),
    };
    let native_threads = BenchRun {
        bench: "djica".into(),
        runner: format!("native, {threads} threads"),
        build: build.into(),
        cells: multi,
        ceiling: None,
    };
    let mut out = json!({
        "native": native,
        "native_threads": native_threads,
        "threads": {
            "threads": threads,
            "machine_cores": std::thread::available_parallelism().map_or(1, |n| n.get()),
            "identical_results": identical,
            // one thread's time over `threads` threads' time: the speed-up
            "one_over_threads": ratios(&native_threads, &native),
        },
    });
    let numpy = args.numpy.as_deref().map(read_run).transpose()?;
    let wasm = args.wasm.as_deref().map(read_run).transpose()?;
    let mut rated = vec![("native", &native), ("native_threads", &native_threads)];
    if let Some(numpy) = &numpy {
        out["numpy_over_native"] = json!(ratios(&native, numpy));
        out["numpy_ceiling_over_native"] = json!(ceiling_ratio(&native, numpy));
        out["numpy"] = json!(numpy);
        rated.push(("numpy", numpy));
    }
    if let Some(wasm) = &wasm {
        out["wasm_over_native"] = json!(ratios(&native, wasm));
        out["wasm_ceiling_over_native"] = json!(ceiling_ratio(&native, wasm));
        out["wasm"] = json!(wasm);
        rated.push(("wasm", wasm));
    }
    out["pca_rate"] = json!(pca_rate(&rated));
    Ok(out)
}

pub fn run(args: DjicaBenchArgs) -> ExitCode {
    crate::exit::report_json(bench(&args), args.out.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(subjects: usize, pca_s: f64) -> Cell {
        Cell {
            subjects,
            sites: 4,
            voxels: 900,
            components: 20,
            timepoints: 250,
            generate_s: None,
            pca_s,
            iterations: 1,
            iteration_ms: 1.0,
            jmax: 1000,
            end_to_end_s: pca_s,
        }
    }

    /// The figures of README's speed section: M = 1024 is 2.07e11 operations, and 5.05 s of
    /// capePCA is 41 GFLOP/s.
    #[test]
    fn the_covariances_arithmetic_and_rates() {
        let flops = covariance_flops(&cell(1024, 1.0));
        assert_eq!(flops, 4.0 * 64_000.0 * 900.0 * 901.0);
        let run = |name: &str, s: f64| BenchRun {
            bench: "djica".into(),
            runner: name.into(),
            build: "test".into(),
            cells: vec![cell(1024, s), cell(256, s / 4.0)],
            ceiling: None,
        };
        let (native, numpy) = (run("native", 5.05), run("numpy", 4.71));
        let rows = pca_rate(&[("native", &native), ("numpy", &numpy)]);
        assert_eq!(rows.len(), 2);
        let gflops = rows[0]["native_gflops"].as_f64().unwrap();
        assert!((gflops - 41.1).abs() < 0.05, "{gflops}");
        assert!(rows[1]["numpy_gflops"].as_f64().unwrap() > gflops);
        assert!(pca_rate(&[]).is_empty());
    }

    #[test]
    fn ceilings_are_compared_only_when_both_runners_measured_one() {
        let run = |ceiling| BenchRun {
            bench: "djica".into(),
            runner: "r".into(),
            build: "test".into(),
            cells: vec![],
            ceiling,
        };
        let native = run(Some(Ceiling { f64_gflops: 40.0, f32_gflops: 80.0 }));
        let wasm = run(Some(Ceiling { f64_gflops: 5.0, f32_gflops: 20.0 }));
        let ratio = ceiling_ratio(&native, &wasm).unwrap();
        assert_eq!((ratio["f64"].as_f64(), ratio["f32"].as_f64()), (Some(0.125), Some(0.25)));
        assert!(ceiling_ratio(&native, &run(None)).is_none());
        // An older line without a ceiling still parses.
        let old = r#"{"bench":"djica","runner":"numpy","build":"x","cells":[]}"#;
        assert!(serde_json::from_str::<BenchRun>(old).unwrap().ceiling.is_none());
    }
}
