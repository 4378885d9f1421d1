use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod account;

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
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Account(args) => account::run(args),
    }
}
