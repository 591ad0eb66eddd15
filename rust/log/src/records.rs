//! Reading every record in order, for people (`chock log show`).

use std::path::PathBuf;

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
    pub record: Result<Record, String>,
}

/// Every line of the log, oldest first; see [`crate::Log::records`].
pub struct Records {
    walk: Walk,
}

impl Records {
    pub(crate) fn new(walk: Walk) -> Records {
        Records { walk }
    }
}

impl Iterator for Records {
    type Item = Result<LogLine, LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        let (file, line, text, record) = match self.walk.next_line() {
            Ok(line) => {
                let line = line?;
                let record = if line.complete {
                    serde_json::from_slice(line.bytes).map_err(|e| e.to_string())
                } else {
                    Err("the line was cut off (no newline)".to_owned())
                };
                let text = String::from_utf8_lossy(line.bytes).into_owned();
                (line.file, line.number, text, record)
            }
            Err(error) => return Some(Err(error)),
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
