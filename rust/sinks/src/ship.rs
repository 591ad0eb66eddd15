//! Shipping: read past the cursor, send, move the cursor once the
//! receiver has each line.

use std::fs::File;
use std::os::unix::fs::DirBuilderExt;
use std::time::{Duration, Instant};

use chock_log::{Entry, Log, Route};
use nix::fcntl::Flock;

use crate::cursor::{Cursor, Files, LastRound};
use crate::fields::{Origin, Shipped};
use crate::otlp::Acked;
use crate::pending::{self, Pending};
use crate::transport::{Batch, Link};
use crate::{Sink, SinkError};

/// The cursor is written after this many lines, and at the end of a round.
const LINES_PER_SAVE: u64 = 256;

/// The action of the line that counts a sink's skipped lines.
pub const OVERFLOW_ACTION: &str = "log.sink.overflow";

/// What one round of shipping did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Lines the receiver now has.
    pub sent: u64,
    /// Lines passed over in this round (see [`crate::Cursor::skipped`]).
    pub skipped: u64,
    /// Lines still waiting: the deadline came, or the receiver is down.
    pub left: u64,
    /// The seq of the last line delivered or skipped past.
    pub cursor: u64,
    /// Why the receiver could not be reached or written to, when it could not.
    pub down: Option<String>,
    /// Lines the receiver answered for but would not keep (an OTLP
    /// collector's partial success): counted in `sent`, and not sent again.
    pub rejected: u64,
    /// What the receiver said about the lines it rejected.
    pub rejection: Option<String>,
}

/// The one shipper of a sink: holds its lock (so no other process sends
/// the same lines) and its connection from round to round.
pub struct Shipper {
    sink: Sink,
    log: Log,
    files: Files,
    origin: Origin,
    link: Option<Link>,
    _lock: Flock<File>,
}

impl Shipper {
    /// Takes the sink's lock; [`SinkError::Busy`] when another shipper has it.
    pub fn new(sink: Sink, log: Log) -> Result<Shipper, SinkError> {
        let files = Files::new(log.dir(), &sink.id);
        // Made as the log's writer makes it: only its owner may look in.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(log.dir())
            .map_err(|source| SinkError::State {
                path: log.dir().to_owned(),
                source,
            })?;
        let lock = files.try_lock()?.ok_or_else(|| SinkError::Busy {
            id: sink.id.clone(),
        })?;
        Ok(Shipper {
            sink,
            log,
            files,
            origin: Origin::here(),
            link: None,
            _lock: lock,
        })
    }

    /// The sink shipped to.
    pub fn sink(&self) -> &Sink {
        &self.sink
    }

    /// Where the sink is now, and how many lines it skipped ever.
    pub fn cursor(&self) -> Result<Cursor, SinkError> {
        self.files.read()
    }

    /// One round: sends what is past the cursor until it is all sent, the
    /// receiver fails, or `deadline` comes. Lines beyond the backlog bound
    /// or rotated away are skipped first, counted in the cursor and in a
    /// `log.sink.overflow` line, appended with the rotation `log` was given
    /// (give it the configured one). An error means the log or the cursor
    /// could not be used, and nothing more was sent.
    pub fn ship(&mut self, deadline: Instant) -> Result<Report, SinkError> {
        let mut cursor = self.files.read()?;
        let mut pending = pending::read(&self.log, cursor.at, self.sink.backlog_bytes)?;
        let mut report = Report {
            skipped: pending.skipped,
            ..Report::default()
        };
        if pending.skipped > 0 {
            cursor.at = pending.skipped_to;
            cursor.skipped += pending.skipped;
            self.files.write(&cursor)?;
            self.log_overflow(&pending);
        }
        let sent = self.send(&mut pending, &mut cursor, deadline);
        report.sent = sent.sent;
        report.down = sent.down;
        report.rejected = sent.acked.rejected;
        report.rejection = sent.acked.why;
        report.left = pending.lines.len() as u64;
        report.cursor = cursor.at.seq;
        self.files.keep_round(&LastRound {
            ended_ms: now_ms(),
            sent: report.sent,
            left: report.left,
            down: report.down.clone(),
        });
        Ok(report)
    }

    /// Sends the pending lines in order, a batch at a time, saving the
    /// cursor as it goes; the cursor moves past a batch once the receiver
    /// has it.
    fn send(&mut self, pending: &mut Pending, cursor: &mut Cursor, deadline: Instant) -> Sent {
        let batch = Batch::for_target(&self.sink.target);
        let mut sent = Sent::default();
        let mut unsaved = 0;
        while !pending.lines.is_empty() && Instant::now() < deadline {
            let records = pending.next_records(batch);
            let lines: Vec<Shipped<'_>> = records
                .iter()
                .zip(&pending.lines)
                .map(|(record, line)| Shipped {
                    record,
                    text: &line.text,
                })
                .collect();
            match self.send_batch(&lines, deadline) {
                Ok(acked) => sent.note(acked),
                Err(why) => {
                    sent.down = Some(format!("{}: {why}", self.sink.target));
                    self.link = None;
                    break;
                }
            }
            for line in pending.lines.drain(..records.len()) {
                cursor.at = line.at;
                sent.sent += 1;
                unsaved += 1;
            }
            if unsaved >= LINES_PER_SAVE {
                if let Err(e) = self.files.write(cursor) {
                    sent.down = Some(e.to_string());
                    return sent;
                }
                unsaved = 0;
            }
        }
        if unsaved > 0
            && let Err(e) = self.files.write(cursor)
        {
            sent.down = Some(e.to_string());
        }
        sent
    }

    /// One batch on the open link, opened (again) when there is none or
    /// the receiver closed it.
    fn send_batch(&mut self, lines: &[Shipped<'_>], deadline: Instant) -> std::io::Result<Acked> {
        if let Some(link) = &mut self.link
            && !link.still_open()
        {
            self.link = None;
        }
        let link = match &mut self.link {
            Some(link) => link,
            None => self.link.insert(Link::open(&self.sink.target, deadline)?),
        };
        link.send(lines, &self.origin, deadline)
    }

    /// Counts the skipped lines in the log itself, through its writer;
    /// that line is shipped like any other.
    fn log_overflow(&self, pending: &Pending) {
        let entry = Entry::unruled(
            Route::Sink,
            self.log.dir().display().to_string(),
            OVERFLOW_ACTION.into(),
            "chock".into(),
            chock_policy::Decision::Allow,
            Some(format!(
                "sink {} skipped {} lines, up to seq {}",
                self.sink.id, pending.skipped, pending.skipped_to.seq
            )),
        );
        self.log.append(&entry);
    }
}

#[derive(Default)]
struct Sent {
    sent: u64,
    down: Option<String>,
    acked: Acked,
}

impl Sent {
    /// Counts the lines a receiver rejected, keeping the latest reason.
    fn note(&mut self, acked: Acked) {
        self.acked.rejected += acked.rejected;
        if acked.why.is_some() {
            self.acked.why = acked.why;
        }
    }
}

/// One round for `sink` ([`Shipper::ship`]), taking and letting go of its
/// lock; [`SinkError::Busy`] when another shipper has it.
pub fn ship(sink: &Sink, log: &Log, deadline: Instant) -> Result<Report, SinkError> {
    Shipper::new(sink.clone(), log.clone())?.ship(deadline)
}

/// How long a round may take when the caller does not say: short, so a
/// shipper started beside a decision finishes soon.
pub const DEFAULT_ROUND: Duration = Duration::from_secs(5);

/// Now, in milliseconds since the epoch.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// What a person is shown of one sink: where its cursor is, whether a
/// shipper holds it now, and how its last round went.
#[derive(Debug, Clone)]
pub struct SinkState {
    pub cursor: Result<Cursor, String>,
    pub shipping: bool,
    pub last: Option<LastRound>,
}

/// The state of `sink` of the log in `dir`, read without taking its lock.
pub fn state(dir: &std::path::Path, sink: &Sink) -> SinkState {
    let files = Files::new(dir, &sink.id);
    SinkState {
        cursor: files.read().map_err(|e| e.to_string()),
        shipping: files.is_shipping(),
        last: files.last_round(),
    }
}
