//! What can go wrong while writing or reading the log.

use std::io;
use std::path::PathBuf;

/// A failure to reach the log. Appending never lets one of these change a
/// decision: [`crate::append`] reports it once on stderr and goes on.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// No environment variable says where state is kept.
    #[error(
        "cannot tell where to keep the decision log: set HOME, XDG_STATE_HOME or CHOCK_STATE_DIR to an absolute path"
    )]
    NoStateDir,
    /// The log folder could not be made.
    #[error("cannot create the log folder {path}: {source}; check that you may write there")]
    CreateDir { path: PathBuf, source: io::Error },
    /// A log file or the lock file could not be opened for writing.
    #[error("cannot open {path} for appending: {source}; check its owner and permissions")]
    Open { path: PathBuf, source: io::Error },
    /// One of the log's files is not a regular file (a FIFO, a device, a
    /// socket, a folder, a symbolic link): neither read nor written.
    #[error(
        "{path} is {what}, not a regular file: the decision log reads and writes only regular files, so nothing was read from or written to it; remove it (Chock makes a new log file) or set CHOCK_STATE_DIR to another folder"
    )]
    NotRegular { path: PathBuf, what: &'static str },
    /// A log file could not be read.
    #[error("cannot read {path}: {source}; check its owner and permissions")]
    Read { path: PathBuf, source: io::Error },
    /// The line could not be written. What a short write left was cut off
    /// again, unless `cut` says why that failed too.
    #[error("cannot write to {path}: {source}{}; check free space and permissions", cut_failed(.cut))]
    Write {
        path: PathBuf,
        source: io::Error,
        cut: Option<io::Error>,
    },
    /// The lock could not be taken for a reason other than another writer holding it.
    #[error("cannot lock {path}: {source}; the file system may not support flock")]
    Lock { path: PathBuf, source: io::Error },
    /// A rotation step (rename or removal) failed.
    #[error("cannot rotate {path}: {source}; check permissions in the log folder")]
    Rotate { path: PathBuf, source: io::Error },
    /// The record could not be turned into JSON.
    #[error("cannot encode the decision as JSON: {0}")]
    Encode(#[from] serde_json::Error),
}

fn cut_failed(cut: &Option<io::Error>) -> String {
    cut.as_ref()
        .map(|e| format!(" (and a part written could not be cut off again: {e})"))
        .unwrap_or_default()
}
