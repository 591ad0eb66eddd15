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
/// the project [`chock_policy::root::governing`] finds from the hook's own
/// directory (a `chock.zon` nested in the project is not its policy).
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
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    chock_policy::root::governing(&cwd).dir
}

fn absolute(dir: &Path, cwd: &Path) -> PathBuf {
    if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        chock_shell::normalize(&cwd.join(dir))
    }
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
    fn the_outermost_chock_zon_governs() -> Result<(), Box<dyn std::error::Error>> {
        let root = tempfile::tempdir()?;
        let root = root.path().canonicalize()?;
        let deep = root.join("a/b");
        std::fs::create_dir_all(&deep)?;
        std::fs::write(root.join("chock.zon"), ".{}")?;
        // One an agent wrote below it is not the project's policy.
        std::fs::write(root.join("a/chock.zon"), ".{}")?;
        assert_eq!(resolve(None, None, |_| None, &deep), root);
        Ok(())
    }
}
