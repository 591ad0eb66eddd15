//! The session's scratchpad: a folder of its own under Chock's state
//! directory, given to every run_command read-write at
//! `/run/chock/scratch` (`CHOCK_SCRATCHPAD`), outside the workspace so
//! nothing in it is ever applied, and removed when the session ends.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// Why a scratchpad could not be made or removed.
#[derive(Debug, thiserror::Error)]
pub enum ScratchError {
    /// There is no state directory to keep it in.
    #[error("the scratchpad has no place: {0}")]
    NoPlace(#[from] chock_log::LogError),
    /// Its folder could not be made.
    #[error("{}: {source}", path.display())]
    Make {
        path: PathBuf,
        source: std::io::Error,
    },
    /// It could not be removed, and is left where it is.
    #[error("the scratchpad {} could not be removed ({source}); remove it by hand", path.display())]
    Left {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn made(path: &Path) -> impl FnOnce(std::io::Error) -> ScratchError + '_ {
    move |source| ScratchError::Make {
        path: path.to_path_buf(),
        source,
    }
}

pub struct Scratchpad {
    dir: PathBuf,
}

impl Scratchpad {
    /// Makes a new, empty scratchpad (mode 0700).
    pub fn make() -> Result<Scratchpad, ScratchError> {
        let root = chock_log::dir_from_env()?.join("scratch");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&root)
            .map_err(made(&root))?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = root.join(format!("run-{}-{nanos}", std::process::id()));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(made(&dir))?;
        Ok(Scratchpad { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Removes it and all it holds (links inside are removed, never
    /// followed); `Err` says what is left where.
    pub fn remove(mut self) -> Result<(), ScratchError> {
        let path = std::mem::take(&mut self.dir);
        std::fs::remove_dir_all(&path).map_err(|source| ScratchError::Left { path, source })
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
