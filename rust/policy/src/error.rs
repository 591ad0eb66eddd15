//! Why a policy could not be loaded. Every fault inside a file reads
//! `FILE:LINE:COL: message` with the offending line, like a syntax error.

use std::path::PathBuf;

/// A refusal to load: nothing is half-loaded, the caller gets no policy.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// A fault inside a ZON file: syntax, shape, or a rule Chock refuses.
    #[error(transparent)]
    Zon(#[from] chock_zon::Error),
    /// A fault in a settings block, worded as a fault inside a ZON file.
    #[error(transparent)]
    Config(#[from] chock_config::ConfigError),
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: the project directory does not exist: pass --project with the directory that holds chock.zon", path.display())]
    NoProjectDir { path: PathBuf },
    #[error("{}: the organisation bundle named with --org-bundle does not exist: check the path", path.display())]
    NoBundle { path: PathBuf },
    #[error("cannot find the data directory for organisation bundles: set HOME or XDG_DATA_HOME")]
    NoDataDir,
}

impl From<chock_zon::ReadError> for PolicyError {
    fn from(e: chock_zon::ReadError) -> Self {
        match e {
            chock_zon::ReadError::Io { path, source } => PolicyError::Io { path, source },
            chock_zon::ReadError::Zon(e) => PolicyError::Zon(e),
        }
    }
}
