//! A person's one-time override of a policy package's refusal.
//!
//! `chock override <id>` arms one, asked at the person's terminal; the next
//! git commit or push that the package refuses asks the person at the
//! terminal again, and a yes uses it up and lets that one act through.
//! Both questions go to `/dev/tty`, so a process with no controlling
//! terminal (an agent's shell in Chock's sandbox, the tool server, CI, a
//! GUI client) can neither arm one nor use one; an agent's tool calls (the
//! hook route) and the tool server never look for one at all. An armed
//! override is a file in Chock's state folder, outside the project (which
//! an agent can write), and lasts [`VALID_FOR`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::HookError;

/// How long an armed override waits for the act it is for.
pub const VALID_FOR: Duration = Duration::from_secs(600);

/// The action a person's override is logged under, for the package `id`.
pub fn action(id: &str) -> String {
    format!("policy.override.{id}")
}

/// The folder of `project`'s armed overrides in the state folder: one per
/// project, named by a hash of its path.
fn dir(state_dir: &Path, project: &Path) -> PathBuf {
    // FNV-1a over the path's bytes: stable across runs and versions.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in project.as_os_str().as_encoded_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    state_dir.join("overrides").join(format!("{hash:016x}"))
}

fn io<'a>(path: &'a Path, action: &'static str) -> impl FnOnce(std::io::Error) -> HookError + 'a {
    move |source| HookError::Io {
        path: path.to_owned(),
        action,
        source,
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Arms an override of the package `id` for `project`, valid for
/// [`VALID_FOR`]; one armed already is armed afresh. Returns its file.
pub fn arm(state_dir: &Path, project: &Path, id: &str) -> Result<PathBuf, HookError> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = dir(state_dir, project);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(io(&dir, "creating"))?;
    let file = dir.join(id);
    let temp = dir.join(format!(
        ".{id}.new-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let expires = now() + VALID_FOR.as_secs();
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temp)
        .and_then(|mut out| writeln!(out, "{expires}"));
    let placed = written.and_then(|()| std::fs::rename(&temp, &file));
    if placed.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    placed.map_err(io(&file, "writing"))?;
    Ok(file)
}

/// Whether an override of `id` is armed for `project` and not expired.
pub fn armed(state_dir: &Path, project: &Path, id: &str) -> bool {
    read_expiry(&dir(state_dir, project).join(id)).is_some_and(|at| at > now())
}

fn read_expiry(file: &Path) -> Option<u64> {
    let meta = std::fs::symlink_metadata(file).ok()?;
    if !meta.file_type().is_file() {
        return None;
    }
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

/// Uses up the override of `id` for `project`: taken in one rename, so of
/// two hooks racing for it one gets it, then removed. Whether it was
/// armed, unexpired, and this call took it.
pub fn take(state_dir: &Path, project: &Path, id: &str) -> bool {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = dir(state_dir, project);
    let taken = dir.join(format!(
        ".{id}.taken-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    if std::fs::rename(dir.join(id), &taken).is_err() {
        return false;
    }
    let valid = read_expiry(&taken).is_some_and(|at| at > now());
    let _ = std::fs::remove_file(&taken);
    valid
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Armed once, taken once: of many takers racing for it exactly one
    /// gets it, and after that none.
    #[test]
    fn an_override_is_taken_exactly_once() {
        let state = tempfile::tempdir().unwrap();
        let project = Path::new("/src/app");
        for _ in 0..50 {
            arm(state.path(), project, "no-push").unwrap();
            assert!(armed(state.path(), project, "no-push"));
            let takers: Vec<_> = (0..8)
                .map(|_| {
                    let state = state.path().to_owned();
                    std::thread::spawn(move || take(&state, project, "no-push"))
                })
                .collect();
            let took = takers
                .into_iter()
                .map(|t| t.join().is_ok_and(|took| took))
                .filter(|took| *took)
                .count();
            assert_eq!(took, 1);
            assert!(!armed(state.path(), project, "no-push"));
            assert!(!take(state.path(), project, "no-push"));
        }
        // Another project's override is not this one's.
        arm(state.path(), project, "no-push").unwrap();
        assert!(!armed(state.path(), Path::new("/src/other"), "no-push"));
    }

    #[test]
    fn an_expired_override_is_not_used() {
        let state = tempfile::tempdir().unwrap();
        let project = Path::new("/src/app");
        let file = arm(state.path(), project, "no-push").unwrap();
        std::fs::write(&file, format!("{}\n", now() - 1)).unwrap();
        assert!(!armed(state.path(), project, "no-push"));
        assert!(!take(state.path(), project, "no-push"));
    }
}
