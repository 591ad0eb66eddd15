//! What can go wrong with a session's log.

use std::path::PathBuf;

/// Why one line of a session log is not an event.
#[derive(Debug, thiserror::Error)]
pub enum BadLine {
    #[error("it is not a record: {0}")]
    NotRecord(String),
    #[error("it has no `ts`")]
    NoTime,
    #[error("it has no `type` naming its kind")]
    NoKind,
    #[error("its `{kind}` event does not read: {source}")]
    Unreadable {
        kind: String,
        source: serde_json::Error,
    },
    #[error("its `{0}` event is not an object")]
    NotAnObject(String),
}

/// An event of a kind a fold reads that does not read as that kind, by
/// its place among the events (from 1).
#[derive(Debug, thiserror::Error)]
#[error("event {place} (`{kind}`) does not read: {source}")]
pub struct BadEvent {
    pub place: usize,
    pub kind: String,
    pub source: serde_json::Error,
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// No environment variable says where state is kept.
    #[error(transparent)]
    State(#[from] chock_log::LogError),
    #[error(
        "`{0}` is not a session id: ids are 1 to 64 of a-z, A-Z, 0-9, `-` and `_` (`chock sessions` lists them)"
    )]
    BadId(String),
    #[error("no session `{id}` in {dir} (`chock sessions` lists them)")]
    NotFound { id: String, dir: PathBuf },
    #[error("{project} has no session to continue in {dir}; start one with `chock run`")]
    NoneForProject { project: String, dir: PathBuf },
    #[error("session {0} is running (its lock is held); wait for it to end")]
    Running(String),
    #[error("session {0} already has a log; a new session needs a new id")]
    Exists(String),
    #[error(
        "{path}:{line}: {why}; the session log does not verify, so it is not used (`chock sessions verify` shows it)"
    )]
    Broken {
        path: PathBuf,
        line: u64,
        why: String,
    },
    #[error("{path} is {size} bytes, over the 1 GiB a session log is read up to")]
    TooLarge { path: PathBuf, size: u64 },
    #[error("{path} already exists; export to a folder without it (nothing is overwritten)")]
    WouldOverwrite { path: PathBuf },
    #[error("cannot encode the event as JSON: {0}")]
    Encode(String),
    #[error("{what} {path}: {source}; check its owner, permissions and free space")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}
