/*!
`cape bench`: timings of the protocol roles, on the bare roles (no transport, no simulator).

- `cape bench secagg`: each SecureAgg role per round ([`secagg`]).
- `cape bench djica`: capePCA + capeDJICA end to end ([`djica`]).
- `cape bench pld`: the PLD accountant on a DP-SGD-sized run ([`pld`]).
- `cape bench paillier`: Paillier-2048 and EFPSN's Phase 1 ([`paillier`]).
- `cape bench vertical-vi`: one DP-VI step of seed 004, `mpc` and `fixed` modes ([`vertical_vi`]).
*/

use std::process::ExitCode;

pub mod djica;
pub mod paillier;
pub mod pld;
pub mod secagg;
pub mod vertical_vi;

#[derive(clap::Subcommand, Debug)]
pub enum BenchCommand {
    /// SecureAgg: time per round per role for S sites and vectors of length D (median and min
    /// over repetitions); optionally merged with the browser's figures for the wasm/native ratio.
    Secagg(secagg::SecaggArgs),
    /// capePCA + capeDJICA end to end at paper scale (S = 4, M = 1024, D = 900, R = 20) and at
    /// M = 256; optionally merged with numpy's and the browser's figures for the ratios.
    Djica(djica::DjicaBenchArgs),
    /// The PLD accountant: T = 20 000 Poisson-subsampled Gaussian releases at two grid steps;
    /// optionally merged with the browser's and dp-accounting's figures for the ratios.
    Pld(pld::PldBenchArgs),
    /// Paillier-2048 key generation, encryption, decryption and EFPSN's Phase 1 (5 agents on a
    /// ring); optionally merged with the browser's and python-phe's figures for the ratios.
    Paillier(paillier::PaillierBenchArgs),
    /// DP-VI on vertically partitioned data (seed 004): one step's noisy clipped sum by the MPC
    /// and by plaintext fixed point at P = 2, K = 20, B = 100 (time per step, rounds, bytes per
    /// party, mpc-vs-fixed agreement).
    VerticalVi(vertical_vi::VerticalViBenchArgs),
}

pub fn run(command: BenchCommand) -> ExitCode {
    match command {
        BenchCommand::Secagg(args) => secagg::run(args),
        BenchCommand::Djica(args) => djica::run(args),
        BenchCommand::Pld(args) => pld::run(args),
        BenchCommand::Paillier(args) => paillier::run(args),
        BenchCommand::VerticalVi(args) => vertical_vi::run(args),
    }
}
