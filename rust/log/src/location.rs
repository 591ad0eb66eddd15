//! Where the log lives and what its files are called.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::LogError;

/// The newest file, the one writers append to.
pub const CURRENT: &str = "decisions.jsonl";
/// Writers take this file's lock; it stays put while the log files rotate.
pub const LOCK: &str = "decisions.lock";
/// Writers line up here for the lock, first come first served.
pub const QUEUE: &str = "decisions.queue";

/// The log folder from the environment: `log` in [`state_dir_from_env`].
pub fn dir_from_env() -> Result<PathBuf, LogError> {
    dir_from(|name| std::env::var_os(name))
}

/// Chock's state directory, which holds the log, the session logs and the
/// workspaces: `$CHOCK_STATE_DIR` when set, else `$XDG_STATE_HOME/chock`,
/// else `~/.local/state/chock`.
pub fn state_dir_from_env() -> Result<PathBuf, LogError> {
    state_dir_from(|name| std::env::var_os(name))
}

/// [`dir_from_env`] over any variable lookup, so it can be tested without
/// touching the process environment.
pub fn dir_from(var: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, LogError> {
    Ok(state_dir_from(var)?.join("log"))
}

fn state_dir_from(var: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, LogError> {
    chock_policy::control::state_dir_from(var).ok_or(LogError::NoStateDir)
}

/// `decisions.N.jsonl`: the file rotated away N times ago.
pub fn rotated_name(n: u32) -> String {
    format!("decisions.{n}.jsonl")
}

/// Reads N back out of `decisions.N.jsonl` (N from 1); other names are not log files.
pub fn rotated_number(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("decisions.")?.strip_suffix(".jsonl")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.starts_with('0') {
        return None;
    }
    digits.parse().ok()
}

/// The rotated files that exist in `dir`, as (N, path), newest (smallest N) first.
pub fn rotated_files(dir: &Path) -> Result<Vec<(u32, PathBuf)>, LogError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(LogError::Read {
                path: dir.to_owned(),
                source,
            });
        }
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| LogError::Read {
            path: dir.to_owned(),
            source,
        })?;
        if let Some(n) = entry.file_name().to_str().and_then(rotated_number) {
            found.push((n, entry.path()));
        }
    }
    found.sort();
    Ok(found)
}

/// Every log file in `dir` in the order the chain runs: oldest rotated file
/// first, the current file last (only those that exist).
pub fn files_oldest_first(dir: &Path) -> Result<Vec<PathBuf>, LogError> {
    let mut files: Vec<PathBuf> = rotated_files(dir)?
        .into_iter()
        .rev()
        .map(|(_, path)| path)
        .collect();
    let current = dir.join(CURRENT);
    if current.exists() {
        files.push(current);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn chock_state_dir_replaces_the_state_root() {
        let dir = dir_from(env(&[
            ("CHOCK_STATE_DIR", "/tmp/s"),
            ("XDG_STATE_HOME", "/x"),
            ("HOME", "/h"),
        ]));
        assert_eq!(dir.unwrap(), PathBuf::from("/tmp/s/log"));
    }

    #[test]
    fn xdg_state_home_then_home() {
        let xdg = dir_from(env(&[("XDG_STATE_HOME", "/x"), ("HOME", "/h")]));
        assert_eq!(xdg.unwrap(), PathBuf::from("/x/chock/log"));
        let home = dir_from(env(&[("XDG_STATE_HOME", "relative"), ("HOME", "/h")]));
        assert_eq!(home.unwrap(), PathBuf::from("/h/.local/state/chock/log"));
        assert!(matches!(
            dir_from(env(&[("CHOCK_STATE_DIR", "")])),
            Err(LogError::NoStateDir)
        ));
    }

    #[test]
    fn only_well_formed_rotated_names_count() {
        assert_eq!(rotated_number("decisions.1.jsonl"), Some(1));
        assert_eq!(rotated_number("decisions.12.jsonl"), Some(12));
        for name in [
            "decisions.jsonl",
            "decisions.0.jsonl",
            "decisions.01.jsonl",
            "decisions.-1.jsonl",
            "decisions.1.jsonl.bak",
            "decisions..jsonl",
        ] {
            assert_eq!(rotated_number(name), None, "{name}");
        }
        assert_eq!(rotated_name(3), "decisions.3.jsonl");
    }
}
