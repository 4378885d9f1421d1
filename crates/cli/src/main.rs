use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod account;
mod bench;
mod mean;

/// cape: capelab's protocols, natively.
#[derive(Parser)]
#[command(name = "cape", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Privacy accounting: ε of J Gaussian releases under RDP, moments, basic and strong
    /// composition, the exact Gaussian curve, and CAPE's collusion-aware view.
    Account(account::AccountArgs),
    /// The private-mean study (CAPE over the real SecureAgg) with S in-process sites, T trials
    /// and K random dropouts: estimates, empirical and theoretical variances, privacy.
    Mean(mean::MeanArgs),
    /// Timings of the protocol roles.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Account(args) => account::run(args),
        Command::Mean(args) => mean::run(args),
        Command::Bench(command) => bench::run(command),
    }
}
