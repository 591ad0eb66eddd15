//! Appending one line: lock, find what to chain to, maybe rotate, one write.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::lines::Backward;
use crate::location::{CURRENT, LOCK, rotated_files, rotated_name};
use serde::Serialize;

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

/// Appends `entry` to the log in `dir` (see [`crate::Log::try_append`]).
pub fn append(
    dir: &Path,
    rotation: Rotation,
    lock_wait: Duration,
    entry: &Entry,
) -> Result<Appended, LogError> {
    make_dir(dir)?;
    // Everything but the chain fields is encoded before taking the lock, so
    // that the lock is held only to read the tail and write one line.
    let ts = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    let body = encode_body(&ts, entry)?;
    let lock_path = dir.join(LOCK);
    let lock_file = open_private(&lock_path, false)?;
    let owned_dir = dir.to_owned();
    let written = lock::with_exclusive(lock_file, lock_wait, move |unlocked| {
        write_line(&owned_dir, rotation, &body, unlocked)
    })
    .map_err(|source| LogError::Lock {
        path: lock_path,
        source,
    })??;
    Ok(Appended {
        head: Head {
            seq: written.seq,
            hash: Sha256Hash::of_line(&written.line),
        },
        unchained: written.unchained,
    })
}

/// A line as it went out.
struct Written {
    seq: u64,
    line: Vec<u8>,
    unchained: Option<String>,
}

/// Chains `body` to the last whole line and writes it: the part of an
/// append done under the lock (or, when `unlocked` says why not, without it).
fn write_line(
    dir: &Path,
    rotation: Rotation,
    body: &[u8],
    unlocked: lock::Unlocked,
) -> Result<Written, LogError> {
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
    let locked = unlocked.is_none();
    let unchained = unlocked.or(point.unreadable.take());
    let line = encode_line(point.next_seq, point.prev, unchained.as_deref(), body)?;
    // Only a lock holder rotates: a writer without it must not move files
    // under the one that has it.
    let grown = size + line.len() as u64 + 2;
    if locked && size > 0 && grown > rotation.rotate_bytes {
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
    Ok(Written {
        seq: point.next_seq,
        line,
        unchained,
    })
}

/// The part of a line after the chain fields: `"ts":...,<entry fields>}`.
fn encode_body(ts: &str, entry: &Entry) -> Result<Vec<u8>, LogError> {
    #[derive(Serialize)]
    struct Body<'a> {
        ts: &'a str,
        #[serde(flatten)]
        entry: &'a Entry,
    }
    let mut body = serde_json::to_vec(&Body { ts, entry })?;
    // Drop the opening brace: the chain fields go before the rest.
    body.remove(0);
    Ok(body)
}

/// A whole line, byte for byte what `serde_json` writes for a [`crate::Record`].
fn encode_line(
    seq: u64,
    prev: Sha256Hash,
    unchained: Option<&str>,
    body: &[u8],
) -> Result<Vec<u8>, LogError> {
    let mut line = Vec::with_capacity(body.len() + 160);
    line.extend_from_slice(format!(r#"{{"seq":{seq},"prev":"{prev}","#).as_bytes());
    if let Some(why) = unchained {
        line.extend_from_slice(br#""unchained":"#);
        serde_json::to_writer(&mut line, why)?;
        line.push(b',');
    }
    line.extend_from_slice(body);
    Ok(line)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{AnsweredBy, DecidedBy, Record};

    fn entry() -> Entry {
        Entry {
            route: "mcp".into(),
            project: "/p \"quoted\"".into(),
            action: "net.fetch.org.example".into(),
            agent_kind: "coder".into(),
            model: Some("m".into()),
            tool: None,
            decision: "ask".into(),
            decided_by: DecidedBy {
                layer: "default".into(),
                file: None,
                line: None,
            },
            answered_by: AnsweredBy::Person,
            subject: Some("example.org\n".into()),
        }
    }

    #[test]
    fn lines_are_exactly_what_serde_writes_for_a_record() {
        let ts = "2026-01-02T03:04:05.006Z";
        let body = encode_body(ts, &entry()).unwrap();
        for unchained in [None, Some("the lock \"stayed\" held")] {
            let prev = Sha256Hash::of_line(b"before");
            let line = encode_line(41, prev, unchained, &body).unwrap();
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
