/*!
`cape bench secagg`: the time each SecureAgg role spends per round, on the bare roles
([`Lockstep`]: no transport, no simulator, no logs), for S sites and vectors of length D.

A site's time in a round is its one `handle` call for the round's request (key generation, share
encryption, masking, share lookup, with message encoding and decoding), averaged over the sites
of the round. The aggregator's is the sum of its `handle` calls for the round's answers, including
the call that closes the round (in R3: reconstruction and unmasking). After one discarded warm-up
run, each cell reports the median and the minimum over the repetitions: other processes only ever add time, so the minimum
is the better estimate of the cost and the median shows the spread.

`--wall-sites` (default 64) adds, per (graph, S, D) at those S, a whole instance (R0..R3, every
site and the aggregator) by the wall clock with the sites' calls of each round in parallel
([`Lockstep::round_parallel`]), on one thread and on `--threads` threads (default: all cores),
with the speed-up from the same run (`threads` in the JSON).

`--graph complete,harary` measures SecAgg+ (Bell et al. 2020) beside the complete graph: on
`--plus-sites` (default 16, 64, 256, 1000) with the (k, t) that
[`choose_harary`](capelab_core::secagg::choose_harary) picks for `--dropout-fraction`,
`--corruption-fraction` and `--sigma`. Every cell carries the graph, k, t and the bytes one site
sends and receives, and `summaries` adds each round's per-site figures up, so that a site's cost
growing with k (≈ log S), not S, shows in one line per (graph, S, D). The complete graph is not
run beyond `--complete-max-sites` (default 256): its per-site cost grows like S (at S = 1000,
D = 10⁵ every site would expand 999 pairwise masks of 800 kB), and the output says so.

The browser's figures come from `crates/core/tests/bench_wasm_secagg.rs` (the same workload in
headless Chromium, printed as one JSON line of the same [`BenchRun`] shape); `--wasm FILE` merges
them and adds the wasm/native ratio per cell. `scripts/bench` runs both.
*/

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use std::collections::BTreeMap;

use capelab_core::codec;
use capelab_core::secagg::lockstep::{Actor, Lockstep, Work};
use capelab_core::secagg::messages::{Body, SecAggMessage, kind};
use capelab_core::secagg::{
    AggregatorConfig, Encoding, Graph, Params, Phase, SessionId, SiteInput, choose_harary,
};
use capelab_core::wire::{ParticipantId, To};
use serde::{Deserialize, Serialize};

#[derive(clap::Args, Debug)]
pub struct SecaggArgs {
    /// Site counts S for the complete graph, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [4u32, 16, 64])]
    sites: Vec<u32>,
    /// Which graphs: complete (Bonawitz et al. 2017), harary (SecAgg+, Bell et al. 2020).
    #[arg(long, value_delimiter = ',', default_values_t = [GraphArg::Complete])]
    graph: Vec<GraphArg>,
    /// Site counts S for SecAgg+ (`--graph harary`), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [16u32, 64, 256, 1000])]
    plus_sites: Vec<u32>,
    /// SecAgg+: the fraction δ of sites that may drop out (k and t are chosen for it).
    #[arg(long, default_value_t = 0.05)]
    dropout_fraction: f64,
    /// SecAgg+: the fraction γ of sites that may collude with the aggregator.
    #[arg(long, default_value_t = 0.05)]
    corruption_fraction: f64,
    /// SecAgg+: the failure probability 2^-σ the (k, t) must meet.
    #[arg(long, default_value_t = 40.0)]
    sigma: f64,
    /// The complete graph is skipped above this many sites (its per-site cost grows like S).
    #[arg(long, default_value_t = 256)]
    complete_max_sites: u32,
    /// Vector lengths D, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1_000usize, 100_000])]
    lengths: Vec<usize>,
    /// Repetitions per (S, D).
    #[arg(long, default_value_t = 5)]
    repetitions: usize,
    /// At these S (of those measured, either graph), also time a whole instance, all four rounds
    /// and all parties, by the wall clock: the sites' calls of each round in parallel on one
    /// thread and on `--threads` threads (default all cores), comma-separated; empty: none.
    #[arg(long, value_delimiter = ',', default_values_t = [64u32])]
    wall_sites: Vec<u32>,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GraphArg {
    Complete,
    Harary,
}

impl std::fmt::Display for GraphArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GraphArg::Complete => "complete",
            GraphArg::Harary => "harary",
        })
    }
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
    /// Per (graph, S, D): a site's whole round, all four rounds added up.
    #[serde(default)]
    pub summaries: Vec<Summary>,
    /// What was skipped and why, and how SecAgg+'s (k, t) were chosen.
    #[serde(default)]
    pub notes: Vec<String>,
    /// A whole instance by the wall clock on one thread and on several (`--wall-sites`).
    #[serde(default)]
    pub threads: Vec<ThreadsCell>,
}

/// A whole instance (R0..R3, every site and the aggregator) of one (graph, S, D) by the wall
/// clock, the sites' calls of each round run in parallel ([`Lockstep::round_parallel`]) on one
/// thread and on `threads` threads, in the same run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ThreadsCell {
    pub graph: String,
    pub sites: u32,
    pub length: usize,
    pub dropped: u32,
    pub threads: usize,
    /// Median and minimum over the repetitions.
    pub one_thread_median_ms: f64,
    pub one_thread_min_ms: f64,
    pub threads_median_ms: f64,
    pub threads_min_ms: f64,
    /// One thread's time over `threads` threads' (medians; minima).
    pub speedup_median: f64,
    pub speedup_min: f64,
}

fn complete() -> String {
    "complete".into()
}

/// A site's and the aggregator's cost over all four rounds of one (graph, S, D).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    pub graph: String,
    pub sites: u32,
    pub length: usize,
    /// Neighbours per site (S − 1 on the complete graph) and the threshold.
    pub k: usize,
    pub threshold: usize,
    pub dropped: u32,
    /// A site's time over R0..R3 (the mean site per round, added up): median and minimum over
    /// the repetitions.
    pub site_median_ms: f64,
    pub site_min_ms: f64,
    /// Bytes one site sends and receives over the four rounds (most over the sites per round).
    pub site_sent_bytes: usize,
    pub site_received_bytes: usize,
    /// Of those, the ones that grow with k or S, not with D: keys, directory, ciphertexts,
    /// unmask lists and shares (everything but the masked input and the sum).
    pub site_key_bytes: usize,
    pub aggregator_median_ms: f64,
    pub aggregator_min_ms: f64,
    /// log₂ of the failure bound SecAgg+'s (k, t) meet (`None` on the complete graph).
    pub failure_log2: Option<f64>,
}

/// One role in one round of one (graph, S, D).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Cell {
    /// "complete" or "harary" (SecAgg+); the browser's cells are the complete graph's.
    #[serde(default = "complete")]
    pub graph: String,
    /// Neighbours per site (S − 1 on the complete graph) and the threshold t.
    #[serde(default)]
    pub k: usize,
    #[serde(default)]
    pub threshold: usize,
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
    /// Bytes one site receives from the aggregator's calls in the round (site role; R0 includes
    /// `Begin`): the most over the sites.
    #[serde(default)]
    pub received_bytes: usize,
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
    if let Some(&s) = args.plus_sites.iter().find(|&&s| s < 4) {
        return Err(format!("--plus-sites: SecAgg+ needs at least 4 sites, got {s}"));
    }
    if args.lengths.contains(&0) {
        return Err("--lengths: every vector length must be at least 1".into());
    }
    // Read the browser's figures first, so a bad file fails before minutes of timing.
    let wasm = args.wasm.as_deref().map(read_wasm).transpose()?;
    let native = measure_all(args)?;
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
    /// Bytes each site received from the aggregator's calls in this round.
    received: BTreeMap<ParticipantId, usize>,
    /// The most bytes one site sent in this round other than a masked input.
    site_key_bytes: usize,
    aggregator_ms: f64,
    aggregator_bytes: usize,
}

/// One (graph, S) to measure: its parameters and who leaves after R1.
#[derive(Clone, Debug)]
struct Setup {
    graph: GraphArg,
    sites: u32,
    k: usize,
    threshold: usize,
    dropped: u32,
    failure_log2: Option<f64>,
}

impl Setup {
    fn params(&self, len: usize) -> Result<Params, String> {
        let params = Params::new((1..=self.sites).collect(), len, Encoding::Ring)
            .map_err(|e| e.to_string())?;
        match self.graph {
            GraphArg::Complete => Ok(params),
            // A fixed public seed, so every repetition times the same graph.
            GraphArg::Harary => params
                .with_graph(Graph::Harary { k: self.k, seed: 2020 }, self.threshold)
                .map_err(|e| e.to_string()),
        }
    }
}

/// One instance of `setup` with vectors of length `len`, the last `dropped` sites leaving after
/// R1; and the bytes of its `Begin`.
fn instance(setup: &Setup, len: usize, seed: u64) -> Result<(Lockstep, usize), String> {
    let (s, dropped) = (setup.sites, setup.dropped);
    let params = setup.params(len)?;
    let begin_bytes = codec::encode(&SecAggMessage {
        session: SessionId([0; 16]),
        body: Body::Begin(params.clone()),
    })
    .len();
    let config =
        AggregatorConfig::new(params).map_err(|e| e.to_string())?.with_retain_masked_inputs(false);
    let inputs =
        (1..=s).map(|id| SiteInput::Ring((0..len as u64).map(|j| j * u64::from(id)).collect()));
    let leaving: Vec<ParticipantId> = (s - dropped + 1..=s).collect();
    let ls = Lockstep::new(config, inputs.collect(), seed, &leaving).map_err(|e| e.to_string())?;
    Ok((ls, begin_bytes))
}

/// Whether the instance's sum is the sum of the inputs its survivors gave.
fn check_sum(setup: &Setup, len: usize, ls: &Lockstep) -> Result<(), String> {
    let (s, dropped) = (setup.sites, setup.dropped);
    let expected: Vec<u64> = (0..len as u64)
        .map(|j| (1..=u64::from(s - dropped)).fold(0u64, |a, id| a.wrapping_add(j * id)))
        .collect();
    match ls.outcome() {
        Some(Ok(agg)) if agg.sum == expected => Ok(()),
        other => Err(format!(
            "{} S = {s}, D = {len}: wrong or no sum: {:?}",
            setup.graph,
            other.map(|o| o.err())
        )),
    }
}

/// A whole instance by the wall clock (ms), the sites' calls in parallel on the current pool.
fn measure_wall(setup: &Setup, len: usize, seed: u64) -> Result<f64, String> {
    let (mut ls, _) = instance(setup, len, seed)?;
    let t0 = Instant::now();
    ls.run_parallel().map_err(|e| e.to_string())?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    check_sum(setup, len, &ls)?;
    Ok(ms)
}

/// One instance of `setup` with vectors of length `len`; the last `dropped` sites leave after R1.
fn measure(setup: &Setup, len: usize, seed: u64) -> Result<Vec<RoundTiming>, String> {
    let s = setup.sites;
    let (mut ls, begin_bytes) = instance(setup, len, seed)?;
    let mut rounds = vec![RoundTiming::default(); 4];
    rounds[0].received = (1..=s).map(|id| (id, begin_bytes)).collect();
    let mut probe = |w: &mut Work<'_>| {
        let t0 = Instant::now();
        w.run();
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        let r = &mut rounds[round_index(w.phase)];
        match w.actor {
            Actor::Site(_) => {
                r.site_ms.push(ms);
                r.site_bytes = r.site_bytes.max(w.sent_bytes());
                let key_bytes: usize = w
                    .outputs()
                    .iter()
                    .filter(|o| o.kind != kind::MASKED_INPUT)
                    .map(|o| o.payload.len())
                    .sum();
                r.site_key_bytes = r.site_key_bytes.max(key_bytes);
            }
            Actor::Aggregator => {
                r.aggregator_ms += ms;
                r.aggregator_bytes += w.sent_bytes();
                for o in w.outputs() {
                    match o.to {
                        To::All => (1..=s)
                            .for_each(|id| *r.received.entry(id).or_default() += o.payload.len()),
                        To::One(id) => *r.received.entry(id).or_default() += o.payload.len(),
                    }
                }
            }
        }
    };
    ls.run(&mut probe).map_err(|e| e.to_string())?;
    // The timing is only worth something if the sum is right.
    check_sum(setup, len, &ls)?;
    Ok(rounds)
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

/// The (graph, S) pairs to measure, and notes on what was skipped or chosen.
fn setups(args: &SecaggArgs) -> Result<(Vec<Setup>, Vec<String>), String> {
    let mut setups = Vec::new();
    let mut notes = Vec::new();
    for graph in &args.graph {
        match graph {
            GraphArg::Complete => {
                for &s in &args.sites {
                    if s > args.complete_max_sites {
                        notes.push(format!(
                            "complete graph at S = {s} skipped (--complete-max-sites {}): every \
                             site expands S − 1 = {} pairwise masks and holds shares of all S \
                             sites, so its cost grows like S; SecAgg+ covers this size",
                            args.complete_max_sites,
                            s - 1
                        ));
                        continue;
                    }
                    let threshold = Params::default_threshold(s as usize);
                    let dropped = if args.with_dropouts { s - threshold as u32 } else { 0 };
                    setups.push(Setup {
                        graph: *graph,
                        sites: s,
                        k: s as usize - 1,
                        threshold,
                        dropped,
                        failure_log2: None,
                    });
                }
            }
            GraphArg::Harary => {
                for &s in &args.plus_sites {
                    let c = choose_harary(
                        s as usize,
                        args.dropout_fraction,
                        args.corruption_fraction,
                        args.sigma,
                    )
                    .map_err(|e| format!("--graph harary at S = {s}: {e}"))?;
                    notes.push(format!(
                        "SecAgg+ at S = {s}: k = {}, t = {} for δ = {} (D = {}), γ = {} (C = {}), \
                         failure bound 2^{:.1} ≤ 2^-{} (union bound over sites: dropouts 2^{:.1}, \
                         colluders 2^{:.1}, a split graph 2^{:.1})",
                        c.k,
                        c.threshold,
                        args.dropout_fraction,
                        c.dropouts,
                        args.corruption_fraction,
                        c.corruptions,
                        c.failure_log2,
                        args.sigma,
                        c.drop_log2,
                        c.corrupt_log2,
                        c.split_log2
                    ));
                    setups.push(Setup {
                        graph: *graph,
                        sites: s,
                        k: c.k,
                        threshold: c.threshold,
                        dropped: if args.with_dropouts { c.dropouts as u32 } else { 0 },
                        failure_log2: Some(c.failure_log2),
                    });
                }
            }
        }
    }
    Ok((setups, notes))
}

fn measure_all(args: &SecaggArgs) -> Result<BenchRun, String> {
    let (setups, notes) = setups(args)?;
    let repetitions = args.repetitions;
    let mut cells = Vec::new();
    let mut summaries = Vec::new();
    let mut threads = Vec::new();
    for setup in &setups {
        let (s, dropped) = (setup.sites, setup.dropped);
        for &len in &args.lengths {
            // One discarded run first (caches, allocator), as in the browser, where it also
            // lets V8 optimise the hot functions.
            measure(setup, len, u64::MAX)?;
            let runs: Vec<Vec<RoundTiming>> = (0..repetitions)
                .map(|rep| {
                    crate::progress::note(format!(
                        "bench secagg: {} S = {s}, D = {len}: repetition {}/{repetitions}",
                        setup.graph,
                        rep + 1
                    ));
                    measure(setup, len, rep as u64)
                })
                .collect::<Result<_, _>>()?;
            let site_mean =
                |r: &RoundTiming| r.site_ms.iter().sum::<f64>() / r.site_ms.len().max(1) as f64;
            let received = |r: &RoundTiming| r.received.values().copied().max().unwrap_or(0);
            for round in 0..4 {
                let mut site: Vec<f64> = runs.iter().map(|r| site_mean(&r[round])).collect();
                let mut agg: Vec<f64> = runs.iter().map(|r| r[round].aggregator_ms).collect();
                let (site_median, site_min) = median_min(&mut site);
                let (agg_median, agg_min) = median_min(&mut agg);
                let cell = |role: &str, median_ms, min_ms, bytes, received_bytes| Cell {
                    graph: setup.graph.to_string(),
                    k: setup.k,
                    threshold: setup.threshold,
                    sites: s,
                    length: len,
                    dropped,
                    round: format!("R{round}"),
                    role: role.into(),
                    median_ms,
                    min_ms,
                    bytes,
                    received_bytes,
                };
                let first = &runs[0][round];
                cells.push(cell("site", site_median, site_min, first.site_bytes, received(first)));
                cells.push(cell("aggregator", agg_median, agg_min, first.aggregator_bytes, 0));
            }
            let mut site: Vec<f64> =
                runs.iter().map(|r| r.iter().map(site_mean).sum::<f64>()).collect();
            let mut agg: Vec<f64> =
                runs.iter().map(|r| r.iter().map(|x| x.aggregator_ms).sum::<f64>()).collect();
            let (site_median_ms, site_min_ms) = median_min(&mut site);
            let (aggregator_median_ms, aggregator_min_ms) = median_min(&mut agg);
            let first = &runs[0];
            let site_received_bytes: usize = first.iter().map(received).sum();
            // the sum (R3's result) and, in R2, nothing else arrives: the rest is key material
            let result_bytes = first[3].received.values().copied().max().unwrap_or(0);
            summaries.push(Summary {
                graph: setup.graph.to_string(),
                sites: s,
                length: len,
                k: setup.k,
                threshold: setup.threshold,
                dropped,
                site_median_ms,
                site_min_ms,
                site_sent_bytes: first.iter().map(|r| r.site_bytes).sum(),
                site_received_bytes,
                site_key_bytes: first.iter().map(|r| r.site_key_bytes).sum::<usize>()
                    + site_received_bytes
                    - result_bytes,
                aggregator_median_ms,
                aggregator_min_ms,
                failure_log2: setup.failure_log2,
            });
            if args.wall_sites.contains(&s) {
                threads.push(measure_threads(setup, len, repetitions)?);
            }
        }
    }
    Ok(BenchRun {
        bench: "secagg".into(),
        runner: "native".into(),
        build: if cfg!(debug_assertions) { "debug" } else { "release" }.into(),
        repetitions,
        with_dropouts: args.with_dropouts,
        cells,
        summaries,
        notes,
        threads,
    })
}

/// A whole instance of `setup` at length `len` by the wall clock, on one thread and on the
/// pool `--threads` chose, alternating so that other load falls on both alike.
fn measure_threads(setup: &Setup, len: usize, repetitions: usize) -> Result<ThreadsCell, String> {
    let n = rayon::current_num_threads();
    let (one_pool, many_pool) = (super::djica::pool(1)?, super::djica::pool(n)?);
    // discarded warm-ups, as above
    one_pool.install(|| measure_wall(setup, len, u64::MAX))?;
    many_pool.install(|| measure_wall(setup, len, u64::MAX))?;
    let (mut one, mut many) = (Vec::new(), Vec::new());
    for rep in 0..repetitions {
        crate::progress::note(format!(
            "bench secagg: {} S = {}, D = {len}: whole instance on 1 and {n} threads, repetition \
             {}/{repetitions}",
            setup.graph,
            setup.sites,
            rep + 1
        ));
        one.push(one_pool.install(|| measure_wall(setup, len, rep as u64))?);
        many.push(many_pool.install(|| measure_wall(setup, len, rep as u64))?);
    }
    let (one_median, one_min) = median_min(&mut one);
    let (many_median, many_min) = median_min(&mut many);
    Ok(ThreadsCell {
        graph: setup.graph.to_string(),
        sites: setup.sites,
        length: len,
        dropped: setup.dropped,
        threads: n,
        one_thread_median_ms: one_median,
        one_thread_min_ms: one_min,
        threads_median_ms: many_median,
        threads_min_ms: many_min,
        speedup_median: one_median / many_median,
        speedup_min: one_min / many_min,
    })
}

fn ratios(native: &BenchRun, wasm: &BenchRun) -> Vec<Ratio> {
    native
        .cells
        .iter()
        .filter_map(|n| {
            let w = wasm.cells.iter().find(|w| {
                (&w.graph, w.sites, w.length, w.dropped, &w.round, &w.role)
                    == (&n.graph, n.sites, n.length, n.dropped, &n.round, &n.role)
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
         | graph | S | k | t | D | dropped | round | site | aggregator | bytes/site sent | received |",
        native.build, native.repetitions
    );
    if ratios.is_some() {
        out += " wasm/native site | wasm/native aggregator |";
    }
    out += "\n|---|---|---|---|---|---|---|---|---|---|---|";
    if ratios.is_some() {
        out += "---|---|";
    }
    out += "\n";
    for pair in native.cells.chunks(2) {
        let (site, agg) = (&pair[0], &pair[1]);
        out += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.3} / {:.3} | {:.3} / {:.3} | {} | {} |",
            site.graph,
            site.sites,
            site.k,
            site.threshold,
            site.length,
            site.dropped,
            site.round,
            site.median_ms,
            site.min_ms,
            agg.median_ms,
            agg.min_ms,
            site.bytes,
            site.received_bytes
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
    out += "\nA whole round per site (R0..R3 added up; ms median / min; bytes one site sends and \
            receives, and of those the keys, shares and lists, which grow with k)\n\
            | graph | S | k | t | D | dropped | site ms | aggregator ms | sent | received | key bytes | \
            failure bound |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for x in &native.summaries {
        out += &format!(
            "| {} | {} | {} | {} | {} | {} | {:.2} / {:.2} | {:.1} / {:.1} | {} | {} | {} | {} |\n",
            x.graph,
            x.sites,
            x.k,
            x.threshold,
            x.length,
            x.dropped,
            x.site_median_ms,
            x.site_min_ms,
            x.aggregator_median_ms,
            x.aggregator_min_ms,
            x.site_sent_bytes,
            x.site_received_bytes,
            x.site_key_bytes,
            x.failure_log2.map_or("—".to_owned(), |f| format!("2^{f:.1}"))
        );
    }
    if !native.threads.is_empty() {
        out += "\nA whole instance (R0..R3, all parties) by the wall clock, the sites' calls in \
                parallel (ms, median / min)\n\
                | graph | S | D | dropped | 1 thread | N threads | N | speed-up |\n\
                |---|---|---|---|---|---|---|---|\n";
        for x in &native.threads {
            out += &format!(
                "| {} | {} | {} | {} | {:.1} / {:.1} | {:.1} / {:.1} | {} | {:.2}× (min {:.2}×) |\n",
                x.graph,
                x.sites,
                x.length,
                x.dropped,
                x.one_thread_median_ms,
                x.one_thread_min_ms,
                x.threads_median_ms,
                x.threads_min_ms,
                x.threads,
                x.speedup_median,
                x.speedup_min
            );
        }
    }
    for note in &native.notes {
        out += &format!("note: {note}\n");
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

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: SecaggArgs,
    }

    fn args(line: &str) -> SecaggArgs {
        use clap::Parser;
        Cli::parse_from(std::iter::once("bench").chain(line.split_whitespace())).args
    }

    #[test]
    fn secagg_plus_cells_carry_k_and_the_summary_adds_the_rounds() {
        let run = measure_all(&args(
            "--graph complete,harary --sites 16,300 --plus-sites 16,64 --lengths 8 \
             --repetitions 1 --with-dropouts",
        ))
        .unwrap();
        assert_eq!(run.cells.len(), 3 * 8, "complete 16, harary 16 and 64");
        assert_eq!(run.summaries.len(), 3);
        assert!(run.notes.iter().any(|n| n.contains("S = 300 skipped")), "{:?}", run.notes);
        let plus: Vec<&Summary> = run.summaries.iter().filter(|x| x.graph == "harary").collect();
        assert!(plus.iter().all(|x| x.k + 1 < x.sites as usize && x.dropped > 0));
        assert!(plus.iter().all(|x| x.failure_log2.unwrap() <= -40.0));
        let full = &run.summaries[0];
        assert_eq!((full.graph.as_str(), full.k), ("complete", 15));
        // per-site key material grows with k: SecAgg+ at S = 16 (k < 15) sends less than the
        // complete graph at the same S
        assert!(plus[0].site_key_bytes < full.site_key_bytes);
        let r1 = |x: &Summary| {
            run.cells
                .iter()
                .find(|c| {
                    (c.graph.as_str(), c.sites, c.round.as_str(), c.role.as_str())
                        == (x.graph.as_str(), x.sites, "R1", "site")
                })
                .unwrap()
                .bytes
        };
        assert!(r1(plus[0]) < r1(full));
    }

    #[test]
    fn wall_clock_cells_on_one_and_several_threads() {
        let run = measure_all(&args(
            "--graph complete,harary --sites 4,8 --plus-sites 16 --lengths 8 --repetitions 1 \
             --wall-sites 8,16",
        ))
        .unwrap();
        let cells: Vec<(&str, u32)> =
            run.threads.iter().map(|c| (c.graph.as_str(), c.sites)).collect();
        assert_eq!(cells, vec![("complete", 8), ("harary", 16)]);
        assert!(run.threads.iter().all(|c| c.speedup_median > 0.0 && c.threads >= 1));
    }

    #[test]
    fn a_small_run_has_every_cell_and_ratios_pair_them() {
        let run =
            measure_all(&args("--sites 3 --lengths 8 --repetitions 2 --with-dropouts")).unwrap();
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
