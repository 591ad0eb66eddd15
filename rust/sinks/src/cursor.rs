//! A sink's place in the log: the last line it delivered, by seq and hash,
//! and how many lines it had to skip, kept in `sink.ID.cursor` beside the
//! log and replaced whole (a new file made with `O_EXCL`, synced, renamed
//! over the old). `sink.ID.lock` is held by the one shipper of that sink.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use chock_log::Sha256Hash;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::SinkError;

/// A line of the log, by its seq and the hash of its exact bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    pub seq: u64,
    pub hash: Sha256Hash,
}

impl Point {
    /// Before the first line ever written.
    pub const START: Point = Point {
        seq: 0,
        hash: Sha256Hash::ZERO,
    };
}

/// What the cursor file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// The last line delivered (or skipped past).
    pub at: Point,
    /// How many lines were skipped, ever: past the backlog bound, or
    /// rotated away before they were delivered.
    pub skipped: u64,
}

#[derive(Serialize, Deserialize)]
struct OnDisk {
    seq: u64,
    sha256: String,
    skipped: u64,
}

/// How a sink's last round went, kept in `sink.ID.status` so a person can
/// see what a shipper with no terminal saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastRound {
    /// When it ended, in milliseconds since the epoch.
    pub ended_ms: u64,
    /// Lines the receiver got in it.
    pub sent: u64,
    /// Lines still waiting after it.
    pub left: u64,
    /// Why the receiver was not reached, when it was not.
    pub down: Option<String>,
}

/// Where one sink's files are.
#[derive(Debug, Clone)]
pub struct Files {
    pub cursor: PathBuf,
    lock: PathBuf,
    status: PathBuf,
}

impl Files {
    /// The files of sink `id` for the log in `dir`.
    pub fn new(dir: &Path, id: &str) -> Files {
        Files {
            cursor: dir.join(format!("sink.{id}.cursor")),
            lock: dir.join(format!("sink.{id}.lock")),
            status: dir.join(format!("sink.{id}.status")),
        }
    }

    /// How the last round went; `None` before the first, or when the file
    /// is not one Chock wrote.
    pub fn last_round(&self) -> Option<LastRound> {
        use std::io::Read;
        // Never through a link, never waiting on a FIFO put in its place.
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
            .open(&self.status)
            .ok()
            .filter(|file| file.metadata().is_ok_and(|meta| meta.is_file()))?;
        let mut bytes = Vec::new();
        file.take(64 << 10).read_to_end(&mut bytes).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Keeps how a round went. A status that cannot be written changes no
    /// shipping: it is only what a person is shown.
    pub fn keep_round(&self, round: &LastRound) {
        if let Ok(text) = serde_json::to_vec(round) {
            let _ = chock_files::replace(&self.status, &text, chock_files::Access::Private);
        }
    }

    /// Whether a shipper holds the sink's lock now.
    pub fn is_shipping(&self) -> bool {
        matches!(self.try_lock(), Ok(None))
    }

    /// The cursor, or the start of the log when the sink never shipped.
    pub fn read(&self) -> Result<Cursor, SinkError> {
        let bytes = match std::fs::read(&self.cursor) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Cursor {
                    at: Point::START,
                    skipped: 0,
                });
            }
            Err(source) => return Err(self.error(source)),
        };
        let unreadable = || SinkError::Cursor {
            path: self.cursor.clone(),
        };
        let disk: OnDisk = serde_json::from_slice(&bytes).map_err(|_| unreadable())?;
        let hash = Sha256Hash::from_hex(&disk.sha256).ok_or_else(unreadable)?;
        Ok(Cursor {
            at: Point {
                seq: disk.seq,
                hash,
            },
            skipped: disk.skipped,
        })
    }

    /// Replaces the cursor file whole: a reader sees the old one or the new one.
    pub fn write(&self, cursor: &Cursor) -> Result<(), SinkError> {
        let text = serde_json::to_vec(&OnDisk {
            seq: cursor.at.seq,
            sha256: cursor.at.hash.to_string(),
            skipped: cursor.skipped,
        })
        .map_err(|e| self.error(io::Error::other(e)))?;
        chock_files::replace(&self.cursor, &text, chock_files::Access::Private)
            .map_err(|source| self.error(source))
    }

    /// Takes the sink's lock without waiting; `None` when another shipper has it.
    pub fn try_lock(&self) -> Result<Option<Flock<File>>, SinkError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(&self.lock)
            .map_err(|source| SinkError::State {
                path: self.lock.clone(),
                source,
            })?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(held) => Ok(Some(held)),
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
            Err((_, errno)) => Err(SinkError::State {
                path: self.lock.clone(),
                source: errno.into(),
            }),
        }
    }

    fn error(&self, source: io::Error) -> SinkError {
        SinkError::State {
            path: self.cursor.clone(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_what_was_written_and_starts_at_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path(), "s");
        assert_eq!(files.read().unwrap().at, Point::START);
        let cursor = Cursor {
            at: Point {
                seq: 9,
                hash: Sha256Hash::of_line(b"x"),
            },
            skipped: 3,
        };
        files.write(&cursor).unwrap();
        files.write(&cursor).unwrap();
        assert_eq!(files.read().unwrap(), cursor);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("sink.s.cursor")]);
    }

    #[test]
    fn a_damaged_cursor_is_an_error_not_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path(), "s");
        std::fs::write(&files.cursor, "{\"seq\":1}").unwrap();
        assert!(matches!(files.read(), Err(SinkError::Cursor { .. })));
    }

    #[test]
    fn one_shipper_holds_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path(), "s");
        let held = files.try_lock().unwrap();
        assert!(held.is_some());
        assert!(files.try_lock().unwrap().is_none());
        drop(held);
        assert!(files.try_lock().unwrap().is_some());
    }
}
