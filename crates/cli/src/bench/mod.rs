/*!
`cape bench`: timings of the protocol roles, on the bare roles (no transport, no simulator).

- `cape bench secagg`: each SecureAgg role per round ([`secagg`]).
*/

use std::process::ExitCode;

pub mod secagg;

#[derive(clap::Subcommand, Debug)]
pub enum BenchCommand {
    /// SecureAgg: time per round per role for S sites and vectors of length D (median and min
    /// over repetitions); optionally merged with the browser's figures for the wasm/native ratio.
    Secagg(secagg::SecaggArgs),
}

pub fn run(command: BenchCommand) -> ExitCode {
    match command {
        BenchCommand::Secagg(args) => secagg::run(args),
    }
}
