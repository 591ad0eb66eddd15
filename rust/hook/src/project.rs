//! Which project a hook answers for.
//!
//! The project decides which `chock.zon` is read, which stop applies and
//! which paths count as inside. It is never taken from the payload's `cwd`:
//! that is the agent's own shell directory, which the agent moves with `cd`,
//! and a `chock.zon` an agent wrote in `/tmp` must not become its policy.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::agent::Agent;

/// The project directory: `--project` when given, else the project root the
/// agent tells its hooks (`CLAUDE_PROJECT_DIR`, `GEMINI_PROJECT_DIR`), else
/// the nearest folder at or above the hook's own directory that holds a
/// `chock.zon` or a `.git`, else the hook's own directory.
pub fn resolve(
    explicit: Option<&Path>,
    agent: Option<Agent>,
    var: impl Fn(&str) -> Option<OsString>,
    cwd: &Path,
) -> PathBuf {
    if let Some(dir) = explicit {
        return absolute(dir, cwd);
    }
    if let Some(dir) = agent
        .and_then(Agent::project_variable)
        .and_then(&var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        return dir;
    }
    nearest_root(cwd).unwrap_or_else(|| cwd.to_path_buf())
}

fn absolute(dir: &Path, cwd: &Path) -> PathBuf {
    if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        chock_shell::normalize(&cwd.join(dir))
    }
}

/// The nearest folder at or above `start` holding `chock.zon` or `.git`.
pub fn nearest_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join("chock.zon").exists() || dir.join(".git").exists())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_project_wins() {
        let found = resolve(
            Some(Path::new("sub")),
            Some(Agent::Claude),
            |_| Some(OsString::from("/elsewhere")),
            Path::new("/work"),
        );
        assert_eq!(found, PathBuf::from("/work/sub"));
    }

    #[test]
    fn the_agent_s_project_variable_comes_next() {
        let found = resolve(
            None,
            Some(Agent::Claude),
            |name| (name == "CLAUDE_PROJECT_DIR").then(|| OsString::from("/p")),
            Path::new("/work"),
        );
        assert_eq!(found, PathBuf::from("/p"));
        // A variable of another agent is not read.
        let found = resolve(
            None,
            Some(Agent::Cursor),
            |name| (name == "CLAUDE_PROJECT_DIR").then(|| OsString::from("/p")),
            Path::new("/nonexistent/dir"),
        );
        assert_eq!(found, PathBuf::from("/nonexistent/dir"));
    }

    #[test]
    fn the_nearest_root_holds_chock_zon_or_git() -> Result<(), Box<dyn std::error::Error>> {
        let root = tempfile::tempdir()?;
        let deep = root.path().join("a/b");
        std::fs::create_dir_all(&deep)?;
        std::fs::write(root.path().join("chock.zon"), ".{}")?;
        assert_eq!(nearest_root(&deep), Some(root.path().to_path_buf()));
        Ok(())
    }
}
