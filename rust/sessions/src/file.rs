//! One session's log file: written by the one process that holds its
//! lock, each line chained to the one before it as the decision log
//! chains its lines (`chock_log::link`), read back and verified.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use chock_log::link;
use chock_log::{Head, Sha256Hash};
use serde_json::{Map, Value};

use crate::error::{BadLine, SessionError};
use crate::event::Event;

/// The most bytes a session log is read up to; past it, reading stops
/// with an error rather than holding it all.
pub const MAX_LOG_BYTES: u64 = 1 << 30;

/// One event as it was stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    pub seq: u64,
    /// When it was written (RFC 3339, UTC, milliseconds).
    pub ts: String,
    pub event: Event,
}

/// A session's log, open for appending by the process that holds its lock.
#[derive(Debug)]
pub struct SessionLog {
    id: String,
    path: PathBuf,
    file: File,
    next_seq: u64,
    prev: Sha256Hash,
    _lock: crate::Lock,
}

impl SessionLog {
    pub(crate) fn new(
        id: &str,
        path: PathBuf,
        lock: crate::Lock,
    ) -> Result<SessionLog, SessionError> {
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|source| SessionError::Io {
                what: "creating",
                path: path.clone(),
                source,
            })?;
        Ok(SessionLog {
            id: id.to_owned(),
            path,
            file,
            next_seq: 1,
            prev: Sha256Hash::ZERO,
            _lock: lock,
        })
    }

    /// Opens an existing log to go on writing: it must verify whole.
    pub(crate) fn reopen(
        id: &str,
        path: PathBuf,
        lock: crate::Lock,
    ) -> Result<(SessionLog, Vec<Stored>), SessionError> {
        let bytes = read_bytes(&path)?;
        let checked = verify_bytes(&bytes);
        if let Some(broken) = checked.broken {
            return Err(SessionError::Broken {
                path,
                line: broken.line,
                why: broken.why,
            });
        }
        let stored = parse_bytes(&bytes).map_err(|(line, why)| SessionError::Broken {
            path: path.clone(),
            line,
            why,
        })?;
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|source| SessionError::Io {
                what: "opening",
                path: path.clone(),
                source,
            })?;
        let (next_seq, prev) = checked
            .head
            .map_or((1, Sha256Hash::ZERO), |h| (h.seq + 1, h.hash));
        let log = SessionLog {
            id: id.to_owned(),
            path,
            file,
            next_seq,
            prev,
            _lock: lock,
        };
        Ok((log, stored))
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one event as one line, chained to the line before it, and
    /// gives that line's `SEQ:SHA256`. The line and its newline go out in
    /// one write; a write cut short is cut off again, so the chain goes on
    /// from the last whole line.
    pub fn append(&mut self, event: &Event) -> Result<Head, SessionError> {
        let encode = |e: serde_json::Error| SessionError::Encode(e.to_string());
        let fields: Map<String, Value> = event.fields().map_err(encode)?;
        let ts = link::timestamp(SystemTime::now());
        let body = link::body(&ts, &fields).map_err(encode)?;
        let line = link::line(self.next_seq, self.prev, None, &body).map_err(encode)?;
        let mut out = line.clone();
        out.push(b'\n');
        let io = |source| SessionError::Io {
            what: "writing",
            path: self.path.clone(),
            source,
        };
        let start = self.file.metadata().map_err(io)?.len();
        if let Err(source) = self.file.write_all(&out) {
            let _ = self.file.set_len(start);
            return Err(io(source));
        }
        let head = Head {
            seq: self.next_seq,
            hash: Sha256Hash::of_line(&line),
        };
        self.next_seq += 1;
        self.prev = head.hash;
        Ok(head)
    }
}

pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>, SessionError> {
    let io = |source| SessionError::Io {
        what: "reading",
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    if size > MAX_LOG_BYTES {
        return Err(SessionError::TooLarge {
            path: path.to_owned(),
            size,
        });
    }
    let mut bytes = Vec::with_capacity(size as usize);
    std::io::Read::read_to_end(&mut std::io::Read::take(file, MAX_LOG_BYTES), &mut bytes)
        .map_err(io)?;
    Ok(bytes)
}

/// The lines of a log: whole lines, and a last piece without its newline
/// (a write cut off) when there is one.
fn lines(bytes: &[u8]) -> (Vec<&[u8]>, Option<&[u8]>) {
    let mut whole: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let tail = whole.pop().filter(|t| !t.is_empty());
    (whole, tail)
}

/// Every event of a log's bytes, or the first line (from 1) that is not
/// one, and why. The chain is not checked here: [`verify_bytes`] does.
pub fn parse_bytes(bytes: &[u8]) -> Result<Vec<Stored>, (u64, String)> {
    let (whole, tail) = lines(bytes);
    if tail.is_some() {
        return Err((
            whole.len() as u64 + 1,
            "the last line was cut off (no newline): a write did not finish".into(),
        ));
    }
    whole
        .iter()
        .enumerate()
        .map(|(i, line)| parse_line(line).map_err(|why| (i as u64 + 1, why.to_string())))
        .collect()
}

fn parse_line(line: &[u8]) -> Result<Stored, BadLine> {
    let link = link::strict(line).map_err(|e| BadLine::NotRecord(e.to_string()))?;
    let fields: Map<String, Value> =
        serde_json::from_slice(line).map_err(|e| BadLine::NotRecord(e.to_string()))?;
    let ts = match fields.get("ts") {
        Some(Value::String(ts)) => ts.clone(),
        _ => return Err(BadLine::NoTime),
    };
    Ok(Stored {
        seq: link.seq,
        ts,
        event: Event::from_fields(fields)?,
    })
}

/// What walking a log's chain found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    /// Whole lines read.
    pub lines: u64,
    /// The newest line's `SEQ:SHA256` (up to the break, when broken).
    pub head: Option<Head>,
    /// The first break.
    pub broken: Option<Broken>,
}

/// The first line (from 1) where the chain does not hold, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    pub line: u64,
    pub why: String,
}

/// Walks the chain: the first line names 64 zeros as `prev` and has seq 1;
/// each next line names the sha256 of the one before and the next seq; every
/// line is an event. A line edited after the next was written breaks the
/// next line's link and is named; so are a line deleted, inserted or moved,
/// and a last line cut off. Editing or dropping the newest lines shows no
/// break: only a head kept elsewhere shows that.
pub fn verify_bytes(bytes: &[u8]) -> Verification {
    let (whole, tail) = lines(bytes);
    let mut prev = Sha256Hash::ZERO;
    let mut head = None;
    let broken = |line: usize, why: String| Broken {
        line: line as u64,
        why,
    };
    for (i, line) in whole.iter().enumerate() {
        let number = i + 1;
        let found = match link::strict(line) {
            Ok(found) => found,
            Err(e) => {
                return Verification {
                    lines: i as u64,
                    head,
                    broken: Some(broken(
                        number,
                        format!("it is not a record ({e}): it was edited"),
                    )),
                };
            }
        };
        // The seq tells a line removed, added or moved (it is out of
        // place) from one changed (the link before it is wrong).
        let (at, why) = if found.seq != number as u64 {
            (
                number,
                Some(format!(
                    "its seq is {} where {number} was expected: lines were deleted, inserted or moved",
                    found.seq
                )),
            )
        } else if found.prev != prev {
            if number == 1 {
                (
                    1,
                    Some("the first line must name 64 zeros as prev: it was edited".to_owned()),
                )
            } else {
                (
                    number - 1,
                    Some(format!(
                        "line {} was changed after line {number} was written (its sha256 is {prev}, line {number} names {})",
                        number - 1,
                        found.prev
                    )),
                )
            }
        } else if let Some(why) = found.unchained {
            (number, Some(format!("it was written unchained ({why})")))
        } else {
            (number, parse_line(line).err().map(|why| why.to_string()))
        };
        if let Some(why) = why {
            return Verification {
                lines: i as u64,
                head,
                broken: Some(broken(at, why)),
            };
        }
        prev = Sha256Hash::of_line(line);
        head = Some(Head {
            seq: found.seq,
            hash: prev,
        });
    }
    let broken = tail.map(|_| {
        broken(
            whole.len() + 1,
            "the last line was cut off (no newline): a write did not finish".into(),
        )
    });
    Verification {
        lines: whole.len() as u64,
        head,
        broken,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::User;

    fn user(text: &str) -> Event {
        Event::User(User { text: text.into() })
    }

    fn written(texts: &[&str]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let lock = crate::Lock::take(&dir.path().join("s.lock"))
            .unwrap()
            .unwrap();
        let mut log = SessionLog::new("s", path.clone(), lock).unwrap();
        for text in texts {
            log.append(&user(text)).unwrap();
        }
        (dir, path)
    }

    #[test]
    fn a_written_log_verifies_and_reads_back() {
        let (_dir, path) = written(&["one", "two", "three"]);
        let bytes = std::fs::read(&path).unwrap();
        let checked = verify_bytes(&bytes);
        assert_eq!((checked.lines, checked.broken), (3, None));
        assert_eq!(checked.head.map(|h| h.seq), Some(3));
        let stored = parse_bytes(&bytes).unwrap();
        assert_eq!(stored[1].event, user("two"));
        assert!(
            bytes.starts_with(br#"{"seq":1,"prev":"0000"#),
            "chained as the decision log chains"
        );
    }

    #[test]
    fn one_byte_changed_names_its_line() {
        let (_dir, path) = written(&["one", "two", "three"]);
        let text = std::fs::read_to_string(&path).unwrap();
        let edited = text.replacen("two", "twO", 1);
        let checked = verify_bytes(edited.as_bytes());
        let broken = checked.broken.unwrap();
        assert_eq!(broken.line, 2, "{}", broken.why);
        assert!(broken.why.contains("line 2 was changed"), "{}", broken.why);
    }

    #[test]
    fn deleted_moved_and_cut_lines_are_breaks() {
        let (_dir, path) = written(&["one", "two", "three"]);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let dropped = format!("{}\n{}\n", lines[0], lines[2]);
        assert_eq!(verify_bytes(dropped.as_bytes()).broken.unwrap().line, 2);
        let cut = &text[..text.len() - 5];
        let broken = verify_bytes(cut.as_bytes()).broken.unwrap();
        assert_eq!(broken.line, 3);
        assert!(broken.why.contains("cut off"));
        let first_gone = format!("{}\n{}\n", lines[1], lines[2]);
        assert_eq!(verify_bytes(first_gone.as_bytes()).broken.unwrap().line, 1);
        assert_eq!(verify_bytes(b"").broken, None);
    }

    #[test]
    fn reopening_goes_on_with_the_same_chain() {
        let (dir, path) = written(&["one"]);
        let lock = crate::Lock::take(&dir.path().join("s.lock"))
            .unwrap()
            .unwrap();
        let (mut log, stored) = SessionLog::reopen("s", path.clone(), lock).unwrap();
        assert_eq!(stored.len(), 1);
        assert_eq!(log.append(&user("two")).unwrap().seq, 2);
        let checked = verify_bytes(&std::fs::read(&path).unwrap());
        assert_eq!((checked.lines, checked.broken), (2, None));
    }
}
