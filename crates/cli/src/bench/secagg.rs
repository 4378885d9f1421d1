/*!
`cape bench secagg`: the time each SecureAgg role spends per round, on the bare roles
([`Lockstep`]: no transport, no simulator, no logs), for S sites and vectors of length D.

A site's time in a round is its one `handle` call for the round's request (key generation, share
encryption, masking, share lookup, with message encoding and decoding), averaged over the sites
of the round. The aggregator's is the sum of its `handle` calls for the round's answers, including
the call that closes the round (in R3: reconstruction and unmasking). After one discarded warm-up
run, each cell reports the median and the minimum over the repetitions: other processes only ever add time, so the minimum
is the better estimate of the cost and the median shows the spread.

The browser's figures come from `crates/core/tests/bench_wasm_secagg.rs` (the same workload in
headless Chromium, printed as one JSON line of the same [`BenchRun`] shape); `--wasm FILE` merges
them and adds the wasm/native ratio per cell. `scripts/bench` runs both.
*/

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use capelab_core::secagg::lockstep::{Actor, Lockstep, Work};
use capelab_core::secagg::{AggregatorConfig, Encoding, Params, Phase, SiteInput};
use capelab_core::wire::ParticipantId;
use serde::{Deserialize, Serialize};

#[derive(clap::Args, Debug)]
pub struct SecaggArgs {
    /// Site counts S, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [4u32, 16, 64])]
    sites: Vec<u32>,
    /// Vector lengths D, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1_000usize, 100_000])]
    lengths: Vec<usize>,
    /// Repetitions per (S, D).
    #[arg(long, default_value_t = 5)]
    repetitions: usize,
    /// The last S − t sites leave after R1 (the aggregator's costliest case).
    #[arg(long)]
    with_dropouts: bool,
    /// Write the JSON here as well.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// The browser's JSON line (from tests/bench_wasm_secagg.rs) to merge, with ratios.
    #[arg(long, value_name = "FILE")]
    wasm: Option<PathBuf>,
    /// Print the JSON on stdout instead of the table.
    #[arg(long)]
    json: bool,
}

/// One runner's figures (native here, wasm32 in the browser test).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchRun {
    pub bench: String,
    pub runner: String,
    pub build: String,
    pub repetitions: usize,
    pub with_dropouts: bool,
    pub cells: Vec<Cell>,
}

/// One role in one round of one (S, D).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Cell {
    pub sites: u32,
    pub length: usize,
    /// Sites that left after R1.
    pub dropped: u32,
    /// "R0" … "R3".
    pub round: String,
    /// "site" (mean per site) or "aggregator" (total).
    pub role: String,
    pub median_ms: f64,
    pub min_ms: f64,
    /// Bytes one site sends in the round (site role), or the aggregator's requests in total.
    pub bytes: usize,
}

/// Native and browser figures side by side.
#[derive(Serialize)]
struct Comparison {
    bench: &'static str,
    native: BenchRun,
    wasm: BenchRun,
    /// wasm time / native time per cell present in both.
    ratios: Vec<Ratio>,
}

#[derive(Serialize)]
struct Ratio {
    sites: u32,
    length: usize,
    round: String,
    role: String,
    native_median_ms: f64,
    wasm_median_ms: f64,
    ratio_median: f64,
    native_min_ms: f64,
    wasm_min_ms: f64,
    ratio_min: f64,
}

pub fn run(args: SecaggArgs) -> ExitCode {
    match bench(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => crate::exit::fail(message),
    }
}

fn bench(args: &SecaggArgs) -> Result<(), String> {
    if args.repetitions == 0 {
        return Err("--repetitions: run at least one".into());
    }
    if let Some(&s) = args.sites.iter().find(|&&s| s < 2) {
        return Err(format!("--sites: SecureAgg needs at least 2 sites, got {s}"));
    }
    if args.lengths.contains(&0) {
        return Err("--lengths: every vector length must be at least 1".into());
    }
    // Read the browser's figures first, so a bad file fails before minutes of timing.
    let wasm = args.wasm.as_deref().map(read_wasm).transpose()?;
    let native = measure_all(&args.sites, &args.lengths, args.repetitions, args.with_dropouts)?;
    let json = match wasm {
        Some(wasm) => {
            let ratios = ratios(&native, &wasm);
            print_table(&native, Some(&ratios), args.json);
            serde_json::to_string_pretty(&Comparison { bench: "secagg", native, wasm, ratios })
        }
        None => {
            print_table(&native, None, args.json);
            serde_json::to_string_pretty(&native)
        }
    }
    .map_err(|e| format!("could not encode the figures as JSON: {e}"))?;
    if args.json {
        println!("{json}");
    }
    if let Some(path) = &args.out {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("--out: {}: {e}", dir.display()))?;
        }
        std::fs::write(path, json + "\n").map_err(|e| format!("--out: {}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// The browser test prints its figures as one line starting with `{"bench":"secagg"`; the file may
/// hold the whole test output around it.
fn read_wasm(path: &std::path::Path) -> Result<BenchRun, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("--wasm: {}: {e}", path.display()))?;
    let line = text
        .lines()
        .rev()
        .find_map(|l| l.find("{\"bench\":\"secagg\"").map(|i| &l[i..]))
        .ok_or_else(|| {
            format!("--wasm: {} has no line starting with {{\"bench\":\"secagg\"", path.display())
        })?;
    serde_json::from_str(line).map_err(|e| format!("--wasm: {}: {e}", path.display()))
}

#[derive(Default, Clone)]
struct RoundTiming {
    site_ms: Vec<f64>,
    site_bytes: usize,
    aggregator_ms: f64,
    aggregator_bytes: usize,
}

/// One instance with S sites and vectors of length `len`; the last `dropped` sites leave after R1.
fn measure(s: u32, len: usize, dropped: u32, seed: u64) -> Result<Vec<RoundTiming>, String> {
    let params = Params::new((1..=s).collect(), len, Encoding::Ring).map_err(|e| e.to_string())?;
    let config =
        AggregatorConfig::new(params).map_err(|e| e.to_string())?.with_retain_masked_inputs(false);
    let inputs =
        (1..=s).map(|id| SiteInput::Ring((0..len as u64).map(|j| j * u64::from(id)).collect()));
    let leaving: Vec<ParticipantId> = (s - dropped + 1..=s).collect();
    let mut ls =
        Lockstep::new(config, inputs.collect(), seed, &leaving).map_err(|e| e.to_string())?;
    let mut rounds = vec![RoundTiming::default(); 4];
    let mut probe = |w: &mut Work<'_>| {
        let t0 = Instant::now();
        w.run();
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        let r = &mut rounds[round_index(w.phase)];
        match w.actor {
            Actor::Site(_) => {
                r.site_ms.push(ms);
                r.site_bytes = r.site_bytes.max(w.sent_bytes());
            }
            Actor::Aggregator => {
                r.aggregator_ms += ms;
                r.aggregator_bytes += w.sent_bytes();
            }
        }
    };
    ls.run(&mut probe).map_err(|e| e.to_string())?;
    // The timing is only worth something if the sum is right.
    let expected: Vec<u64> = (0..len as u64)
        .map(|j| (1..=u64::from(s - dropped)).fold(0u64, |a, id| a.wrapping_add(j * id)))
        .collect();
    match ls.outcome() {
        Some(Ok(agg)) if agg.sum == expected => Ok(rounds),
        other => Err(format!("S = {s}, D = {len}: wrong or no sum: {:?}", other.map(|o| o.err()))),
    }
}

fn round_index(phase: Phase) -> usize {
    match phase {
        Phase::AdvertiseKeys => 0,
        Phase::ShareKeys => 1,
        Phase::MaskedInput => 2,
        Phase::Unmask => 3,
    }
}

/// Median and minimum of `xs` (non-empty).
pub fn median_min(xs: &mut [f64]) -> (f64, f64) {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    let median = if n % 2 == 1 { xs[n / 2] } else { (xs[n / 2 - 1] + xs[n / 2]) / 2.0 };
    (median, xs[0])
}

fn measure_all(
    sites: &[u32],
    lengths: &[usize],
    repetitions: usize,
    with_dropouts: bool,
) -> Result<BenchRun, String> {
    let mut cells = Vec::new();
    for &s in sites {
        let dropped =
            if with_dropouts { s - Params::default_threshold(s as usize) as u32 } else { 0 };
        for &len in lengths {
            // One discarded run first (caches, allocator), as in the browser, where it also
            // lets V8 optimise the hot functions.
            measure(s, len, dropped, u64::MAX)?;
            let runs: Vec<Vec<RoundTiming>> = (0..repetitions)
                .map(|rep| {
                    eprintln!("S = {s}, D = {len}: repetition {}/{repetitions}", rep + 1);
                    measure(s, len, dropped, rep as u64)
                })
                .collect::<Result<_, _>>()?;
            for round in 0..4 {
                let mut site: Vec<f64> = runs
                    .iter()
                    .map(|r| {
                        r[round].site_ms.iter().sum::<f64>() / r[round].site_ms.len().max(1) as f64
                    })
                    .collect();
                let mut agg: Vec<f64> = runs.iter().map(|r| r[round].aggregator_ms).collect();
                let (site_median, site_min) = median_min(&mut site);
                let (agg_median, agg_min) = median_min(&mut agg);
                let cell = |role: &str, median_ms, min_ms, bytes| Cell {
                    sites: s,
                    length: len,
                    dropped,
                    round: format!("R{round}"),
                    role: role.into(),
                    median_ms,
                    min_ms,
                    bytes,
                };
                cells.push(cell("site", site_median, site_min, runs[0][round].site_bytes));
                cells.push(cell(
                    "aggregator",
                    agg_median,
                    agg_min,
                    runs[0][round].aggregator_bytes,
                ));
            }
        }
    }
    Ok(BenchRun {
        bench: "secagg".into(),
        runner: "native".into(),
        build: if cfg!(debug_assertions) { "debug" } else { "release" }.into(),
        repetitions,
        with_dropouts,
        cells,
    })
}

fn ratios(native: &BenchRun, wasm: &BenchRun) -> Vec<Ratio> {
    native
        .cells
        .iter()
        .filter_map(|n| {
            let w = wasm.cells.iter().find(|w| {
                (w.sites, w.length, w.dropped, &w.round, &w.role)
                    == (n.sites, n.length, n.dropped, &n.round, &n.role)
            })?;
            Some(Ratio {
                sites: n.sites,
                length: n.length,
                round: n.round.clone(),
                role: n.role.clone(),
                native_median_ms: n.median_ms,
                wasm_median_ms: w.median_ms,
                ratio_median: w.median_ms / n.median_ms,
                native_min_ms: n.min_ms,
                wasm_min_ms: w.min_ms,
                ratio_min: w.min_ms / n.min_ms,
            })
        })
        .collect()
}

/// The readable table: on stdout, or on stderr when stdout carries the JSON.
fn print_table(native: &BenchRun, ratios: Option<&[Ratio]>, to_stderr: bool) {
    let mut out = format!(
        "SecureAgg per round ({} build, {} repetitions; ms, median / min)\n\
         | S | D | dropped | round | site | aggregator | bytes/site |",
        native.build, native.repetitions
    );
    if ratios.is_some() {
        out += " wasm/native site | wasm/native aggregator |";
    }
    out += "\n|---|---|---|---|---|---|---|";
    if ratios.is_some() {
        out += "---|---|";
    }
    out += "\n";
    for pair in native.cells.chunks(2) {
        let (site, agg) = (&pair[0], &pair[1]);
        out += &format!(
            "| {} | {} | {} | {} | {:.3} / {:.3} | {:.3} / {:.3} | {} |",
            site.sites,
            site.length,
            site.dropped,
            site.round,
            site.median_ms,
            site.min_ms,
            agg.median_ms,
            agg.min_ms,
            site.bytes
        );
        if let Some(ratios) = ratios {
            let find = |c: &Cell| {
                ratios
                    .iter()
                    .find(|r| {
                        (r.sites, r.length, &r.round, &r.role)
                            == (c.sites, c.length, &c.round, &c.role)
                    })
                    .map_or("—".to_owned(), |r| {
                        format!("{:.2} (min {:.2})", r.ratio_median, r.ratio_min)
                    })
            };
            out += &format!(" {} | {} |", find(site), find(agg));
        }
        out += "\n";
    }
    if to_stderr {
        eprint!("{out}");
    } else {
        print!("{out}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_minima() {
        assert_eq!(median_min(&mut [3.0, 1.0, 2.0]), (2.0, 1.0));
        assert_eq!(median_min(&mut [4.0, 1.0, 2.0, 3.0]), (2.5, 1.0));
    }

    #[test]
    fn a_small_run_has_every_cell_and_ratios_pair_them() {
        let run = measure_all(&[3], &[8], 2, true).unwrap();
        assert_eq!(run.cells.len(), 8, "four rounds × two roles");
        assert!(run.cells.iter().all(|c| c.min_ms <= c.median_ms && c.dropped == 0));
        let mut wasm = run.clone();
        for c in &mut wasm.cells {
            c.median_ms *= 2.0;
            c.min_ms *= 2.0;
        }
        let r = ratios(&run, &wasm);
        assert_eq!(r.len(), 8);
        assert!(r.iter().all(|r| (r.ratio_median - 2.0).abs() < 1e-9 || r.native_median_ms == 0.0));
    }
}
