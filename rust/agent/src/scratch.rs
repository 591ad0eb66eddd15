//! The session's scratchpad: a folder of its own under Chock's state
//! directory, given to every run_command read-write at
//! `/run/chock/scratch` (`CHOCK_SCRATCHPAD`), outside the workspace so
//! nothing in it is ever applied, and removed when the session ends.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

pub struct Scratchpad {
    dir: PathBuf,
}

impl Scratchpad {
    /// Makes a new, empty scratchpad (mode 0700).
    pub fn make() -> Result<Scratchpad, String> {
        let root = chock_log::dir_from_env()
            .map_err(|e| format!("the scratchpad has no place: {e}"))?
            .join("scratch");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&root)
            .map_err(|e| format!("{}: {e}", root.display()))?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = root.join(format!("run-{}-{nanos}", std::process::id()));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(Scratchpad { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Removes it and all it holds (links inside are removed, never
    /// followed); `Err` says what is left where.
    pub fn remove(mut self) -> Result<(), String> {
        let dir = std::mem::take(&mut self.dir);
        std::fs::remove_dir_all(&dir).map_err(|e| {
            format!(
                "the scratchpad {} could not be removed ({e}); remove it by hand",
                dir.display()
            )
        })
    }
}

impl Drop for Scratchpad {
    /// A session that ends early still removes it, as well as it can.
    fn drop(&mut self) {
        if !self.dir.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
