//! The hash-chained decision log: append under a lock, rotate, verify.
//!
//! Every answer Chock gives (by a rule, a shipped default, a person or
//! nobody) becomes one JSON line in `decisions.jsonl`. Each line names the
//! sha256 of the line before it (`prev`) and counts up (`seq`), so an edit,
//! deletion, insertion or reordering shows as a break when the log is walked.
//!
//! Callers build an [`Entry`] and call [`append`]: it never fails and never
//! panics, because a logging failure must not change or abort a decision.
//!
//! ```no_run
//! use chock_log::{AnsweredBy, DecidedBy, Entry, Route};
//! use chock_policy::{Decision, Layer};
//! let entry = Entry {
//!     route: Route::Build,
//!     project: "/src/demo".into(),
//!     action: "nix.build.packages.x86_64-linux.default".into(),
//!     agent_kind: "coder".into(),
//!     model: None,
//!     tool: Some("nix_build".into()),
//!     decision: Decision::Allow,
//!     decided_by: DecidedBy { layer: Layer::Project, file: Some("/src/demo/chock.zon".into()), line: Some(12), policy: None, held: None, identity: None },
//!     answered_by: AnsweredBy::Rule,
//!     subject: Some("/nix/store/...-demo.drv".into()),
//!     scope: None,
//! };
//! chock_log::append(&entry, &chock_config::Config::default());
//! ```
//!
//! What the chain shows and what it does not is in `docs/log.md`: anyone who
//! can write the file can rewrite it whole with fresh hashes; only a head
//! (`SEQ:SHA256`) kept somewhere else shows that.

// Unsafe code lives in `sys` alone (the file locks).
#![deny(unsafe_code)]

mod error;
mod lines;
pub mod link;
mod location;
mod lock;
mod open;
mod record;
mod records;
mod route;
#[allow(unsafe_code)]
mod sys;
mod verify;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub use error::LogError;
pub use location::{dir_from_env, state_dir_from_env};
pub use record::{AnsweredBy, DecidedBy, Entry, Head, HeadError, Held, Record, Scope, Sha256Hash};
pub use records::{LogLine, NotARecord, Records};
pub use route::Route;
pub use verify::{Break, BreakKind, ChainStart, KeptHead, SeqPrev, Verification};

/// When the current file is rotated, how many rotated files are kept, and
/// whether every line is synced to the disk
/// (`.log = .{ .rotate_bytes = N, .keep = K, .fsync = B }` in config.zon).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// The current file is rotated before a line would take it past this size.
    pub rotate_bytes: u64,
    /// How many rotated files (`decisions.1.jsonl` ...) are kept; older ones are removed.
    pub keep: u32,
    /// `fdatasync` the file after each line (and the folder after a
    /// rotation), under the lock, before the append returns.
    pub fsync: bool,
}

impl Default for Rotation {
    /// 8 MiB, 8 files kept, no fsync.
    fn default() -> Rotation {
        Rotation {
            rotate_bytes: 8 << 20,
            keep: 8,
            fsync: false,
        }
    }
}

impl From<chock_config::LogSettings> for Rotation {
    fn from(settings: chock_config::LogSettings) -> Rotation {
        Rotation {
            rotate_bytes: settings.rotate_bytes,
            keep: settings.keep,
            fsync: settings.fsync,
        }
    }
}

/// What an append wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The new line's seq and hash.
    pub head: Head,
    /// Set when the line was written without the chain, and why.
    pub unchained: Option<String>,
}

/// How long a writer waits for another writer's lock before it writes its
/// line unchained instead.
pub const LOCK_WAIT: Duration = Duration::from_secs(1);

/// The decision log in one folder.
#[derive(Debug, Clone)]
pub struct Log {
    dir: PathBuf,
    rotation: Rotation,
    lock_wait: Duration,
    shipping: Option<Arc<Shipping>>,
}

/// The sinks a log's lines are shipped to (by name), and the project whose
/// settings name them: what [`on_append`]'s function is told after a line
/// lands, so a shipper is running whenever lines wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shipping {
    pub sinks: Vec<String>,
    pub project: PathBuf,
    /// How long a started shipper goes on with nothing to send, in seconds.
    pub idle_seconds: u32,
    /// The organisation bundles the sinks were read with, named to the
    /// shipper too (one given with `--org-bundle` is found nowhere else).
    pub bundles: Vec<PathBuf>,
}

/// What runs after a line lands in a log that has sinks.
pub type Wake = fn(&Log, &Shipping);

static WAKE: OnceLock<Wake> = OnceLock::new();

/// Sets what runs after each line lands in a log with sinks: the binary
/// sets chock-sinks' `wake`, which starts a shipper when none is running.
/// Set once; a second call changes nothing.
pub fn on_append(wake: Wake) {
    let _ = WAKE.set(wake);
}

impl Log {
    /// The log in `dir` (which need not exist yet).
    pub fn at(dir: impl Into<PathBuf>, rotation: Rotation) -> Log {
        Log {
            dir: dir.into(),
            rotation,
            lock_wait: LOCK_WAIT,
            shipping: None,
        }
    }

    /// The log where the environment says, rotated as `config` says
    /// (config.zon's `.log`) and shipped to the sinks it names (a bundle's
    /// and config.zon's `.sinks`): what every decision path writes to.
    pub fn configured(config: &chock_config::Config) -> Result<Log, LogError> {
        let settings = config.log_settings();
        let log = Log::from_env(settings.into())?;
        let sinks: Vec<String> = config.sinks().into_iter().map(|sink| sink.id).collect();
        if sinks.is_empty() {
            return Ok(log);
        }
        let project = config
            .project_file()
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        Ok(log.with_shipping(Shipping {
            sinks,
            project,
            idle_seconds: settings.ship_idle_seconds,
            bundles: config.bundle_files(),
        }))
    }

    /// The same log with its lines shipped to `shipping`'s sinks (what
    /// [`Log::configured`] sets from the configuration).
    pub fn with_shipping(self, shipping: Shipping) -> Log {
        Log {
            shipping: Some(Arc::new(shipping)),
            ..self
        }
    }

    /// The sinks this log's lines are shipped to, when it has any.
    pub fn shipping(&self) -> Option<&Shipping> {
        self.shipping.as_deref()
    }

    /// The log where the environment says ([`dir_from_env`]).
    pub fn from_env(rotation: Rotation) -> Result<Log, LogError> {
        Ok(Log::at(dir_from_env()?, rotation))
    }

    /// How the log rotates and syncs.
    pub fn rotation(&self) -> Rotation {
        self.rotation
    }

    /// The same log rotated as `rotation` says.
    pub fn with_rotation(self, rotation: Rotation) -> Log {
        Log { rotation, ..self }
    }

    /// The same log with another lock wait (tests use a short one).
    pub fn with_lock_wait(self, lock_wait: Duration) -> Log {
        Log { lock_wait, ..self }
    }

    /// The folder holding `decisions.jsonl` and its rotated files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends one line and says what was written, or why nothing was.
    ///
    /// Under the lock the line chains to the last whole line; without it
    /// (held by another writer past the lock wait) the line is still written,
    /// marked `unchained`. A torn last line (a crash mid-write) is ended with
    /// a newline in the same write, and the new line chains past it to the
    /// last whole line.
    pub fn try_append(&self, entry: &Entry) -> Result<Appended, LogError> {
        let mut appended = self.try_append_all(std::slice::from_ref(entry))?;
        Ok(appended.remove(0))
    }

    /// [`Log::try_append`] for several lines at once, in order, each
    /// chained to the one before it: one turn of the lock and one write for
    /// all of them, so no other writer's line lands between them. No
    /// entries, no write.
    pub fn try_append_all(&self, entries: &[Entry]) -> Result<Vec<Appended>, LogError> {
        let appended = writer::append(&self.dir, self.rotation, self.lock_wait, entries)?;
        if let (Some(shipping), Some(wake)) = (&self.shipping, WAKE.get())
            && !appended.is_empty()
        {
            wake(self, shipping);
        }
        Ok(appended)
    }

    /// [`Log::try_append`] for decision paths: never fails, never panics.
    /// The first failure or unchained line in a process is reported on
    /// stderr; later ones only through `tracing`.
    pub fn append(&self, entry: &Entry) -> Option<Appended> {
        self.append_all(std::slice::from_ref(entry))
            .map(|mut appended| appended.remove(0))
    }

    /// [`Log::try_append_all`] for decision paths, as [`Log::append`]:
    /// never fails, never panics; `None` when no line was written.
    pub fn append_all(&self, entries: &[Entry]) -> Option<Vec<Appended>> {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.try_append_all(entries)
        }));
        let decisions = || {
            entries
                .iter()
                .map(|entry| format!("`{}` for {}", entry.decision, entry.action))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match outcome {
            Ok(Ok(appended)) => {
                if let Some(why) = appended.first().and_then(|a| a.unchained.as_ref()) {
                    let seqs = appended
                        .iter()
                        .map(|a| a.head.seq.to_string())
                        .collect::<Vec<_>>()
                        .join(", ");
                    let lines = if appended.len() == 1 { "line" } else { "lines" };
                    report_once(&format!(
                        "decision log {lines} {seqs} {} written unchained ({why}); `chock log verify` will show it",
                        if appended.len() == 1 { "was" } else { "were" }
                    ));
                }
                Some(appended)
            }
            Ok(Err(error)) => {
                report_once(&format!(
                    "the decision {} was not logged: {error}",
                    decisions()
                ));
                None
            }
            Err(_) => {
                report_once(&format!(
                    "the decision {} was not logged: the log writer failed",
                    decisions()
                ));
                None
            }
        }
    }

    /// The newest record's `SEQ:SHA256`, or `None` when nothing is logged yet.
    pub fn head(&self) -> Result<Option<Head>, LogError> {
        let current = self.dir.join(location::CURRENT);
        let opened = match open::read(&current)? {
            Some(file) => {
                let size = file.metadata().map_err(|source| LogError::Read {
                    path: current.clone(),
                    source,
                })?;
                Some((file, size.len()))
            }
            None => None,
        };
        let mut back = lines::Backward::new(&self.dir, opened)?;
        while let Some(line) = back.next_line()? {
            if let Ok(link) = link::strict(&line) {
                return Ok(Some(Head {
                    seq: link.seq,
                    hash: Sha256Hash::of_line(&line),
                }));
            }
        }
        Ok(None)
    }

    /// Walks the chain across every file, oldest first, and reports the first
    /// break; with `kept`, also whether that record is still there unchanged.
    pub fn verify(&self, kept: Option<Head>) -> Result<Verification, LogError> {
        verify::verify(&self.dir, kept)
    }

    /// Every line, oldest first, each read as a record where it is one.
    pub fn records(&self) -> Result<Records, LogError> {
        Ok(Records::new(lines::Walk::snapshot(&self.dir)?))
    }

    /// Calls `each` with every whole line's exact bytes (without its
    /// newline), oldest file first; a torn last line (no newline yet) is
    /// left out. What a Merkle tree over the log is built from.
    pub fn for_each_line(&self, mut each: impl FnMut(&[u8])) -> Result<(), LogError> {
        let mut walk = lines::Walk::snapshot(&self.dir)?;
        while let Some(line) = walk.next_line()? {
            if line.complete {
                each(line.bytes);
            }
        }
        Ok(())
    }

    /// What the log's files are now, cheaply: the current file's device,
    /// inode and length and how many rotated files there are. Equal stamps
    /// mean nothing was appended or rotated in between, so a follower
    /// reads the log again only when its stamp changes.
    pub fn stamp(&self) -> Result<Stamp, LogError> {
        use std::os::unix::fs::MetadataExt;
        let current = match std::fs::metadata(self.dir.join(location::CURRENT)) {
            Ok(meta) => Some((meta.dev(), meta.ino(), meta.len())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(LogError::Read {
                    path: self.dir.join(location::CURRENT),
                    source,
                });
            }
        };
        let rotated = location::rotated_files(&self.dir)?.len();
        Ok(Stamp { current, rotated })
    }
}

/// The log's files at one moment ([`Log::stamp`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    current: Option<(u64, u64, u64)>,
    rotated: usize,
}

/// Appends `entry` to the log where the environment says, as `config`
/// says ([`Log::configured`]); what every decision path calls. Never
/// fails, never panics, never changes the decision: a failure is reported
/// once on stderr.
pub fn append(entry: &Entry, config: &chock_config::Config) -> Option<Appended> {
    match Log::configured(config) {
        Ok(log) => log.append(entry),
        Err(error) => {
            report_once(&format!(
                "the decision `{}` for {} was not logged: {error}",
                entry.decision, entry.action
            ));
            None
        }
    }
}

/// Says the first logging trouble in this process on stderr, plainly, and
/// later ones only to `tracing` at debug level (`-v` or `CHOCK_LOG=debug`
/// shows them), so a broken log does not flood an agent's terminal: a
/// decision of many acts reports an unwritable log once.
fn report_once(message: &str) {
    static REPORTED: AtomicBool = AtomicBool::new(false);
    if REPORTED.swap(true, Ordering::Relaxed) {
        tracing::debug!("{message}");
    } else {
        eprintln!("chock: {message}");
    }
}
