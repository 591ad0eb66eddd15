//! What git says of a project flake: the commit checked out, whether the
//! tracked files differ from it, how many commits lead to it and when it
//! was made. `git` runs with the settings that would run other programs
//! (fsmonitor, hooks) off and without taking the index lock.

use std::path::Path;
use std::process::Command;

/// The state of a git work tree.
pub struct GitState {
    /// `HEAD`'s commit; `None` before the first commit.
    pub rev: Option<String>,
    /// Whether a tracked file differs from `HEAD`.
    pub dirty: bool,
    pub rev_count: i64,
    /// `HEAD`'s commit time (Unix seconds); 0 before the first commit.
    pub last_modified: i64,
}

/// The state of the work tree whose top is `dir`; `None` when `dir` holds
/// no `.git` or git cannot read it (the flake is then a plain directory),
/// and for a tree no path leads into (an overlay workspace, see
/// `chock_store::fs`), where git, which walks paths, cannot go.
pub fn state(dir: &Path) -> Option<GitState> {
    if chock_store::fs::detached_under(dir) {
        return None;
    }
    std::fs::symlink_metadata(dir.join(".git")).ok()?;
    let head = git(dir, &["log", "-1", "--format=%H %ct"]);
    let (rev, last_modified) = match head.as_deref().and_then(|h| h.split_once(' ')) {
        Some((rev, time)) => (Some(rev.to_string()), time.trim().parse().unwrap_or(0)),
        None => (None, 0),
    };
    let dirty = match git(dir, &["status", "--porcelain", "--untracked-files=no"]) {
        Some(changes) => !changes.trim().is_empty(),
        None => return None,
    };
    let rev_count = match rev {
        Some(_) => git(dir, &["rev-list", "--count", "HEAD"])
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0),
        None => 0,
    };
    Some(GitState {
        dirty: dirty || rev.is_none(),
        rev,
        rev_count,
        last_modified,
    })
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}
