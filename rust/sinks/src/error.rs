//! What can stop a shipper. A receiver that is down, slow or gone is not
//! among these: that is reported in [`crate::Report::down`], and the lines
//! wait in the log.

use std::io;
use std::path::PathBuf;

/// Why a shipper could not run or keep its place.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// The log could not be read.
    #[error(transparent)]
    Log(#[from] chock_log::LogError),
    /// A sink's cursor or lock file could not be read or written.
    #[error("cannot use {path}: {source}; check its owner and permissions")]
    State { path: PathBuf, source: io::Error },
    /// The cursor file holds something else than a cursor.
    #[error(
        "{path} is not a sink cursor; remove it to ship that sink's lines again from the oldest kept"
    )]
    Cursor { path: PathBuf },
    /// Another shipper holds the sink's lock and is shipping its lines.
    #[error("another `chock log ship` is shipping to the sink `{id}`")]
    Busy { id: String },
}
