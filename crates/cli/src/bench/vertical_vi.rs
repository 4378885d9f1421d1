/*!
`cape bench vertical-vi`: one DP-VI step of seed 004 at the paper's shape (P = 2, K = 20, B = 100,
C = 1, σ = 2.042) on CPS1988 (`--data-file`, by default `data/cps1988.csv` in the working
directory) or, when that default file is absent, on the generated Adult-like table (N = 30 162,
said on stderr and in the JSON's `data`): the noisy clipped batch sum G̃ by the MPC (`mpc`
mode: dealer, both parties and every round in process) and by the plaintext fixed-point
simulation of the same circuit (`fixed` mode), for `--steps` training steps with the batches and
θ of a real run. Reports the time per step (median and min), the rounds, the bytes each party
sends (its openings, 16 per ring value) and the bytes of dealer material each party receives,
and, with the noise switched off on the same batches, the largest |mpc − fixed|/‖fixed‖ (the
target is 2^−20). With `--wasm` it merges the same mpc step timed in headless Chromium
(`crates/vertical-vi/tests/bench_wasm_vvi.rs`) and the wasm/native ratio. `scripts/bench` writes
it to bench-out/vertical-vi.json.
*/

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use capelab_core::rng::{Seed, derive};
use capelab_vertical_vi::batch::PartyLocal;
use capelab_vertical_vi::cps1988;
use capelab_vertical_vi::model::generate::adult_like;
use capelab_vertical_vi::model::{Sampling, TrainConfig, train};
use capelab_vertical_vi::mpc::GradientConfig;
use capelab_vertical_vi::mpc::circuit::{fixed_clipped_sum, mpc_clipped_sum};
use serde_json::{Value, json};

use crate::progress::Progress;

pub const PARTIES: usize = 2;
pub const COMPONENTS: usize = 20;
pub const BATCH: usize = 100;
pub const CLIP: f64 = 1.0;
pub const SIGMA: f64 = 2.042;

#[derive(clap::Args, Debug)]
pub struct VerticalViBenchArgs {
    /// Training steps timed (each mode once per step; the median is reported).
    #[arg(long, default_value_t = 20)]
    steps: usize,
    /// CPS1988's CSV [default: data/cps1988.csv in the working directory; when that is absent,
    /// the generated table].
    #[arg(long, value_name = "PATH")]
    data_file: Option<PathBuf>,
    /// The browser's output (crates/vertical-vi/tests/bench_wasm_vvi.rs) to merge.
    #[arg(long, value_name = "FILE")]
    wasm: Option<PathBuf>,
    /// Write the JSON here as well.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

pub fn run(args: VerticalViBenchArgs) -> ExitCode {
    crate::exit::report_json(bench(&args), args.out.as_deref())
}

fn median_min(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0])
}

fn max_rel(a: &[f64], b: &[f64]) -> f64 {
    let norm = b.iter().map(|v| v * v).sum::<f64>().sqrt();
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max) / norm.max(f64::MIN_POSITIVE)
}

fn bench(args: &VerticalViBenchArgs) -> Result<Value, String> {
    if args.steps == 0 {
        return Err("--steps must be at least 1".into());
    }
    let default = Path::new(cps1988::DATA_PATH);
    let (data, schema, blocks) = if args.data_file.is_some() || default.exists() {
        let (csv, path) =
            crate::data_file::read(args.data_file.as_deref(), default, "--data-file")?;
        let (tables, _) = cps1988::load(&csv).map_err(|e| format!("{}: {e}", path.display()))?;
        ("CPS1988", cps1988::schema(), tables.into_iter().map(|t| t.block).collect())
    } else {
        crate::progress::note(format!(
            "note: {} is absent (scripts/setup.sh writes it; or pass --data-file PATH): timing \
             the generated Adult-like table instead",
            default.display()
        ));
        let g = adult_like(30_162, 1);
        ("generated Adult-like (N = 30162)", g.schema, g.blocks)
    };
    let blocks: Vec<_> = blocks;
    if blocks.len() != PARTIES {
        return Err(format!("{data} has {} parties, the benchmark wants {PARTIES}", blocks.len()));
    }
    let config = TrainConfig {
        components: COMPONENTS,
        steps: args.steps,
        sampling: Sampling::Fixed { size: BATCH },
        clip: CLIP,
        noise_multiplier: SIGMA,
        seed: Seed::Fixed(1),
        ..TrainConfig::default()
    };
    let (mut mpc_ms, mut fixed_ms, mut worst) = (Vec::new(), Vec::new(), 0.0f64);
    let mut cost: Option<(u32, Vec<usize>, Vec<usize>, usize)> = None;
    let mut error = None;
    let mut rng = derive(1, "bench/vertical-vi/fixed");
    let mut step = 0u64;
    let mut engine = |pi: &[f64], locals: &[PartyLocal], clip: f64| -> Vec<f64> {
        step += 1;
        let noisy = GradientConfig::new(pi.to_vec(), clip, SIGMA);
        let quiet = GradientConfig::new(pi.to_vec(), clip, 0.0);
        let mut run = || -> Result<Vec<f64>, String> {
            let start = Instant::now();
            let (g, report) =
                mpc_clipped_sum(locals, &noisy, Seed::Fixed(step)).map_err(|e| e.to_string())?;
            mpc_ms.push(start.elapsed().as_secs_f64() * 1e3);
            let start = Instant::now();
            fixed_clipped_sum(locals, &noisy, &mut rng).map_err(|e| e.to_string())?;
            fixed_ms.push(start.elapsed().as_secs_f64() * 1e3);
            cost = Some((report.rounds, report.bytes_sent, report.dealt_values, g.len()));
            let (m, _) =
                mpc_clipped_sum(locals, &quiet, Seed::Fixed(step)).map_err(|e| e.to_string())?;
            let f = fixed_clipped_sum(locals, &quiet, &mut rng).map_err(|e| e.to_string())?;
            worst = worst.max(max_rel(&m, &f));
            Ok(g)
        };
        match run() {
            Ok(g) => g,
            Err(e) => {
                error.get_or_insert(format!("step {step}: {e}"));
                vec![0.0; pi.len() * (1 + locals.iter().map(|l| l.width).sum::<usize>())]
            }
        }
    };
    let progress = Progress::new("bench vertical-vi: mpc and fixed", "step", args.steps as u64);
    train(&schema, &blocks, &config, &mut engine, &mut |s| progress.set_position(s.step as u64));
    progress.finish();
    if let Some(e) = error {
        return Err(e);
    }
    let (rounds, bytes_sent, dealt, dimension) = cost.ok_or("no step ran")?;
    let (mpc_median, mpc_min) = median_min(mpc_ms);
    let (fixed_median, fixed_min) = median_min(fixed_ms);
    let mut report = json!({
        "bench": "vertical-vi",
        "runner": "native",
        "data": data,
        "parties": PARTIES,
        "components": COMPONENTS,
        "batch": BATCH,
        "clip": CLIP,
        "sigma": SIGMA,
        "dimension": dimension,
        "steps": args.steps,
        "modes": [
            {
                "mode": "mpc",
                "median_ms": mpc_median,
                "min_ms": mpc_min,
                "rounds": rounds,
                "bytes_sent_per_party": bytes_sent,
                "dealer_bytes_per_party": dealt.iter().map(|v| 16 * v).collect::<Vec<_>>(),
            },
            { "mode": "fixed", "median_ms": fixed_median, "min_ms": fixed_min },
        ],
        "mpc_vs_fixed_max_relative_noise_off": worst,
    });
    if let Some(path) = &args.wasm {
        let wasm = read_wasm_line(path)?;
        let ratio = wasm["modes"][0]["median_ms"].as_f64().map(|w| w / mpc_median);
        report["wasm"] = wasm;
        report["wasm_over_native_mpc"] = json!(ratio);
    }
    Ok(report)
}

/// The JSON line of the browser's output that says `"bench":"vertical-vi"` (keys come sorted, so
/// it does not start with it).
fn read_wasm_line(path: &PathBuf) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("could not read {}: {e}", path.display()))?;
    let line = text
        .lines()
        .filter(|l| l.contains("\"bench\":\"vertical-vi\""))
        .filter_map(|l| l.find('{').map(|i| &l[i..]))
        .next()
        .ok_or_else(|| format!("{}: no {{\"bench\":\"vertical-vi\"…}} line", path.display()))?;
    serde_json::from_str(line).map_err(|e| format!("{}: {e}", path.display()))
}
