use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod account;
mod bench;
mod data_file;
mod djica;
mod efpsn;
mod exit;
mod fm;
mod mean;
mod nn;
mod outdir;
mod paillier;
mod plot;
mod progress;
mod vertical_vi;

/// cape: capelab's protocols, natively.
///
/// The in-process simulations run the sites' work in parallel on all cores (`--threads N` to
/// choose; `--threads 1` is sequential). A given seed gives the same results, bit for bit,
/// whatever the thread count.
///
/// Results go to stdout (`--json`: one JSON object and nothing else); progress goes to stderr,
/// as a bar on a terminal and as a plain line every --progress-every seconds otherwise (a log
/// file, a pipe), unless --quiet. Commands that write files write them into --out DIR, or by
/// default into a new folder cape-out/<command>-NNN/ in the working directory, never over an
/// earlier run's files. Every ε says which accountant produced it (PLD, RDP, the exact Gaussian
/// composition, or a paper's theorem).
#[derive(Parser)]
#[command(name = "cape", version, about, long_about)]
struct Cli {
    /// Threads for the sites' work in the in-process simulations and benchmarks (one site per
    /// task): default all cores, 1 = sequential. Results do not depend on it.
    #[arg(long, global = true, value_name = "N")]
    threads: Option<usize>,
    /// No progress on stderr (errors and warnings still print).
    #[arg(long, short, global = true)]
    quiet: bool,
    /// When stderr is not a terminal, print a progress line every this many seconds.
    #[arg(long, global = true, value_name = "SECONDS", default_value_t = progress::DEFAULT_EVERY_SECONDS)]
    progress_every: f64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Privacy accounting: ε of J Gaussian releases by the privacy loss distribution (PLD), RDP,
    /// the moments accountant, basic and strong composition and the exact Gaussian curve, with
    /// CAPE's collusion-aware view and the noise a target ε needs under PLD and RDP.
    Account(account::AccountArgs),
    /// The private-mean study (CAPE over the real SecureAgg) with S in-process sites, T trials
    /// and K random dropouts: estimates, empirical and theoretical variances, privacy.
    Mean(mean::MeanArgs),
    /// Timings of the protocol roles.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Private linear or logistic regression with the functional mechanism: Gaussian, Laplace or
    /// relaxed FM, output perturbation, capeFM across sites, and their baselines.
    Fm(fm::FmArgs),
    /// Averaged FM runs over ε, N or δ, written as CSV and figures (PNG and SVG).
    FmSweep(fm::SweepArgs),
    /// A two-layer network trained across sites with CAPE, the conventional scheme, or without
    /// privacy; ε accounted over all iterations.
    Nn(nn::NnArgs),
    /// Averaged network runs over ε per iteration or N, written as CSV and figures.
    NnSweep(nn::NnSweepArgs),
    /// capePCA + capeDJICA (or a baseline) on synthetic fMRI: q_NGI, overall ε, W, V, A and the
    /// true vs recovered spatial maps.
    Djica(djica::DjicaArgs),
    /// Averaged capeDJICA runs over ε_i or M for every method (seed 000 Figs. 1–2): CSV, figures
    /// and the threshold ε_i of each method.
    DjicaSweep(djica::DjicaSweepArgs),
    /// EFPSN (seed 003): agents on a graph mask their local costs with zero-sum polynomials built
    /// by a Paillier exchange, then optimise together (DSGD or gradient tracking); against the
    /// non-zero-sum baseline and the noise-free run.
    Efpsn(efpsn::EfpsnArgs),
    /// EFPSN, the baseline and noise-free over γ (seed 003 Figs. 3–4): CSV and figures.
    EfpsnSweep(efpsn::EfpsnSweepArgs),
    /// What a curious neighbour reads from one agent's released gradient on a single image, with
    /// the biases or all parameters perturbed: cosines and the images (PNG + SVG).
    EfpsnAttack(efpsn::EfpsnAttackArgs),
    /// Paillier keys, encryption, decryption and sums as JSON (interoperability tests).
    #[command(subcommand)]
    Paillier(paillier::PaillierCommand),
    /// DP variational inference over vertically partitioned data (seed 004): real MPC, its
    /// fixed-point simulation, plain f64 or the non-partitioned baseline; test NLL per epoch, ε
    /// per player, time and bytes per step, and a synthetic twin.
    VerticalVi(vertical_vi::VerticalViArgs),
    /// Test NLL, twin quality and TSTR accuracy against the analyst's ε for each mode (σ
    /// calibrated per ε by the PLD accountant): CSV and figures.
    VerticalViSweep(vertical_vi::VerticalViSweepArgs),
}

/// Builds rayon's global pool once, with `threads` threads (rayon's default, all cores, when
/// `None`).
fn set_threads(threads: Option<usize>) -> Result<(), String> {
    let Some(n) = threads else { return Ok(()) };
    if n == 0 {
        return Err("--threads: need at least 1".into());
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global()
        .map_err(|e| format!("--threads {n}: {e}"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(message) =
        set_threads(cli.threads).and_then(|()| progress::configure(cli.quiet, cli.progress_every))
    {
        return exit::fail(message);
    }
    match cli.command {
        Command::Account(args) => account::run(args),
        Command::Mean(args) => mean::run(args),
        Command::Bench(command) => bench::run(command),
        Command::Fm(args) => fm::run(args),
        Command::FmSweep(args) => fm::run_sweep(args),
        Command::Nn(args) => nn::run(args),
        Command::NnSweep(args) => nn::run_sweep(args),
        Command::Djica(args) => djica::run(args),
        Command::DjicaSweep(args) => djica::run_sweep(args),
        Command::Efpsn(args) => efpsn::run(args),
        Command::EfpsnSweep(args) => efpsn::run_sweep(args),
        Command::EfpsnAttack(args) => efpsn::run_attack(args),
        Command::Paillier(command) => paillier::run(command),
        Command::VerticalVi(args) => vertical_vi::run(args),
        Command::VerticalViSweep(args) => vertical_vi::run_sweep(args),
    }
}
