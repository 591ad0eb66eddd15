//! The session log of `chock run`: each session writes one hash-chained,
//! append-only file, `<state>/sessions/<id>.jsonl`, named by the session's
//! id (`run-…`, the same as its workspace's). Each line is one [`Event`]
//! after the chain fields the decision log uses (`seq`, `prev`, `ts`,
//! built by `chock_log::link`): the task, each model turn and the tokens
//! it used, each tool result and how it was answered, the end. Other parts
//! of Chock add their own kinds with [`Event::custom`] and fold them back
//! with [`custom_events`] (`plan`: the task list; `policy.self`: the
//! promises an agent made).
//!
//! ```no_run
//! use chock_sessions::{Event, Sessions, User};
//! let sessions = Sessions::from_env()?;
//! let mut log = sessions.create("run-1767225600-ab12")?;
//! log.append(&Event::User(User { text: "run the tests".into() }))?;
//! let events = sessions.read("run-1767225600-ab12")?;
//! # Ok::<(), chock_sessions::SessionError>(())
//! ```
//!
//! The process writing a session holds `<id>.lock` (an `flock`), so a
//! session is running exactly while that lock is held; nothing removes or
//! resumes a running session. See `docs/run.md`.

#![forbid(unsafe_code)]

mod error;
mod event;
mod file;
pub mod prices;
mod summary;
mod transcript;

use std::fs::{DirBuilder, File};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub use error::{BadEvent, BadLine, SessionError};
pub use event::{
    Answer, Call, Custom, End, Event, EventError, How, KINDS, ModelRef, Start, Tokens, ToolResult,
    Turn, User, custom_events,
};
pub use file::{
    Broken, MAX_LOG_BYTES, SessionLog, Stored, Verification, parse_bytes, verify_bytes,
};
pub use summary::{AGENT_EVENT, Agent, ModelUsage, REVIEW_EVENT, Summary, TITLE_EVENT};
pub use transcript::transcript;

/// The folder of session logs.
#[derive(Debug, Clone)]
pub struct Sessions {
    dir: PathBuf,
}

/// A session's lock, held while it runs (the kernel lets go when the
/// file is closed, or the process dies).
#[derive(Debug)]
pub(crate) struct Lock {
    _held: File,
}

impl Lock {
    /// Takes the lock at `path` without waiting; `None` when another
    /// process holds it.
    pub(crate) fn take(path: &Path) -> Result<Option<Lock>, SessionError> {
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(path)
            .map_err(|source| SessionError::Io {
                what: "opening the lock",
                path: path.to_owned(),
                source,
            })?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(Lock { _held: file })),
            Err(rustix::io::Errno::WOULDBLOCK) => Ok(None),
            Err(e) => Err(SessionError::Io {
                what: "locking",
                path: path.to_owned(),
                source: e.into(),
            }),
        }
    }
}

/// Whether `id` can name a session: the rule its workspace's name keeps.
pub fn valid_id(id: &str) -> bool {
    chock_sandbox::workspace::valid_session(id)
}

/// A fresh id for a session of `chock run`: `run-<seconds>-<4 hex>`.
pub fn new_id() -> String {
    chock_sandbox::workspace::new_session("run")
}

impl Sessions {
    /// `<state>/sessions`, the state directory the decision log is in.
    pub fn from_env() -> Result<Sessions, SessionError> {
        Ok(Sessions::at(
            chock_log::state_dir_from_env()?.join("sessions"),
        ))
    }

    pub fn at(dir: impl Into<PathBuf>) -> Sessions {
        Sessions { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The log file of `id`.
    pub fn path(&self, id: &str) -> Result<PathBuf, SessionError> {
        if !valid_id(id) {
            return Err(SessionError::BadId(id.to_owned()));
        }
        Ok(self.dir.join(format!("{id}.jsonl")))
    }

    fn lock_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.lock"))
    }

    fn existing(&self, id: &str) -> Result<PathBuf, SessionError> {
        let path = self.path(id)?;
        if !path.is_file() {
            return Err(SessionError::NotFound {
                id: id.to_owned(),
                dir: self.dir.clone(),
            });
        }
        Ok(path)
    }

    fn make_dir(&self) -> Result<(), SessionError> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|source| SessionError::Io {
                what: "creating",
                path: self.dir.clone(),
                source,
            })
    }

    fn hold(&self, id: &str) -> Result<Lock, SessionError> {
        Lock::take(&self.lock_path(id))?.ok_or_else(|| SessionError::Running(id.to_owned()))
    }

    /// Starts the log of a new session `id`, held until it is dropped.
    pub fn create(&self, id: &str) -> Result<SessionLog, SessionError> {
        let path = self.path(id)?;
        self.make_dir()?;
        let lock = self.hold(id)?;
        if path.exists() {
            return Err(SessionError::Exists(id.to_owned()));
        }
        SessionLog::new(id, path, lock)
    }

    /// Opens session `id`'s log to go on writing it, held until it is
    /// dropped, with the events so far. A running session, or a log that
    /// does not verify (named at its line), is refused.
    pub fn resume(&self, id: &str) -> Result<(SessionLog, Vec<Stored>), SessionError> {
        let path = self.existing(id)?;
        let lock = self.hold(id)?;
        SessionLog::reopen(id, path, lock)
    }

    /// Whether session `id` is running: another process holds its lock
    /// (a session that never had one is not).
    pub fn running(&self, id: &str) -> bool {
        let lock = self.lock_path(id);
        lock.exists() && matches!(Lock::take(&lock), Ok(None))
    }

    /// The ids of every session log in the folder, in no order.
    pub fn ids(&self) -> Result<Vec<String>, SessionError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(SessionError::Io {
                    what: "reading",
                    path: self.dir.clone(),
                    source,
                });
            }
        };
        Ok(entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let id = name.strip_suffix(".jsonl")?;
                valid_id(id).then(|| id.to_owned())
            })
            .collect())
    }

    /// Every event of session `id`, oldest first; a line that is not an
    /// event is an error naming it (the chain is [`Sessions::verify`]'s).
    pub fn read(&self, id: &str) -> Result<Vec<Stored>, SessionError> {
        let path = self.existing(id)?;
        let bytes = file::read_bytes(&path)?;
        parse_bytes(&bytes).map_err(|(line, why)| SessionError::Broken { path, line, why })
    }

    /// Walks session `id`'s chain.
    pub fn verify(&self, id: &str) -> Result<Verification, SessionError> {
        let path = self.existing(id)?;
        Ok(verify_bytes(&file::read_bytes(&path)?))
    }

    /// What `chock sessions` shows of every session, oldest first.
    pub fn list(&self) -> Result<Vec<Summary>, SessionError> {
        let mut all: Vec<Summary> = self
            .ids()?
            .into_iter()
            .map(|id| {
                let running = self.running(&id);
                let read = self.existing(&id).and_then(|p| file::read_bytes(&p));
                Summary::of(&id, running, read)
            })
            .collect();
        all.sort_by(|a, b| (&a.started, &a.id).cmp(&(&b.started, &b.id)));
        Ok(all)
    }

    /// The newest session of `project` (the one written last: a session
    /// resumed is newer than one started after it), for `--continue`.
    pub fn newest_for(&self, project: &str) -> Result<String, SessionError> {
        self.list()?
            .into_iter()
            .filter(|s| s.project.as_deref() == Some(project))
            .max_by(|a, b| (&a.last, &a.started).cmp(&(&b.last, &b.started)))
            .map(|s| s.id)
            .ok_or_else(|| SessionError::NoneForProject {
                project: project.to_owned(),
                dir: self.dir.clone(),
            })
    }

    /// Removes session `id`'s log (never a running one's).
    pub fn remove(&self, id: &str) -> Result<(), SessionError> {
        let path = self.existing(id)?;
        let _held = self.hold(id)?;
        std::fs::remove_file(&path).map_err(|source| SessionError::Io {
            what: "removing",
            path: path.clone(),
            source,
        })?;
        let lock = self.lock_path(id);
        let _ = std::fs::remove_file(lock);
        Ok(())
    }

    /// Writes session `id`'s log and a transcript a person reads into
    /// `to` (made when missing) as `<id>.jsonl` and `<id>.md`; refuses to
    /// overwrite either. Gives the files written.
    pub fn export(&self, id: &str, to: &Path) -> Result<Vec<PathBuf>, SessionError> {
        let path = self.existing(id)?;
        let bytes = file::read_bytes(&path)?;
        let stored = parse_bytes(&bytes).map_err(|(line, why)| SessionError::Broken {
            path: path.clone(),
            line,
            why,
        })?;
        let io = |what, path: &Path| {
            let path = path.to_owned();
            move |source| SessionError::Io { what, path, source }
        };
        std::fs::create_dir_all(to).map_err(io("creating", to))?;
        let log_to = to.join(format!("{id}.jsonl"));
        let text_to = to.join(format!("{id}.md"));
        for target in [&log_to, &text_to] {
            if target.symlink_metadata().is_ok() {
                return Err(SessionError::WouldOverwrite {
                    path: target.clone(),
                });
            }
        }
        let text = transcript(id, &stored);
        for (target, content) in [(&log_to, bytes.as_slice()), (&text_to, text.as_bytes())] {
            let mut out = File::options()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(target)
                .map_err(|source| match source.kind() {
                    std::io::ErrorKind::AlreadyExists => SessionError::WouldOverwrite {
                        path: target.clone(),
                    },
                    _ => SessionError::Io {
                        what: "creating",
                        path: target.clone(),
                        source,
                    },
                })?;
            std::io::Write::write_all(&mut out, content).map_err(io("writing", target))?;
        }
        Ok(vec![log_to, text_to])
    }

    /// When session `id` was last written (its file's modification time).
    pub fn last_written(&self, id: &str) -> Result<std::time::SystemTime, SessionError> {
        let path = self.existing(id)?;
        std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .map_err(|source| SessionError::Io {
                what: "reading",
                path,
                source,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(id: &str, project: &str) -> Event {
        Event::Start(Start {
            session: id.into(),
            project: project.into(),
            model: ModelRef {
                instance: "i".into(),
                kind: "anthropic".into(),
                model: "m".into(),
            },
            chock: "0".into(),
        })
    }

    fn pause() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }

    #[test]
    fn the_newest_of_a_project_is_the_one_written_last_and_a_held_one_is_running() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = Sessions::at(dir.path());
        let mut older = sessions.create("run-1-aaaa").unwrap();
        older.append(&start("run-1-aaaa", "/p")).unwrap();
        pause();
        let mut newer = sessions.create("run-2-bbbb").unwrap();
        newer.append(&start("run-2-bbbb", "/p")).unwrap();
        pause();
        let mut other = sessions.create("run-3-cccc").unwrap();
        other.append(&start("run-3-cccc", "/q")).unwrap();
        assert!(sessions.running("run-1-aaaa"), "its lock is held");
        assert!(matches!(
            sessions.resume("run-1-aaaa"),
            Err(SessionError::Running(_))
        ));
        assert!(matches!(
            sessions.remove("run-1-aaaa"),
            Err(SessionError::Running(_))
        ));
        drop((older, newer, other));
        assert!(!sessions.running("run-1-aaaa"));
        assert_eq!(sessions.newest_for("/p").unwrap(), "run-2-bbbb");
        pause();
        let (mut resumed, earlier) = sessions.resume("run-1-aaaa").unwrap();
        assert_eq!(earlier.len(), 1);
        resumed
            .append(&Event::User(User {
                text: "again".into(),
            }))
            .unwrap();
        drop(resumed);
        assert_eq!(sessions.newest_for("/p").unwrap(), "run-1-aaaa");
        assert!(matches!(
            sessions.newest_for("/r"),
            Err(SessionError::NoneForProject { .. })
        ));
        let listed: Vec<String> = sessions.list().unwrap().into_iter().map(|s| s.id).collect();
        assert_eq!(
            listed,
            ["run-1-aaaa", "run-2-bbbb", "run-3-cccc"],
            "oldest first"
        );
        assert!(matches!(
            sessions.create("../x"),
            Err(SessionError::BadId(_))
        ));
        assert!(matches!(
            sessions.create("run-2-bbbb"),
            Err(SessionError::Exists(_))
        ));
    }
}
