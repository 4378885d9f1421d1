//! How every subcommand ends: the files it wrote, or an error naming the problem (exit code 2).

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Prints `error: …` to stderr; exit code 2 (bad input or a refused run).
pub fn fail(message: impl Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

/// One `wrote <path>` line per file.
pub fn print_written(files: &[PathBuf]) {
    for f in files {
        println!("wrote {}", f.display());
    }
}

/// The files a command wrote, or its error.
pub fn files_or_fail(result: Result<Vec<PathBuf>, String>) -> ExitCode {
    match result {
        Ok(files) => {
            print_written(&files);
            ExitCode::SUCCESS
        }
        Err(m) => fail(m),
    }
}

/// A benchmark's JSON report: printed, and written to `out` as well when given.
pub fn report_json(result: Result<serde_json::Value, String>, out: Option<&Path>) -> ExitCode {
    let report = match result {
        Ok(v) => v,
        Err(m) => return fail(m),
    };
    let text = serde_json::to_string_pretty(&report).expect("JSON of numbers");
    println!("{text}");
    if let Some(path) = out
        && let Err(e) = std::fs::write(path, text + "\n")
    {
        return fail(format!("could not write {}: {e}", path.display()));
    }
    ExitCode::SUCCESS
}
