//! The lines a sink has not had yet: read past its cursor with the log's
//! own reader, at most a backlog's worth of bytes, the oldest passed over
//! (and counted) beyond it.

use std::collections::VecDeque;

use chock_log::{Log, Record, Sha256Hash};

use crate::SinkError;
use crate::cursor::Point;
use crate::transport::Batch;

/// One line to send: where it is, and its exact text.
pub struct Line {
    pub at: Point,
    pub text: String,
}

impl Line {
    /// The record again, for the fields a format sends; `None` only if the
    /// text no longer reads as one, which it did when it was taken.
    pub fn record(&self) -> Option<Record> {
        serde_json::from_str(&self.text).ok()
    }
}

/// What lies past the cursor.
pub struct Pending {
    /// The lines to send, oldest first.
    pub lines: VecDeque<Line>,
    /// How many lines will never be sent: rotated away before the cursor
    /// reached them, or past the backlog bound.
    pub skipped: u64,
    /// The cursor once the skipped lines are passed over.
    pub skipped_to: Point,
}

/// Reads what comes after `cursor`, keeping the newest lines that fit in
/// `backlog_bytes` (each line's bytes and its newline).
///
/// A line with the cursor's seq but another hash is one written without
/// the lock beside the cursor's own line: it is pending only when it comes
/// after that line.
pub fn read(log: &Log, cursor: Point, backlog_bytes: u64) -> Result<Pending, SinkError> {
    let mut pending = Pending {
        lines: VecDeque::new(),
        skipped: 0,
        skipped_to: cursor,
    };
    let mut bytes = 0u64;
    let mut past_cursor_line = cursor == Point::START;
    for line in log.records_from(cursor.seq)? {
        let line = line?;
        let Ok(record) = line.record else {
            // A torn or foreign line is no decision to send.
            continue;
        };
        let at = Point {
            seq: record.seq,
            hash: Sha256Hash::of_line(line.text.as_bytes()),
        };
        if record.seq == cursor.seq && !past_cursor_line {
            past_cursor_line = at.hash == cursor.hash;
            continue;
        }
        if record.seq < cursor.seq {
            continue;
        }
        if pending.lines.is_empty() && pending.skipped == 0 {
            pending.note_rotated_away(cursor, &record);
        }
        bytes += line.text.len() as u64 + 1;
        pending.lines.push_back(Line {
            at,
            text: line.text,
        });
        while bytes > backlog_bytes {
            let Some(oldest) = pending.lines.pop_front() else {
                break;
            };
            bytes -= oldest.text.len() as u64 + 1;
            pending.skipped += 1;
            pending.skipped_to = oldest.at;
        }
    }
    Ok(pending)
}

impl Pending {
    /// The records of the first lines, as many as fit in `batch` (at least
    /// one), in order; a line that no longer reads as a record is dropped.
    pub fn next_records(&mut self, batch: Batch) -> Vec<Record> {
        let mut records = Vec::new();
        let mut bytes = 0;
        while let Some(line) = self.lines.get(records.len()) {
            let full = records.len() >= batch.lines || bytes + line.text.len() > batch.bytes;
            if full && !records.is_empty() {
                break;
            }
            match line.record() {
                Some(record) => {
                    bytes += line.text.len();
                    records.push(record);
                }
                None => drop(self.lines.remove(records.len())),
            }
        }
        records
    }

    /// When the first line after the cursor is not the next seq, the lines
    /// between were rotated away: they are counted, and the cursor moves to
    /// the line before `first` (by the seq and hash `first` names).
    fn note_rotated_away(&mut self, cursor: Point, first: &Record) {
        let gap = first.seq.saturating_sub(cursor.seq.saturating_add(1));
        if cursor == Point::START || gap == 0 {
            return;
        }
        if let Some(prev) = Sha256Hash::from_hex(&first.prev) {
            self.skipped = gap;
            self.skipped_to = Point {
                seq: first.seq - 1,
                hash: prev,
            };
        }
    }
}
