//! Reading every record in order, for people (`chock log show`).

use std::path::PathBuf;
use std::sync::Arc;

use crate::LogError;
use crate::lines::Walk;
use crate::record::Record;

/// One line of the log as read for display.
#[derive(Debug, Clone)]
pub struct LogLine {
    /// The file it is in.
    pub file: PathBuf,
    /// Its line number in that file, from 1.
    pub line: u64,
    /// Its exact text (invalid UTF-8 replaced), without the newline.
    pub text: String,
    /// The record, or why the line is not one (torn, edited, another format).
    pub record: Result<Record, NotARecord>,
}

/// Why a line of the log is not a record.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NotARecord {
    /// It has no newline: a write torn short.
    #[error("the line was cut off (no newline)")]
    CutOff,
    /// It is not a record's JSON: edited, or another format.
    #[error(transparent)]
    Unreadable(Arc<serde_json::Error>),
}

/// Every line of the log, oldest first; see [`crate::Log::records`].
pub struct Records {
    walk: Walk,
    /// Whole lines whose chain fields name a seq below this are passed over.
    from_seq: u64,
}

impl Records {
    pub(crate) fn new(walk: Walk) -> Records {
        Records { walk, from_seq: 0 }
    }
}

impl crate::Log {
    /// [`crate::Log::records`] without the whole lines whose seq is below
    /// `seq`: those are passed over by their chain fields alone, never read
    /// as records, so a reader that keeps its place (a sink's shipper)
    /// reads what is new at the cost of a scan. Lines that name no seq are
    /// still given.
    pub fn records_from(&self, seq: u64) -> Result<Records, LogError> {
        Ok(Records {
            walk: Walk::snapshot(&self.dir)?,
            from_seq: seq,
        })
    }
}

impl Iterator for Records {
    type Item = Result<LogLine, LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        let from_seq = self.from_seq;
        let before = |line: &crate::lines::Line<'_>| {
            from_seq > 0
                && line.complete
                && crate::link::read(line.bytes).is_ok_and(|link| link.seq < from_seq)
        };
        let (file, line, text, record) = loop {
            match self.walk.next_line() {
                Ok(Some(line)) if before(&line) => continue,
                Ok(line) => {
                    let line = line?;
                    let record = if line.complete {
                        serde_json::from_slice(line.bytes)
                            .map_err(|e| NotARecord::Unreadable(Arc::new(e)))
                    } else {
                        Err(NotARecord::CutOff)
                    };
                    let text = String::from_utf8_lossy(line.bytes).into_owned();
                    break (line.file, line.number, text, record);
                }
                Err(error) => return Some(Err(error)),
            }
        };
        Some(Ok(LogLine {
            file: self.walk_file(file),
            line,
            text,
            record,
        }))
    }
}

impl Records {
    fn walk_file(&self, index: usize) -> PathBuf {
        self.walk.files().get(index).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use crate::record::Entry;
    use crate::{Log, Rotation, Route};

    #[test]
    fn reading_from_a_seq_passes_over_the_lines_before_it_across_rotations() {
        let dir = tempfile::tempdir().unwrap();
        let rotation = Rotation {
            rotate_bytes: 700,
            keep: 20,
            fsync: false,
        };
        let log = Log::at(dir.path(), rotation);
        for n in 0..12 {
            let entry = Entry::unruled(
                Route::Cli,
                "/p".into(),
                "call.write_file".into(),
                "test".into(),
                chock_policy::Decision::Allow,
                Some(format!("line {n}")),
            );
            log.try_append(&entry).unwrap();
        }
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(crate::location::CURRENT))
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"not a record\n"))
            .unwrap();
        assert!(crate::location::rotated_files(dir.path()).unwrap().len() > 2);
        let seqs = |from| {
            log.records_from(from)
                .unwrap()
                .map(|line| line.unwrap().record.map(|r| r.seq).ok())
                .collect::<Vec<_>>()
        };
        let mut expected: Vec<_> = (9..=12).map(Some).collect();
        expected.push(None);
        assert_eq!(seqs(9), expected, "from 9, and the line that names no seq");
        assert_eq!(seqs(0).len(), 13);
        assert_eq!(seqs(13), vec![None]);
    }
}
