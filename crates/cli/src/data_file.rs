//! Reading the data sets the set-up writes into `data/` (CPS1988, digits, diabetes, breast
//! cancer): from the file the user names (`--data-file`, or `--data` where that is a path), else
//! from `data/` under the working directory. A missing file is an error that says where it was
//! looked for and both ways out.

use std::io;
use std::path::{Path, PathBuf};

/// The error for a data set missing from its default place, `path` relative to the working
/// directory; `flag` is the flag that names another file.
pub fn missing(path: &Path, flag: &str, e: &io::Error) -> String {
    let cwd = std::env::current_dir()
        .map_or_else(|_| "the working directory".to_string(), |d| d.display().to_string());
    format!(
        "cannot read {} (looked in {cwd}): {e}. Run scripts/setup.sh in the capelab repository to \
         write it into data/ (and run from there), or pass {flag} PATH",
        path.display()
    )
}

/// The text of a data set: `given` (the user's file), else `default` (under `data/`). Returns the
/// path read, for messages and reports.
pub fn read(given: Option<&Path>, default: &Path, flag: &str) -> Result<(String, PathBuf), String> {
    let path = given.unwrap_or(default).to_path_buf();
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok((text, path)),
        Err(e) if given.is_some() => Err(format!("{flag} {}: cannot read it: {e}", path.display())),
        Err(e) => Err(missing(&path, flag, &e)),
    }
}
