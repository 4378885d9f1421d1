/*!
Where a command's files go.

`--out DIR` is used as given: created if needed, and files of the same name in it are replaced
(that is how the committed figures are regenerated: `--out docs/figures`, on purpose). Without it,
a new folder `cape-out/<command>-NNN/` in the working directory, NNN the first number not yet
taken (created atomically, so two runs started together get two folders): a run never overwrites
an earlier one's files, from whatever directory it is started.
*/

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// The folder, in the working directory, that holds the default output folders.
pub const DEFAULT_ROOT: &str = "cape-out";

/// A command's output folder, created before the work starts (so an unwritable place fails in a
/// second, not after an hour of computing).
pub struct OutDir {
    pub path: PathBuf,
    /// Made for this run (no --out): removed again if the run fails before writing into it.
    fresh: bool,
}

impl OutDir {
    /// `out`, or a new `cape-out/<command>-NNN`.
    pub fn resolve(out: Option<&Path>, command: &str) -> Result<OutDir, String> {
        if let Some(dir) = out {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("--out {}: cannot create it: {e}", dir.display()))?;
            return Ok(OutDir { path: dir.to_path_buf(), fresh: false });
        }
        let root = Path::new(DEFAULT_ROOT);
        std::fs::create_dir_all(root).map_err(|e| {
            format!(
                "cannot create {} in the working directory ({e}); pass --out DIR",
                root.display()
            )
        })?;
        for n in 1u32.. {
            let path = root.join(format!("{command}-{n:03}"));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(OutDir { path, fresh: true }),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(format!("cannot create {}: {e}; pass --out DIR", path.display()));
                }
            }
        }
        unreachable!("some number below 2^32 is free")
    }

    pub fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.path.join(name)
    }

    /// Removes a fresh folder that is still empty (the run failed before writing anything), and
    /// `cape-out` too if that leaves it empty.
    pub fn discard_if_empty(&self) {
        if self.fresh {
            // Each fails, as it should, when the folder has anything in it.
            let _ = std::fs::remove_dir(&self.path);
            let _ = std::fs::remove_dir(DEFAULT_ROOT);
        }
    }
}

/// Runs `work` with the output folder of `command` (see the module doc), telling the user where
/// the files go; a fresh folder left empty by an error is removed.
pub fn with_out<T>(
    out: Option<&Path>,
    command: &str,
    work: impl FnOnce(&OutDir) -> Result<T, String>,
) -> Result<T, String> {
    let dir = OutDir::resolve(out, command)?;
    crate::progress::note(format!("{command}: files go to {}", dir.path.display()));
    let result = work(&dir);
    if result.is_err() {
        dir.discard_if_empty();
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_folder_is_created_and_kept() {
        let base = std::env::temp_dir().join(format!("cape-outdir-{}", std::process::id()));
        let dir = base.join("a/b");
        let out = OutDir::resolve(Some(&dir), "x").unwrap();
        assert_eq!(out.path, dir);
        assert!(dir.is_dir());
        out.discard_if_empty();
        assert!(dir.is_dir(), "an explicit --out is never removed");
        std::fs::remove_dir_all(base).unwrap();
    }
}
