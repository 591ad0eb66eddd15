//! Appending one line: lock, find what to chain to, maybe rotate, one write.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::lines::Backward;
use crate::location::{CURRENT, LOCK, rotated_files, rotated_name};
use crate::record::{Entry, Head, Record, Sha256Hash};
use crate::{Appended, LogError, Rotation, link, lock};

/// Where the next line goes in the chain.
struct ChainPoint {
    next_seq: u64,
    prev: Sha256Hash,
    /// Why the last line could not be chained to, when it could not.
    unreadable: Option<String>,
    /// The current file ends in a torn fragment that the next line must not run into.
    torn: bool,
}

/// Appends `entry` to the log in `dir` (see [`crate::Log::try_append`]).
pub fn append(
    dir: &Path,
    rotation: Rotation,
    lock_wait: Duration,
    entry: &Entry,
) -> Result<Appended, LogError> {
    make_dir(dir)?;
    let lock_path = dir.join(LOCK);
    let held = lock::exclusive(open_private(&lock_path, false)?, lock_wait).map_err(|source| {
        LogError::Lock {
            path: lock_path.clone(),
            source,
        }
    })?;
    let current_path = dir.join(CURRENT);
    let mut current = open_private(&current_path, true)?;
    let size = current
        .metadata()
        .map_err(|source| LogError::Read {
            path: current_path.clone(),
            source,
        })?
        .len();
    let reader = current.try_clone().map_err(|source| LogError::Read {
        path: current_path.clone(),
        source,
    })?;
    let mut point = chain_point(dir, reader, size)?;
    let unchained = match (&held, point.unreadable.take()) {
        (None, _) => Some(format!(
            "the lock stayed held by another writer for {} ms",
            lock_wait.as_millis()
        )),
        (Some(_), why) => why,
    };
    let record = Record {
        seq: point.next_seq,
        prev: point.prev.to_string(),
        unchained,
        ts: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        entry: entry.clone(),
    };
    let line = serde_json::to_vec(&record)?;
    // Only a lock holder rotates: a writer without it must not move files
    // under the one that has it.
    let grown = size + line.len() as u64 + 2;
    if held.is_some() && size > 0 && grown > rotation.rotate_bytes {
        rotate(dir, rotation.keep)?;
        current = open_private(&current_path, true)?;
        point.torn = false;
    }
    let mut out = Vec::with_capacity(line.len() + 2);
    if point.torn {
        // End the torn fragment so that this line starts on a line of its own.
        out.push(b'\n');
    }
    out.extend_from_slice(&line);
    out.push(b'\n');
    // One write with O_APPEND: the line and its newline land together.
    current.write_all(&out).map_err(|source| LogError::Write {
        path: current_path,
        source,
    })?;
    drop(held);
    Ok(Appended {
        head: Head {
            seq: record.seq,
            hash: Sha256Hash::of_line(&line),
        },
        unchained: record.unchained,
    })
}

/// What the next line chains to: the last whole line of the log, skipping a
/// torn fragment at the end of the current file, and looking into the newest
/// rotated file when the current one has no whole line yet.
fn chain_point(dir: &Path, current: File, size: u64) -> Result<ChainPoint, LogError> {
    let mut back = Backward::new(dir, Some((current, size)))?;
    let torn = back.torn;
    let Some(last) = back.next_line()? else {
        return Ok(ChainPoint {
            next_seq: 1,
            prev: Sha256Hash::ZERO,
            unreadable: None,
            torn,
        });
    };
    let prev = Sha256Hash::of_line(&last);
    match link::strict(&last) {
        Ok(link) => Ok(ChainPoint {
            next_seq: link.seq.saturating_add(1),
            prev,
            unreadable: None,
            torn,
        }),
        Err(why) => {
            // The line is still linked by its hash, so nothing between stays
            // hidden; its seq is the best guess from the last line that reads.
            let mut seq = 0;
            while let Some(earlier) = back.next_line()? {
                if let Ok(link) = link::strict(&earlier) {
                    seq = link.seq;
                    break;
                }
            }
            Ok(ChainPoint {
                next_seq: seq.saturating_add(1),
                prev,
                unreadable: Some(format!("the last line could not be read: {why}")),
                torn,
            })
        }
    }
}

/// `decisions.jsonl` becomes `decisions.1.jsonl`, older files shift by one,
/// and at most `keep` rotated files stay.
fn rotate(dir: &Path, keep: u32) -> Result<(), LogError> {
    let rotate_error = |path: &Path| {
        let path = path.to_owned();
        move |source| LogError::Rotate { path, source }
    };
    for (n, path) in rotated_files(dir)?.into_iter().rev() {
        if n >= keep {
            remove_if_there(&path).map_err(rotate_error(&path))?;
        } else {
            let to = dir.join(rotated_name(n + 1));
            std::fs::rename(&path, &to).map_err(rotate_error(&path))?;
        }
    }
    let current = dir.join(CURRENT);
    if keep == 0 {
        remove_if_there(&current).map_err(rotate_error(&current))
    } else {
        std::fs::rename(&current, dir.join(rotated_name(1))).map_err(rotate_error(&current))
    }
}

fn remove_if_there(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The log may say what an agent did in which project: only its owner reads it.
fn make_dir(dir: &Path) -> Result<(), LogError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| LogError::CreateDir {
            path: dir.to_owned(),
            source,
        })
}

fn open_private(path: &Path, append: bool) -> Result<File, LogError> {
    let mut options = OpenOptions::new();
    if append {
        options.read(true).append(true);
    } else {
        options.write(true);
    }
    options
        .create(true)
        .mode(0o600)
        .open(path)
        .map_err(|source| LogError::Open {
            path: path.to_owned(),
            source,
        })
}
