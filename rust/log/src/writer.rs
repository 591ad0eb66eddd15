//! Appending one line: lock, find what to chain to, maybe rotate, one write.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::lines::Backward;
use crate::location::{CURRENT, LOCK, QUEUE, rotated_files, rotated_name};

use crate::record::{Entry, Head, Sha256Hash};
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

/// Appends `entries` to the log in `dir`, in order, under one turn of the
/// lock and in one write (see [`crate::Log::try_append_all`]).
pub fn append(
    dir: &Path,
    rotation: Rotation,
    lock_wait: Duration,
    entries: &[Entry],
) -> Result<Vec<Appended>, LogError> {
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    make_dir(dir)?;
    // Everything but the chain fields is encoded before taking the lock, so
    // that the lock is held only to read the tail and write the lines.
    let ts = link::timestamp(SystemTime::now());
    let bodies = entries
        .iter()
        .map(|entry| link::body(&ts, entry))
        .collect::<Result<Vec<_>, _>>()?;
    let lock_path = dir.join(LOCK);
    let lock_file = open_private(&lock_path, false)?;
    let queue_file = open_private(&dir.join(QUEUE), false)?;
    let turn = lock::Turn::queued(lock_file, queue_file);
    let owned_dir = dir.to_owned();
    let current_path = dir.join(CURRENT);
    let mut last_seen = None;
    // The log moved when the current file is another one or another size.
    let moved = move || {
        let now = std::fs::metadata(&current_path)
            .ok()
            .map(|meta| (meta.dev(), meta.ino(), meta.len()));
        last_seen.replace(now) != Some(now)
    };
    let written = lock::with_turn(turn, lock_wait, moved, move |unlocked| {
        write_lines(&owned_dir, rotation, &bodies, unlocked)
    })
    .map_err(|source| LogError::Lock {
        path: lock_path,
        source,
    })??;
    Ok(written
        .into_iter()
        .map(|written| Appended {
            head: Head {
                seq: written.seq,
                hash: Sha256Hash::of_line(&written.line),
            },
            unchained: written.unchained,
        })
        .collect())
}

/// A line as it went out.
struct Written {
    seq: u64,
    line: Vec<u8>,
    unchained: Option<String>,
}

/// Chains `bodies` to the last whole line, each to the one before it, and
/// writes them: the part of an append done under the lock (or, when
/// `unlocked` says why not, without it).
fn write_lines(
    dir: &Path,
    rotation: Rotation,
    bodies: &[Vec<u8>],
    unlocked: lock::Unlocked,
) -> Result<Vec<Written>, LogError> {
    let current_path = dir.join(CURRENT);
    let read_error = |source| LogError::Read {
        path: dir.join(CURRENT),
        source,
    };
    let locked = unlocked.is_none();
    let mut current = open_private(&current_path, true)?;
    let (torn, lines, start) = loop {
        let size = current.metadata().map_err(read_error)?.len();
        let reader = current.try_clone().map_err(read_error)?;
        let mut point = chain_point(dir, reader, size)?;
        let unchained = unlocked.clone().or(point.unreadable.take());
        let mut lines = Vec::with_capacity(bodies.len());
        let (mut seq, mut prev) = (point.next_seq, point.prev);
        for body in bodies {
            let line = link::line(seq, prev, unchained.as_deref(), body)?;
            prev = Sha256Hash::of_line(&line);
            lines.push(Written {
                seq,
                line,
                unchained: unchained.clone(),
            });
            seq = seq.saturating_add(1);
        }
        // Only a lock holder rotates: a writer without it must not move
        // files under the one that has it.
        let grown = size + lines.iter().map(|w| w.line.len() as u64 + 1).sum::<u64>() + 1;
        if locked && size > 0 && grown > rotation.rotate_bytes {
            rotate(dir, rotation.keep)?;
            current = open_private(&current_path, true)?;
            if rotation.fsync {
                // The renames and the new file's name reach the disk too.
                sync(&File::open(dir).map_err(read_error)?, dir)?;
            }
            let start = current.metadata().map_err(read_error)?.len();
            break (false, lines, start);
        }
        // A line written meanwhile by a writer without the lock (or, for
        // that writer, by the holder) changes the tail: chain to the new one.
        if current.metadata().map_err(read_error)?.len() == size {
            break (point.torn, lines, size);
        }
    };
    let mut out = Vec::with_capacity(lines.iter().map(|w| w.line.len() + 1).sum::<usize>() + 1);
    if torn {
        // End the torn fragment so that the first line starts on a line of its own.
        out.push(b'\n');
    }
    for written in &lines {
        out.extend_from_slice(&written.line);
        out.push(b'\n');
    }
    // One write with O_APPEND: the lines and their newlines land together.
    let mut written = 0;
    while written < out.len() {
        let failed = match current.write(&out[written..]) {
            Ok(0) => io::Error::from(io::ErrorKind::WriteZero),
            Ok(n) => {
                written += n;
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => e,
        };
        return Err(cut_back(
            &current,
            current_path,
            failed,
            locked,
            start,
            written,
        ));
    }
    if rotation.fsync {
        sync(&current, &current_path)?;
    }
    Ok(lines)
}

/// `fdatasync`: what was written is on the disk when it returns.
fn sync(file: &File, path: &Path) -> Result<(), LogError> {
    file.sync_data().map_err(|source| LogError::Write {
        path: path.to_owned(),
        source,
        cut: None,
    })
}

/// The error for a write that failed after `written` bytes of it landed at
/// `start`. A short write (a full disk) must not leave a fragment that reads
/// as a crash for ever: the lock holder cuts the file back to where its
/// write began, so the chain goes on once there is room again. Only when
/// nothing was appended after those bytes; a writer without the lock cuts
/// nothing.
fn cut_back(
    current: &File,
    path: std::path::PathBuf,
    source: io::Error,
    locked: bool,
    start: u64,
    written: usize,
) -> LogError {
    let cut = match current.metadata() {
        Ok(meta) if locked && written > 0 && meta.len() == start + written as u64 => {
            current.set_len(start).err()
        }
        Ok(_) => None,
        Err(e) => Some(e),
    };
    LogError::Write { path, source, cut }
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
    match link::read(&last) {
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

/// Opens `path` for reading and for appending (a log file), or for reading
/// and writing at any offset (the lock and the queue: `pwrite` on a file
/// opened `O_APPEND` would append instead).
fn open_private(path: &Path, append: bool) -> Result<File, LogError> {
    let mut options = OpenOptions::new();
    options.read(true);
    if append {
        options.append(true);
    } else {
        options.write(true);
    }
    options.create(true).mode(0o600);
    crate::open::regular(path, &mut options)
        .map_err(|e| e.at(path, |path, source| LogError::Open { path, source }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{AnsweredBy, DecidedBy, Record};

    fn entry() -> Entry {
        Entry {
            route: crate::Route::Mcp,
            project: "/p \"quoted\"".into(),
            action: "net.fetch.org.example".into(),
            agent_kind: "coder".into(),
            model: Some("m".into()),
            tool: None,
            decision: chock_policy::Decision::Ask,
            decided_by: DecidedBy {
                layer: chock_policy::Layer::Default,
                file: None,
                line: None,
                policy: None,
                held: None,
                identity: None,
            },
            answered_by: AnsweredBy::Person,
            subject: Some("example.org\n".into()),
            scope: None,
        }
    }

    #[test]
    fn lines_are_exactly_what_serde_writes_for_a_record() {
        let ts = "2026-01-02T03:04:05.006Z";
        let body = link::body(ts, &entry()).unwrap();
        for unchained in [None, Some("the lock \"stayed\" held")] {
            let prev = Sha256Hash::of_line(b"before");
            let line = link::line(41, prev, unchained, &body).unwrap();
            let record = Record {
                seq: 41,
                prev: prev.to_string(),
                unchained: unchained.map(str::to_owned),
                ts: ts.into(),
                entry: entry(),
            };
            assert_eq!(
                String::from_utf8(line).unwrap(),
                serde_json::to_string(&record).unwrap()
            );
        }
    }
}
