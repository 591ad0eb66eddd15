//! The apply's journal: what an apply is about to do to the person's
//! repository, written (and flushed) before its first write, so that an
//! apply killed half-way is finished or rolled back by the next one.
//!
//! One journal per project, `<state>/workspaces/<project id>/apply.json`,
//! beside a lock (`apply.lock`) the apply holds while it writes. A journal
//! found with its lock free belongs to an apply that is gone: the next
//! `chock apply` (any session) waits for the git programs it left running
//! to end, removes a lock file of git's that it left (`index.lock`, a
//! ref's `.lock`) only when it is provably its own (made after the journal,
//! held open by no process), and then:
//!
//! - the branch still at its old tip: nothing of the person's moved (the
//!   branch moves before the tree); the work stays parked at
//!   `refs/chock/<session>` or in the workspace;
//! - the branch at the new tip: the tree is finished (`read-tree -m -u`, or
//!   path by path when git had written some files: each path the landing
//!   changes is written only when what is there is still the old or the
//!   new content, or the file git was writing when it was killed (gone,
//!   or cut short of the new content), so nothing of the person's is
//!   overwritten);
//! - the branch elsewhere: the person moved it since; nothing is touched.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use chock_policy::visible;
use serde::{Deserialize, Serialize};

use super::git::{Git, split_z};
use super::land::{Phase, Staged};
use super::{SessionWorkspace, WorkspaceError, io, now_ms};
use crate::project::Project;

const JOURNAL: &str = "apply.json";
const LOCK: &str = "apply.lock";
/// How long a recovery waits for the git programs a killed apply left.
const WAIT_MS: u64 = 20_000;

/// What the apply is doing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Step {
    /// Moving `branch` from `tip` to `new`, the work parked at `reference`.
    Git {
        branch: String,
        tip: String,
        new: String,
        reference: String,
    },
    /// Writing `changes` into the tree by descriptor (`land.rs`), the
    /// temporaries named for process `pid`: `steps` once every one is
    /// staged, `landed` once every one is in place.
    Tree {
        pid: u32,
        changes: Vec<PathBuf>,
        steps: Option<Vec<Staged>>,
        landed: bool,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Record {
    session: String,
    project: PathBuf,
    workspace: PathBuf,
    pid: u32,
    started_ms: u64,
    step: Step,
}

/// A journal written, and the project's apply lock held, until [`Held::done`].
pub(crate) struct Held {
    path: PathBuf,
    record: Record,
    _lock: nix::fcntl::Flock<File>,
}

impl Held {
    /// Records where a tree landing is, flushed before it goes on.
    pub(crate) fn phase(&mut self, phase: Phase<'_>) -> Result<(), WorkspaceError> {
        if let Step::Tree { steps, landed, .. } = &mut self.record.step {
            match phase {
                Phase::Staged(staged) => *steps = Some(staged.to_vec()),
                Phase::Landed => *landed = true,
            }
        }
        write(&self.path, &self.record)
    }

    /// The apply finished (landed or parked): the journal goes.
    pub(crate) fn done(self) -> Result<(), WorkspaceError> {
        std::fs::remove_file(&self.path).map_err(io("removing", &self.path))?;
        sync_dir(self.path.parent().unwrap_or(Path::new("/")));
        Ok(())
    }
}

fn lock(dir: &Path) -> Result<Option<nix::fcntl::Flock<File>>, WorkspaceError> {
    super::lock_file(&dir.join(LOCK))
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Records `step` for `workspace`'s apply, flushed to disk, holding the
/// project's apply lock; refused while another apply holds it or an
/// interrupted one is not yet recovered.
pub(crate) fn begin(workspace: &SessionWorkspace, step: Step) -> Result<Held, WorkspaceError> {
    let dir = workspace
        .dir
        .parent()
        .unwrap_or(&workspace.dir)
        .to_path_buf();
    let held = lock(&dir)?.ok_or_else(|| {
        WorkspaceError::Refused(format!(
            "another apply into {} is running; wait for it to end",
            workspace.meta.project.display()
        ))
    })?;
    let path = dir.join(JOURNAL);
    if path.exists() {
        return Err(WorkspaceError::Refused(format!(
            "an interrupted apply into {} is not yet finished ({}); run `chock apply` again, which finishes it first",
            workspace.meta.project.display(),
            path.display()
        )));
    }
    let record = Record {
        session: workspace.meta.session.clone(),
        project: workspace.meta.project.clone(),
        workspace: workspace.dir.clone(),
        pid: std::process::id(),
        started_ms: now_ms(),
        step,
    };
    write(&path, &record)?;
    Ok(Held {
        path,
        record,
        _lock: held,
    })
}

/// Writes `record` at `path` whole (a temporary beside it, flushed, then
/// renamed over it, the folder flushed).
fn write(path: &Path, record: &Record) -> Result<(), WorkspaceError> {
    let text = serde_json::to_vec_pretty(record)
        .map_err(|e| WorkspaceError::Refused(format!("cannot write the apply's journal: {e}")))?;
    let dir = path.parent().unwrap_or(Path::new("/"));
    let temporary = dir.join(format!("{JOURNAL}.{}", std::process::id()));
    let mut file = File::create(&temporary).map_err(io("writing", &temporary))?;
    file.write_all(&text).map_err(io("writing", &temporary))?;
    file.sync_all().map_err(io("writing", &temporary))?;
    std::fs::rename(&temporary, path).map_err(io("writing", path))?;
    sync_dir(dir);
    Ok(())
}

/// Finishes or rolls back an apply into `project` that was interrupted
/// (killed, or its machine stopped); what it did, one sentence each.
pub fn recover(project: &Project) -> Result<Vec<String>, WorkspaceError> {
    let dir = super::root()?.join(&project.id);
    recover_dir(&dir)
}

/// The sentence saying that an apply into `project` was interrupted and
/// waits to be finished, when one was; nothing is touched.
pub fn interrupted(project: &Project) -> Result<Option<String>, WorkspaceError> {
    let dir = super::root()?.join(&project.id);
    let path = dir.join(JOURNAL);
    let Ok(text) = std::fs::read(&path) else {
        return Ok(None);
    };
    if lock(&dir)?.is_none() {
        return Ok(None);
    }
    let session = serde_json::from_slice::<Record>(&text)
        .map(|r| r.session)
        .unwrap_or_else(|_| "?".to_owned());
    Ok(Some(format!(
        "an apply of session {session} into {} was interrupted ({}); `chock apply` finishes or takes it back first",
        project.dir.display(),
        path.display()
    )))
}

pub(crate) fn recover_dir(dir: &Path) -> Result<Vec<String>, WorkspaceError> {
    let path = dir.join(JOURNAL);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let Some(_held) = lock(dir)? else {
        // Its apply is still running.
        return Ok(Vec::new());
    };
    let text = std::fs::read(&path).map_err(io("reading", &path))?;
    let record: Record = serde_json::from_slice(&text).map_err(|e| {
        WorkspaceError::Refused(format!(
            "{} is not an apply journal Chock can read ({e}); check your repository (`git status`) and remove it",
            path.display()
        ))
    })?;
    let said = match &record.step {
        Step::Git { .. } => recover_git(&record)?,
        Step::Tree {
            pid,
            changes,
            steps,
            landed,
        } => {
            let left =
                super::land::recover(&record.project, *pid, changes, steps.as_deref(), *landed)?;
            // The workspace takes it as the landing left it: its changes
            // out of the upper layer once they are in place, and the
            // entries the landing moved (and moved back) never taken for
            // the person's changes (unless a session holds it: it says so
            // at its next apply).
            if let Ok(mut held) = SessionWorkspace::open_dir(&record.workspace) {
                let changed: Vec<super::overlay::Change> = changes
                    .iter()
                    .map(|rel| super::overlay::Change::Write(rel.clone()))
                    .collect();
                if held.meta.overlay && *landed {
                    held.overlay_applied(&changed)?;
                } else if held.meta.overlay {
                    held.overlay_touched(&changed)?;
                }
            }
            let mut said = vec![format!(
                "an apply of session {} into {} was interrupted {}",
                record.session,
                record.project.display(),
                if *landed {
                    "after every file was in place: the old entries it kept aside are removed"
                } else {
                    "before every file was in place: what it wrote is taken back and your tree is as it was; the work stays in the workspace"
                }
            )];
            if !left.is_empty() {
                said.push(format!("these could not be put back: {}", left.join("; ")));
            }
            said
        }
    };
    std::fs::remove_file(&path).map_err(io("removing", &path))?;
    sync_dir(dir);
    Ok(said)
}

fn recover_git(record: &Record) -> Result<Vec<String>, WorkspaceError> {
    let Step::Git {
        branch,
        tip,
        new,
        reference,
    } = &record.step
    else {
        return Ok(Vec::new());
    };
    let host = Git::host(&record.project);
    let git_dir = PathBuf::from(host.line(["rev-parse", "--absolute-git-dir"])?);
    let common = {
        let c = PathBuf::from(host.line(["rev-parse", "--git-common-dir"])?);
        if c.is_absolute() {
            c
        } else {
            record.project.join(c)
        }
    };
    let locks = [
        git_dir.join("index.lock"),
        git_dir.join("HEAD.lock"),
        common.join(format!("refs/heads/{branch}.lock")),
        common.join(format!("{reference}.lock")),
        common.join("packed-refs.lock"),
    ];
    wait_for_git(&record.project, &locks)?;
    let mut said = Vec::new();
    for lock in &locks {
        let Ok(meta) = std::fs::symlink_metadata(lock) else {
            continue;
        };
        let made_ms = u64::try_from(meta.mtime()).unwrap_or(0) * 1000
            + u64::try_from(meta.mtime_nsec()).unwrap_or(0) / 1_000_000;
        // Made after the journal (a second's leeway for coarse times), and
        // nobody has it open: the killed apply's git left it.
        if made_ms + 1000 >= record.started_ms && open_by(meta.dev(), meta.ino()).is_none() {
            std::fs::remove_file(lock).map_err(io("removing", lock))?;
            said.push(format!(
                "removed {}, left by an interrupted apply's git",
                lock.display()
            ));
        } else {
            return Err(WorkspaceError::Refused(format!(
                "an interrupted apply of session {} into {} left its journal, and {} is there but is not provably Chock's (made before the apply, or held open): make sure no git runs in the repository, remove it, and run `chock apply` again",
                record.session,
                record.project.display(),
                lock.display()
            )));
        }
    }
    let full = format!("refs/heads/{branch}");
    let now = host.line(["rev-parse", "--verify", &format!("{full}^{{commit}}")])?;
    let parked = host
        .output(["rev-parse", "--verify", "-q", reference], None)?
        .ok;
    if &now == tip {
        said.push(format!(
            "an apply of session {} into {} was interrupted before {branch} moved: nothing of your branch or tree moved; its work is {}",
            record.session,
            record.project.display(),
            if parked {
                format!("parked at {reference} (`git merge {reference}` takes it)")
            } else {
                format!("still in the workspace {}", record.workspace.display())
            }
        ));
        return Ok(said);
    }
    if &now != new {
        said.push(format!(
            "an apply of session {} into {} was interrupted, and {branch} has moved since (it is at {}): nothing was touched; check your tree with `git status`",
            record.session,
            record.project.display(),
            now.get(..12).unwrap_or(&now)
        ));
        return Ok(said);
    }
    let left = finish_tree(&host, &record.project, tip, new)?;
    if left.is_empty() {
        if parked {
            host.run(["update-ref", "-d", reference])?;
        }
        // The work landed: the workspace it came from has nothing left,
        // unless a session holds it still.
        if let Ok(held) = SessionWorkspace::open_dir(&record.workspace) {
            held.remove()?;
        }
        said.push(format!(
            "finished an apply of session {} into {} that was interrupted: {branch} and your tree are at {}",
            record.session,
            record.project.display(),
            new.get(..12).unwrap_or(new)
        ));
    } else {
        said.push(format!(
            "an apply of session {} into {} was interrupted after {branch} moved to its work; your tree is finished but for {}, which changed since (the work is at {}): `git checkout {branch} -- PATH` takes the session's version of each",
            record.session,
            record.project.display(),
            left.iter().map(|p| visible(p).into_owned()).collect::<Vec<_>>().join(", "),
            if parked { reference.as_str() } else { branch.as_str() }
        ));
    }
    Ok(said)
}

/// Moves the tree and index from `tip` to `new` after an interrupted
/// apply: `read-tree -m -u` when git wrote nothing yet, else each path
/// whose index entry and file are still `tip`'s or `new`'s; the paths left
/// as they are (neither: someone changed them).
fn finish_tree(
    host: &Git,
    project: &Path,
    tip: &str,
    new: &str,
) -> Result<Vec<String>, WorkspaceError> {
    if host.output(["read-tree", "-m", "-u", tip, new], None)?.ok {
        return Ok(Vec::new());
    }
    let changed = super::apply::changed_paths(host, tip, new)?;
    let mut write = Vec::new();
    let mut remove = Vec::new();
    let mut left = Vec::new();
    for path in changed {
        let old_blob = blob(host, tip, &path)?;
        let new_blob = blob(host, new, &path)?;
        let index = indexed(host, &path)?;
        let bytes = on_disk(project, &path)?;
        let file = match &bytes {
            Some(b) => Some(hash(host, b)?),
            None => None,
        };
        let known = |x: &Option<String>| x == &old_blob || x == &new_blob;
        // The file git was writing when it was killed: removed (git
        // removes the old one first) or cut short of the new content.
        let torn = match (&bytes, &new_blob) {
            (None, Some(_)) => true,
            (Some(b), Some(id)) => {
                b.len() < 1 << 24 && {
                    let content = host.run(["cat-file", "blob", id])?.stdout;
                    content.starts_with(b)
                }
            }
            _ => false,
        };
        if !known(&index) || !(known(&file) || torn) {
            left.push(path);
        } else if new_blob.is_some() {
            write.push(format!(":(literal){path}"));
        } else {
            remove.push(format!(":(literal){path}"));
        }
    }
    for chunk in write.chunks(500) {
        let mut args = vec![
            "checkout".to_owned(),
            "-q".into(),
            new.to_owned(),
            "--".into(),
        ];
        args.extend(chunk.iter().cloned());
        host.run(&args)?;
    }
    for chunk in remove.chunks(500) {
        let mut args = vec![
            "rm".to_owned(),
            "-q".into(),
            "-f".into(),
            "--ignore-unmatch".into(),
            "--".into(),
        ];
        args.extend(chunk.iter().cloned());
        host.run(&args)?;
    }
    Ok(left)
}

/// The blob id of `path` in `commit`, `None` when it has none.
fn blob(host: &Git, commit: &str, path: &str) -> Result<Option<String>, WorkspaceError> {
    let out = host.run([
        "ls-tree",
        "-z",
        "--format=%(objectname)",
        commit,
        "--",
        &format!(":(literal){path}"),
    ])?;
    Ok(split_z(&out.stdout).into_iter().next())
}

/// The blob id the index holds for `path` (stage 0), `None` when none.
fn indexed(host: &Git, path: &str) -> Result<Option<String>, WorkspaceError> {
    let out = host.run(["ls-files", "-s", "-z", "--", &format!(":(literal){path}")])?;
    Ok(split_z(&out.stdout)
        .into_iter()
        .find_map(|l| l.split_whitespace().nth(1).map(str::to_owned)))
}

/// What the tree holds at `path` (a file's bytes, a link's target),
/// `None` when nothing is there; anything else reads as empty.
fn on_disk(project: &Path, path: &str) -> Result<Option<Vec<u8>>, WorkspaceError> {
    let full = project.join(path);
    let Ok(meta) = std::fs::symlink_metadata(&full) else {
        return Ok(None);
    };
    if meta.file_type().is_symlink() {
        return Ok(Some(
            std::fs::read_link(&full)
                .map_err(io("reading the link", &full))?
                .into_os_string()
                .into_encoded_bytes(),
        ));
    }
    if meta.is_file() {
        return std::fs::read(&full).map(Some).map_err(io("reading", &full));
    }
    Ok(Some(Vec::new()))
}

/// The blob id of `bytes`.
fn hash(host: &Git, bytes: &[u8]) -> Result<String, WorkspaceError> {
    let out = host.output(["hash-object", "--no-filters", "--stdin"], Some(bytes))?;
    if !out.ok {
        return Err(host.failed(["hash-object", "--stdin"], &out));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Removes `lock`, a lock file of git's in a repository only Chock uses
/// while it holds it (the workspace's own), once no process holds it open
/// (waiting a bounded time for the git a killed apply left running).
pub(crate) fn clear_stale_lock(lock: &Path) -> Result<(), WorkspaceError> {
    if std::fs::symlink_metadata(lock).is_err() {
        return Ok(());
    }
    let dir = lock.parent().unwrap_or(Path::new("/"));
    wait_for_git(dir, &[lock.to_path_buf()])?;
    match std::fs::remove_file(lock) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(WorkspaceError::Io {
            what: "removing",
            path: lock.to_path_buf(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// Waits (a bounded time) until no git runs in `project` and nobody holds
/// any of `locks` open; refused when one still does.
fn wait_for_git(project: &Path, locks: &[PathBuf]) -> Result<(), WorkspaceError> {
    let until = now_ms() + WAIT_MS;
    loop {
        let busy = git_in(project).or_else(|| {
            locks.iter().find_map(|l| {
                let meta = std::fs::symlink_metadata(l).ok()?;
                open_by(meta.dev(), meta.ino())
                    .map(|pid| format!("process {pid} holds {} open", l.display()))
            })
        });
        let Some(busy) = busy else {
            return Ok(());
        };
        if now_ms() > until {
            return Err(WorkspaceError::Refused(format!(
                "an interrupted apply into {} is to be finished, but {busy}; wait for it to end and run `chock apply` again",
                project.display()
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Processes, each as its id.
fn processes() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .filter(|pid| *pid != std::process::id())
                .collect()
        })
        .unwrap_or_default()
}

/// A git running in `project`, said as a sentence.
fn git_in(project: &Path) -> Option<String> {
    processes().into_iter().find_map(|pid| {
        let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        (cwd == project && comm.trim_end().starts_with("git"))
            .then(|| format!("git (process {pid}) still runs in it"))
    })
}

/// A process that has the file `(dev, ino)` open.
fn open_by(dev: u64, ino: u64) -> Option<u32> {
    processes().into_iter().find(|pid| {
        std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
            fds.flatten().any(|fd| {
                std::fs::metadata(fd.path()).is_ok_and(|m| m.dev() == dev && m.ino() == ino)
            })
        })
    })
}

/// Writes `changes` from `from` into `workspace`'s project (`land.rs`)
/// under a journal, so that the next apply takes back a landing killed
/// half-way; the journal is held until the caller says it is done.
pub(crate) fn write_tree(
    workspace: &SessionWorkspace,
    from: &Path,
    changes: &[super::overlay::Change],
    denied: &[&Path],
) -> Result<Held, WorkspaceError> {
    let mut held = begin(
        workspace,
        Step::Tree {
            pid: std::process::id(),
            changes: changes.iter().map(|c| c.rel().to_path_buf()).collect(),
            steps: None,
            landed: false,
        },
    )?;
    let written = super::land::write_changes(
        from,
        &workspace.meta.project,
        changes,
        denied,
        &mut |phase| held.phase(phase),
    );
    match written {
        Ok(()) => Ok(held),
        Err(e) => {
            // Nothing was written (or the error says what was not put
            // back): the landing needs no recovery.
            held.done()?;
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// A repository on `main` at one commit, and the journal of an apply
    /// that was to move main from it to a second commit, begun at
    /// `started_ms`.
    fn interrupted(started_ms: u64) -> (tempfile::TempDir, PathBuf, PathBuf, String, String) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let project = root.join("project");
        std::fs::create_dir(&project).expect("project");
        git(&project, &["init", "-q", "-b", "main"]);
        std::fs::write(project.join("a"), "old\n").expect("a");
        git(&project, &["add", "a"]);
        git(&project, &["commit", "-q", "-m", "old"]);
        let tip = git(&project, &["rev-parse", "HEAD"]);
        std::fs::write(project.join("a"), "new\n").expect("a");
        git(&project, &["commit", "-q", "-am", "new"]);
        let new = git(&project, &["rev-parse", "HEAD"]);
        git(&project, &["reset", "-q", "--hard", &tip]);
        let state = root.join("state");
        std::fs::create_dir(&state).expect("state");
        let record = Record {
            session: "s".into(),
            project: project.clone(),
            workspace: state.join("s"),
            pid: 1,
            started_ms,
            step: Step::Git {
                branch: "main".into(),
                tip: tip.clone(),
                new: new.clone(),
                reference: "refs/chock/s".into(),
            },
        };
        write(&state.join(JOURNAL), &record).expect("journal");
        (dir, project, state, tip, new)
    }

    /// A lock git's index holds that was made before the apply began is
    /// not provably Chock's: the recovery refuses, naming it, and leaves
    /// it and the journal alone.
    #[test]
    fn a_lock_older_than_the_journal_is_left_and_named() {
        let (_dir, project, state, tip, _) = interrupted(now_ms() + 60_000);
        std::fs::write(project.join(".git/index.lock"), "").expect("lock");
        let why = recover_dir(&state).expect_err("refused").to_string();
        assert!(
            why.contains("index.lock") && why.contains("not provably"),
            "{why}"
        );
        assert!(project.join(".git/index.lock").exists());
        assert!(state.join(JOURNAL).exists());
        assert_eq!(git(&project, &["rev-parse", "main"]), tip);
    }

    /// The branch moved, the tree did not, and git's index lock was left
    /// by the killed apply: the lock goes, the tree and index are moved to
    /// the branch, and the journal is done.
    #[test]
    fn a_branch_moved_without_its_tree_is_finished() {
        let (_dir, project, state, _, new) = interrupted(now_ms().saturating_sub(1000));
        git(&project, &["update-ref", "refs/heads/main", &new]);
        std::fs::write(project.join(".git/index.lock"), "").expect("lock");
        let said = recover_dir(&state).expect("recovered").join("\n");
        assert!(
            said.contains("removed") && said.contains("finished"),
            "{said}"
        );
        assert_eq!(
            std::fs::read_to_string(project.join("a")).expect("a"),
            "new\n"
        );
        assert_eq!(git(&project, &["status", "--porcelain"]), "");
        assert!(!project.join(".git/index.lock").exists());
        assert!(!state.join(JOURNAL).exists());
    }
}
