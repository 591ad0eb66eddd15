//! `chock stop` and `chock resume`: a person's brake on every agent.
//!
//! A stop is a file. `chock stop` writes `<project>/.chock/stop`, and every
//! hook of that project refuses everything; `chock stop --everywhere` writes
//! `stop` in Chock's state directory (`$CHOCK_STATE_DIR`, else
//! `$XDG_STATE_HOME/chock`, else `~/.local/state/chock`, the folder the
//! decision log lives in), and every hook of every project of this user
//! refuses everything. `chock resume` removes the file again.
//!
//! A hook looks for both files before it reads its payload, loads a policy
//! or parses anything, so a stop holds even when the policy is broken. The
//! file's existence is the stop: a file Chock cannot read still stops.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::HookError;

/// The file name of a stop, in both places.
const STOP_FILE: &str = "stop";

/// Which hooks a stop reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every hook of one project.
    Project,
    /// Every hook of every project of this user.
    Everywhere,
}

/// A stop that is in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InForce {
    /// Which stop it is.
    pub scope: Scope,
    /// The file that holds it.
    pub file: PathBuf,
}

impl InForce {
    /// The sentence a refused agent (and the person) reads.
    pub fn reason(&self) -> String {
        let how = match self.scope {
            Scope::Project => "`chock resume`",
            Scope::Everywhere => "`chock resume --everywhere`",
        };
        let what = match self.scope {
            Scope::Project => "for this project",
            Scope::Everywhere => "for every project",
        };
        format!(
            "Chock is stopped {what} ({}): every tool call is refused until a person runs {how}",
            self.file.display()
        )
    }
}

/// Chock's state directory, where the user-wide stop and the decision log live.
pub fn state_dir_from(var: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, HookError> {
    chock_policy::control::state_dir_from(var).ok_or(HookError::NoStateDir)
}

/// The file of a stop of this scope.
pub fn file(scope: Scope, project: &Path, state_dir: &Path) -> PathBuf {
    match scope {
        Scope::Project => project
            .join(chock_policy::control::CHOCK_DIR)
            .join(STOP_FILE),
        Scope::Everywhere => state_dir.join(STOP_FILE),
    }
}

/// The stop in force for this project, if any: the user-wide one first.
/// With no state directory only the project's stop can be looked for.
pub fn in_force(project: &Path, state_dir: Option<&Path>) -> Option<InForce> {
    let everywhere = state_dir.map(|dir| file(Scope::Everywhere, project, dir));
    if let Some(path) = everywhere
        && path.symlink_metadata().is_ok()
    {
        return Some(InForce {
            scope: Scope::Everywhere,
            file: path,
        });
    }
    let path = project
        .join(chock_policy::control::CHOCK_DIR)
        .join(STOP_FILE);
    path.symlink_metadata().is_ok().then_some(InForce {
        scope: Scope::Project,
        file: path,
    })
}

/// Writes a stop. Returns its file and whether it was already in force.
pub fn stop(scope: Scope, project: &Path, state_dir: &Path) -> Result<(PathBuf, bool), HookError> {
    let path = file(scope, project, state_dir);
    let already = path.symlink_metadata().is_ok();
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| HookError::Io {
            path: parent.to_owned(),
            action: "creating the folder",
            source,
        })?;
    }
    let since = humantime::format_rfc3339_seconds(SystemTime::now());
    let text = format!(
        "Chock is stopped: every hook refuses every tool call.\n\
         Written by `chock stop` at {since}.\n\
         Run `chock resume{}` to lift it.\n",
        if scope == Scope::Everywhere {
            " --everywhere"
        } else {
            ""
        }
    );
    std::fs::write(&path, text).map_err(|source| HookError::Io {
        path: path.clone(),
        action: "writing the stop",
        source,
    })?;
    Ok((path, already))
}

/// Removes a stop. Returns its file and whether there was one.
pub fn resume(
    scope: Scope,
    project: &Path,
    state_dir: &Path,
) -> Result<(PathBuf, bool), HookError> {
    let path = file(scope, project, state_dir);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok((path, true)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((path, false)),
        Err(source) => Err(HookError::Io {
            path,
            action: "removing the stop",
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_directory_follows_the_log_s_rules() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        let dir = state_dir_from(env(&[("CHOCK_STATE_DIR", "/s"), ("HOME", "/h")]));
        assert_eq!(dir.ok(), Some(PathBuf::from("/s")));
        let dir = state_dir_from(env(&[("XDG_STATE_HOME", "rel"), ("HOME", "/h")]));
        assert_eq!(dir.ok(), Some(PathBuf::from("/h/.local/state/chock")));
        assert!(state_dir_from(env(&[])).is_err());
    }

    #[test]
    fn stop_and_resume_round_trip() -> Result<(), Box<dyn std::error::Error>> {
        let project = tempfile::tempdir()?;
        let state = tempfile::tempdir()?;
        assert_eq!(in_force(project.path(), Some(state.path())), None);

        let (file, already) = stop(Scope::Project, project.path(), state.path())?;
        assert!(!already);
        assert_eq!(
            in_force(project.path(), Some(state.path())).map(|s| s.file),
            Some(file)
        );

        stop(Scope::Everywhere, project.path(), state.path())?;
        let found = in_force(project.path(), Some(state.path()));
        assert_eq!(found.map(|s| s.scope), Some(Scope::Everywhere));

        assert!(resume(Scope::Everywhere, project.path(), state.path())?.1);
        assert!(resume(Scope::Project, project.path(), state.path())?.1);
        assert!(!resume(Scope::Project, project.path(), state.path())?.1);
        assert_eq!(in_force(project.path(), Some(state.path())), None);
        Ok(())
    }

    #[test]
    fn an_unreadable_stop_still_stops() -> Result<(), Box<dyn std::error::Error>> {
        let project = tempfile::tempdir()?;
        let stop_dir = project.path().join(".chock");
        std::fs::create_dir_all(&stop_dir)?;
        // A dangling link: nothing to read, and still a stop.
        std::os::unix::fs::symlink("/nonexistent/target", stop_dir.join(STOP_FILE))?;
        assert!(in_force(project.path(), None).is_some());
        Ok(())
    }
}
